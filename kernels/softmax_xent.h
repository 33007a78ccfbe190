// SparseSoftmaxCrossEntropyWithLogits: per row b of logits (B, C) and label y_b in [0, C),
//   loss_b = log Σ_c exp(logits_bc) − logits_b,y_b      (computed as m + log Σ exp(x − m))
//   backprop_bc = softmax(logits_b)_c − [c == y_b]       (= ∂loss_b / ∂logits_bc)
// with m = max_c logits_bc, so any finite logits are stable. A label outside [0, C) is bad
// input. SparseSoftmaxCrossEntropyGrad chains an upstream dloss (B) into dlogits (B, C).
#pragma once

#include <cstdint>

#include "base/status.h"
#include "kernels/cpu_context.h"
#include "kernels/tensor_view.h"

namespace stepscope::kernels {

class CudaContext;

template <typename T>
Status SparseSoftmaxCrossEntropyWithLogits(const CpuContext& ctx, In<T> logits,
                                           TensorView<const int32_t> labels, Out<T> loss,
                                           Out<T> backprop);
// dlogits(B, C) = dloss(B)[b] · backprop(B, C)[b, c].
template <typename T>
Status SparseSoftmaxCrossEntropyGrad(const CpuContext& ctx, In<T> backprop, In<T> dloss,
                                     Out<T> dlogits);

// On the GPU an out-of-range label yields NaN loss and backprop rows (as TF's GPU kernel).
Status SparseSoftmaxCrossEntropyWithLogits(const CudaContext& ctx, In<float> logits,
                                           TensorView<const int32_t> labels, Out<float> loss,
                                           Out<float> backprop);
Status SparseSoftmaxCrossEntropyGrad(const CudaContext& ctx, In<float> backprop, In<float> dloss,
                                     Out<float> dlogits);

namespace internal {
Status CheckSoftmaxXent(const Shape& logits, const Shape& labels, const Shape& loss,
                        const Shape& backprop);
}  // namespace internal

}  // namespace stepscope::kernels
