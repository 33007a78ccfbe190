// ResNet v1's Keras-named graph, its forward and hand-written backward passes (conv, batch norm,
// ReLU, pooling, softmax cross-entropy) and the momentum update with weight decay.
#include "trainer/models/resnet_model.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "kernels/batch_norm.h"
#include "kernels/conv2d.h"
#include "kernels/elementwise.h"
#include "kernels/matmul.h"
#include "kernels/optimizers.h"
#include "kernels/pad.h"
#include "kernels/pooling.h"
#include "trainer/models/rng.h"
#include "trainer/runtime/graph.h"
#include "trainer/runtime/op_scope.h"
#include "trainer/runtime/ops.h"
#include "trainer/runtime/transfers.h"

namespace stepscope::models {
namespace {

namespace ops = runtime::ops;
using runtime::DType;
using runtime::Node;
using runtime::Scoped;
using runtime::Shape;
using runtime::Tensor;

// Keras' ResNet builds its BatchNormalization layers with epsilon 1.001e-5 and momentum 0.99;
// TF's FusedBatchNormV3 takes the latter as exponential_avg_factor = 1 - momentum.
constexpr double kBatchNormEpsilon = 1.001e-5;
constexpr double kBatchNormAvgFactor = 0.01;
// Normalization parameters get their own decay, zero by default (docs/trainers.md §3).
constexpr double kNormalizationDecay = 0.0;

constexpr std::array<int, 6> kDepths = {14, 26, 38, 50, 101, 152};
constexpr std::array<std::array<int, 4>, 6> kBlocksPerStage = {
    {{1, 1, 1, 1}, {2, 2, 2, 2}, {3, 3, 3, 3}, {3, 4, 6, 3}, {3, 4, 23, 3}, {3, 8, 36, 3}}};
constexpr std::array<int, 4> kStageFilters = {64, 128, 256, 512};  // bottleneck width
constexpr int kBottleneckExpansion = 4;


kernels::Paddings SpatialPadding(int64_t amount) {
  kernels::Paddings p;
  p.before = {0, amount, amount, 0};
  p.after = {0, amount, amount, 0};
  return p;
}

// One Keras Conv2D (with bias) and the BatchNormalization after it: `<name>_conv`, `<name>_bn`.
struct ConvBn {
  std::string name;  // "conv1", "conv2_block1_0"
  kernels::Conv2DOptions options;
  // Variable indices.
  int kernel = -1, bias = -1, gamma = -1, beta = -1, moving_mean = -1, moving_variance = -1;
  std::string input_name;  // the node feeding the convolution
  const Node* conv = nullptr;
  const Node* bias_add = nullptr;
  const Node* bn = nullptr;
  const Node* bn_grad = nullptr;
  const Node* bias_add_grad = nullptr;
  const Node* input_grad = nullptr;  // null for conv1: the images need no gradient
  const Node* filter_grad = nullptr;
  // This step's activations, kept from the forward pass for the backward pass.
  Tensor input, pre_bn, saved_mean, saved_inv_std;
};

// A bottleneck block: [shortcut `_0`], `_1` → relu → `_2` → relu → `_3`, `_add`, `_out`.
struct Block {
  std::string name;   // "conv2_block1"
  int shortcut = -1;  // index into layers_ of `_0`; -1 for an identity shortcut
  std::array<int, 3> main{};
  const Node* relu1 = nullptr;
  const Node* relu2 = nullptr;
  const Node* add = nullptr;
  const Node* out = nullptr;
  const Node* out_grad = nullptr;
  const Node* relu2_grad = nullptr;
  const Node* relu1_grad = nullptr;
  const Node* input_grad_sum = nullptr;  // AddN of the main path's and the shortcut's gradients
  Tensor relu1_y, relu2_y, out_y;
};

class ResNetModel final : public Model {
 public:
  ResNetModel(const runtime::Device& device, const ResNetConfig& config, std::array<int, 4> blocks)
      : device_(device),
        config_(config),
        blocks_per_stage_(blocks),
        scope_("resnet" + std::to_string(config.depth)),
        grad_scope_("gradient_tape/" + scope_) {
    bn_options_.epsilon = kBatchNormEpsilon;
    bn_options_.exponential_avg_factor = kBatchNormAvgFactor;
    bn_options_.is_training = true;
  }
  ResNetModel(const ResNetModel&) = delete;
  ResNetModel& operator=(const ResNetModel&) = delete;

  Status Build();

  const runtime::Device& device() const override { return device_; }
  std::vector<Variable>& variables() override { return variables_; }
  const runtime::Graph& graph() const override { return graph_; }
  StatusOr<StepResult> ComputeGradients(const Batch& batch, float loss_scale) override;
  Status ApplyGradients(std::span<const Gradient> gradients, float learning_rate) override;

 private:
  struct PendingVariable {
    std::string name;
    Shape shape;
    VariableRole role;
    bool trainable;
    int fan_in;  // > 0: He-normal kernel; 0: filled with `fill`
    float fill;
  };

