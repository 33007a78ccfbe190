// Scalar formulas of the element-wise ops and the activations (shared CPU/CUDA).
#pragma once

#include "kernels/math/scalar_math.h"

namespace stepscope::kernels::math {

template <typename T>
STEPSCOPE_HD inline T Relu(T x) { return x > T(0) ? x : T(0); }
template <typename T>
STEPSCOPE_HD inline T ReluGrad(T dy, T x) { return x > T(0) ? dy : T(0); }

template <typename T>
STEPSCOPE_HD inline T Sigmoid(T x) { return T(1) / (T(1) + Exp(-x)); }
// σ'(x) written with y = σ(x).
template <typename T>
STEPSCOPE_HD inline T SigmoidGradFromOutput(T y) { return y * (T(1) - y); }
// tanh'(x) written with y = tanh(x).
template <typename T>
STEPSCOPE_HD inline T TanhGradFromOutput(T y) { return T(1) - y * y; }

// One element of TF 1.x's tf.nn.dropout, in the order its ops compute it (Add, Floor, RealDiv,
// Mul; backward Mul then RealDiv), so the fused kernels give the separate ops' bits:
// the mask is floor(keep + u) (1 with probability keep), y = (x / keep) · mask.
template <typename T>
STEPSCOPE_HD inline T DropoutMask(T keep, T uniform) { return Floor(keep + uniform); }
template <typename T>
STEPSCOPE_HD inline T DropoutApply(T x, T keep, T mask) { return (x / keep) * mask; }
template <typename T>
STEPSCOPE_HD inline T DropoutGrad(T dy, T mask, T keep) { return (dy * mask) / keep; }

}  // namespace stepscope::kernels::math
