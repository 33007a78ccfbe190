// The PTB LSTM's graph of TensorFlow-named nodes, its forward pass, hand-written backward pass
// (dropout included), gradient clipping and SGD update.
#include "trainer/models/lstm_model.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/elementwise.h"
#include "kernels/lstm.h"
#include "trainer/models/rng.h"
#include "trainer/runtime/op_scope.h"
#include "trainer/runtime/ops.h"
#include "trainer/runtime/run_kernel.h"
#include "trainer/runtime/transfers.h"

namespace stepscope::models {
namespace {

using runtime::DType;
using runtime::Node;
using runtime::OpScope;
using runtime::RunKernel;
using runtime::Scoped;
using runtime::Tensor;
namespace ops = runtime::ops;

// The scope TF's ptb_word_lm builds the training model under, and its gradient scope.
constexpr char kScope[] = "Train/Model";
constexpr char kGradients[] = "Train/Model/gradients";

// Copies `rows` rows of `width` floats between strided layouts within the device: the (B, T, H)
// b-major batch and its (B, H) time steps, [x, h] concatenations and their halves are all such
// copies. Offsets and strides in elements.
Status CopyRows(const runtime::Device& device, const Tensor& src, int64_t src_offset,
                int64_t src_stride, const Tensor& dst, int64_t dst_offset, int64_t dst_stride,
                int64_t rows, int64_t width) {
  return runtime::CopyRowsWithin(device, src, dst,
                                 {.rows = rows, .row_elements = width, .src_offset = src_offset,
                                  .src_stride = src_stride, .dst_offset = dst_offset,
                                  .dst_stride = dst_stride});
}

// The nodes of one LSTM cell at one time step, forward and backward.
struct CellNodes {
  const Node* cell = nullptr;       // LSTMBlockCell
  const Node* cell_grad = nullptr;  // .../LSTMBlockCell_t_grad/LSTMBlockCellGrad
  const Node* concat = nullptr;     // [x, h_prev] for the weight gradient
  const Node* matmul = nullptr;     // dgates · Wᵀ
  const Node* slice_x = nullptr;    // Slice: gradient to x
  const Node* slice_h = nullptr;    // Slice_1: gradient to h_prev
  const Node* matmul_w = nullptr;   // MatMul_1: [x, h_prev]ᵀ · dgates (summed over steps)
  const Node* bias_grad = nullptr;  // BiasAddGrad
  const Node* dh_addn = nullptr;    // AddN of the two gradients reaching h (null at the last step)
};

// The nodes of one dropout site (tf.nn.dropout of TF 1.x), forward and backward.
struct DropoutNodes {
  const Node* random_uniform = nullptr;  // RandomUniform: u ~ U[0, 1)
  const Node* add = nullptr;             // Add: keep_prob + u
  const Node* floor = nullptr;           // Floor: the 0/1 mask
  const Node* div = nullptr;             // RealDiv: x / keep_prob
  const Node* mul = nullptr;             // Mul: the site's output
  const Node* mul_grad = nullptr;        // Mul: dy · mask
  const Node* div_grad = nullptr;        // RealDiv: (dy · mask) / keep_prob
};

// What the backward pass needs of a cell's forward.
struct CellActivations {
  Tensor x, cs_prev, h_prev;
  Tensor i, cs, f, o, ci, co, h;
  Tensor output_mask;  // the dropout mask of h on its way up (empty without dropout)
};

// The dropout masks' random stream: its own, derived from the seed and the device's index
// (towers draw different masks, as TF's per-tower dropout ops do).
uint64_t DropoutSeed(uint64_t seed, int device_index) {
  return Rng(seed ^ 0xD6E8FEB86659FD93ull).Next() + static_cast<uint64_t>(device_index);
}

class LstmModel final : public Model {
 public:
  LstmModel(const runtime::Device& device, const LstmConfig& config)
      : device_(device), config_(config), dropout_rng_(DropoutSeed(config.seed, device.index())) {}

  Status Build();

  const runtime::Device& device() const override { return device_; }
  std::vector<Variable>& variables() override { return variables_; }
  const runtime::Graph& graph() const override { return graph_; }
  StatusOr<StepResult> ComputeGradients(const Batch& batch, float loss_scale) override;
  Status ApplyGradients(std::span<const Gradient> gradients, float learning_rate) override;
  void ResetState() override { state_cs_.clear(), state_h_.clear(); }

 private:
  // Variable order is TF's: embedding, each cell's kernel and bias, softmax_w, softmax_b.
  int kernel_var(int layer) const { return 1 + 2 * layer; }
  int bias_var(int layer) const { return 2 + 2 * layer; }
  int softmax_w_var() const { return 1 + 2 * config_.num_layers; }
  int softmax_b_var() const { return 2 + 2 * config_.num_layers; }

  StatusOr<Tensor> AddVariable(const std::string& name, const runtime::Shape& shape,
                               VariableRole role, bool zero, Rng& init);
  void BuildGraph();
  Status EnsureState();
  StatusOr<Tensor> SliceStep(const Tensor& rows_bt, int t, const Node& node);

  bool dropout() const { return config_.keep_prob < 1.0f; }
  DropoutNodes AddDropoutNodes(const std::string& scope, const std::string& input);
  // y = dropout(x) with a fresh mask from dropout_rng_ (returned in *mask for the backward).
  StatusOr<Tensor> DropoutForward(const DropoutNodes& nodes, const Tensor& x, Tensor* mask);
  // The gradient of x given the gradient of y and the forward's mask.
  StatusOr<Tensor> DropoutBackward(const DropoutNodes& nodes, const Tensor& dy, const Tensor& mask);

  const runtime::Device& device_;
  LstmConfig config_;
  std::vector<Variable> variables_;
  runtime::Graph graph_;

