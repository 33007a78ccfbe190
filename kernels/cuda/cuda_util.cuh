// Launch helpers shared by the .cu files: grid-stride loops and grid sizing.
#pragma once

#include <cstdint>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_context.h"
#include "kernels/shape_check.h"

namespace stepscope::kernels::internal {

inline constexpr int kThreads = 256;

// Enough blocks to cover n with kThreads each, capped (grid-stride loops do the rest).
inline unsigned int BlocksFor(int64_t n) {
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned int>(blocks < 1 ? 1 : (blocks > 65535 ? 65535 : blocks));
}

__device__ inline int64_t GlobalThreadIndex() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ inline int64_t GlobalThreadCount() {
  return static_cast<int64_t>(blockDim.x) * gridDim.x;
}

// Runs f(i) for every i in [0, n).
template <typename F>
__global__ void ForEachKernel(int64_t n, F f) {
  for (int64_t i = GlobalThreadIndex(); i < n; i += GlobalThreadCount()) f(i);
}

template <typename F>
Status ForEach(const CudaContext& ctx, int64_t n, F f) {
  if (n == 0) return Status::Ok();
  STEPSCOPE_CUDA_LAUNCH(ForEachKernel<F>, BlocksFor(n), kThreads, 0, ctx.stream(), n, f);
  return Status::Ok();
}

// Sum of `v` over the block (blockDim.x == kThreads) as a fixed tree, so the same inputs give
// the same bits on every run; every thread gets the result.
template <typename T>
__device__ inline T BlockSum(T v, T* shared) {
  shared[threadIdx.x] = v;
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s /= 2) {
    if (static_cast<int>(threadIdx.x) < s) shared[threadIdx.x] += shared[threadIdx.x + s];
    __syncthreads();
  }
  const T r = shared[0];
  __syncthreads();
  return r;
}
__device__ inline float BlockMax(float v, float* shared) {
  shared[threadIdx.x] = v;
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s /= 2) {
    if (static_cast<int>(threadIdx.x) < s) {
      shared[threadIdx.x] = fmaxf(shared[threadIdx.x], shared[threadIdx.x + s]);
    }
    __syncthreads();
  }
  const float r = shared[0];
  __syncthreads();
  return r;
}

}  // namespace stepscope::kernels::internal
