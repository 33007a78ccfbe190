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

}  // namespace stepscope::kernels::math
