// Convolution/pooling index math (shared CPU/CUDA): output sizes, TF's SAME padding, and the
// input coordinate a filter tap reads. int64, except the two tap formulas, which GPU kernels also
// use with 32-bit indices where a tensor fits them (64-bit division is several times slower
// there); negative or ≥ size means padding.
#pragma once

#include <cstdint>

#include "kernels/math/scalar_math.h"

namespace stepscope::kernels::math {

// VALID: ceil((in − k + 1) / stride); 0 when the window does not fit.
STEPSCOPE_HD inline int64_t ValidOutputSize(int64_t in, int64_t k, int64_t stride) {
  return in < k ? 0 : (in - k) / stride + 1;
}
// SAME: ceil(in / stride).
STEPSCOPE_HD inline int64_t SameOutputSize(int64_t in, int64_t stride) {
  return (in + stride - 1) / stride;
}
// SAME's leading padding: half of the total, rounded down (the odd pixel goes last).
STEPSCOPE_HD inline int64_t SamePadBefore(int64_t in, int64_t k, int64_t stride) {
  const int64_t out = SameOutputSize(in, stride);
  const int64_t total = (out - 1) * stride + k - in;
  return total > 0 ? total / 2 : 0;
}
STEPSCOPE_HD inline int64_t ExplicitOutputSize(int64_t in, int64_t k, int64_t stride,
                                               int64_t pad_before, int64_t pad_after) {
  const int64_t span = in + pad_before + pad_after;
  return span < k ? 0 : (span - k) / stride + 1;
}

// The input row/column output position `out` reads at filter tap `tap`.
template <typename I>
STEPSCOPE_HD inline I InputCoord(I out, I tap, I stride, I pad) {
  return out * stride - pad + tap;
}

// For col2im as a gather: the output position that reads input coordinate `in` at filter tap
// `tap` (in = out·stride − pad + tap), or −1 when there is none.
template <typename I>
STEPSCOPE_HD inline I OutputForTap(I in, I tap, I stride, I pad, I out_size) {
  const I t = in + pad - tap;
  if (t < 0 || t % stride != 0) return -1;
  const I out = t / stride;
  return out < out_size ? out : -1;
}

}  // namespace stepscope::kernels::math
