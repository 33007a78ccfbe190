// MatMul and its gradient. c(M,N) = op(a) · op(b) with op(x) = x or x^T, row-major.
// CPU: OpenBLAS sgemm/dgemm; CUDA: cuBLAS sgemm. Shapes:
//   a: (M,K), or (K,M) with transpose_a;   b: (K,N), or (N,K) with transpose_b;   c: (M,N).
#pragma once

#include <type_traits>

#include "base/status.h"
#include "kernels/cpu_context.h"
#include "kernels/shape_check.h"
#include "kernels/tensor_view.h"

namespace stepscope::kernels {

class CudaContext;  // kernels/cuda/cuda_context.h (STEPSCOPE_WITH_CUDA builds)

struct MatMulOptions {
  bool transpose_a = false;
  bool transpose_b = false;
  // c += op(a)·op(b) instead of c = ...; for MatMulGrad, da/db are added to.
  bool accumulate = false;
};

template <typename T>
Status MatMul(const CpuContext& ctx, In<T> a, In<T> b, Out<T> c, MatMulOptions options = {});

// Gradients of c = op(a)·op(b) given dc: da has a's shape, db has b's. Either may be absent
// (data == nullptr) when nobody needs it. `options` are the forward's.
template <typename T>
Status MatMulGrad(const CpuContext& ctx, In<T> a, In<T> b, In<T> dc, Out<T> da, Out<T> db,
                  MatMulOptions options = {});

// MatMul on strided rows (each view's rows and cols are the stored matrix's, as `a`, `b` and `c`
// above): a GEMM reads a time step of a batch or half of a concatenation where it lies, and
// writes its product into a part of a larger buffer, with no copy before or after.
template <typename T>
Status MatMulStrided(const CpuContext& ctx, StridedRows<const std::type_identity_t<T>> a,
                     StridedRows<const std::type_identity_t<T>> b, StridedRows<T> c,
                     MatMulOptions options = {});

Status MatMul(const CudaContext& ctx, In<float> a, In<float> b, Out<float> c,
              MatMulOptions options = {});
Status MatMulStrided(const CudaContext& ctx, StridedRows<const float> a, StridedRows<const float> b,
                     StridedRows<float> c, MatMulOptions options = {});
Status MatMulGrad(const CudaContext& ctx, In<float> a, In<float> b, In<float> dc, Out<float> da,
                  Out<float> db, MatMulOptions options = {});

namespace internal {
struct GemmDims {
  int64_t m, n, k;
};
// Validates the shapes of c = op(a)·op(b) and returns (M, N, K).
StatusOr<GemmDims> CheckMatMul(const Shape& a, const Shape& b, const Shape& c,
                               const MatMulOptions& options);
// CheckMatMul on the views' shapes, and each view's rows at least its width apart.
template <typename T>
StatusOr<GemmDims> CheckMatMulStrided(const StridedRows<const T>& a, const StridedRows<const T>& b,
                                      const StridedRows<T>& c, const MatMulOptions& options) {
  // BLAS wants a leading dimension of at least 1, even for an empty matrix.
  RETURN_IF_ERROR(ExpectRowStride("MatMul", "a", a.ld < 1 ? -1 : a.ld, a.cols));
  RETURN_IF_ERROR(ExpectRowStride("MatMul", "b", b.ld < 1 ? -1 : b.ld, b.cols));
  RETURN_IF_ERROR(ExpectRowStride("MatMul", "c", c.ld < 1 ? -1 : c.ld, c.cols));
  return CheckMatMul(a.shape(), b.shape(), c.shape(), options);
}
}  // namespace internal

}  // namespace stepscope::kernels
