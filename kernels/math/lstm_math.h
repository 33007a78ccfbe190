// LSTMBlockCell per-element math (gate order i, ci, f, o), shared by CPU and CUDA.
#pragma once

#include <cstdint>

#include "kernels/math/scalar_math.h"
#include "kernels/math/elementwise_math.h"

namespace stepscope::kernels::math {

template <typename T>
struct LstmCellValues {
  T i, cs, f, o, ci, co, h;
};

// From the pre-activations of one hidden unit and its previous cell state.
template <typename T>
STEPSCOPE_HD inline LstmCellValues<T> LstmCellForward(T gate_i, T gate_ci, T gate_f, T gate_o,
                                                      T cs_prev, T forget_bias, T cell_clip) {
  LstmCellValues<T> v;
  v.i = Sigmoid(gate_i);
  v.ci = Tanh(gate_ci);
  v.f = Sigmoid(gate_f + forget_bias);
  v.o = Sigmoid(gate_o);
  v.cs = v.ci * v.i + cs_prev * v.f;
  if (cell_clip > T(0)) v.cs = Min(Max(v.cs, -cell_clip), cell_clip);
  v.co = Tanh(v.cs);
  v.h = v.co * v.o;
  return v;
}

// The gradient reaching h: the one from above, plus element `at` of the one from step t + 1 when
// given (TF's AddN of the two, the same single addition).
template <typename T>
STEPSCOPE_HD inline T LstmHGrad(T from_above, const T* recurrent, int64_t at) {
  return recurrent != nullptr ? from_above + recurrent[at] : from_above;
}

template <typename T>
struct LstmCellGradValues {
  T di, dci, df, do_, cs_prev_grad;  // gradients of the pre-activations, and of cs_prev
};

// TF's LSTMBlockCellGrad (no peepholes): dcs = dh·o·tanh'(cs) + cs_grad, then the gates.
template <typename T>
STEPSCOPE_HD inline LstmCellGradValues<T> LstmCellBackward(T i, T f, T o, T ci, T co, T cs_prev,
                                                           T cs_grad, T h_grad) {
  LstmCellGradValues<T> g;
  const T dcs = h_grad * o * TanhGradFromOutput(co) + cs_grad;
  g.do_ = h_grad * co * SigmoidGradFromOutput(o);
  g.dci = dcs * i * TanhGradFromOutput(ci);
  g.df = dcs * cs_prev * SigmoidGradFromOutput(f);
  g.di = dcs * ci * SigmoidGradFromOutput(i);
  g.cs_prev_grad = dcs * f;
  return g;
}

}  // namespace stepscope::kernels::math