  int AddVariable(std::string name, Shape shape, VariableRole role, int fan_in, float fill);
  int AddConvBn(std::string name, int kernel_size, int stride, int in_channels, int filters,
                bool same_padding);
  Status CreateVariables();
  // Node names of the step, in the order the step runs them.
  void AddForwardNodes(ConvBn& layer, const std::string& input_name);
  void AddBackwardNodes(ConvBn& layer, const std::string& dy_name);
  void AddNodes();

  const Tensor& Var(int index) const { return variables_[static_cast<size_t>(index)].value; }
  const std::string& VarName(int index) const {
    return variables_[static_cast<size_t>(index)].name;
  }
  // Stores a gradient and reports it: backward never writes it again, so the caller may start
  // communicating it now (layer by layer, the last layers first).
  Status SetGradient(std::vector<Gradient>& gradients, int variable, Tensor values,
                     const Node* producer) const {
    Gradient& g = gradients[static_cast<size_t>(variable)];
    g.variable = variable;
    g.values = std::move(values);
    g.producer = producer;
    return ReportGradientReady(g);
  }
  bool ReportsGradientsDuringBackward() const override { return true; }
  // The batch's labels, read to the host once: checked here, counted for accuracy later.
  StatusOr<std::vector<int32_t>> CheckBatch(const Batch& batch) const;
  StatusOr<Tensor> ConvBnForward(ConvBn& layer, const Tensor& x);
  StatusOr<Tensor> ConvBnBackward(ConvBn& layer, const Tensor& dy,
                                  std::vector<Gradient>& gradients);
  StatusOr<Tensor> BlockForward(Block& block, const Tensor& x);
  StatusOr<Tensor> BlockBackward(Block& block, const Tensor& dout,
                                 std::vector<Gradient>& gradients);

  const runtime::Device& device_;
  const ResNetConfig config_;
  const std::array<int, 4> blocks_per_stage_;
  const std::string scope_;       // "resnet50"
  const std::string grad_scope_;  // "gradient_tape/resnet50"
  kernels::BatchNormOptions bn_options_;
  kernels::Pool2DOptions pool_options_{3, 3, 2, 2, kernels::Padding::kValid};

  std::vector<PendingVariable> pending_;  // Keras' creation order, before trainable-first sort
  std::vector<Variable> variables_;       // trainable first, then the moving statistics
  std::vector<Tensor> accumulators_;      // momentum slots, one per trainable variable
  int num_trainable_ = 0;

  std::vector<ConvBn> layers_;  // conv1 first, then each block's in Keras order
  std::vector<Block> blocks_;
  int predictions_kernel_ = -1;
  int predictions_bias_ = -1;

  runtime::Graph graph_;
  const Node* conv1_pad_ = nullptr;
  const Node* conv1_relu_ = nullptr;
  const Node* pool1_pad_ = nullptr;
  const Node* pool1_pool_ = nullptr;
  const Node* avg_pool_ = nullptr;
  const Node* predictions_matmul_ = nullptr;
  const Node* predictions_bias_add_ = nullptr;
  const Node* xent_ = nullptr;
  const Node* xent_grad_ = nullptr;
  const Node* predictions_bias_grad_ = nullptr;
  const Node* predictions_input_grad_ = nullptr;
  const Node* predictions_kernel_grad_ = nullptr;
  const Node* avg_pool_grad_ = nullptr;
  const Node* pool1_pool_grad_ = nullptr;
  const Node* pool1_pad_grad_ = nullptr;
  const Node* conv1_relu_grad_ = nullptr;
  std::vector<const Node*> update_nodes_;  // per trainable variable

