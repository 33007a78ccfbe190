// FusedBatchNorm per-element formulas (shared CPU/CUDA). x̂ = (x − mean)·inv_std.
#pragma once

#include "kernels/math/scalar_math.h"

namespace stepscope::kernels::math {

template <typename T>
STEPSCOPE_HD inline T InvStd(T var, T epsilon) { return T(1) / Sqrt(var + epsilon); }

template <typename T>
STEPSCOPE_HD inline T BatchNormForward(T x, T mean, T inv_std, T scale, T offset) {
  return scale * (x - mean) * inv_std + offset;
}

// TF's running-statistics rule; `var_unbiased` is var·R/(R − 1).
template <typename T>
STEPSCOPE_HD inline T RunningAverage(T running, T batch, T factor) {
  return (T(1) - factor) * running + factor * batch;
}

// Training-mode dx for one element, with R rows per channel, sum_dy = Σdy and
// sum_dy_xhat = Σdy·x̂ over the channel.
template <typename T>
STEPSCOPE_HD inline T BatchNormTrainingDx(T dy, T x, T mean, T inv_std, T scale, T sum_dy,
                                          T sum_dy_xhat, T rows) {
  const T xhat = (x - mean) * inv_std;
  return scale * inv_std / rows * (rows * dy - sum_dy - xhat * sum_dy_xhat);
}
template <typename T>
STEPSCOPE_HD inline T BatchNormInferenceDx(T dy, T inv_std, T scale) {
  return dy * scale * inv_std;
}

}  // namespace stepscope::kernels::math
