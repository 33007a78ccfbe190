// MaxPool's window scan (shared CPU/CUDA): the first maximum in row-major window order, TF's
// tie rule, which both MaxPool and MaxPoolGrad use so the gradient goes where the value came
// from.
#pragma once

#include <cstdint>

#include "kernels/math/scalar_math.h"
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

// MaxPoolGrad as a gather, for input (n, ih, iw, c) of x (N,H,W,C): the sum of dy (N,OH,OW,C)
// over every window whose first maximum is that input, added in row-major window order (the
// order in which a scatter over the windows adds them), so overlapping windows need no atomics
// and the sum does not depend on thread timing.
template <typename T>
STEPSCOPE_HD inline T MaxPoolGradAt(const PoolWindow& g, const T* x, const T* dy, int64_t out_h,
                                    int64_t out_w, int64_t n, int64_t ih, int64_t iw,
                                    int64_t c) {
  const int64_t self = ((n * g.in_h + ih) * g.in_w + iw) * g.channels + c;
  T sum = T(0);
  // A later tap reads from an earlier window: taps run backwards so windows come in order.
  for (int64_t kh = g.k_h - 1; kh >= 0; --kh) {
    const int64_t oh = OutputForTap(ih, kh, g.stride_h, g.pad_top, out_h);
    if (oh < 0) continue;
    for (int64_t kw = g.k_w - 1; kw >= 0; --kw) {
      const int64_t ow = OutputForTap(iw, kw, g.stride_w, g.pad_left, out_w);
      if (ow < 0) continue;
      if (MaxPoolArgMax(g, x, n, oh, ow, c) == self) {
        sum += dy[((n * out_h + oh) * out_w + ow) * g.channels + c];
      }
    }
  }
  return sum;
}

}  // namespace stepscope::kernels::math
