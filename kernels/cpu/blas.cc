// Row-major GEMM on OpenBLAS's column-major cblas sgemm/dgemm, with the int64 to int dimension
// check and the beta scaling that BLAS leaves to the caller.
#include "kernels/cpu/blas.h"

#include <cblas.h>

#include "base/check.h"

namespace stepscope::kernels::internal {
namespace {

CBLAS_TRANSPOSE Trans(bool t) { return t ? CblasTrans : CblasNoTrans; }

// cblas takes int dimensions; the kernels' shapes are int64 so a bigger matrix is a bug of the
// caller's shapes that would silently truncate.
blasint Dim(int64_t v) {
  STEPSCOPE_CHECK(v >= 0 && v <= INT32_MAX);
  return static_cast<blasint>(v);
}

template <typename T>
void ScaleRows(int64_t m, int64_t n, T beta, T* c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = beta == T(0) ? T(0) : beta * c[i * ldc + j];
  }
}

}  // namespace

template <>
void Gemm<float>(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                 const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
                 int64_t ldc) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    ScaleRows(m, n, beta, c, ldc);
    return;
  }
  cblas_sgemm(CblasRowMajor, Trans(trans_a), Trans(trans_b), Dim(m), Dim(n), Dim(k), alpha, a,
              Dim(lda), b, Dim(ldb), beta, c, Dim(ldc));
}

template <>
void Gemm<double>(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha,
                  const double* a, int64_t lda, const double* b, int64_t ldb, double beta,
                  double* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  if (k == 0) {  // BLAS rejects lda = 0; the product of empty matrices is 0
    ScaleRows(m, n, beta, c, ldc);
    return;
  }
  cblas_dgemm(CblasRowMajor, Trans(trans_a), Trans(trans_b), Dim(m), Dim(n), Dim(k), alpha, a,
              Dim(lda), b, Dim(ldb), beta, c, Dim(ldc));
}

}  // namespace stepscope::kernels::internal
