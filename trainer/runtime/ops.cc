// Each op the models run: outputs allocated on the device, the kernel called under the node's
// OpScope on the device's own context, outputs reported to the profiler.
#include "trainer/runtime/ops.h"

#include <algorithm>
#include <vector>

#include "kernels/elementwise.h"
#include "kernels/embedding.h"
#include "kernels/softmax_xent.h"
#include "trainer/runtime/op_scope.h"
#include "trainer/runtime/run_kernel.h"
#include "trainer/runtime/transfers.h"

namespace stepscope::runtime::ops {
namespace {

// The row count and column count of a matrix op operand.
int64_t Rows(const Tensor& t, bool transpose) { return transpose ? t.shape()[1] : t.shape()[0]; }
int64_t Cols(const Tensor& t, bool transpose) { return transpose ? t.shape()[0] : t.shape()[1]; }

Status NeedRank(const Node& node, const Tensor& t, int rank, const char* what) {
  if (t.shape().rank != rank) {
    return InvalidInput(node.name + " (" + node.op_type + "): " + what + " must have rank " +
                        std::to_string(rank) + ", got " + t.DebugString());
  }
  return Status::Ok();
}

}  // namespace

StatusOr<Tensor> MatMul(const Device& device, const Node& node, const Tensor& a, const Tensor& b,
                        kernels::MatMulOptions options) {
  RETURN_IF_ERROR(NeedRank(node, a, 2, "a"));
  RETURN_IF_ERROR(NeedRank(node, b, 2, "b"));
  OpScope scope(device, node);
  scope.Inputs({&a, &b});
  ASSIGN_OR_RETURN(Tensor c, device.Allocate(DType::kFloat32,
                                             {Rows(a, options.transpose_a),
                                              Cols(b, options.transpose_b)}));
  scope.Output(c);
  RETURN_IF_ERROR(RunKernel(device, [&](const auto& ctx) {
    return kernels::MatMul(ctx, a.in<float>(), b.in<float>(), c.view<float>(),
                                  options);
  }));
  return c;
}

Status MatMulInto(const Device& device, const Node& node, const Tensor& a, const Tensor& b,
                  const Tensor& c, kernels::MatMulOptions options) {
  OpScope scope(device, node);
  scope.Inputs({&a, &b});
  scope.Output(c);
  return RunKernel(device, [&](const auto& ctx) {
    return kernels::MatMul(ctx, a.in<float>(), b.in<float>(), c.view<float>(), options);
  });
}

StatusOr<Tensor> BiasAdd(const Device& device, const Node& node, const Tensor& x,
                         const Tensor& bias) {
  OpScope scope(device, node);
  scope.Inputs({&x, &bias});
  ASSIGN_OR_RETURN(Tensor y, device.Allocate(DType::kFloat32, x.shape()));
  scope.Output(y);
  RETURN_IF_ERROR(RunKernel(device, [&](const auto& ctx) {
    return kernels::BiasAdd(ctx, x.in<float>(), bias.in<float>(), y.view<float>());
  }));
  return y;
}

StatusOr<Tensor> BiasAddGrad(const Device& device, const Node& node, const Tensor& dy) {
  OpScope scope(device, node);
  scope.Inputs({&dy});
  const Shape& s = dy.shape();
  ASSIGN_OR_RETURN(Tensor db, device.Allocate(DType::kFloat32, {s[s.rank - 1]}));
  scope.Output(db);
  RETURN_IF_ERROR(RunKernel(device, [&](const auto& ctx) {
    return kernels::BiasAddGrad(ctx, dy.in<float>(), db.view<float>());
  }));
  return db;
}

StatusOr<Tensor> AddN(const Device& device, const Node& node, std::span<const Tensor> inputs) {
  if (inputs.empty()) return InvalidInput(node.name + " (AddN): no inputs");
  OpScope scope(device, node);
  ASSIGN_OR_RETURN(Tensor out, device.Allocate(DType::kFloat32, inputs[0].shape()));
  scope.Output(out);
  std::vector<kernels::In<float>> views;
  views.reserve(inputs.size());
  for (const Tensor& t : inputs) views.push_back(t.in<float>());
  RETURN_IF_ERROR(RunKernel(device, [&](const auto& ctx) {
    return kernels::AddN(ctx, std::span<const kernels::In<float>>(views), out.view<float>());
  }));
  return out;
}

StatusOr<Tensor> Add(const Device& device, const Node& node, const Tensor& a, const Tensor& b) {
  OpScope scope(device, node);
  scope.Inputs({&a, &b});
  ASSIGN_OR_RETURN(Tensor c, device.Allocate(DType::kFloat32, a.shape()));
  scope.Output(c);
  RETURN_IF_ERROR(RunKernel(device, [&](const auto& ctx) {
    return kernels::Add(ctx, a.in<float>(), b.in<float>(), c.view<float>());
  }));
  return c;
}

StatusOr<Tensor> Relu(const Device& device, const Node& node, const Tensor& x) {
  OpScope scope(device, node);
  scope.Inputs({&x});
  ASSIGN_OR_RETURN(Tensor y, device.Allocate(DType::kFloat32, x.shape()));
  scope.Output(y);
  RETURN_IF_ERROR(RunKernel(device, [&](const auto& ctx) {
    return kernels::Relu(ctx, x.in<float>(), y.view<float>());
  }));
  return y;
}

StatusOr<Tensor> ReluGrad(const Device& device, const Node& node, const Tensor& dy,
                          const Tensor& y) {
  OpScope scope(device, node);
  scope.Inputs({&dy, &y});
  ASSIGN_OR_RETURN(Tensor dx, device.Allocate(DType::kFloat32, dy.shape()));
  scope.Output(dx);
  // ReluGrad masks by the forward's features; relu(x) > 0 exactly where x > 0.
  RETURN_IF_ERROR(RunKernel(device, [&](const auto& ctx) {
    return kernels::ReluGrad(ctx, dy.in<float>(), y.in<float>(), dx.view<float>());
  }));
  return dx;
}

StatusOr<Tensor> Scale(const Device& device, const Node& node, const Tensor& x, float alpha) {
  OpScope scope(device, node);
  scope.Inputs({&x});
  ASSIGN_OR_RETURN(Tensor y, device.Allocate(DType::kFloat32, x.shape()));
  scope.Output(y);
  RETURN_IF_ERROR(RunKernel(device, [&](const auto& ctx) {
    return kernels::Scale(ctx, x.in<float>(), alpha, y.view<float>());
  }));
  return y;
}

StatusOr<Tensor> Gather(const Device& device, const Node& node, const Tensor& params,
                        const Tensor& ids) {
  OpScope scope(device, node);
  scope.Inputs({&params, &ids});
  ASSIGN_OR_RETURN(Tensor out, device.Allocate(DType::kFloat32,
                                               {ids.num_elements(), params.shape()[1]}));
  scope.Output(out);
  const kernels::TensorView<const int32_t> flat_ids(ids.data<int32_t>(), {ids.num_elements()});
  RETURN_IF_ERROR(RunKernel(device, [&](const auto& ctx) {
    return kernels::Gather(ctx, params.in<float>(), flat_ids, out.view<float>());
  }));
  return out;
}

StatusOr<SoftmaxXentResult> SparseSoftmaxCrossEntropyWithLogits(const Device& device,
                                                                const Node& node,
                                                                const Tensor& logits,
                                                                const Tensor& labels) {
  RETURN_IF_ERROR(NeedRank(node, logits, 2, "logits"));
  OpScope scope(device, node);
  scope.Inputs({&logits, &labels});
  SoftmaxXentResult result;
  ASSIGN_OR_RETURN(result.loss, device.Allocate(DType::kFloat32, {logits.shape()[0]}));
  ASSIGN_OR_RETURN(result.backprop, device.Allocate(DType::kFloat32, logits.shape()));
  scope.Output(result.loss);
  scope.Output(result.backprop);
  const kernels::TensorView<const int32_t> flat_labels(labels.data<int32_t>(),
                                                       {labels.num_elements()});
  RETURN_IF_ERROR(RunKernel(device, [&](const auto& ctx) {
    return kernels::SparseSoftmaxCrossEntropyWithLogits(
        ctx, logits.in<float>(), flat_labels, result.loss.view<float>(),
        result.backprop.view<float>());
  }));
  return result;
}

StatusOr<Tensor> Conv2D(const Device& device, const Node& node, const Tensor& input,
                        const Tensor& filter, const kernels::Conv2DOptions& options) {
  ASSIGN_OR_RETURN(const kernels::Conv2DGeometry g,
                   kernels::ComputeConv2DGeometry(input.shape(), filter.shape(), options));
  OpScope scope(device, node);
  scope.Inputs({&input, &filter});
  ASSIGN_OR_RETURN(Tensor out, device.Allocate(DType::kFloat32, g.output_shape()));
  scope.Output(out);
  RETURN_IF_ERROR(RunKernel(device, [&](const auto& ctx) {
    return kernels::Conv2D(ctx, input.in<float>(), filter.in<float>(),
                                  out.view<float>(), options);
  }));
  return out;
}

StatusOr<Tensor> Conv2DBackpropInput(const Device& device, const Node& node,
                                     const Shape& input_shape, const Tensor& filter,
                                     const Tensor& dout, const kernels::Conv2DOptions& options) {
  OpScope scope(device, node);
  scope.Inputs({&filter, &dout});
  ASSIGN_OR_RETURN(Tensor dinput, device.Allocate(DType::kFloat32, input_shape));
  scope.Output(dinput);
  RETURN_IF_ERROR(RunKernel(device, [&](const auto& ctx) {
    return kernels::Conv2DBackpropInput(ctx, filter.in<float>(), dout.in<float>(),
                                               dinput.view<float>(), options);
  }));
  return dinput;
}

StatusOr<Tensor> Conv2DBackpropFilter(const Device& device, const Node& node, const Tensor& input,
                                      const Shape& filter_shape, const Tensor& dout,
                                      const kernels::Conv2DOptions& options) {
  OpScope scope(device, node);
  scope.Inputs({&input, &dout});
  ASSIGN_OR_RETURN(Tensor dfilter, device.Allocate(DType::kFloat32, filter_shape));
  scope.Output(dfilter);
  RETURN_IF_ERROR(RunKernel(device, [&](const auto& ctx) {
    return kernels::Conv2DBackpropFilter(ctx, input.in<float>(), dout.in<float>(),
                                                dfilter.view<float>(), options);
  }));
  return dfilter;
}

StatusOr<BatchNormResult> FusedBatchNorm(const Device& device, const Node& node, const Tensor& x,
                                         const Tensor& scale, const Tensor& offset,
                                         const Tensor& running_mean, const Tensor& running_var,
                                         const kernels::BatchNormOptions& options) {
  OpScope scope(device, node);
  scope.Inputs({&x, &scale, &offset});
  const Shape channels{scale.num_elements()};
  BatchNormResult r;
  ASSIGN_OR_RETURN(r.y, device.Allocate(DType::kFloat32, x.shape()));
  ASSIGN_OR_RETURN(r.saved_mean, device.Allocate(DType::kFloat32, channels));
  ASSIGN_OR_RETURN(r.saved_inv_std, device.Allocate(DType::kFloat32, channels));
  scope.Output(r.y);
  scope.Output(r.saved_mean);
  scope.Output(r.saved_inv_std);
  kernels::BatchNormArgs<float> args;
  args.x = x.in<float>();
  args.scale = scale.in<float>();
  args.offset = offset.in<float>();
  args.running_mean = running_mean.view<float>();
  args.running_var = running_var.view<float>();
  args.y = r.y.view<float>();
  args.saved_mean = r.saved_mean.view<float>();
  args.saved_inv_std = r.saved_inv_std.view<float>();
  RETURN_IF_ERROR(RunKernel(device, [&](const auto& ctx) {
    return kernels::FusedBatchNorm(ctx, args, options);
  }));
  return r;
}

StatusOr<BatchNormGradResult> FusedBatchNormGrad(const Device& device, const Node& node,
                                                 const Tensor& dy, const Tensor& x,
                                                 const Tensor& scale, const Tensor& saved_mean,
                                                 const Tensor& saved_inv_std,
                                                 const kernels::BatchNormOptions& options) {
  OpScope scope(device, node);
  scope.Inputs({&dy, &x, &scale});
  const Shape channels{scale.num_elements()};
  BatchNormGradResult r;
  ASSIGN_OR_RETURN(r.dx, device.Allocate(DType::kFloat32, x.shape()));
  ASSIGN_OR_RETURN(r.dscale, device.Allocate(DType::kFloat32, channels));
  ASSIGN_OR_RETURN(r.doffset, device.Allocate(DType::kFloat32, channels));
  scope.Output(r.dx);
  scope.Output(r.dscale);
  scope.Output(r.doffset);
  kernels::BatchNormGradArgs<float> args;
  args.dy = dy.in<float>();
  args.x = x.in<float>();
  args.scale = scale.in<float>();
  args.saved_mean = saved_mean.in<float>();
  args.saved_inv_std = saved_inv_std.in<float>();
  args.dx = r.dx.view<float>();
  args.dscale = r.dscale.view<float>();
  args.doffset = r.doffset.view<float>();
  RETURN_IF_ERROR(RunKernel(device, [&](const auto& ctx) {
    return kernels::FusedBatchNormGrad(ctx, args, options);
  }));
  return r;
}

StatusOr<Tensor> MaxPool(const Device& device, const Node& node, const Tensor& x,
                         const kernels::Pool2DOptions& options) {
  ASSIGN_OR_RETURN(const kernels::Conv2DGeometry g,
                   kernels::ComputePool2DGeometry(x.shape(), options));
  OpScope scope(device, node);
  scope.Inputs({&x});
  ASSIGN_OR_RETURN(Tensor y, device.Allocate(DType::kFloat32, g.output_shape()));
  scope.Output(y);
  RETURN_IF_ERROR(RunKernel(device, [&](const auto& ctx) {
    return kernels::MaxPool(ctx, x.in<float>(), y.view<float>(), options);
  }));
  return y;
}

StatusOr<Tensor> MaxPoolGrad(const Device& device, const Node& node, const Tensor& x,
                             const Tensor& dy, const kernels::Pool2DOptions& options) {
  OpScope scope(device, node);
  scope.Inputs({&x, &dy});
  ASSIGN_OR_RETURN(Tensor dx, device.Allocate(DType::kFloat32, x.shape()));
  scope.Output(dx);
  RETURN_IF_ERROR(RunKernel(device, [&](const auto& ctx) {
    return kernels::MaxPoolGrad(ctx, x.in<float>(), dy.in<float>(),
                                       dx.view<float>(), options);
  }));
  return dx;
}

StatusOr<Tensor> Pad(const Device& device, const Node& node, const Tensor& x,
                     const kernels::Paddings& paddings) {
  OpScope scope(device, node);
  scope.Inputs({&x});
  ASSIGN_OR_RETURN(Tensor y, device.Allocate(DType::kFloat32, paddings.PaddedShape(x.shape())));
  scope.Output(y);
  RETURN_IF_ERROR(RunKernel(device, [&](const auto& ctx) {
    return kernels::Pad(ctx, x.in<float>(), paddings, y.view<float>());
  }));
  return y;
}

StatusOr<Tensor> PadGrad(const Device& device, const Node& node, const Tensor& dy,
                         const kernels::Paddings& paddings) {
  Shape x_shape = dy.shape();
  for (int i = 0; i < x_shape.rank; ++i) {
    x_shape.dims[static_cast<size_t>(i)] -=
        paddings.before[static_cast<size_t>(i)] + paddings.after[static_cast<size_t>(i)];
  }
  OpScope scope(device, node);
  scope.Inputs({&dy});
  ASSIGN_OR_RETURN(Tensor dx, device.Allocate(DType::kFloat32, x_shape));
  scope.Output(dx);
  RETURN_IF_ERROR(RunKernel(device, [&](const auto& ctx) {
    return kernels::PadGrad(ctx, dy.in<float>(), paddings, dx.view<float>());
  }));
  return dx;
}

StatusOr<Tensor> GlobalAvgPool(const Device& device, const Node& node, const Tensor& x) {
  RETURN_IF_ERROR(NeedRank(node, x, 4, "x"));
  OpScope scope(device, node);
  scope.Inputs({&x});
  ASSIGN_OR_RETURN(Tensor y, device.Allocate(DType::kFloat32, {x.shape()[0], x.shape()[3]}));
  scope.Output(y);
  RETURN_IF_ERROR(RunKernel(device, [&](const auto& ctx) {
    return kernels::GlobalAvgPool(ctx, x.in<float>(), y.view<float>());
  }));
  return y;
}

StatusOr<Tensor> GlobalAvgPoolGrad(const Device& device, const Node& node, const Tensor& dy,
                                   const Shape& x_shape) {
  OpScope scope(device, node);
  scope.Inputs({&dy});
  ASSIGN_OR_RETURN(Tensor dx, device.Allocate(DType::kFloat32, x_shape));
  scope.Output(dx);
  RETURN_IF_ERROR(RunKernel(device, [&](const auto& ctx) {
    return kernels::GlobalAvgPoolGrad(ctx, dy.in<float>(), dx.view<float>());
  }));
  return dx;
}

StatusOr<Tensor> L2Loss(const Device& device, const Node& node, const Tensor& x) {
  OpScope scope(device, node);
  scope.Inputs({&x});
  ASSIGN_OR_RETURN(Tensor loss, device.Allocate(DType::kFloat32, {}));
  scope.Output(loss);
  RETURN_IF_ERROR(RunKernel(device, [&](const auto& ctx) {
    return kernels::L2Loss(ctx, x.in<float>(), loss.view<float>());
  }));
  return loss;
}

Status ApplyGradientDescent(const Device& device, const Node& node, const Tensor& var, float lr,
                            const Tensor& grad) {
  OpScope scope(device, node);
  scope.Inputs({&var, &grad});
  scope.Output(var);
  return RunKernel(device, [&](const auto& ctx) {
    return kernels::ApplyGradientDescent(ctx, var.view<float>(), lr, grad.in<float>());
  });
}

Status ApplyMomentum(const Device& device, const Node& node, const Tensor& var,
                     const Tensor& accum, float lr, const Tensor& grad,
                     const kernels::MomentumOptions& options) {
  OpScope scope(device, node);
  scope.Inputs({&var, &accum, &grad});
  scope.Output(var);
  return RunKernel(device, [&](const auto& ctx) {
    return kernels::ApplyMomentum(ctx, var.view<float>(), accum.view<float>(), lr,
                                grad.in<float>(), options);
  });
}

Status ScatterSub(const Device& device, const Node& node, const Tensor& var, const Tensor& ids,
                  const Tensor& updates, float scale) {
  OpScope scope(device, node);
  scope.Inputs({&var, &ids, &updates});
  scope.Output(var);
  const kernels::TensorView<const int32_t> flat_ids(ids.data<int32_t>(), {ids.num_elements()});
  return RunKernel(device, [&](const auto& ctx) {
    return kernels::ScatterSub(ctx, var.view<float>(), flat_ids, updates.in<float>(),
                             scale);
  });
}

StatusOr<Tensor> Fill(const Device& device, const Node& node, DType dtype, const Shape& shape,
                      float value) {
  OpScope scope(device, node);
  ASSIGN_OR_RETURN(Tensor t, device.Allocate(dtype, shape));
  scope.Output(t);
  if (value == 0.0f) {
    RETURN_IF_ERROR(ZeroFill(device, t));  // zeros are all-zero bytes in both dtypes
  } else if (dtype == DType::kFloat32) {
    const std::vector<float> host(static_cast<size_t>(t.num_elements()), value);
    RETURN_IF_ERROR(CopyFromHost<float>(device, host, t));
  } else {
    const std::vector<int32_t> host(static_cast<size_t>(t.num_elements()),
                                    static_cast<int32_t>(value));
    RETURN_IF_ERROR(CopyFromHost<int32_t>(device, host, t));
  }
  return t;
}

StatusOr<Tensor> Copy(const Device& device, const Node& node, const Tensor& x) {
  OpScope scope(device, node);
  scope.Inputs({&x});
  ASSIGN_OR_RETURN(Tensor y, device.Allocate(x.dtype(), x.shape()));
  scope.Output(y);
  RETURN_IF_ERROR(CopyRowsWithin(device, x, y, {.rows = 1, .row_elements = x.num_elements()}));
  return y;
}

}  // namespace stepscope::runtime::ops
