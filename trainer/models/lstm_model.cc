// The PTB LSTM's graph of TensorFlow-named nodes, its forward pass, hand-written backward pass
// (dropout included), gradient clipping and SGD update.
//
// Every node of TF's graph runs under its name, but the GPU is asked for as few operations as
// the numbers allow (a step of small ops is bound by their launches): the view ops of the
// unrolled loop (StridedSlice, ConcatV2, Split, Slice, StridedSliceGrad) hand on strided views that
// the GEMMs and cell kernels read and write where they lie, copying nothing; a dropout site is one
// kernel forward and one backward; the AddN into each cell's h gradient is summed by the cell's
// gradient kernel; the global norm is one reduction on the device that the clips read there.
// Fused and view nodes are still recorded, in TF's order, with the outputs that exist.
#include "trainer/models/lstm_model.h"

#include <algorithm>
#include <cmath>
#include <span>
#include <utility>
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

// A (maybe strided) rank-2 tensor as a kernel's dense-shaped view of its first row onwards; the
// kernel takes the row stride beside it (Tensor::rows().ld).
kernels::In<float> FirstRows(const Tensor& t) { return {t.data<float>(), t.shape()}; }

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
  Tensor x, cs_prev, h_prev;  // x and h_prev may be strided views (a step of a batch's rows)
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
  // Step t of a b-major (B·T, W) tensor: rows b·T + t, a (B, W) view T·W elements apart.
  StatusOr<Tensor> StepView(const Tensor& rows_bt, int t) const;
  // Records a view op (or one fused into a neighbour's kernel) as TF runs it, with `outputs`
  // (views into the buffers that hold them): the node is in the trace, nothing is copied.
  void RecordView(const Node& node, std::span<const Tensor> outputs) const;

  bool dropout() const { return config_.keep_prob < 1.0f; }
  DropoutNodes AddDropoutNodes(const std::string& scope, const std::string& input);
  // y = dropout(x) with a fresh mask from dropout_rng_ (returned in *mask for the backward),
  // written into `into` when given (a view: the top layer's rows of the outputs), else a new
  // tensor.
  StatusOr<Tensor> DropoutForward(const DropoutNodes& nodes, const Tensor& x, const Tensor& into,
                                  Tensor* mask);
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
  // The top outputs (B·T, H), two buffers used in turn: without dropout the top layer's last h,
  // carried to the next batch as its state, is a view into the step's buffer, which the next
  // step must not overwrite. Allocated once, so the allocator sees the same pattern every step.
  Tensor outputs_[2];
  int outputs_turn_ = 0;
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

void LstmModel::RecordView(const Node& node, std::span<const Tensor> outputs) const {
  OpScope scope(device_, node);
  for (const Tensor& t : outputs) scope.Output(t);
}

StatusOr<Tensor> LstmModel::DropoutForward(const DropoutNodes& nodes, const Tensor& x,
                                           const Tensor& into, Tensor* mask) {
  const float keep = config_.keep_prob;
  const int64_t n = x.num_elements();
  // TF's float RandomUniform: 23 random mantissa bits; ours takes 24 from the models' Rng, drawn
  // on the device from the Rng's state (one sequence whatever the device, no copy from the host).
  // The site's five ops are one kernel, run under Floor (which makes the mask, kept for the
  // backward; the output is written with it); RandomUniform, Add and RealDiv are recorded in
  // their place with no value of their own, Mul with the output.
  const uint64_t state = dropout_rng_.state();
  dropout_rng_.Skip(static_cast<uint64_t>(n));
  for (const Node* fused : {nodes.random_uniform, nodes.add}) RecordView(*fused, {});
  Tensor y = into;
  {
    OpScope scope(device_, *nodes.floor);
    ASSIGN_OR_RETURN(*mask, device_.Allocate(DType::kFloat32, x.shape()));
    scope.Output(*mask);
    if (y.empty()) {
      ASSIGN_OR_RETURN(y, device_.Allocate(DType::kFloat32, x.shape()));
    }
    RETURN_IF_ERROR(RunKernel(device_, [&](const auto& ctx) {
      return kernels::FusedDropout(ctx, state, keep, x.in_rows<float>(), mask->view<float>(),
                                   y.rows<float>());
    }));
  }
  RecordView(*nodes.div, {});
  RecordView(*nodes.mul, std::span<const Tensor>(&y, 1));
  return y;
}