  // Forward nodes.
  const Node* zero_state_ = nullptr;
  const Node* embedding_lookup_ = nullptr;
  std::vector<const Node*> strided_slice_;     // [t]
  std::vector<std::vector<CellNodes>> cells_;  // [t][layer]
  // Dropout sites (only when keep_prob < 1): the embedding output, each cell's output.
  DropoutNodes embedding_dropout_;
  std::vector<std::vector<DropoutNodes>> cell_dropout_;  // [t][layer]
  const Node* concat_ = nullptr;
  const Node* logits_matmul_ = nullptr;
  const Node* logits_bias_ = nullptr;
  const Node* xent_ = nullptr;
  const Node* loss_sum_ = nullptr;
  // Backward nodes.
  const Node* xent_grad_ = nullptr;
  const Node* logits_bias_grad_ = nullptr;
  const Node* logits_matmul_grad_x_ = nullptr;
  const Node* logits_matmul_grad_w_ = nullptr;
  const Node* concat_grad_ = nullptr;
  const Node* cs_grad_zeros_ = nullptr;
  std::vector<const Node*> bias_grad_sum_;  // [layer]
  const Node* embedding_grad_ = nullptr;
  // Clipping and update nodes.
  std::vector<const Node*> l2loss_;      // [variable]
  const Node* global_norm_ = nullptr;
  const Node* clip_factor_ = nullptr;
  std::vector<const Node*> clip_mul_;    // [variable]
  const Node* embedding_update_mul_ = nullptr;
  std::vector<const Node*> update_;      // [variable]

