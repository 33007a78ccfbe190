// The one place the CPU kernels call BLAS: a row-major GEMM over OpenBLAS's sgemm/dgemm.
#pragma once

#include <cstdint>

namespace stepscope::kernels::internal {

// C(m,n) = alpha * op(A) * op(B) + beta * C, all row-major; op(X) = X^T when trans_x.
// lda/ldb/ldc are row strides of the stored (untransposed) matrices.
template <typename T>
void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a,
          int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc);

}  // namespace stepscope::kernels::internal
