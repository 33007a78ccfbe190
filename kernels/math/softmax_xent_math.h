// SparseSoftmaxCrossEntropyWithLogits per-row pieces (shared CPU/CUDA). With m = max of the
// row and s = Σ exp(x − m): loss = log(s) − (x_label − m), backprop_c = exp(x_c − m)/s − [c = y].
#pragma once

#include "kernels/math/scalar_math.h"

namespace stepscope::kernels::math {

template <typename T>
STEPSCOPE_HD inline T XentLoss(T sum_exp, T label_logit, T row_max) {
  return Log(sum_exp) - (label_logit - row_max);
}
// The same from exp(logit - row_max) already computed (the CPU keeps it from the sum pass).
template <typename T>
STEPSCOPE_HD inline T XentBackpropFromExp(T shifted_exp, T sum_exp, bool is_label) {
  return shifted_exp / sum_exp - (is_label ? T(1) : T(0));
}
template <typename T>
STEPSCOPE_HD inline T XentBackprop(T logit, T row_max, T sum_exp, bool is_label) {
  return XentBackpropFromExp(Exp(logit - row_max), sum_exp, is_label);
}

}  // namespace stepscope::kernels::math