StatusOr<Tensor> LstmModel::DropoutBackward(const DropoutNodes& nodes, const Tensor& dy,
                                            const Tensor& mask) {
  // Mul then RealDiv as one kernel, under RealDiv (the gradient's producer).
  RecordView(*nodes.mul_grad, {});
  OpScope scope(device_, *nodes.div_grad);
  ASSIGN_OR_RETURN(Tensor dx, device_.Allocate(DType::kFloat32, dy.shape()));
  scope.Output(dx);
  RETURN_IF_ERROR(RunKernel(device_, [&](const auto& ctx) {
    return kernels::FusedDropoutGrad(ctx, dy.in_rows<float>(), mask.in<float>(),
                                     config_.keep_prob, dx.view<float>());
  }));
  return dx;
}

StatusOr<Tensor> LstmModel::StepView(const Tensor& rows_bt, int t) const {
  const int64_t B = config_.batch_size, T = config_.num_steps, W = rows_bt.shape()[1];
  return rows_bt.RowsView(t * W, B, W, T * W);
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
    ASSIGN_OR_RETURN(embedded, DropoutForward(embedding_dropout_, embedded, {}, &embedding_mask));
  }
  // The top outputs, b-major: row b·T + t is h_t[b] (TF: reshape(concat(outputs, 1), [-1, H])).
  // The top layer writes each step's rows here where they lie, so ConcatV2 copies nothing.
  for (Tensor& buffer : outputs_) {
    if (buffer.empty()) {
      ASSIGN_OR_RETURN(buffer, device_.Allocate(DType::kFloat32, {B * T, H}));
    }
  }
  outputs_turn_ ^= 1;
  const Tensor outputs = outputs_[outputs_turn_];
  std::vector<std::vector<CellActivations>> acts(static_cast<size_t>(T),
                                                 std::vector<CellActivations>(static_cast<size_t>(L)));
  for (int t = 0; t < T; ++t) {
    // StridedSlice: step t of the embedded batch, read in place by the first layer's GEMM.
    ASSIGN_OR_RETURN(Tensor x, StepView(embedded, t));
    RecordView(*strided_slice_[static_cast<size_t>(t)], std::span<const Tensor>(&x, 1));
    ASSIGN_OR_RETURN(const Tensor top_rows, StepView(outputs, t));
    for (int l = 0; l < L; ++l) {
      const bool top = l == L - 1;
      CellActivations& a = acts[static_cast<size_t>(t)][static_cast<size_t>(l)];
      a.x = x;
      a.cs_prev = t == 0 ? state_cs_[static_cast<size_t>(l)] : acts[static_cast<size_t>(t - 1)][static_cast<size_t>(l)].cs;
      a.h_prev = t == 0 ? state_h_[static_cast<size_t>(l)] : acts[static_cast<size_t>(t - 1)][static_cast<size_t>(l)].h;
      {
        OpScope scope(device_, *cells_[static_cast<size_t>(t)][static_cast<size_t>(l)].cell);
        scope.Inputs({&a.x, &a.cs_prev, &a.h_prev, &variables_[static_cast<size_t>(kernel_var(l))].value,
                      &variables_[static_cast<size_t>(bias_var(l))].value});
        for (Tensor* out : {&a.i, &a.cs, &a.f, &a.o, &a.ci, &a.co}) {
          ASSIGN_OR_RETURN(*out, device_.Allocate(DType::kFloat32, {B, H}));
          scope.Output(*out);
        }
        // Without dropout the top layer's h is its output: written into `outputs` directly.
        if (top && !dropout()) {
          a.h = top_rows;
        } else {
          ASSIGN_OR_RETURN(a.h, device_.Allocate(DType::kFloat32, {B, H}));
        }
        scope.Output(a.h);
        ASSIGN_OR_RETURN(Tensor gates, device_.Allocate(DType::kFloat32, {B, 4 * H}));
        kernels::LstmBlockCellInputs<float> in{FirstRows(a.x), a.cs_prev.in<float>(),
                                               FirstRows(a.h_prev),
                                               variables_[static_cast<size_t>(kernel_var(l))].value.in<float>(),
                                               variables_[static_cast<size_t>(bias_var(l))].value.in<float>()};
        in.x_ld = a.x.rows<float>().ld;
        in.h_prev_ld = a.h_prev.rows<float>().ld;
        kernels::LstmBlockCellOutputs<float> out{a.i.view<float>(),  a.cs.view<float>(),
                                                 a.f.view<float>(),  a.o.view<float>(),
                                                 a.ci.view<float>(), a.co.view<float>(),
                                                 {a.h.data<float>(), {B, H}}};
        out.h_ld = a.h.rows<float>().ld;
        RETURN_IF_ERROR(RunKernel(device_, [&](const auto& ctx) {
          return kernels::LstmBlockCell(ctx, in, out, gates.view<float>(), cell_options);
        }));
      }
      x = a.h;
      if (dropout()) {
        // Only the output going up is dropped; the state carried to step t + 1 is a.h itself.
        ASSIGN_OR_RETURN(x, DropoutForward(cell_dropout_[static_cast<size_t>(t)][static_cast<size_t>(l)],
                                           a.h, top ? top_rows : Tensor(), &a.output_mask));
      }
    }
  }
  RecordView(*concat_, std::span<const Tensor>(&outputs, 1));
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
    // The step's one read into the host: the per-word losses the log reports.
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
  // Split: each step's rows of d_outputs, read in place by the top layer's gradient.
  std::vector<Tensor> dh_top(static_cast<size_t>(T));
  for (int t = 0; t < T; ++t) {
    ASSIGN_OR_RETURN(dh_top[static_cast<size_t>(t)], StepView(d_outputs, t));
  }
  RecordView(*concat_grad_, dh_top);
  ASSIGN_OR_RETURN(Tensor zero_cs_grad,
                   ops::Fill(device_, *cs_grad_zeros_, DType::kFloat32, {B, H}, 0.0f));
  // The sparse embedding gradient, one row per looked-up word in the ids' order (b-major): the
  // first layer's x gradient at step t is written into its rows (StridedSliceGrad copies nothing).
  ASSIGN_OR_RETURN(Tensor d_embedding, device_.Allocate(DType::kFloat32, {B * T, H}));

  std::vector<Tensor> d_kernel(static_cast<size_t>(L));
  std::vector<std::vector<Tensor>> d_bias_steps(static_cast<size_t>(L));
  std::vector<Tensor> dh_next(static_cast<size_t>(L)), dcs_next(static_cast<size_t>(L), zero_cs_grad);
  for (int l = 0; l < L; ++l) {
    ASSIGN_OR_RETURN(d_kernel[static_cast<size_t>(l)],
                     device_.Allocate(DType::kFloat32, variables_[static_cast<size_t>(kernel_var(l))].value.shape()));
  }
  for (int t = T - 1; t >= 0; --t) {
    Tensor dx_from_above;
    for (int l = L - 1; l >= 0; --l) {
      const CellNodes& n = cells_[static_cast<size_t>(t)][static_cast<size_t>(l)];
      CellActivations& a = acts[static_cast<size_t>(t)][static_cast<size_t>(l)];
      const Tensor& w = variables_[static_cast<size_t>(kernel_var(l))].value;
      Tensor above = l == L - 1 ? dh_top[static_cast<size_t>(t)] : dx_from_above;
      if (dropout()) {
        ASSIGN_OR_RETURN(above, DropoutBackward(cell_dropout_[static_cast<size_t>(t)][static_cast<size_t>(l)],
                                                above, a.output_mask));
      }
      // AddN of the gradients reaching h from above and from step t + 1: summed by the cell's
      // gradient kernel as it reads them (the same addition, no kernel or buffer of its own).
      if (n.dh_addn != nullptr) RecordView(*n.dh_addn, {});
      Tensor dcs_prev, dgates;
      {
        OpScope scope(device_, *n.cell_grad);
        scope.Inputs({&a.x, &a.cs_prev, &a.h_prev, &w, &a.i, &a.cs, &a.f, &a.o, &a.ci});
        ASSIGN_OR_RETURN(dcs_prev, device_.Allocate(DType::kFloat32, {B, H}));
        ASSIGN_OR_RETURN(dgates, device_.Allocate(DType::kFloat32, {B, 4 * H}));
        scope.Output(dcs_prev);
        scope.Output(dgates);
        kernels::LstmBlockCellGradInputs<float> in;
        in.x = FirstRows(a.x);  // shapes only: the weight gradient is MatMul_1's below
        in.cs_prev = a.cs_prev.in<float>();
        in.h_prev = FirstRows(a.h_prev);
        in.w = w.in<float>();
        in.i = a.i.in<float>();
        in.f = a.f.in<float>();
        in.o = a.o.in<float>();
        in.ci = a.ci.in<float>();
        in.co = a.co.in<float>();
        in.cs_grad = dcs_next[static_cast<size_t>(l)].in<float>();
        in.h_grad = FirstRows(above);
        in.h_grad_ld = above.rows<float>().ld;
        if (n.dh_addn != nullptr) {
          const Tensor& recurrent = dh_next[static_cast<size_t>(l)];
          in.h_grad_recurrent = FirstRows(recurrent);
          in.h_grad_recurrent_ld = recurrent.rows<float>().ld;
        }
        kernels::LstmBlockCellGradOutputs<float> out;
        out.cs_prev_grad = dcs_prev.view<float>();
        out.dgates = dgates.view<float>();
        RETURN_IF_ERROR(RunKernel(device_, [&](const auto& ctx) {
          return kernels::LstmBlockCellGrad(ctx, in, out);
        }));
      }
      // ConcatV2 of [x, h_prev] for the weight gradient: MatMul_1 reads the two where they lie.
      RecordView(*n.concat, {});
      // dgates · wᵀ = [dx, dh_prev] (B, 2H), and Slice and Slice_1 are its halves, read where
      // they lie. The first layer's dx goes to its step's rows of the embedding gradient: there
      // the product is two GEMMs, one per half of w's rows.
      Tensor dx, dh_prev;
      {
        OpScope scope(device_, *n.matmul);
        if (l == 0) {
          ASSIGN_OR_RETURN(dx, StepView(d_embedding, t));
          ASSIGN_OR_RETURN(dh_prev, device_.Allocate(DType::kFloat32, {B, H}));
          scope.Output(dx);
          scope.Output(dh_prev);
          for (const auto& [grad, first_row] : {std::pair{&dx, int64_t{0}}, std::pair{&dh_prev, H}}) {
            const kernels::StridedRows<const float> w_rows(w.data<float>() + first_row * 4 * H, H,
                                                           4 * H, 4 * H);
            const kernels::StridedRows<float> grad_rows = grad->rows<float>();
            RETURN_IF_ERROR(RunKernel(device_, [&](const auto& ctx) {
              return kernels::MatMulStrided(ctx, dgates.in_rows<float>(), w_rows, grad_rows,
                                            {.transpose_b = true});
            }));
          }
        } else {
          ASSIGN_OR_RETURN(Tensor dxh, device_.Allocate(DType::kFloat32, {B, 2 * H}));
          scope.Output(dxh);
          RETURN_IF_ERROR(RunKernel(device_, [&](const auto& ctx) {
            return kernels::MatMul(ctx, dgates.in<float>(), w.in<float>(), dxh.view<float>(),
                                   {.transpose_b = true});
          }));
          ASSIGN_OR_RETURN(dx, dxh.RowsView(0, B, H, 2 * H));
          ASSIGN_OR_RETURN(dh_prev, dxh.RowsView(H, B, H, 2 * H));
        }
      }
      RecordView(*n.slice_x, std::span<const Tensor>(&dx, 1));
      RecordView(*n.slice_h, std::span<const Tensor>(&dh_prev, 1));
      // The kernel's gradient is summed over steps in one buffer (TF: AddN of per-step MatMul_1):
      // [x, h_prev]ᵀ · dgates as x's and h_prev's products into the two halves of its rows.
      {
        OpScope scope(device_, *n.matmul_w);
        const Tensor& dw = d_kernel[static_cast<size_t>(l)];
        scope.Output(dw);
        const kernels::MatMulOptions summed{.transpose_a = true, .accumulate = t != T - 1};
        for (const auto& [input, first_row] : {std::pair{&a.x, int64_t{0}}, std::pair{&a.h_prev, H}}) {
          const kernels::StridedRows<float> dw_rows(dw.data<float>() + first_row * 4 * H, H, 4 * H,
                                                    4 * H);
          const kernels::StridedRows<const float> input_rows = input->in_rows<float>();
          RETURN_IF_ERROR(RunKernel(device_, [&](const auto& ctx) {
            return kernels::MatMulStrided(ctx, input_rows, dgates.in_rows<float>(), dw_rows,
                                          summed);
          }));
        }
      }
      ASSIGN_OR_RETURN(Tensor db, ops::BiasAddGrad(device_, *n.bias_grad, dgates));
      d_bias_steps[static_cast<size_t>(l)].push_back(db);
      dh_next[static_cast<size_t>(l)] = dh_prev;
      dcs_next[static_cast<size_t>(l)] = dcs_prev;
      dx_from_above = dx;
      // Free the forward activations as soon as their gradient is done.
      a = CellActivations();
    }
  }
  RecordView(*embedding_grad_, std::span<const Tensor>(&d_embedding, 1));
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
  // max_norm / max(global_norm, max_norm); sparse gradients count their rows as given. The norm
  // is one reduction over every gradient on the device (each L2Loss node recorded, its sum part
  // of that reduction), and each clip reads it there: no read into the host. A gradient that is
  // not finite makes the weights, and so the next step's loss, not finite, which stops the run.
  std::vector<kernels::In<float>> values;
  for (const Gradient& g : gradients) {
    RecordView(*l2loss_[static_cast<size_t>(g.variable)], {});
    values.push_back(g.values.in<float>());
  }
  Tensor global_norm;
  {
    OpScope scope(device_, *global_norm_);
    ASSIGN_OR_RETURN(global_norm, device_.Allocate(DType::kFloat32, {}));
    scope.Output(global_norm);
    RETURN_IF_ERROR(RunKernel(device_, [&](const auto& ctx) {
      return kernels::GlobalNorm(ctx, std::span<const kernels::In<float>>(values),
                                 global_norm.view<float>());
    }));
  }
  RecordView(*clip_factor_, {});  // max_norm / max(norm, max_norm), computed by each clip
  const float max_norm = config_.max_grad_norm;
  for (const Gradient& g : gradients) {
    const size_t v = static_cast<size_t>(g.variable);
    Tensor clipped;
    {
      OpScope scope(device_, *clip_mul_[v]);
      scope.Inputs({&g.values, &global_norm});
      ASSIGN_OR_RETURN(clipped, device_.Allocate(DType::kFloat32, g.values.shape()));
      scope.Output(clipped);
      RETURN_IF_ERROR(RunKernel(device_, [&](const auto& ctx) {
        return kernels::ClipByNorm(ctx, g.values.in<float>(), global_norm.in<float>(), max_norm,
                                   clipped.view<float>());
      }));
    }
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