  std::vector<Tensor> state_cs_, state_h_;  // [layer], carried across batches
  Rng dropout_rng_;
};

StatusOr<Tensor> LstmModel::AddVariable(const std::string& name, const runtime::Shape& shape,
                                        VariableRole role, bool zero, Rng& init) {
  ASSIGN_OR_RETURN(Tensor value, device_.Allocate(DType::kFloat32, shape));
  // Drawn on the host in one order whatever the device, so every device starts alike.
  std::vector<float> initial(static_cast<size_t>(value.num_elements()), 0.0f);
  if (!zero) {
    for (float& x : initial) x = init.UniformFloat(-config_.init_scale, config_.init_scale);
  }
  RETURN_IF_ERROR(runtime::CopyFromHost<float>(device_, initial, value));
  variables_.push_back(Variable{name, value, role});
  return value;
}

Status LstmModel::Build() {
  const auto& c = config_;
  if (c.num_layers < 1 || c.hidden_size < 1 || c.num_steps < 1 || c.batch_size < 1 ||
      c.vocab_size < 2) {
    return InvalidInput("LSTM config '" + c.name + "': layers, hidden size, steps and batch size "
                        "must be positive and the vocabulary at least 2 words");
  }
  if (!(c.keep_prob > 0.0f && c.keep_prob <= 1.0f)) {
    return InvalidInput("LSTM config '" + c.name + "': keep_prob " + std::to_string(c.keep_prob) +
                        " is not in (0, 1]");
  }
  Rng init(c.seed);
  const int64_t H = c.hidden_size;
  RETURN_IF_ERROR(AddVariable("Model/embedding", {c.vocab_size, H}, VariableRole::kEmbedding,
                              false, init).status());
  for (int l = 0; l < c.num_layers; ++l) {
    const std::string cell = "Model/RNN/multi_rnn_cell/cell_" + std::to_string(l) + "/lstm_cell";
    // LSTMBlockCell's kernel maps [x, h] (input size = hidden size here) to the 4 gates; its
    // bias starts at zero, as tf.contrib.rnn.LSTMBlockCell initialises it.
    RETURN_IF_ERROR(
        AddVariable(cell + "/kernel", {2 * H, 4 * H}, VariableRole::kWeight, false, init).status());
    RETURN_IF_ERROR(AddVariable(cell + "/bias", {4 * H}, VariableRole::kBias, true, init).status());
  }
  RETURN_IF_ERROR(
      AddVariable("Model/softmax_w", {H, c.vocab_size}, VariableRole::kWeight, false, init).status());
  RETURN_IF_ERROR(
      AddVariable("Model/softmax_b", {c.vocab_size}, VariableRole::kBias, false, init).status());
  BuildGraph();
  return Status::Ok();
}

void LstmModel::BuildGraph() {
  const int T = config_.num_steps, L = config_.num_layers;
  const std::string P = kScope, G = kGradients;
  auto grad_of = [&](const std::string& forward_name) { return G + "/" + forward_name; };

  zero_state_ = &graph_.AddNode(P + "/MultiRNNCellZeroState/LSTMBlockCellZeroState/zeros", "Fill");
  embedding_lookup_ = &graph_.AddNode(P + "/embedding_lookup", "GatherV2",
                                      {"Model/embedding/read", "Train/TrainInput/StridedSlice"});
  std::string inputs_name = embedding_lookup_->name;
  if (dropout()) {
    embedding_dropout_ = AddDropoutNodes(graph_.UniqueName(P + "/dropout"), inputs_name);
    inputs_name = embedding_dropout_.mul->name;
  }
  cells_.assign(static_cast<size_t>(T), std::vector<CellNodes>(static_cast<size_t>(L)));
  if (dropout()) {
    cell_dropout_.assign(static_cast<size_t>(T), std::vector<DropoutNodes>(static_cast<size_t>(L)));
  }
  // What the cell of layer l at step t hands upward: h, or h through its dropout.
  const auto output_of = [&](int t, int l) {
    return dropout() ? cell_dropout_[static_cast<size_t>(t)][static_cast<size_t>(l)].mul->name
                     : cells_[static_cast<size_t>(t)][static_cast<size_t>(l)].cell->name + ":6";
  };
  for (int t = 0; t < T; ++t) {
    strided_slice_.push_back(&graph_.AddNode(P + "/RNN/strided_slice", "StridedSlice",
                                             {inputs_name}));
    for (int l = 0; l < L; ++l) {
      const std::string x = l == 0 ? strided_slice_.back()->name : output_of(t, l - 1);
      const std::string zeros = zero_state_->name;
      const std::string cs_prev = t == 0 ? zeros : cells_[static_cast<size_t>(t - 1)][static_cast<size_t>(l)].cell->name + ":1";
      const std::string h_prev = t == 0 ? zeros : cells_[static_cast<size_t>(t - 1)][static_cast<size_t>(l)].cell->name + ":6";
      const std::string var = "Model/RNN/multi_rnn_cell/cell_" + std::to_string(l) + "/lstm_cell";
      cells_[static_cast<size_t>(t)][static_cast<size_t>(l)].cell = &graph_.AddNode(
          P + "/RNN/RNN/multi_rnn_cell/cell_" + std::to_string(l) + "/lstm_cell/LSTMBlockCell",
          "LSTMBlockCell", {x, cs_prev, h_prev, var + "/kernel/read", var + "/bias/read"});
      if (dropout()) {
        // DropoutWrapper(output_keep_prob) around the cell: its ops sit in the cell's scope.
        cell_dropout_[static_cast<size_t>(t)][static_cast<size_t>(l)] = AddDropoutNodes(
            graph_.UniqueName(P + "/RNN/RNN/multi_rnn_cell/cell_" + std::to_string(l) + "/dropout"),
            cells_[static_cast<size_t>(t)][static_cast<size_t>(l)].cell->name + ":6");
      }
    }
  }
  std::vector<std::string> top_outputs;
  for (int t = 0; t < T; ++t) top_outputs.push_back(output_of(t, L - 1));
  concat_ = &graph_.AddNode(P + "/concat", "ConcatV2", top_outputs);
  logits_matmul_ = &graph_.AddNode(P + "/xw_plus_b/MatMul", "MatMul",
                                   {P + "/Reshape", "Model/softmax_w/read"});
  logits_bias_ = &graph_.AddNode(P + "/xw_plus_b", "BiasAdd",
                                 {logits_matmul_->name, "Model/softmax_b/read"});
  xent_ = &graph_.AddNode(
      P + "/sequence_loss/SparseSoftmaxCrossEntropyWithLogits/SparseSoftmaxCrossEntropyWithLogits",
      "SparseSoftmaxCrossEntropyWithLogits", {P + "/Reshape_1", P + "/sequence_loss/Reshape_1"});
  loss_sum_ = &graph_.AddNode(P + "/Sum", "Sum", {xent_->name});

  // Backward, in the order TF's gradients() creates it.
  xent_grad_ = &graph_.AddNode(grad_of(xent_->name) + "_grad/mul", "Mul",
                               {grad_of(xent_->name) + "_grad/ExpandDims", xent_->name + ":1"});
  logits_bias_grad_ = &graph_.AddNode(grad_of(P + "/xw_plus_b_grad/BiasAddGrad"), "BiasAddGrad",
                                      {xent_grad_->name});
  logits_matmul_grad_x_ = &graph_.AddNode(grad_of(P + "/xw_plus_b/MatMul_grad/MatMul"), "MatMul",
                                          {xent_grad_->name, "Model/softmax_w/read"});
  logits_matmul_grad_w_ = &graph_.AddNode(grad_of(P + "/xw_plus_b/MatMul_grad/MatMul_1"),
                                          "MatMul", {P + "/Reshape", xent_grad_->name});
  concat_grad_ = &graph_.AddNode(grad_of(P + "/concat_grad/split"), "Split",
                                 {logits_matmul_grad_x_->name});
  cs_grad_zeros_ = &graph_.AddNode(G + "/zeros_like", "ZerosLike", {cells_.back()[0].cell->name + ":1"});
  // Each dropout site's gradient ops: y's gradient times the mask, then / keep_prob.
  const auto add_dropout_grad = [&](DropoutNodes& d, const std::string& dy) {
    d.mul_grad = &graph_.AddNode(grad_of(d.mul->name) + "_grad/Mul", "Mul", {dy, d.floor->name});
    d.div_grad = &graph_.AddNode(grad_of(d.div->name) + "_grad/RealDiv", "RealDiv",
                                 {d.mul_grad->name, d.div->inputs[1]});
  };
  for (int t = T - 1; t >= 0; --t) {
    for (int l = L - 1; l >= 0; --l) {
      CellNodes& n = cells_[static_cast<size_t>(t)][static_cast<size_t>(l)];
      const std::string g = grad_of(n.cell->name) + "_grad";
      std::string from_above =
          l == L - 1 ? concat_grad_->name + ":" + std::to_string(t)
                     : grad_of(cells_[static_cast<size_t>(t)][static_cast<size_t>(l + 1)].cell->name) + "_grad/Slice";
      if (dropout()) {
        DropoutNodes& d = cell_dropout_[static_cast<size_t>(t)][static_cast<size_t>(l)];
        add_dropout_grad(d, from_above);
        from_above = d.div_grad->name;
      }
      if (t < T - 1) {
        n.dh_addn = &graph_.AddNode(
            G + "/AddN", "AddN",
            {from_above, grad_of(cells_[static_cast<size_t>(t + 1)][static_cast<size_t>(l)].cell->name) + "_grad/Slice_1"});
      }
      n.cell_grad = &graph_.AddNode(g + "/LSTMBlockCellGrad", "LSTMBlockCellGrad",
                                    {n.cell->inputs[0], n.cell->inputs[1], n.cell->inputs[2],
                                     n.cell->inputs[3], n.cell->name + ":0", n.cell->name + ":2",
                                     n.cell->name + ":3", n.cell->name + ":4",
                                     n.cell->name + ":5"});
      n.concat = &graph_.AddNode(g + "/concat", "ConcatV2", {n.cell->inputs[0], n.cell->inputs[2]});
      n.matmul = &graph_.AddNode(g + "/MatMul", "MatMul",
                                 {n.cell_grad->name + ":1", n.cell->inputs[3]});
      n.slice_x = &graph_.AddNode(g + "/Slice", "Slice", {n.matmul->name});
      n.slice_h = &graph_.AddNode(g + "/Slice_1", "Slice", {n.matmul->name});
      n.matmul_w = &graph_.AddNode(g + "/MatMul_1", "MatMul", {n.concat->name, n.cell_grad->name + ":1"});
      n.bias_grad = &graph_.AddNode(g + "/BiasAddGrad", "BiasAddGrad", {n.cell_grad->name + ":1"});
    }
  }
  for (int l = 0; l < L; ++l) {
    std::vector<std::string> inputs;
    for (int t = T - 1; t >= 0; --t) inputs.push_back(cells_[static_cast<size_t>(t)][static_cast<size_t>(l)].bias_grad->name);
    bias_grad_sum_.push_back(&graph_.AddNode(G + "/AddN", "AddN", inputs));
  }
  embedding_grad_ = &graph_.AddNode(grad_of(P + "/RNN/strided_slice_grad/StridedSliceGrad"),
                                    "StridedSliceGrad", {cells_[0][0].slice_x->name});
  if (dropout()) add_dropout_grad(embedding_dropout_, embedding_grad_->name);

  // Global-norm clipping and the SGD update (Train/Model/GradientDescent).
  const auto gradient_name = [&](int v) -> std::string {
    if (v == 0) return dropout() ? embedding_dropout_.div_grad->name : embedding_grad_->name;
    if (v == softmax_w_var()) return logits_matmul_grad_w_->name;
    if (v == softmax_b_var()) return logits_bias_grad_->name;
    const int layer = (v - 1) / 2;
    return (v % 2 == 1) ? cells_[0][static_cast<size_t>(layer)].matmul_w->name
                        : bias_grad_sum_[static_cast<size_t>(layer)]->name;
  };
  const int V = static_cast<int>(variables_.size());
  for (int v = 0; v < V; ++v) {
    l2loss_.push_back(&graph_.AddNode(P + "/global_norm/L2Loss", "L2Loss", {gradient_name(v)}));
  }
  global_norm_ = &graph_.AddNode(P + "/global_norm/global_norm", "Sqrt", {P + "/global_norm/mul"});
  clip_factor_ = &graph_.AddNode(P + "/clip_by_global_norm/mul", "Mul",
                                 {P + "/clip_by_global_norm/mul/x", P + "/clip_by_global_norm/Minimum"});
  for (int v = 0; v < V; ++v) {
    clip_mul_.push_back(&graph_.AddNode(P + "/clip_by_global_norm/mul", "Mul",
                                        {gradient_name(v), clip_factor_->name}));
  }
  const std::string update = P + "/GradientDescent/update_";
  embedding_update_mul_ = &graph_.AddNode(update + variables_[0].name + "/mul", "Mul",
                                          {clip_mul_[0]->name, "Train/Model/Variable/read"});
  update_.push_back(&graph_.AddNode(update + variables_[0].name + "/ScatterSub", "ScatterSub",
                                    {variables_[0].name, embedding_grad_->name + "/indices",
                                     embedding_update_mul_->name}));
  for (int v = 1; v < V; ++v) {
    update_.push_back(&graph_.AddNode(update + variables_[static_cast<size_t>(v)].name + "/ApplyGradientDescent",
                                      "ApplyGradientDescent",
                                      {variables_[static_cast<size_t>(v)].name, "Train/Model/Variable/read",
                                       clip_mul_[static_cast<size_t>(v)]->name}));
  }
}

Status LstmModel::EnsureState() {
  if (!state_cs_.empty()) return Status::Ok();
  const runtime::Shape shape{config_.batch_size, config_.hidden_size};
  ASSIGN_OR_RETURN(Tensor zeros, ops::Fill(device_, *zero_state_, DType::kFloat32, shape, 0.0f));
  // The zero state is never written to: every layer can share it.
  state_cs_.assign(static_cast<size_t>(config_.num_layers), zeros);
  state_h_.assign(static_cast<size_t>(config_.num_layers), zeros);
  return Status::Ok();
}

// Rows (b, t) of a (B·T, H) tensor laid out b-major, for one t: a (B, H) tensor.
StatusOr<Tensor> LstmModel::SliceStep(const Tensor& rows_bt, int t, const Node& node) {
  const int64_t B = config_.batch_size, T = config_.num_steps, H = rows_bt.shape()[1];
  OpScope scope(device_, node);
  ASSIGN_OR_RETURN(Tensor out, device_.Allocate(DType::kFloat32, {B, H}));
  scope.Output(out);
  RETURN_IF_ERROR(CopyRows(device_, rows_bt, t * H, T * H, out, 0, H, B, H));
  return out;
}

DropoutNodes LstmModel::AddDropoutNodes(const std::string& scope, const std::string& input) {
  DropoutNodes d;
  d.random_uniform = &graph_.AddNode(scope + "/random_uniform/RandomUniform", "RandomUniform",
                                     {scope + "/Shape"});
  d.add = &graph_.AddNode(scope + "/add", "Add", {scope + "/keep_prob", d.random_uniform->name});
  d.floor = &graph_.AddNode(scope + "/Floor", "Floor", {d.add->name});
  d.div = &graph_.AddNode(scope + "/div", "RealDiv", {input, scope + "/keep_prob"});
  d.mul = &graph_.AddNode(scope + "/mul", "Mul", {d.div->name, d.floor->name});
  return d;
}

StatusOr<Tensor> LstmModel::DropoutForward(const DropoutNodes& nodes, const Tensor& x, Tensor* mask) {
  const float keep = config_.keep_prob;
  const int64_t n = x.num_elements();
  Tensor uniform, kept, scaled, y;
  {
    // TF's float RandomUniform: 23 random mantissa bits; ours takes 24 from the models' Rng,
    // drawn on the device from the Rng's state (one sequence whatever the device, and no copy
    // from the host, which on a GPU waited for the stream at every dropout).
    OpScope scope(device_, *nodes.random_uniform);
    ASSIGN_OR_RETURN(uniform, device_.Allocate(DType::kFloat32, x.shape()));
    scope.Output(uniform);
    const uint64_t state = dropout_rng_.state();
    dropout_rng_.Skip(static_cast<uint64_t>(n));
    RETURN_IF_ERROR(RunKernel(device_, [&](const auto& ctx) {
      return kernels::RandomUniform(ctx, state, uniform.view<float>());
    }));
  }
  {
    OpScope scope(device_, *nodes.add);
    ASSIGN_OR_RETURN(kept, device_.Allocate(DType::kFloat32, x.shape()));
    scope.Output(kept);
    RETURN_IF_ERROR(RunKernel(device_, [&](const auto& ctx) {
      return kernels::AddScalar(ctx, uniform.in<float>(), keep, kept.view<float>());
    }));
  }
  uniform = Tensor();
  {
    // floor(keep_prob + u) is 1 exactly when u >= 1 - keep_prob: probability keep_prob.
    OpScope scope(device_, *nodes.floor);
    ASSIGN_OR_RETURN(*mask, device_.Allocate(DType::kFloat32, x.shape()));
    scope.Output(*mask);
    RETURN_IF_ERROR(RunKernel(device_, [&](const auto& ctx) {
      return kernels::Floor(ctx, kept.in<float>(), mask->view<float>());
    }));
  }
  kept = Tensor();
  {
    OpScope scope(device_, *nodes.div);
    ASSIGN_OR_RETURN(scaled, device_.Allocate(DType::kFloat32, x.shape()));
    scope.Output(scaled);
    RETURN_IF_ERROR(RunKernel(device_, [&](const auto& ctx) {
      return kernels::DivideByScalar(ctx, x.in<float>(), keep, scaled.view<float>());
    }));
  }
  {
    OpScope scope(device_, *nodes.mul);
    ASSIGN_OR_RETURN(y, device_.Allocate(DType::kFloat32, x.shape()));
    scope.Output(y);
    RETURN_IF_ERROR(RunKernel(device_, [&](const auto& ctx) {
      return kernels::Mul(ctx, scaled.in<float>(), mask->in<float>(), y.view<float>());
    }));
  }
  return y;
}

StatusOr<Tensor> LstmModel::DropoutBackward(const DropoutNodes& nodes, const Tensor& dy,
                                            const Tensor& mask) {
  const float keep = config_.keep_prob;
  Tensor masked, dx;
  {
    OpScope scope(device_, *nodes.mul_grad);
    ASSIGN_OR_RETURN(masked, device_.Allocate(DType::kFloat32, dy.shape()));
    scope.Output(masked);
    RETURN_IF_ERROR(RunKernel(device_, [&](const auto& ctx) {
      return kernels::Mul(ctx, dy.in<float>(), mask.in<float>(), masked.view<float>());
    }));
  }
  {
    OpScope scope(device_, *nodes.div_grad);
    ASSIGN_OR_RETURN(dx, device_.Allocate(DType::kFloat32, dy.shape()));
    scope.Output(dx);
    RETURN_IF_ERROR(RunKernel(device_, [&](const auto& ctx) {
      return kernels::DivideByScalar(ctx, masked.in<float>(), keep, dx.view<float>());
    }));
  }
  return dx;
}

StatusOr<StepResult> LstmModel::ComputeGradients(const Batch& batch, float loss_scale) {
  const int T = config_.num_steps, L = config_.num_layers;
  const int64_t B = config_.batch_size, H = config_.hidden_size;
  const runtime::Shape expected{B, T};
  if (batch.inputs.dtype() != DType::kInt32 || !(batch.inputs.shape() == expected) ||
      batch.labels.dtype() != DType::kInt32 || !(batch.labels.shape() == expected)) {
    return InvalidInput("LSTM batch must be int32 word ids of shape " + expected.ToString() +
                        " (batch_size, num_steps); got inputs " + batch.inputs.DebugString() +
                        ", labels " + batch.labels.DebugString());
  }
  RETURN_IF_ERROR(EnsureState());
  kernels::LstmBlockCellOptions cell_options;
  cell_options.forget_bias = 0.0;  // ptb_word_lm builds LSTMBlockCell(forget_bias=0.0)

  if (config_.fixed_dropout_masks) dropout_rng_ = Rng(DropoutSeed(config_.seed, device_.index()));

  // ---- Forward.
  ASSIGN_OR_RETURN(Tensor embedded,
                   ops::Gather(device_, *embedding_lookup_, variables_[0].value, batch.inputs));
  Tensor embedding_mask;
  if (dropout()) {
    ASSIGN_OR_RETURN(embedded, DropoutForward(embedding_dropout_, embedded, &embedding_mask));
  }
  std::vector<std::vector<CellActivations>> acts(static_cast<size_t>(T),
                                                 std::vector<CellActivations>(static_cast<size_t>(L)));
  std::vector<Tensor> top_outputs(static_cast<size_t>(T));  // [t]: what the top layer hands up
  for (int t = 0; t < T; ++t) {
    ASSIGN_OR_RETURN(Tensor x, SliceStep(embedded, t, *strided_slice_[static_cast<size_t>(t)]));
    for (int l = 0; l < L; ++l) {
      CellActivations& a = acts[static_cast<size_t>(t)][static_cast<size_t>(l)];
      a.x = x;
      a.cs_prev = t == 0 ? state_cs_[static_cast<size_t>(l)] : acts[static_cast<size_t>(t - 1)][static_cast<size_t>(l)].cs;
      a.h_prev = t == 0 ? state_h_[static_cast<size_t>(l)] : acts[static_cast<size_t>(t - 1)][static_cast<size_t>(l)].h;
      {
        OpScope scope(device_, *cells_[static_cast<size_t>(t)][static_cast<size_t>(l)].cell);
        scope.Inputs({&a.x, &a.cs_prev, &a.h_prev, &variables_[static_cast<size_t>(kernel_var(l))].value,
                      &variables_[static_cast<size_t>(bias_var(l))].value});
        for (Tensor* out : {&a.i, &a.cs, &a.f, &a.o, &a.ci, &a.co, &a.h}) {
          ASSIGN_OR_RETURN(*out, device_.Allocate(DType::kFloat32, {B, H}));
          scope.Output(*out);
        }
        ASSIGN_OR_RETURN(Tensor gates, device_.Allocate(DType::kFloat32, {B, 4 * H}));
        kernels::LstmBlockCellInputs<float> in{a.x.in<float>(), a.cs_prev.in<float>(),
                                               a.h_prev.in<float>(),
                                               variables_[static_cast<size_t>(kernel_var(l))].value.in<float>(),
                                               variables_[static_cast<size_t>(bias_var(l))].value.in<float>()};
        kernels::LstmBlockCellOutputs<float> out{a.i.view<float>(),  a.cs.view<float>(),
                                                 a.f.view<float>(),  a.o.view<float>(),
                                                 a.ci.view<float>(), a.co.view<float>(),
                                                 a.h.view<float>()};
        RETURN_IF_ERROR(RunKernel(device_, [&](const auto& ctx) {
          return kernels::LstmBlockCell(ctx, in, out, gates.view<float>(), cell_options);
        }));
      }
      x = a.h;
      if (dropout()) {
        // Only the output going up is dropped; the state carried to step t + 1 is a.h itself.
        ASSIGN_OR_RETURN(x, DropoutForward(cell_dropout_[static_cast<size_t>(t)][static_cast<size_t>(l)],
                                           a.h, &a.output_mask));
      }
      top_outputs[static_cast<size_t>(t)] = x;
    }
  }
  // Top outputs, b-major: row b·T + t is h_t[b] (TF: reshape(concat(outputs, 1), [-1, H])).
  Tensor outputs;
  {
    OpScope scope(device_, *concat_);
    ASSIGN_OR_RETURN(outputs, device_.Allocate(DType::kFloat32, {B * T, H}));
    scope.Output(outputs);
    for (int t = 0; t < T; ++t) {
      RETURN_IF_ERROR(CopyRows(device_, top_outputs[static_cast<size_t>(t)], 0, H, outputs, t * H,
                               T * H, B, H));
    }
  }
  top_outputs.clear();
  ASSIGN_OR_RETURN(Tensor logits_mm, ops::MatMul(device_, *logits_matmul_, outputs,
                                                 variables_[static_cast<size_t>(softmax_w_var())].value));
  ASSIGN_OR_RETURN(Tensor logits, ops::BiasAdd(device_, *logits_bias_, logits_mm,
                                               variables_[static_cast<size_t>(softmax_b_var())].value));
  logits_mm = Tensor();
  ASSIGN_OR_RETURN(Tensor labels, batch.labels.Reshaped({B * T}));
  ASSIGN_OR_RETURN(ops::SoftmaxXentResult xent,
                   ops::SparseSoftmaxCrossEntropyWithLogits(device_, *xent_, logits, labels));
  logits = Tensor();
  StepResult result;
  {
    OpScope scope(device_, *loss_sum_);
    ASSIGN_OR_RETURN(const std::vector<float> loss, runtime::ToHostVector<float>(device_, xent.loss));
    double sum = 0;
    for (float l : loss) sum += l;
    result.loss = sum / static_cast<double>(B);  // sum over time of the batch mean
  }
  result.examples = B * T;
  for (int l = 0; l < L; ++l) {  // the state the next batch starts from
    state_cs_[static_cast<size_t>(l)] = acts.back()[static_cast<size_t>(l)].cs;
    state_h_[static_cast<size_t>(l)] = acts.back()[static_cast<size_t>(l)].h;
  }

  // ---- Backward.
  ASSIGN_OR_RETURN(Tensor dlogits, ops::Scale(device_, *xent_grad_, xent.backprop,
                                              loss_scale / static_cast<float>(B)));
  xent = {};
  ASSIGN_OR_RETURN(Tensor d_softmax_b, ops::BiasAddGrad(device_, *logits_bias_grad_, dlogits));
  ASSIGN_OR_RETURN(Tensor d_outputs, ops::MatMul(device_, *logits_matmul_grad_x_, dlogits,
                                                 variables_[static_cast<size_t>(softmax_w_var())].value,
                                                 {.transpose_b = true}));
  ASSIGN_OR_RETURN(Tensor d_softmax_w, ops::MatMul(device_, *logits_matmul_grad_w_, outputs, dlogits,
                                                   {.transpose_a = true}));
  dlogits = Tensor();
  std::vector<Tensor> dh_top(static_cast<size_t>(T));
  {
    OpScope scope(device_, *concat_grad_);
    for (int t = 0; t < T; ++t) {
      ASSIGN_OR_RETURN(dh_top[static_cast<size_t>(t)], device_.Allocate(DType::kFloat32, {B, H}));
      scope.Output(dh_top[static_cast<size_t>(t)]);
      RETURN_IF_ERROR(CopyRows(device_, d_outputs, t * H, T * H, dh_top[static_cast<size_t>(t)], 0,
                               H, B, H));
    }
  }
  d_outputs = Tensor();
  ASSIGN_OR_RETURN(Tensor zero_cs_grad,
                   ops::Fill(device_, *cs_grad_zeros_, DType::kFloat32, {B, H}, 0.0f));

  std::vector<Tensor> d_kernel(static_cast<size_t>(L));
  std::vector<std::vector<Tensor>> d_bias_steps(static_cast<size_t>(L));
  std::vector<Tensor> dh_next(static_cast<size_t>(L)), dcs_next(static_cast<size_t>(L), zero_cs_grad);
  std::vector<Tensor> dx_bottom(static_cast<size_t>(T));
  for (int l = 0; l < L; ++l) {
    ASSIGN_OR_RETURN(d_kernel[static_cast<size_t>(l)],
                     device_.Allocate(DType::kFloat32, variables_[static_cast<size_t>(kernel_var(l))].value.shape()));
  }
  for (int t = T - 1; t >= 0; --t) {
    Tensor dx_from_above;
    for (int l = L - 1; l >= 0; --l) {
      const CellNodes& n = cells_[static_cast<size_t>(t)][static_cast<size_t>(l)];
      CellActivations& a = acts[static_cast<size_t>(t)][static_cast<size_t>(l)];
      Tensor above = l == L - 1 ? dh_top[static_cast<size_t>(t)] : dx_from_above;
      if (dropout()) {
        ASSIGN_OR_RETURN(above, DropoutBackward(cell_dropout_[static_cast<size_t>(t)][static_cast<size_t>(l)],
                                                above, a.output_mask));
      }
      Tensor dh = above;
      if (n.dh_addn != nullptr) {
        const Tensor terms[] = {above, dh_next[static_cast<size_t>(l)]};
        ASSIGN_OR_RETURN(dh, ops::AddN(device_, *n.dh_addn, terms));
      }
      Tensor dcs_prev, dgates;
      {
        OpScope scope(device_, *n.cell_grad);
        scope.Inputs({&a.x, &a.cs_prev, &a.h_prev, &variables_[static_cast<size_t>(kernel_var(l))].value, &a.i,
                      &a.cs, &a.f, &a.o, &a.ci});
        ASSIGN_OR_RETURN(dcs_prev, device_.Allocate(DType::kFloat32, {B, H}));
        ASSIGN_OR_RETURN(dgates, device_.Allocate(DType::kFloat32, {B, 4 * H}));
        scope.Output(dcs_prev);
        scope.Output(dgates);
        kernels::LstmBlockCellGradInputs<float> in;
        in.x = a.x.in<float>();
        in.cs_prev = a.cs_prev.in<float>();
        in.h_prev = a.h_prev.in<float>();
        in.w = variables_[static_cast<size_t>(kernel_var(l))].value.in<float>();
        in.i = a.i.in<float>();
        in.f = a.f.in<float>();
        in.o = a.o.in<float>();
        in.ci = a.ci.in<float>();
        in.co = a.co.in<float>();
        in.cs_grad = dcs_next[static_cast<size_t>(l)].in<float>();
        in.h_grad = dh.in<float>();
        kernels::LstmBlockCellGradOutputs<float> out;
        out.cs_prev_grad = dcs_prev.view<float>();
        out.dgates = dgates.view<float>();
        RETURN_IF_ERROR(RunKernel(device_, [&](const auto& ctx) {
          return kernels::LstmBlockCellGrad(ctx, in, out);
        }));
      }
      Tensor xh;
      {
        OpScope scope(device_, *n.concat);
        ASSIGN_OR_RETURN(xh, device_.Allocate(DType::kFloat32, {B, 2 * H}));
        scope.Output(xh);
        RETURN_IF_ERROR(CopyRows(device_, a.x, 0, H, xh, 0, 2 * H, B, H));
        RETURN_IF_ERROR(CopyRows(device_, a.h_prev, 0, H, xh, H, 2 * H, B, H));
      }
      ASSIGN_OR_RETURN(Tensor dxh, ops::MatMul(device_, *n.matmul, dgates,
                                               variables_[static_cast<size_t>(kernel_var(l))].value,
                                               {.transpose_b = true}));
      Tensor dx, dh_prev;
      for (auto [node, dst_tensor, offset] :
           {std::tuple{n.slice_x, &dx, int64_t{0}}, std::tuple{n.slice_h, &dh_prev, H}}) {
        OpScope scope(device_, *node);
        ASSIGN_OR_RETURN(*dst_tensor, device_.Allocate(DType::kFloat32, {B, H}));
        scope.Output(*dst_tensor);
        RETURN_IF_ERROR(CopyRows(device_, dxh, offset, 2 * H, *dst_tensor, 0, H, B, H));
      }
      // The kernel's gradient is summed over steps in one buffer (TF: AddN of per-step MatMul_1).
      RETURN_IF_ERROR(ops::MatMulInto(device_, *n.matmul_w, xh, dgates, d_kernel[static_cast<size_t>(l)],
                                      {.transpose_a = true, .accumulate = t != T - 1}));
      ASSIGN_OR_RETURN(Tensor db, ops::BiasAddGrad(device_, *n.bias_grad, dgates));
      d_bias_steps[static_cast<size_t>(l)].push_back(db);
      dh_next[static_cast<size_t>(l)] = dh_prev;
      dcs_next[static_cast<size_t>(l)] = dcs_prev;
      dx_from_above = dx;
      // Free the forward activations as soon as their gradient is done.
      a = CellActivations();
    }
    dx_bottom[static_cast<size_t>(t)] = dx_from_above;
  }
  // Sparse embedding gradient: one row per looked-up word, in the ids' order (b-major).
  Tensor d_embedding;
  {
    OpScope scope(device_, *embedding_grad_);
    ASSIGN_OR_RETURN(d_embedding, device_.Allocate(DType::kFloat32, {B * T, H}));
    scope.Output(d_embedding);
    for (int t = 0; t < T; ++t) {
      RETURN_IF_ERROR(CopyRows(device_, dx_bottom[static_cast<size_t>(t)], 0, H, d_embedding,
                               t * H, T * H, B, H));
    }
  }
  const Node* embedding_gradient_producer = embedding_grad_;
  if (dropout()) {
    ASSIGN_OR_RETURN(d_embedding, DropoutBackward(embedding_dropout_, d_embedding, embedding_mask));
    embedding_gradient_producer = embedding_dropout_.div_grad;
  }
  ASSIGN_OR_RETURN(Tensor ids, batch.inputs.Reshaped({B * T}));
  result.gradients.push_back(Gradient{0, d_embedding, ids, embedding_gradient_producer});
  for (int l = 0; l < L; ++l) {
    ASSIGN_OR_RETURN(Tensor d_bias, ops::AddN(device_, *bias_grad_sum_[static_cast<size_t>(l)],
                                              d_bias_steps[static_cast<size_t>(l)]));
    result.gradients.push_back(Gradient{kernel_var(l), d_kernel[static_cast<size_t>(l)], {},
                                        cells_[0][static_cast<size_t>(l)].matmul_w});
    result.gradients.push_back(Gradient{bias_var(l), d_bias, {}, bias_grad_sum_[static_cast<size_t>(l)]});
  }
  result.gradients.push_back(Gradient{softmax_w_var(), d_softmax_w, {}, logits_matmul_grad_w_});
  result.gradients.push_back(Gradient{softmax_b_var(), d_softmax_b, {}, logits_bias_grad_});
  return result;
}

Status LstmModel::ApplyGradients(std::span<const Gradient> gradients, float learning_rate) {
  if (gradients.size() != variables_.size()) {
    return InvalidInput("LSTM ApplyGradients: expected " + std::to_string(variables_.size()) +
                        " gradients, got " + std::to_string(gradients.size()));
  }
  // Global-norm clipping (tf.clip_by_global_norm): every gradient times
  // max_norm / max(global_norm, max_norm); sparse gradients count their rows as given.
  // Every L2Loss is enqueued before the first is read: on a GPU one wait for the device, not one
  // per variable.
  std::vector<Tensor> half_squares;
  for (const Gradient& g : gradients) {
    ASSIGN_OR_RETURN(Tensor l2, ops::L2Loss(device_, *l2loss_[static_cast<size_t>(g.variable)], g.values));
    half_squares.push_back(std::move(l2));
  }
  double sum_of_squares_halves = 0;
  for (const Tensor& l2 : half_squares) {
    ASSIGN_OR_RETURN(const std::vector<float> value, runtime::ToHostVector<float>(device_, l2));
    sum_of_squares_halves += value.at(0);
  }
  double global_norm = 0;
  {
    OpScope scope(device_, *global_norm_);
    global_norm = std::sqrt(2.0 * sum_of_squares_halves);
  }
  float factor = 1.0f;
  {
    OpScope scope(device_, *clip_factor_);
    const double max_norm = config_.max_grad_norm;
    factor = static_cast<float>(max_norm / std::max(global_norm, max_norm));
  }
  if (!std::isfinite(global_norm)) {
    return Internal("LSTM gradients are not finite (global norm " + std::to_string(global_norm) +
                    "); lower --learning_rate");
  }
  for (const Gradient& g : gradients) {
    const size_t v = static_cast<size_t>(g.variable);
    ASSIGN_OR_RETURN(Tensor clipped, ops::Scale(device_, *clip_mul_[v], g.values, factor));
    if (g.sparse()) {
      ASSIGN_OR_RETURN(Tensor scaled, ops::Scale(device_, *embedding_update_mul_, clipped, learning_rate));
      RETURN_IF_ERROR(ops::ScatterSub(device_, *update_[v], variables_[v].value, g.indices, scaled, 1.0f));
    } else {
      RETURN_IF_ERROR(ops::ApplyGradientDescent(device_, *update_[v], variables_[v].value,
                                                learning_rate, clipped));
    }
  }
  return Status::Ok();
}

}  // namespace

StatusOr<LstmConfig> LstmConfigByName(const std::string& name) {
  LstmConfig c;
  c.name = name;
  if (name == "small") return c;
  if (name == "medium") {
    c.hidden_size = 650, c.num_steps = 35, c.init_scale = 0.05f, c.max_epoch = 6,
    c.max_max_epoch = 39, c.keep_prob = 0.5f, c.lr_decay = 0.8f;
    return c;
  }
  if (name == "large") {
    c.hidden_size = 1500, c.num_steps = 35, c.init_scale = 0.04f, c.max_grad_norm = 10.0f,
    c.max_epoch = 14, c.max_max_epoch = 55, c.keep_prob = 0.35f, c.lr_decay = 1.0f / 1.15f;
    return c;
  }
  return InvalidInput("unknown LSTM config '" + name + "' (expected small, medium or large)");
}

float LstmLearningRate(const LstmConfig& config, int epoch) {
  const int decays = std::max(epoch + 1 - config.max_epoch, 0);
  return config.learning_rate * std::pow(config.lr_decay, static_cast<float>(decays));
}

StatusOr<std::unique_ptr<Model>> MakeLstm(const runtime::Device& device, const LstmConfig& config) {
  auto model = std::make_unique<LstmModel>(device, config);
  RETURN_IF_ERROR(model->Build());
  return std::unique_ptr<Model>(std::move(model));
}

}  // namespace stepscope::models
