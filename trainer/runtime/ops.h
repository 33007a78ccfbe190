// The ops the models run, each as TensorFlow names its op type: allocate the outputs on the
// device, run the kernel (kernels/) inside the node's OpScope, report the outputs to the
// profiler. Shapes that do not fit are kInvalidInput from the kernel's own checks.
#pragma once

#include <span>
#include <vector>

#include "base/status.h"
#include "kernels/batch_norm.h"
#include "kernels/conv2d.h"
#include "kernels/matmul.h"
#include "kernels/optimizers.h"
#include "kernels/pad.h"
#include "kernels/pooling.h"
#include "trainer/runtime/device.h"
#include "trainer/runtime/graph.h"
#include "trainer/runtime/tensor.h"

namespace stepscope::runtime::ops {

// MatMul: c = op(a)·op(b).
StatusOr<Tensor> MatMul(const Device& device, const Node& node, const Tensor& a, const Tensor& b,
                        kernels::MatMulOptions options = {});
// MatMul into an existing tensor (options.accumulate adds to it: how weight gradients of an
// unrolled loop are summed without one buffer per step).
Status MatMulInto(const Device& device, const Node& node, const Tensor& a, const Tensor& b,
                  const Tensor& c, kernels::MatMulOptions options);

StatusOr<Tensor> BiasAdd(const Device& device, const Node& node, const Tensor& x,
                         const Tensor& bias);
StatusOr<Tensor> BiasAddGrad(const Device& device, const Node& node, const Tensor& dy);
StatusOr<Tensor> AddN(const Device& device, const Node& node, std::span<const Tensor> inputs);
// y = a + b, same shapes (TF's AddV2, what Keras' Add layer runs for two inputs).
StatusOr<Tensor> Add(const Device& device, const Node& node, const Tensor& a, const Tensor& b);
StatusOr<Tensor> Relu(const Device& device, const Node& node, const Tensor& x);
StatusOr<Tensor> ReluGrad(const Device& device, const Node& node, const Tensor& dy,
                          const Tensor& y);
// y = alpha · x (TF: Mul by a scalar).
StatusOr<Tensor> Scale(const Device& device, const Node& node, const Tensor& x, float alpha);

// Gather (GatherV2 on axis 0): rows of `params` at `ids`.
StatusOr<Tensor> Gather(const Device& device, const Node& node, const Tensor& params,
                        const Tensor& ids);
struct SoftmaxXentResult {
  Tensor loss;      // (B)
  Tensor backprop;  // (B, C): softmax - onehot
};
StatusOr<SoftmaxXentResult> SparseSoftmaxCrossEntropyWithLogits(const Device& device,
                                                                const Node& node,
                                                                const Tensor& logits,
                                                                const Tensor& labels);

StatusOr<Tensor> Conv2D(const Device& device, const Node& node, const Tensor& input,
                        const Tensor& filter, const kernels::Conv2DOptions& options);
StatusOr<Tensor> Conv2DBackpropInput(const Device& device, const Node& node,
                                     const Shape& input_shape, const Tensor& filter,
                                     const Tensor& dout, const kernels::Conv2DOptions& options);
StatusOr<Tensor> Conv2DBackpropFilter(const Device& device, const Node& node, const Tensor& input,
                                      const Shape& filter_shape, const Tensor& dout,
                                      const kernels::Conv2DOptions& options);

struct BatchNormResult {
  Tensor y, saved_mean, saved_inv_std;
};
// FusedBatchNormV3; updates running_mean/running_var in place in training mode.
StatusOr<BatchNormResult> FusedBatchNorm(const Device& device, const Node& node, const Tensor& x,
                                         const Tensor& scale, const Tensor& offset,
                                         const Tensor& running_mean, const Tensor& running_var,
                                         const kernels::BatchNormOptions& options);
struct BatchNormGradResult {
  Tensor dx, dscale, doffset;
};
StatusOr<BatchNormGradResult> FusedBatchNormGrad(const Device& device, const Node& node,
                                                 const Tensor& dy, const Tensor& x,
                                                 const Tensor& scale, const Tensor& saved_mean,
                                                 const Tensor& saved_inv_std,
                                                 const kernels::BatchNormOptions& options);

StatusOr<Tensor> MaxPool(const Device& device, const Node& node, const Tensor& x,
                         const kernels::Pool2DOptions& options);
StatusOr<Tensor> MaxPoolGrad(const Device& device, const Node& node, const Tensor& x,
                             const Tensor& dy, const kernels::Pool2DOptions& options);
StatusOr<Tensor> Pad(const Device& device, const Node& node, const Tensor& x,
                     const kernels::Paddings& paddings);
// The gradient of Pad (TF builds it from Slice).
StatusOr<Tensor> PadGrad(const Device& device, const Node& node, const Tensor& dy,
                         const kernels::Paddings& paddings);
// Mean over H and W of NHWC, and its gradient.
StatusOr<Tensor> GlobalAvgPool(const Device& device, const Node& node, const Tensor& x);
StatusOr<Tensor> GlobalAvgPoolGrad(const Device& device, const Node& node, const Tensor& dy,
                                   const Shape& x_shape);

// A scalar L2Loss = sum(x²)/2.
StatusOr<Tensor> L2Loss(const Device& device, const Node& node, const Tensor& x);
// In-place updates (their outputs are the variables, as TF's Apply* ops).
Status ApplyGradientDescent(const Device& device, const Node& node, const Tensor& var, float lr,
                            const Tensor& grad);
Status ApplyMomentum(const Device& device, const Node& node, const Tensor& var,
                     const Tensor& accum, float lr, const Tensor& grad,
                     const kernels::MomentumOptions& options);
// var[ids[n], :] -= scale · updates[n, :].
Status ScatterSub(const Device& device, const Node& node, const Tensor& var, const Tensor& ids,
                  const Tensor& updates, float scale);

// Fills a new tensor with `value` (TF: Fill / zeros).
StatusOr<Tensor> Fill(const Device& device, const Node& node, DType dtype, const Shape& shape,
                      float value);
// A copy of `x` into a new buffer on the device (Identity with a copy; used for staging).
StatusOr<Tensor> Copy(const Device& device, const Node& node, const Tensor& x);

}  // namespace stepscope::runtime::ops