  // This step's activations outside the blocks.
  Tensor conv1_relu_y_, pool1_padded_, pooled_;
  Shape last_block_shape_;
};

int ResNetModel::AddVariable(std::string name, Shape shape, VariableRole role, int fan_in,
                             float fill) {
  const bool trainable = name.find("/moving_") == std::string::npos;
  pending_.push_back({std::move(name), shape, role, trainable, fan_in, fill});
  return static_cast<int>(pending_.size()) - 1;  // renumbered once all exist
}

int ResNetModel::AddConvBn(std::string name, int kernel_size, int stride, int in_channels,
                           int filters, bool same_padding) {
  ConvBn layer;
  layer.name = std::move(name);
  layer.options.stride_h = layer.options.stride_w = stride;
  layer.options.padding = same_padding ? kernels::Padding::kSame : kernels::Padding::kValid;
  const std::string conv = layer.name + "_conv/";
  const std::string bn = layer.name + "_bn/";
  const int64_t k = kernel_size;
  layer.kernel = AddVariable(conv + "kernel", {k, k, in_channels, filters}, VariableRole::kWeight,
                             kernel_size * kernel_size * in_channels, 0.0f);
  layer.bias = AddVariable(conv + "bias", {filters}, VariableRole::kBias, 0, 0.0f);
  layer.gamma = AddVariable(bn + "gamma", {filters}, VariableRole::kNormalization, 0, 1.0f);
  layer.beta = AddVariable(bn + "beta", {filters}, VariableRole::kNormalization, 0, 0.0f);
  layer.moving_mean =
      AddVariable(bn + "moving_mean", {filters}, VariableRole::kNormalization, 0, 0.0f);
  layer.moving_variance =
      AddVariable(bn + "moving_variance", {filters}, VariableRole::kNormalization, 0, 1.0f);
  layers_.push_back(std::move(layer));
  return static_cast<int>(layers_.size()) - 1;
}

Status ResNetModel::CreateVariables() {
  // Trainable variables keep Keras' order (their index N names `update_N`); the moving
  // statistics follow, as in Keras' model.weights.
  std::vector<int> new_index(pending_.size());
  int next = 0;
  for (size_t i = 0; i < pending_.size(); ++i) {
    if (pending_[i].trainable) new_index[i] = next++;
  }
  num_trainable_ = next;
  for (size_t i = 0; i < pending_.size(); ++i) {
    if (!pending_[i].trainable) new_index[i] = next++;
  }
  auto renumber = [&](int& index) { index = new_index[static_cast<size_t>(index)]; };
  for (ConvBn& l : layers_) {
    for (int* index : {&l.kernel, &l.bias, &l.gamma, &l.beta, &l.moving_mean, &l.moving_variance}) {
      renumber(*index);
    }
  }
  renumber(predictions_kernel_);
  renumber(predictions_bias_);

  variables_.resize(pending_.size());
  Rng rng(config_.seed);
  for (size_t i = 0; i < pending_.size(); ++i) {  // draw in Keras' creation order
    const PendingVariable& p = pending_[i];
    Variable& v = variables_[static_cast<size_t>(new_index[i])];
    v.name = p.name;
    v.role = p.role;
    ASSIGN_OR_RETURN(v.value, device_.Allocate(DType::kFloat32, p.shape));
    // Drawn on the host in one order whatever the device, then copied in.
    std::vector<float> initial(static_cast<size_t>(v.value.num_elements()), p.fill);
    if (p.fan_in > 0) {
      // He normal (Keras' he_normal): truncated normal with the variance 2 / fan_in.
      const double stddev = std::sqrt(2.0 / p.fan_in) / 0.87962566103423978;
      for (float& x : initial) x = static_cast<float>(stddev * rng.TruncatedNormal());
    }
    RETURN_IF_ERROR(runtime::CopyFromHost<float>(device_, initial, v.value));
  }
  for (int i = 0; i < num_trainable_; ++i) {
    ASSIGN_OR_RETURN(
        Tensor accum,
        device_.Allocate(DType::kFloat32, variables_[static_cast<size_t>(i)].value.shape()));
    RETURN_IF_ERROR(runtime::ZeroFill(device_, accum));
    accumulators_.push_back(std::move(accum));
  }
  pending_.clear();
  return Status::Ok();
}

void ResNetModel::AddForwardNodes(ConvBn& l, const std::string& input_name) {
  const std::string conv = Scoped(scope_, l.name + "_conv");
  const std::string bn = Scoped(scope_, l.name + "_bn");
  l.input_name = input_name;
  l.conv = &graph_.AddNode(conv + "/Conv2D", "Conv2D", {input_name, VarName(l.kernel)});
  l.bias_add = &graph_.AddNode(conv + "/BiasAdd", "BiasAdd", {l.conv->name, VarName(l.bias)});
  l.bn = &graph_.AddNode(bn + "/FusedBatchNormV3", "FusedBatchNormV3",
                         {l.bias_add->name, VarName(l.gamma), VarName(l.beta),
                          VarName(l.moving_mean), VarName(l.moving_variance)});
}

void ResNetModel::AddBackwardNodes(ConvBn& l, const std::string& dy_name) {
  const std::string conv = Scoped(grad_scope_, l.name + "_conv");
  const std::string bn = Scoped(grad_scope_, l.name + "_bn");
  l.bn_grad = &graph_.AddNode(
      bn + "/FusedBatchNormGradV3", "FusedBatchNormGradV3",
      {dy_name, l.bias_add->name, VarName(l.gamma), l.bn->name + ":1", l.bn->name + ":2"});
  l.bias_add_grad =
      &graph_.AddNode(conv + "/BiasAdd/BiasAddGrad", "BiasAddGrad", {l.bn_grad->name});
  if (l.name != "conv1") {
    l.input_grad = &graph_.AddNode(conv + "/Conv2D/Conv2DBackpropInput", "Conv2DBackpropInput",
                                   {VarName(l.kernel), l.bn_grad->name});
  }
  l.filter_grad = &graph_.AddNode(conv + "/Conv2D/Conv2DBackpropFilter", "Conv2DBackpropFilter",
                                  {l.input_name, l.bn_grad->name});
}

void ResNetModel::AddNodes() {
  // Forward, under resnet<depth>/.
  conv1_pad_ = &graph_.AddNode(Scoped(scope_, "conv1_pad/Pad"), "Pad", {"input_1"});
  ConvBn& conv1 = layers_[0];
  AddForwardNodes(conv1, conv1_pad_->name);
  conv1_relu_ = &graph_.AddNode(Scoped(scope_, "conv1_relu/Relu"), "Relu", {conv1.bn->name});
  pool1_pad_ = &graph_.AddNode(Scoped(scope_, "pool1_pad/Pad"), "Pad", {conv1_relu_->name});
  pool1_pool_ =
      &graph_.AddNode(Scoped(scope_, "pool1_pool/MaxPool"), "MaxPool", {pool1_pad_->name});
  std::string h = pool1_pool_->name;
  for (Block& b : blocks_) {
    ConvBn& l1 = layers_[static_cast<size_t>(b.main[0])];
    ConvBn& l2 = layers_[static_cast<size_t>(b.main[1])];
    ConvBn& l3 = layers_[static_cast<size_t>(b.main[2])];
    std::string shortcut = h;
    if (b.shortcut >= 0) {
      ConvBn& l0 = layers_[static_cast<size_t>(b.shortcut)];
      AddForwardNodes(l0, h);
      shortcut = l0.bn->name;
    }
    AddForwardNodes(l1, h);
    b.relu1 = &graph_.AddNode(Scoped(scope_, b.name + "_1_relu/Relu"), "Relu", {l1.bn->name});
    AddForwardNodes(l2, b.relu1->name);
    b.relu2 = &graph_.AddNode(Scoped(scope_, b.name + "_2_relu/Relu"), "Relu", {l2.bn->name});
    AddForwardNodes(l3, b.relu2->name);
    b.add = &graph_.AddNode(Scoped(scope_, b.name + "_add/add"), "AddV2", {shortcut, l3.bn->name});
    b.out = &graph_.AddNode(Scoped(scope_, b.name + "_out/Relu"), "Relu", {b.add->name});
    h = b.out->name;
  }
  avg_pool_ = &graph_.AddNode(Scoped(scope_, "avg_pool/Mean"), "Mean", {h});
  predictions_matmul_ = &graph_.AddNode(Scoped(scope_, "predictions/MatMul"), "MatMul",
                                        {avg_pool_->name, VarName(predictions_kernel_)});
  predictions_bias_add_ = &graph_.AddNode(Scoped(scope_, "predictions/BiasAdd"), "BiasAdd",
                                          {predictions_matmul_->name, VarName(predictions_bias_)});
  // Keras' loss sees that `predictions` ends in a softmax and takes its logits instead; the
  // unused Softmax is pruned, the cross entropy sits at the graph's root.
  xent_ = &graph_.AddNode("SparseSoftmaxCrossEntropyWithLogits/SparseSoftmaxCrossEntropyWithLogits",
                          "SparseSoftmaxCrossEntropyWithLogits",
                          {predictions_bias_add_->name, "labels"});

  // Backward, under gradient_tape/resnet<depth>/, in the order the step runs it.
  xent_grad_ = &graph_.AddNode("gradient_tape/SparseSoftmaxCrossEntropyWithLogits/mul", "Mul",
                               {xent_->name + ":1"});
  predictions_bias_grad_ = &graph_.AddNode(Scoped(grad_scope_, "predictions/BiasAdd/BiasAddGrad"),
                                           "BiasAddGrad", {xent_grad_->name});
  // TF's MatMul gradient: first the input's (dy·Wᵀ), then the kernel's (xᵀ·dy).
  predictions_input_grad_ = &graph_.AddNode(Scoped(grad_scope_, "predictions/MatMul"), "MatMul",
                                            {xent_grad_->name, VarName(predictions_kernel_)});
  predictions_kernel_grad_ = &graph_.AddNode(Scoped(grad_scope_, "predictions/MatMul_1"), "MatMul",
                                             {avg_pool_->name, xent_grad_->name});
  // The Mean's gradient is Reshape → Tile → truediv; one kernel does all three.
  avg_pool_grad_ = &graph_.AddNode(Scoped(grad_scope_, "avg_pool/truediv"), "RealDiv",
                                   {predictions_input_grad_->name});
  std::string dh = avg_pool_grad_->name;
  for (auto it = blocks_.rbegin(); it != blocks_.rend(); ++it) {
    Block& b = *it;
    ConvBn& l1 = layers_[static_cast<size_t>(b.main[0])];
    ConvBn& l2 = layers_[static_cast<size_t>(b.main[1])];
    ConvBn& l3 = layers_[static_cast<size_t>(b.main[2])];
    b.out_grad = &graph_.AddNode(Scoped(grad_scope_, b.name + "_out/ReluGrad"), "ReluGrad",
                                 {dh, b.out->name});
    AddBackwardNodes(l3, b.out_grad->name);
    b.relu2_grad = &graph_.AddNode(Scoped(grad_scope_, b.name + "_2_relu/ReluGrad"), "ReluGrad",
                                   {l3.input_grad->name, b.relu2->name});
    AddBackwardNodes(l2, b.relu2_grad->name);
    b.relu1_grad = &graph_.AddNode(Scoped(grad_scope_, b.name + "_1_relu/ReluGrad"), "ReluGrad",
                                   {l2.input_grad->name, b.relu1->name});
    AddBackwardNodes(l1, b.relu1_grad->name);
    std::string shortcut_grad = b.out_grad->name;  // the add's gradient fans out unchanged
    if (b.shortcut >= 0) {
      ConvBn& l0 = layers_[static_cast<size_t>(b.shortcut)];
      AddBackwardNodes(l0, b.out_grad->name);
      shortcut_grad = l0.input_grad->name;
    }
    // The tape sums a tensor's gradients with a root-level AddN (AddN, AddN_1, ...).
    b.input_grad_sum = &graph_.AddNode("AddN", "AddN", {l1.input_grad->name, shortcut_grad});
    dh = b.input_grad_sum->name;
  }
  pool1_pool_grad_ = &graph_.AddNode(Scoped(grad_scope_, "pool1_pool/MaxPool/MaxPoolGrad"),
                                     "MaxPoolGrad", {pool1_pad_->name, pool1_pool_->name, dh});
  // Pad's gradient is a Slice of the padded gradient.
  pool1_pad_grad_ =
      &graph_.AddNode(Scoped(grad_scope_, "pool1_pad/Slice_1"), "Slice", {pool1_pool_grad_->name});
  conv1_relu_grad_ = &graph_.AddNode(Scoped(grad_scope_, "conv1_relu/ReluGrad"), "ReluGrad",
                                     {pool1_pad_grad_->name, conv1_relu_->name});
  AddBackwardNodes(conv1, conv1_relu_grad_->name);

  // Updates: one per trainable variable, numbered in trainable order as TF numbers them.
  std::vector<std::string> grad_names(static_cast<size_t>(num_trainable_));
  for (const ConvBn& l : layers_) {
    grad_names[static_cast<size_t>(l.kernel)] = l.filter_grad->name;
    grad_names[static_cast<size_t>(l.bias)] = l.bias_add_grad->name;
    grad_names[static_cast<size_t>(l.gamma)] = l.bn_grad->name + ":1";
    grad_names[static_cast<size_t>(l.beta)] = l.bn_grad->name + ":2";
  }
  grad_names[static_cast<size_t>(predictions_kernel_)] = predictions_kernel_grad_->name;
  grad_names[static_cast<size_t>(predictions_bias_)] = predictions_bias_grad_->name;
  for (int i = 0; i < num_trainable_; ++i) {
    const std::string scope = i == 0 ? "SGD/SGD/update" : "SGD/SGD/update_" + std::to_string(i);
    update_nodes_.push_back(&graph_.AddNode(
        scope + "/ResourceApplyKerasMomentum", "ResourceApplyKerasMomentum",
        {variables_[static_cast<size_t>(i)].name, grad_names[static_cast<size_t>(i)]}));
  }
}

Status ResNetModel::Build() {
  AddConvBn("conv1", 7, 2, 3, 64, /*same_padding=*/false);  // after conv1_pad: VALID
  int channels = 64;
  for (int stage = 0; stage < 4; ++stage) {
    const int filters = kStageFilters[static_cast<size_t>(stage)];
    const int out_channels = filters * kBottleneckExpansion;
    for (int i = 0; i < blocks_per_stage_[static_cast<size_t>(stage)]; ++i) {
      Block b;
      b.name = "conv" + std::to_string(stage + 2) + "_block" + std::to_string(i + 1);
      // v1: block 1 of conv3..conv5 strides its 1×1 convolutions (shortcut and main).
      const int stride = (i == 0 && stage > 0) ? 2 : 1;
      if (i == 0) b.shortcut = AddConvBn(b.name + "_0", 1, stride, channels, out_channels, false);
      b.main[0] = AddConvBn(b.name + "_1", 1, stride, channels, filters, false);
      b.main[1] = AddConvBn(b.name + "_2", 3, 1, filters, filters, true);
      b.main[2] = AddConvBn(b.name + "_3", 1, 1, filters, out_channels, false);
      channels = out_channels;
      blocks_.push_back(std::move(b));
    }
  }
  predictions_kernel_ = AddVariable("predictions/kernel", {channels, config_.num_classes},
                                    VariableRole::kWeight, channels, 0.0f);
  predictions_bias_ =
      AddVariable("predictions/bias", {config_.num_classes}, VariableRole::kBias, 0, 0.0f);
  RETURN_IF_ERROR(CreateVariables());
  AddNodes();
  return Status::Ok();
}

StatusOr<std::vector<int32_t>> ResNetModel::CheckBatch(const Batch& batch) const {
  const int64_t s = config_.image_size;
  const Tensor& x = batch.inputs;
  if (x.empty() || x.dtype() != DType::kFloat32 || x.shape().rank != 4 || x.shape()[0] < 1 ||
      x.shape()[1] != s || x.shape()[2] != s || x.shape()[3] != 3) {
    return InvalidInput(scope_ + ": images must be float (batch, " + std::to_string(s) + ", " +
                        std::to_string(s) + ", 3), got " +
                        (x.empty() ? std::string("none") : x.DebugString()));
  }
  const Tensor& y = batch.labels;
  if (y.empty() || y.dtype() != DType::kInt32 || y.shape().rank != 1 ||
      y.shape()[0] != x.shape()[0]) {
    return InvalidInput(scope_ + ": labels must be int32 (" + std::to_string(x.shape()[0]) +
                        "), got " + (y.empty() ? std::string("none") : y.DebugString()));
  }
  ASSIGN_OR_RETURN(const std::vector<int32_t> labels, runtime::ToHostVector<int32_t>(device_, y));
  for (size_t i = 0; i < labels.size(); ++i) {
    if (labels[i] < 0 || labels[i] >= config_.num_classes) {
      return InvalidInput(scope_ + ": label " + std::to_string(labels[i]) + " of example " +
                          std::to_string(i) + " is outside [0, " +
                          std::to_string(config_.num_classes) + ")");
    }
  }
  return labels;
}

StatusOr<Tensor> ResNetModel::ConvBnForward(ConvBn& l, const Tensor& x) {
  l.input = x;
  ASSIGN_OR_RETURN(Tensor conv, ops::Conv2D(device_, *l.conv, x, Var(l.kernel), l.options));
  ASSIGN_OR_RETURN(l.pre_bn, ops::BiasAdd(device_, *l.bias_add, conv, Var(l.bias)));
  ASSIGN_OR_RETURN(ops::BatchNormResult bn,
                   ops::FusedBatchNorm(device_, *l.bn, l.pre_bn, Var(l.gamma), Var(l.beta),
                                       Var(l.moving_mean), Var(l.moving_variance), bn_options_));
  l.saved_mean = std::move(bn.saved_mean);
  l.saved_inv_std = std::move(bn.saved_inv_std);
  return std::move(bn.y);
}

StatusOr<Tensor> ResNetModel::ConvBnBackward(ConvBn& l, const Tensor& dy,
                                             std::vector<Gradient>& gradients) {
  ASSIGN_OR_RETURN(ops::BatchNormGradResult bn,
                   ops::FusedBatchNormGrad(device_, *l.bn_grad, dy, l.pre_bn, Var(l.gamma),
                                           l.saved_mean, l.saved_inv_std, bn_options_));
  RETURN_IF_ERROR(SetGradient(gradients, l.gamma, std::move(bn.dscale), l.bn_grad));
  RETURN_IF_ERROR(SetGradient(gradients, l.beta, std::move(bn.doffset), l.bn_grad));
  ASSIGN_OR_RETURN(Tensor dbias, ops::BiasAddGrad(device_, *l.bias_add_grad, bn.dx));
  RETURN_IF_ERROR(SetGradient(gradients, l.bias, std::move(dbias), l.bias_add_grad));
  Tensor dinput;
  if (l.input_grad != nullptr) {
    ASSIGN_OR_RETURN(dinput, ops::Conv2DBackpropInput(device_, *l.input_grad, l.input.shape(),
                                                      Var(l.kernel), bn.dx, l.options));
  }
  ASSIGN_OR_RETURN(Tensor dkernel,
                   ops::Conv2DBackpropFilter(device_, *l.filter_grad, l.input,
                                             Var(l.kernel).shape(), bn.dx, l.options));
  RETURN_IF_ERROR(SetGradient(gradients, l.kernel, std::move(dkernel), l.filter_grad));
  // Activations are dropped as soon as the backward pass is done with them (lower peak).
  l.input = l.pre_bn = l.saved_mean = l.saved_inv_std = Tensor();
  return dinput;
}

StatusOr<Tensor> ResNetModel::BlockForward(Block& b, const Tensor& x) {
  Tensor shortcut = x;
  if (b.shortcut >= 0) {
    ASSIGN_OR_RETURN(shortcut, ConvBnForward(layers_[static_cast<size_t>(b.shortcut)], x));
  }
  ASSIGN_OR_RETURN(Tensor y, ConvBnForward(layers_[static_cast<size_t>(b.main[0])], x));
  ASSIGN_OR_RETURN(b.relu1_y, ops::Relu(device_, *b.relu1, y));
  ASSIGN_OR_RETURN(y, ConvBnForward(layers_[static_cast<size_t>(b.main[1])], b.relu1_y));
  ASSIGN_OR_RETURN(b.relu2_y, ops::Relu(device_, *b.relu2, y));
  ASSIGN_OR_RETURN(y, ConvBnForward(layers_[static_cast<size_t>(b.main[2])], b.relu2_y));
  ASSIGN_OR_RETURN(Tensor sum, ops::Add(device_, *b.add, shortcut, y));
  ASSIGN_OR_RETURN(b.out_y, ops::Relu(device_, *b.out, sum));
  return b.out_y;
}

StatusOr<Tensor> ResNetModel::BlockBackward(Block& b, const Tensor& dout,
                                            std::vector<Gradient>& gradients) {
  ASSIGN_OR_RETURN(Tensor dsum, ops::ReluGrad(device_, *b.out_grad, dout, b.out_y));
  ASSIGN_OR_RETURN(Tensor d,
                   ConvBnBackward(layers_[static_cast<size_t>(b.main[2])], dsum, gradients));
  ASSIGN_OR_RETURN(d, ops::ReluGrad(device_, *b.relu2_grad, d, b.relu2_y));
  ASSIGN_OR_RETURN(d, ConvBnBackward(layers_[static_cast<size_t>(b.main[1])], d, gradients));
  ASSIGN_OR_RETURN(d, ops::ReluGrad(device_, *b.relu1_grad, d, b.relu1_y));
  ASSIGN_OR_RETURN(Tensor dmain,
                   ConvBnBackward(layers_[static_cast<size_t>(b.main[0])], d, gradients));
  Tensor dshortcut = dsum;
  if (b.shortcut >= 0) {
    ASSIGN_OR_RETURN(dshortcut,
                     ConvBnBackward(layers_[static_cast<size_t>(b.shortcut)], dsum, gradients));
  }
  b.relu1_y = b.relu2_y = b.out_y = Tensor();
  const std::array<Tensor, 2> parts = {std::move(dmain), std::move(dshortcut)};
  return ops::AddN(device_, *b.input_grad_sum, parts);
}

StatusOr<StepResult> ResNetModel::ComputeGradients(const Batch& batch, float loss_scale) {
  ASSIGN_OR_RETURN(const std::vector<int32_t> labels, CheckBatch(batch));
  const int64_t batch_size = batch.inputs.shape()[0];

  // Forward, BatchNorm in training mode (batch statistics; moving statistics updated).
  ASSIGN_OR_RETURN(Tensor padded, ops::Pad(device_, *conv1_pad_, batch.inputs, SpatialPadding(3)));
  ASSIGN_OR_RETURN(Tensor h, ConvBnForward(layers_[0], padded));
  padded = Tensor();
  ASSIGN_OR_RETURN(conv1_relu_y_, ops::Relu(device_, *conv1_relu_, h));
  ASSIGN_OR_RETURN(pool1_padded_, ops::Pad(device_, *pool1_pad_, conv1_relu_y_, SpatialPadding(1)));
  ASSIGN_OR_RETURN(h, ops::MaxPool(device_, *pool1_pool_, pool1_padded_, pool_options_));
  for (Block& b : blocks_) {
    ASSIGN_OR_RETURN(h, BlockForward(b, h));
  }
  last_block_shape_ = h.shape();
  ASSIGN_OR_RETURN(pooled_, ops::GlobalAvgPool(device_, *avg_pool_, h));
  h = Tensor();
  ASSIGN_OR_RETURN(Tensor logits,
                   ops::MatMul(device_, *predictions_matmul_, pooled_, Var(predictions_kernel_)));
  ASSIGN_OR_RETURN(logits,
                   ops::BiasAdd(device_, *predictions_bias_add_, logits, Var(predictions_bias_)));
  ASSIGN_OR_RETURN(ops::SoftmaxXentResult xent,
                   ops::SparseSoftmaxCrossEntropyWithLogits(device_, *xent_, logits, batch.labels));

  StepResult result;
  result.examples = batch_size;
  double loss_sum = 0;
  ASSIGN_OR_RETURN(const std::vector<float> losses, runtime::ToHostVector<float>(device_, xent.loss));
  for (float loss : losses) loss_sum += loss;
  // Unscaled: loss_scale only scales the gradients.
  result.loss = loss_sum / static_cast<double>(batch_size);
  const int64_t classes = logits.shape()[1];
  ASSIGN_OR_RETURN(const std::vector<float> host_logits, runtime::ToHostVector<float>(device_, logits));
  for (int64_t i = 0; i < batch_size; ++i) {
    const float* row = host_logits.data() + i * classes;
    result.correct += (std::max_element(row, row + classes) - row) == labels[static_cast<size_t>(i)];
  }

  // Backward. d(mean loss · scale)/dlogits = backprop · scale / batch.
  std::vector<Gradient> gradients(static_cast<size_t>(num_trainable_));
  ASSIGN_OR_RETURN(Tensor dlogits, ops::Scale(device_, *xent_grad_, xent.backprop,
                                              loss_scale / static_cast<float>(batch_size)));
  ASSIGN_OR_RETURN(Tensor dbias, ops::BiasAddGrad(device_, *predictions_bias_grad_, dlogits));
  RETURN_IF_ERROR(
      SetGradient(gradients, predictions_bias_, std::move(dbias), predictions_bias_grad_));
  kernels::MatMulOptions input_grad_options;
  input_grad_options.transpose_b = true;
  ASSIGN_OR_RETURN(Tensor dpooled, ops::MatMul(device_, *predictions_input_grad_, dlogits,
                                               Var(predictions_kernel_), input_grad_options));
  kernels::MatMulOptions kernel_grad_options;
  kernel_grad_options.transpose_a = true;
  ASSIGN_OR_RETURN(Tensor dkernel, ops::MatMul(device_, *predictions_kernel_grad_, pooled_, dlogits,
                                               kernel_grad_options));
  RETURN_IF_ERROR(
      SetGradient(gradients, predictions_kernel_, std::move(dkernel), predictions_kernel_grad_));
  pooled_ = Tensor();
  ASSIGN_OR_RETURN(Tensor dh,
                   ops::GlobalAvgPoolGrad(device_, *avg_pool_grad_, dpooled, last_block_shape_));
  for (auto it = blocks_.rbegin(); it != blocks_.rend(); ++it) {
    ASSIGN_OR_RETURN(dh, BlockBackward(*it, dh, gradients));
  }
  ASSIGN_OR_RETURN(dh,
                   ops::MaxPoolGrad(device_, *pool1_pool_grad_, pool1_padded_, dh, pool_options_));
  pool1_padded_ = Tensor();
  ASSIGN_OR_RETURN(dh, ops::PadGrad(device_, *pool1_pad_grad_, dh, SpatialPadding(1)));
  ASSIGN_OR_RETURN(dh, ops::ReluGrad(device_, *conv1_relu_grad_, dh, conv1_relu_y_));
  conv1_relu_y_ = Tensor();
  RETURN_IF_ERROR(ConvBnBackward(layers_[0], dh, gradients).status());
  result.gradients = std::move(gradients);
  return result;
}

Status ResNetModel::ApplyGradients(std::span<const Gradient> gradients, float learning_rate) {
  // Check everything before changing anything.
  for (const Gradient& g : gradients) {
    if (g.variable < 0 || g.variable >= num_trainable_) {
      return InvalidInput(scope_ + ": a gradient names variable " + std::to_string(g.variable) +
                          "; the trainable variables are 0.." + std::to_string(num_trainable_ - 1));
    }
    const Variable& v = variables_[static_cast<size_t>(g.variable)];
    if (g.sparse() || g.values.empty() || g.values.dtype() != DType::kFloat32 ||
        !(g.values.shape() == v.value.shape())) {
      return InvalidInput(scope_ + ": the gradient of " + v.name + " must be dense float " +
                          v.value.shape().ToString() + ", got " +
                          (g.values.empty() ? std::string("none") : g.values.DebugString()) +
                          (g.sparse() ? " (sparse)" : ""));
    }
  }
  // docs/trainers.md §3: weights decay; biases take twice the learning rate and no decay;
  // normalization parameters their own decay. TF's momentum keeps the raw gradient sum in the
  // slot and multiplies by the learning rate at each step, so a changed learning rate needs no
  // slot rescaling (Detectron rescales because its slot holds lr·grad); with a constant rate this
  // is exactly Keras' momentum.
  for (const Gradient& g : gradients) {
    const size_t i = static_cast<size_t>(g.variable);
    const Variable& v = variables_[i];
    kernels::MomentumOptions options;
    options.momentum = config_.momentum;
    float lr = learning_rate;
    switch (v.role) {
      case VariableRole::kWeight:
        options.weight_decay = config_.weight_decay;
        break;
      case VariableRole::kBias:
        lr = 2 * learning_rate;
        break;
      case VariableRole::kNormalization:
        options.weight_decay = kNormalizationDecay;
        break;
      case VariableRole::kEmbedding:
        break;
    }
    RETURN_IF_ERROR(ops::ApplyMomentum(device_, *update_nodes_[i], v.value, accumulators_[i], lr,
                                       g.values, options));
  }
  return Status::Ok();
}

std::string DepthList() {
  std::string s;
  for (int d : kDepths) s += (s.empty() ? "" : ", ") + std::to_string(d);
  return s;
}

}  // namespace

StatusOr<std::unique_ptr<Model>> MakeResNet(const runtime::Device& device,
                                            const ResNetConfig& config) {
  const auto depth = std::find(kDepths.begin(), kDepths.end(), config.depth);
  if (depth == kDepths.end()) {
    return InvalidInput("ResNet depth " + std::to_string(config.depth) +
                        " is not supported; valid depths: " + DepthList());
  }
  if (config.image_size < 32 || config.image_size % 32 != 0) {
    return InvalidInput("ResNet image size " + std::to_string(config.image_size) +
                        " must be a multiple of 32 and at least 32");
  }
  if (config.num_classes < 2) {
    return InvalidInput("ResNet needs at least 2 classes, got " +
                        std::to_string(config.num_classes));
  }
  if (!(config.weight_decay >= 0) || !std::isfinite(config.weight_decay)) {
    return InvalidInput("ResNet weight decay must be finite and >= 0, got " +
                        std::to_string(config.weight_decay));
  }
  if (!(config.momentum >= 0 && config.momentum < 1)) {
    return InvalidInput("ResNet momentum must be in [0, 1), got " +
                        std::to_string(config.momentum));
  }
  auto model = std::make_unique<ResNetModel>(
      device, config, kBlocksPerStage[static_cast<size_t>(depth - kDepths.begin())]);
  RETURN_IF_ERROR(model->Build());
  return std::unique_ptr<Model>(std::move(model));
}

}  // namespace stepscope::models
