// Parameter update formulas (shared CPU/CUDA).
#pragma once

#include "kernels/math/scalar_math.h"

namespace stepscope::kernels::math {

template <typename T>
STEPSCOPE_HD inline T GradientDescent(T var, T lr, T grad) { return var - lr * grad; }

// Updates *accum and returns the new var.
template <typename T>
STEPSCOPE_HD inline T Momentum(T var, T* accum, T lr, T grad, T momentum, T weight_decay,
                               bool nesterov) {
  const T g = grad + weight_decay * var;
  *accum = momentum * *accum + g;
  return nesterov ? var - lr * (g + momentum * *accum) : var - lr * *accum;
}

// The factor ClipByGlobalNorm multiplies by.
template <typename T>
STEPSCOPE_HD inline T ClipScale(T global_norm, T clip_norm) {
  return clip_norm / (global_norm > clip_norm ? global_norm : clip_norm);
}

}  // namespace stepscope::kernels::math
