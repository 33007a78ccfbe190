// Launch helpers shared by the .cu files: grid-stride loops and grid sizing.
#pragma once

#include <algorithm>
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

// Column sums of a row-major (rows, cols) matrix, for the per-channel reductions (bias and
// batch-norm gradients, batch statistics). Coalesced: a block covers 32 adjacent columns with 8
// row lanes and sums one chunk of rows, so a warp reads 128 contiguous bytes (one block per
// column, striding over rows, read one float per 32-byte sector). Deterministic: each chunk's
// lanes combine in a fixed order into partials[i][chunk][col], then one thread per column adds
// its chunks in order, so the same inputs give the same bits on every run.
//
// `values(r, c)` returns the N terms element (r, c) adds to the N sums (ColumnTerms<N>);
// `finish(c, sums)` receives the column's N sums.
template <int N>
struct ColumnTerms {
  float v[N];
};

inline constexpr int kColumnTile = 32, kRowLanes = 8;

template <int N, typename Values, typename Finish>
__global__ void ColumnPartialSumsKernel(int64_t rows, int64_t cols, int64_t rows_per_chunk,
                                        Values values, float* partials, Finish finish) {
  __shared__ float shared[N][kRowLanes][kColumnTile];
  const int64_t c = static_cast<int64_t>(blockIdx.x) * kColumnTile + threadIdx.x;
  const int64_t chunk = blockIdx.y;
  const int64_t begin = chunk * rows_per_chunk;
  const int64_t end = rows < begin + rows_per_chunk ? rows : begin + rows_per_chunk;
  float acc[N] = {};
  if (c < cols) {
    for (int64_t r = begin + threadIdx.y; r < end; r += kRowLanes) {
      const ColumnTerms<N> t = values(r, c);
      for (int i = 0; i < N; ++i) acc[i] += t.v[i];
    }
  }
  for (int i = 0; i < N; ++i) shared[i][threadIdx.y][threadIdx.x] = acc[i];
  __syncthreads();
  if (threadIdx.y == 0 && c < cols) {
    ColumnTerms<N> sums;
    for (int i = 0; i < N; ++i) {
      float sum = 0;
      for (int lane = 0; lane < kRowLanes; ++lane) sum += shared[i][lane][threadIdx.x];
      sums.v[i] = sum;
      if (partials != nullptr) partials[(static_cast<int64_t>(i) * gridDim.y + chunk) * cols + c] = sum;
    }
    if (partials == nullptr) finish(c, sums);  // one chunk: its sums are the column's
  }
}

template <int N, typename Finish>
__global__ void ColumnFinishKernel(int64_t cols, int64_t chunks, const float* partials,
                                   Finish finish) {
  for (int64_t c = GlobalThreadIndex(); c < cols; c += GlobalThreadCount()) {
    ColumnTerms<N> sums;
    for (int i = 0; i < N; ++i) {
      float sum = 0;
      for (int64_t chunk = 0; chunk < chunks; ++chunk) sum += partials[(i * chunks + chunk) * cols + c];
      sums.v[i] = sum;
    }
    finish(c, sums);
  }
}

template <int N, typename Values, typename Finish>
Status ColumnReduce(const CudaContext& ctx, int64_t rows, int64_t cols, Values values,
                    Finish finish) {
  if (cols == 0) return Status::Ok();
  // Enough blocks to fill the GPU (about 1024), each summing at least 64 rows; the chunk count
  // depends on the shape only, so results do not depend on the device.
  const int64_t tiles = (cols + kColumnTile - 1) / kColumnTile;
  const int64_t most_chunks = std::max<int64_t>(1, std::min<int64_t>((rows + 63) / 64, 65535));
  const int64_t wanted = std::clamp<int64_t>((1024 + tiles - 1) / tiles, 1, most_chunks);
  const int64_t rows_per_chunk = std::max<int64_t>(1, (rows + wanted - 1) / wanted);
  const int64_t chunks = std::max<int64_t>(1, (rows + rows_per_chunk - 1) / rows_per_chunk);
  auto* const column_partial_sums = &ColumnPartialSumsKernel<N, Values, Finish>;
  const dim3 grid(static_cast<unsigned int>(tiles), static_cast<unsigned int>(chunks));
  const dim3 block(kColumnTile, kRowLanes);
  if (chunks == 1) {  // few rows (an LSTM's batch): one launch, no scratch
    STEPSCOPE_CUDA_LAUNCH(column_partial_sums, grid, block, 0, ctx.stream(), rows, cols,
                          rows_per_chunk, values, static_cast<float*>(nullptr), finish);
    return Status::Ok();
  }
  DeviceScratch partials;
  RETURN_IF_ERROR(partials.Allocate(ctx, static_cast<size_t>(N * chunks * cols) * sizeof(float)));
  auto* const column_finish = &ColumnFinishKernel<N, Finish>;
  STEPSCOPE_CUDA_LAUNCH(column_partial_sums, grid, block, 0, ctx.stream(), rows, cols,
                        rows_per_chunk, values, partials.as<float>(), finish);
  STEPSCOPE_CUDA_LAUNCH(column_finish, BlocksFor(cols), kThreads, 0, ctx.stream(), cols, chunks,
                        partials.as<float>(), finish);
  return Status::Ok();
}

}  // namespace stepscope::kernels::internal
