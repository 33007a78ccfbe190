// The fixed-order sum of squares behind L2Loss and the global norm (shared CPU/CUDA): [0, n) is
// cut into chunks of kSumChunk elements (the last one shorter), each chunk sums its squares into
// one double partial, and the partials are added in a fixed order (chunk order on the CPU, a
// fixed tree in one block on the GPU). The partition depends on n alone, never on the thread or
// block count, so a sum is the same on every run, on every replica and on any pool size; the
// double partials keep the CPU's and the GPU's sums (whose orders inside a chunk differ) within
// about an ulp of each other once rounded to float.
#pragma once

#include <cstdint>

#include "kernels/math/scalar_math.h"

namespace stepscope::kernels::math {

inline constexpr int64_t kSumChunk = int64_t{1} << 15;

STEPSCOPE_HD inline int64_t SumChunkCount(int64_t n) { return (n + kSumChunk - 1) / kSumChunk; }
STEPSCOPE_HD inline int64_t SumChunkBegin(int64_t chunk) { return chunk * kSumChunk; }
STEPSCOPE_HD inline int64_t SumChunkEnd(int64_t chunk, int64_t n) {
  return Min(n, (chunk + 1) * kSumChunk);
}

// x² in double: exact for a float x (a 24-bit significand squared fits in 53 bits).
template <typename T>
STEPSCOPE_HD inline double SquareAsDouble(T x) {
  const double v = static_cast<double>(x);
  return v * v;
}

}  // namespace stepscope::kernels::math
