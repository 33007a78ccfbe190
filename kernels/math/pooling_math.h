// MaxPool's window scan (shared CPU/CUDA): the first maximum in row-major window order, TF's
// tie rule, which both MaxPool and MaxPoolGrad use so the gradient goes where the value came
// from.
#pragma once

#include <cstdint>

#include "kernels/hd.h"
#include "kernels/math/conv_math.h"

namespace stepscope::kernels::math {

// The window geometry as plain integers (device-friendly).
struct PoolWindow {
  int64_t in_h, in_w, channels, k_h, k_w, stride_h, stride_w, pad_top, pad_left;
};

// Index into x (N,H,W,C) of the first maximum of output (n, oh, ow)'s window in channel c.
// Every VALID/SAME window holds at least one input pixel.
template <typename T>
STEPSCOPE_HD inline int64_t MaxPoolArgMax(const PoolWindow& g, const T* x, int64_t n, int64_t oh,
                                          int64_t ow, int64_t c) {
  int64_t best = -1;
  for (int64_t kh = 0; kh < g.k_h; ++kh) {
    const int64_t ih = InputCoord(oh, kh, g.stride_h, g.pad_top);
    if (ih < 0 || ih >= g.in_h) continue;
    for (int64_t kw = 0; kw < g.k_w; ++kw) {
      const int64_t iw = InputCoord(ow, kw, g.stride_w, g.pad_left);
      if (iw < 0 || iw >= g.in_w) continue;
      const int64_t idx = ((n * g.in_h + ih) * g.in_w + iw) * g.channels + c;
      if (best < 0 || x[idx] > x[best]) best = idx;
    }
  }
  return best;
}

}  // namespace stepscope::kernels::math
