// MatMul and its gradient. c(M,N) = op(a) · op(b) with op(x) = x or x^T, row-major.
// CPU: OpenBLAS sgemm/dgemm; CUDA: cuBLAS sgemm. Shapes:
//   a: (M,K), or (K,M) with transpose_a;   b: (K,N), or (N,K) with transpose_b;   c: (M,N).
#pragma once

#include "base/status.h"
#include "kernels/cpu_context.h"
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

Status MatMul(const CudaContext& ctx, In<float> a, In<float> b, Out<float> c,
              MatMulOptions options = {});
Status MatMulGrad(const CudaContext& ctx, In<float> a, In<float> b, In<float> dc, Out<float> da,
                  Out<float> db, MatMulOptions options = {});

namespace internal {
struct GemmDims {
  int64_t m, n, k;
};
// Validates the shapes of c = op(a)·op(b) and returns (M, N, K).
StatusOr<GemmDims> CheckMatMul(const Shape& a, const Shape& b, const Shape& c,
                               const MatMulOptions& options);
}  // namespace internal

}  // namespace stepscope::kernels
