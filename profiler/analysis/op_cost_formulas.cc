// The cost formulas: FLOPs (an FMA is 2) and bytes of one op from its shapes, for TensorFlow's op
// types (our trainer's and TensorFlow's step stats) and the PyTorch profiler's aten:: ops. Where
// PyTorch counts an op itself (with_flops: mm, addmm, bmm, baddbmm, conv2d, add, mul) the formula
// here gives its figure; the per-element counts of normalisation, losses and optimizers follow
// the arithmetic of the trainer's kernels (kernels/math/) and are listed in docs/analysis.md.
#include <algorithm>
#include <array>
#include <cctype>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include "profiler/analysis/op_cost.h"

namespace stepscope::analysis {
namespace {

int64_t NumElements(const TensorShape& t) {
  int64_t n = 1;
  for (int64_t d : t.dims) {
    if (d < 0) return -1;
    n *= d;
  }
  return n;
}

// A recorded tensor, a rank-0 one (one element) included; non-tensor arguments are not `known`.
bool IsTensor(const TensorShape& t) { return t.known; }

// Bytes of one element; 0 when the dtype is not a tensor element type we know.
int64_t DtypeBytes(std::string_view dtype) {
  switch (PrecisionOfDtype(dtype)) {
    case Precision::kFp64: return 8;
    case Precision::kFp32: case Precision::kTf32: return 4;
    case Precision::kBf16: case Precision::kFp16: return 2;
    case Precision::kFp8: case Precision::kInt8: return 1;
    case Precision::kUnknown: break;
  }
  static constexpr std::array<std::pair<std::string_view, int64_t>, 12> kOthers = {{
      {"DT_INT64", 8}, {"long int", 8}, {"long", 8}, {"int64", 8}, {"s64", 8}, {"DT_INT32", 4},
      {"int", 4}, {"s32", 4}, {"DT_BOOL", 1}, {"bool", 1}, {"unsigned char", 1}, {"DT_UINT8", 1}}};
  for (const auto& [name, size] : kOthers) {
    if (dtype == name) return size;
  }
  return 0;
}

// A tensor's bytes; -1 when its size or element type is not known.
int64_t TensorBytes(const TensorShape& t) {
  const int64_t n = NumElements(t);
  const int64_t size = DtypeBytes(t.dtype);
  return n < 0 || size == 0 ? -1 : n * size;
}

// Inputs read plus outputs written; -1 when any tensor among them has no known size.
int64_t MovedBytes(const OpShapes& op, const std::vector<TensorShape>& outputs) {
  int64_t bytes = 0;
  for (const std::vector<TensorShape>* list : {&op.inputs, &outputs}) {
    for (const TensorShape& t : *list) {
      if (!IsTensor(t)) continue;  // a scalar argument, or nothing recorded for this position
      const int64_t b = TensorBytes(t);
      if (b < 0) return -1;
      bytes += b;
    }
  }
  return bytes;
}

const TensorShape* Input(const OpShapes& op, size_t k) {
  return k < op.inputs.size() && IsTensor(op.inputs[k]) && NumElements(op.inputs[k]) >= 0 ? &op.inputs[k]
                                                                                          : nullptr;
}
const TensorShape* Output(const OpShapes& op, size_t k) {
  return k < op.outputs.size() && IsTensor(op.outputs[k]) && NumElements(op.outputs[k]) >= 0 ? &op.outputs[k]
                                                                                            : nullptr;
}

// Integers in a PyTorch scalar list as written ("[2, 2]", "1"); empty when none.
std::vector<int64_t> IntList(const OpShapes& op, size_t k) {
  std::vector<int64_t> values;
  if (k >= op.attributes.size()) return values;
  const std::string& text = op.attributes[k];
  for (size_t i = 0; i < text.size();) {
    if (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '-') {
      char* end = nullptr;
      values.push_back(std::strtoll(text.c_str() + i, &end, 10));
      i = static_cast<size_t>(end - text.c_str());
    } else {
      ++i;
    }
  }
  return values;
}

// A value per spatial dimension from a PyTorch list that may give one for all.
int64_t Nth(const std::vector<int64_t>& values, size_t k, int64_t fallback) {
  if (values.empty()) return fallback;
  return k < values.size() ? values[k] : values.back();
}

// The broadcast shape of element-wise inputs (numpy rules).
TensorShape Broadcast(const OpShapes& op) {
  TensorShape out;
  out.known = false;  // until a tensor is seen
  for (const TensorShape& t : op.inputs) {
    if (!IsTensor(t)) continue;
    out.known = true;
    if (out.dtype.empty()) out.dtype = t.dtype;
    if (t.dims.size() > out.dims.size()) out.dims.insert(out.dims.begin(), t.dims.size() - out.dims.size(), 1);
    const size_t offset = out.dims.size() - t.dims.size();
    for (size_t i = 0; i < t.dims.size(); ++i) out.dims[offset + i] = std::max(out.dims[offset + i], t.dims[i]);
  }
  return out;
}

struct Formula {
  int64_t flops = -1;
  int64_t model_flops = 0;
  CostClass cost_class = CostClass::kUnknown;
  std::vector<TensorShape> outputs;  // what the formula knows of the outputs when none were recorded
  bool moves_nothing = false;        // a view or an allocation: no bytes read or written
};

Formula Matmul(int64_t flops) { return {flops, flops, CostClass::kMatmul, {}}; }
Formula Conv(int64_t flops) { return {flops, flops, CostClass::kConvolution, {}}; }
Formula PerElement(int64_t elements, int64_t per, CostClass cost_class) {
  return {elements < 0 ? -1 : elements * per, 0, cost_class, {}};
}

// An LSTM cell's work for `rows` rows of batch (times time steps), input width `in`, hidden `h`:
// the gate matmul 2*rows*(in+h)*4h, then per row `biases` bias adds of 4h, 3 sigmoids and 2 tanhs
// (5h), the new cell state f*c+i*g (3h), the output o*tanh(c) (1h) and TensorFlow's forget bias
// (1h when `forget_bias`).
Formula LstmCell(int64_t rows, int64_t in, int64_t h, int64_t biases, bool forget_bias) {
  const int64_t matmul = 2 * rows * (in + h) * 4 * h;
  const int64_t elementwise = rows * (biases * 4 * h + 5 * h + 3 * h + h + (forget_bias ? h : 0));
  return {matmul + elementwise, matmul, CostClass::kRecurrent, {}};
}

bool OneOf(std::string_view name, std::initializer_list<std::string_view> names) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// TensorFlow's op types, as our trainer and TensorFlow name them.
std::optional<Formula> TfFormula(const OpShapes& op, CostSource source) {
  const std::string_view type = op.op_type;
  const TensorShape* out = Output(op, 0);
  if (OneOf(type, {"MatMul", "_MklMatMul"})) {
    // C[M,N] = A[M,K] B[K,N]: K from A (either orientation) or B.
    if (out == nullptr || out->dims.size() != 2) return Formula{-1, 0, CostClass::kMatmul, {}};
    const int64_t m = out->dims[0], n = out->dims[1];
    int64_t k = -1;
    if (const TensorShape* a = Input(op, 0); a != nullptr && m > 0) k = NumElements(*a) / m;
    else if (const TensorShape* b = Input(op, 1); b != nullptr && n > 0) k = NumElements(*b) / n;
    return k < 0 ? Formula{-1, 0, CostClass::kMatmul, {}} : Matmul(2 * m * n * k);
  }
  if (OneOf(type, {"_FusedMatMul", "_MklFusedMatMul", "_MklNativeFusedMatMul"})) {
    // Grappler's MatMul + BiasAdd (+ activation): the product as MatMul, plus one add per output
    // element for the bias (input 2). The activation, if any, is named only in the graph's
    // `fused_ops` attribute, which step stats do not carry: not counted.
    if (out == nullptr || out->dims.size() != 2) return Formula{-1, 0, CostClass::kMatmul, {}};
    const TensorShape* a = Input(op, 0);
    const int64_t m = out->dims[0], n = out->dims[1];
    if (a == nullptr || m <= 0) return Formula{-1, 0, CostClass::kMatmul, {}};
    Formula f = Matmul(2 * m * n * (NumElements(*a) / m));
    if (op.inputs.size() > 2) f.flops += m * n;
    return f;
  }
  if (OneOf(type, {"BatchMatMul", "BatchMatMulV2", "BatchMatMulV3"})) {
    const TensorShape* a = Input(op, 0);
    if (out == nullptr || a == nullptr || out->dims.size() < 2 || a->dims.size() < 2) {
      return Formula{-1, 0, CostClass::kMatmul, {}};
    }
    const int64_t m = out->dims[out->dims.size() - 2];
    const int64_t a_last2 = a->dims[a->dims.size() - 1] * a->dims[a->dims.size() - 2];
    return m <= 0 ? Formula{-1, 0, CostClass::kMatmul, {}} : Matmul(2 * NumElements(*out) * (a_last2 / m));
  }
  // Convolutions: every output (or output gradient) element is a dot product over the filter's
  // Kh*Kw*Cin window, whatever the strides, padding and layout: 2*elements*Kh*Kw*Cin.
  // The gradients' last input is the output's gradient and Conv2DBackpropInput's filter comes
  // before it (TensorFlow writes the sizes first, our trainer leaves them out).
  const size_t last = op.inputs.empty() ? 0 : op.inputs.size() - 1;
  if (type == "Conv2D" || type == "Conv2DBackpropInput" || type == "_FusedConv2D") {
    const bool forward = type != "Conv2DBackpropInput";
    const TensorShape* filter = forward ? Input(op, 1) : last > 0 ? Input(op, last - 1) : nullptr;
    const TensorShape* grid = forward ? out : Input(op, last);  // output (gradient) [N, Ho, Wo, Cout]
    if (filter == nullptr || grid == nullptr || filter->dims.size() != 4) return Formula{-1, 0, CostClass::kConvolution, {}};
    Formula f = Conv(2 * NumElements(*grid) * filter->dims[0] * filter->dims[1] * filter->dims[2]);
    // _FusedConv2D: Conv2D + BiasAdd (input 2) (+ activation, not counted: see _FusedMatMul).
    if (type == "_FusedConv2D" && op.inputs.size() > 2) f.flops += NumElements(*grid);
    return f;
  }
  if (type == "Conv2DBackpropFilter") {
    const TensorShape* dy = Input(op, last);  // [N, Ho, Wo, Cout]; the output is the filter's gradient
    if (out == nullptr || dy == nullptr || out->dims.size() != 4) return Formula{-1, 0, CostClass::kConvolution, {}};
    return Conv(2 * NumElements(*dy) * out->dims[0] * out->dims[1] * out->dims[2]);
  }
  if (type == "LSTMBlockCell") {
    const TensorShape* x = Input(op, 0);  // [B, I]; outputs i, cs, f, o, ci, co, h: [B, H]
    if (x == nullptr || out == nullptr || x->dims.size() != 2 || out->dims.size() != 2) {
      return Formula{-1, 0, CostClass::kRecurrent, {}};
    }
    return LstmCell(x->dims[0], x->dims[1], out->dims[1], 1, true);
  }
  if (type == "LSTMBlockCellGrad") {
    // The gates' gradient from the forward's activations, per element of [B, H]: do, dcs, dci,
    // di, df, the pre-activation derivatives and dcs_prev: 16 operations; the weight and input
    // gradients are separate MatMul ops.
    const TensorShape* cs = Input(op, 1);  // cs_prev [B, H]
    return PerElement(cs == nullptr ? -1 : NumElements(*cs), 16, CostClass::kRecurrent);
  }
  if (OneOf(type, {"FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3"})) {
    // Mean (1), variance (3), scale*(x-mean)*inv_std+offset (4) per element.
    const TensorShape* x = Input(op, 0) != nullptr ? Input(op, 0) : out;
    return PerElement(x == nullptr ? -1 : NumElements(*x), 8, CostClass::kNormalization);
  }
  if (OneOf(type, {"FusedBatchNormGrad", "FusedBatchNormGradV2", "FusedBatchNormGradV3"})) {
    // sum(dy) (1), sum(dy*xhat) (4), dx (7) per element (kernels/math/batch_norm_math.h).
    const TensorShape* dy = Input(op, 0) != nullptr ? Input(op, 0) : out;
    return PerElement(dy == nullptr ? -1 : NumElements(*dy), 12, CostClass::kNormalization);
  }
  if (OneOf(type, {"SparseSoftmaxCrossEntropyWithLogits", "SoftmaxCrossEntropyWithLogits"})) {
    // Per logit: the row's max, x-max, exp, the sum, and the gradient softmax-label.
    const TensorShape* logits = Input(op, 0) != nullptr ? Input(op, 0) : Output(op, 1);
    return PerElement(logits == nullptr ? -1 : NumElements(*logits), 5, CostClass::kLoss);
  }
  // Optimizers: per parameter. The trainer's momentum also adds its weight-decay term
  // (kernels/math/optimizer_math.h); TensorFlow's does not.
  int64_t per_parameter = 0;
  if (OneOf(type, {"ApplyGradientDescent", "ResourceApplyGradientDescent"})) per_parameter = 2;
  else if (OneOf(type, {"ApplyMomentum", "ResourceApplyMomentum", "ResourceApplyKerasMomentum"})) {
    per_parameter = source == CostSource::kTrainerShapes ? 6 : 4;
  } else if (OneOf(type, {"ApplyAdam", "ResourceApplyAdam"})) per_parameter = 12;
  if (per_parameter > 0) {
    int64_t parameters = -1;  // the largest tensor among the inputs: the variable or its gradient
    for (size_t k = 0; k < op.inputs.size(); ++k) {
      if (const TensorShape* t = Input(op, k)) parameters = std::max(parameters, NumElements(*t));
    }
    if (parameters < 0 && out != nullptr) parameters = NumElements(*out);
    return PerElement(parameters, per_parameter, CostClass::kOptimizer);
  }
  if (type == "AddN") {
    int64_t n = 0;
    for (const TensorShape& t : op.inputs) n += IsTensor(t) ? 1 : 0;
    if (n == 0) n = static_cast<int64_t>(op.inputs.size());
    return PerElement(out == nullptr || n < 2 ? -1 : NumElements(*out), n - 1, CostClass::kElementwise);
  }
  // The next few as tfprof counts them (tensorflow/python/profiler/internal/flops_registry.py).
  if (type == "L2Loss") {  // sum(x^2) / 2: 3n - 1
    const TensorShape* x = Input(op, 0);
    return PerElement(x == nullptr ? -1 : 3 * NumElements(*x) - 1, 1, CostClass::kElementwise);
  }
  if (OneOf(type, {"Sum", "BiasAddGrad", "Max", "Min", "Mean"})) {
    // A reduction: one add per input element less one per output (Mean's division adds it back).
    const TensorShape* x = Input(op, 0);
    if (x == nullptr || out == nullptr) return Formula{-1, 0, CostClass::kElementwise, {}};
    return PerElement(NumElements(*x) - (type == "Mean" ? 0 : NumElements(*out)), 1, CostClass::kElementwise);
  }
  if (type == "Softmax") return PerElement(out == nullptr ? -1 : NumElements(*out), 5, CostClass::kElementwise);
  if (OneOf(type, {"ScatterSub", "ScatterAdd", "ResourceScatterSub", "ResourceScatterAdd"})) {
    // var[ids] -= updates (or +=): one operation per update element
    const TensorShape* updates = Input(op, 2);
    return PerElement(updates == nullptr ? -1 : NumElements(*updates), 1, CostClass::kOptimizer);
  }
  if (OneOf(type, {"MaxPool", "AvgPool", "MaxPoolGrad", "AvgPoolGrad"})) {
    // Pooling: one operation per input element read. tfprof counts the window's area per output
    // element, which needs the window size, an attribute the step stats do not carry.
    const TensorShape* x = Input(op, 0) != nullptr ? Input(op, 0) : out;
    return PerElement(x == nullptr ? -1 : NumElements(*x), 1, CostClass::kElementwise);
  }
  if (OneOf(type, {"Add", "AddV2", "Sub", "Mul", "RealDiv", "Div", "Maximum", "Minimum", "BiasAdd", "Relu",
                   "Relu6", "ReluGrad", "Sigmoid", "SigmoidGrad", "Tanh", "TanhGrad", "Neg", "Square", "Sqrt",
                   "Rsqrt", "Exp", "Log", "Reciprocal", "SquaredDifference", "LogSoftmax",
                   "Scale", "Pow", "Abs", "Elu", "EluGrad", "Selu", "Softplus", "GlobalAvgPool",
                   "GlobalAvgPoolGrad", "Pad", "PadGrad"})) {
    // One operation per output element, as tfprof counts element-wise ops.
    if (out == nullptr) return Formula{-1, 0, CostClass::kElementwise, {}};
    const bool moves_only = type == "Pad" || type == "PadGrad";
    return PerElement(NumElements(*out), moves_only ? 0 : 1, moves_only ? CostClass::kNoArithmetic : CostClass::kElementwise);
  }
  if (OneOf(type, {"Identity", "IdentityN", "Const", "NoOp", "Reshape", "Shape", "Squeeze", "ExpandDims",
                   "Slice", "StridedSlice", "ConcatV2", "Concat", "Split", "SplitV", "Transpose", "Cast",
                   "Fill", "ZerosLike", "OnesLike", "Pack", "Unpack", "VariableV2", "VarHandleOp",
                   "ReadVariableOp", "Assign", "AssignVariableOp", "Gather", "GatherV2", "ResourceGather",
                   "Tile", "Placeholder", "ShapeN", "_Recv", "_Send", "_Retval", "_Arg", "Snapshot", "StopGradient",
                   "UnsortedSegmentSum", "EmbeddingGrad", "StridedSliceGrad"})) {
    return Formula{0, 0, CostClass::kNoArithmetic, {}};
  }
  return std::nullopt;
}

// Convolution output size per spatial dimension (PyTorch's rule).
int64_t ConvOut(int64_t in, int64_t kernel, int64_t stride, int64_t pad, int64_t dilation) {
  if (stride <= 0) return -1;
  return (in + 2 * pad - dilation * (kernel - 1) - 1) / stride + 1;
}

// aten::conv{1,2,3}d / aten::convolution: (input, weight, bias, stride, padding, dilation, ...).
Formula AtenConvolution(const OpShapes& op) {
  const TensorShape* x = Input(op, 0);  // [N, Cin, spatial...]
  const TensorShape* w = Input(op, 1);  // [Cout, Cin/groups, kernel...]
  if (x == nullptr || w == nullptr || x->dims.size() != w->dims.size() || x->dims.size() < 3) {
    return {-1, 0, CostClass::kConvolution, {}};
  }
  // aten::convolution's 7th argument says transposed; a transposed convolution's output grid is
  // its input's (each input element scatters a window), so the window count is the input's.
  const bool transposed = (op.op_type == "aten::convolution" || op.op_type == "aten::_convolution") &&
                          op.attributes.size() > 6 && op.attributes[6] == "True";
  const std::vector<int64_t> stride = IntList(op, 3), padding = IntList(op, 4), dilation = IntList(op, 5);
  TensorShape y;
  y.dtype = x->dtype;
  y.dims = {x->dims[0], w->dims[0]};
  int64_t windows = x->dims[0];
  for (size_t d = 2; d < x->dims.size(); ++d) {
    const size_t k = d - 2;
    const int64_t o = ConvOut(x->dims[d], w->dims[d], Nth(stride, k, 1), Nth(padding, k, 0), Nth(dilation, k, 1));
    if (o < 0) return {-1, 0, CostClass::kConvolution, {}};
    y.dims.push_back(o);
    windows *= transposed ? x->dims[d] : o;
  }
  Formula f = Conv(2 * windows * NumElements(*w));
  if (!transposed) f.outputs.push_back(y);
  return f;
}

// aten::convolution_backward: (grad_output, input, weight, bias_sizes, stride, padding, dilation,
// transposed, output_padding, groups, output_mask): the input and weight gradients each cost the
// forward's matmul work, the bias gradient one add per grad_output element.
Formula AtenConvolutionBackward(const OpShapes& op) {
  const TensorShape* dy = Input(op, 0);
  const TensorShape* w = Input(op, 2);
  if (dy == nullptr || w == nullptr || dy->dims.size() < 3) return {-1, 0, CostClass::kConvolution, {}};
  std::array<bool, 3> wanted = {true, true, true};
  if (op.attributes.size() > 10 && !op.attributes[10].empty()) {
    const std::string& text = op.attributes[10];
    size_t k = 0;
    for (size_t i = 0; i < text.size() && k < 3; ++i) {
      if (text.compare(i, 4, "True") == 0) wanted[k++] = true;
      else if (text.compare(i, 5, "False") == 0) wanted[k++] = false;
    }
  }
  const int64_t one = 2 * (NumElements(*dy) / dy->dims[1]) * NumElements(*w);  // N*spatial * weight
  const int64_t matmul = (wanted[0] ? one : 0) + (wanted[1] ? one : 0);
  Formula f = Conv(matmul + (wanted[2] ? NumElements(*dy) : 0));
  f.model_flops = matmul;
  return f;
}

// aten::scaled_dot_product_attention and its CPU/GPU implementations: q [.., L, E], k [.., S, E],
// v [.., S, Ev]: Q K^T and P V, 2*L*S*(E+Ev) per batch and head, the whole score matrix counted
// (a causal mask's skipped half included), softmax left out as element-wise work.
int64_t AttentionForward(const OpShapes& op, size_t q_at) {
  const TensorShape* q = Input(op, q_at);
  const TensorShape* k = Input(op, q_at + 1);
  const TensorShape* v = Input(op, q_at + 2);
  if (q == nullptr || k == nullptr || v == nullptr || q->dims.size() < 2 || k->dims.size() < 2 ||
      v->dims.size() < 2) {
    return -1;
  }
  const int64_t l = q->dims[q->dims.size() - 2], e = q->dims.back();
  const int64_t s = k->dims[k->dims.size() - 2], ev = v->dims.back();
  const int64_t batch_heads = NumElements(*q) / (l * e);
  return 2 * batch_heads * l * s * (e + ev);
}

std::optional<Formula> AtenFormula(const OpShapes& op) {
  const std::string_view type = op.op_type;
  if (type == "aten::mm") {
    const TensorShape* a = Input(op, 0);
    const TensorShape* b = Input(op, 1);
    if (a == nullptr || b == nullptr || a->dims.size() != 2 || b->dims.size() != 2) return Formula{-1, 0, CostClass::kMatmul, {}};
    Formula f = Matmul(2 * a->dims[0] * a->dims[1] * b->dims[1]);
    f.outputs.push_back({{a->dims[0], b->dims[1]}, a->dtype, true});
    return f;
  }
  if (type == "aten::addmm") {  // (bias, a, b): PyTorch counts the product only
    const TensorShape* a = Input(op, 1);
    const TensorShape* b = Input(op, 2);
    if (a == nullptr || b == nullptr || a->dims.size() != 2 || b->dims.size() != 2) return Formula{-1, 0, CostClass::kMatmul, {}};
    Formula f = Matmul(2 * a->dims[0] * a->dims[1] * b->dims[1]);
    f.outputs.push_back({{a->dims[0], b->dims[1]}, a->dtype, true});
    return f;
  }
  if (type == "aten::bmm" || type == "aten::baddbmm") {
    const size_t first = type == "aten::bmm" ? 0 : 1;
    const TensorShape* a = Input(op, first);
    const TensorShape* b = Input(op, first + 1);
    if (a == nullptr || b == nullptr || a->dims.size() != 3 || b->dims.size() != 3) return Formula{-1, 0, CostClass::kMatmul, {}};
    Formula f = Matmul(2 * a->dims[0] * a->dims[1] * a->dims[2] * b->dims[2]);
    f.outputs.push_back({{a->dims[0], a->dims[1], b->dims[2]}, a->dtype, true});
    return f;
  }
  if (OneOf(type, {"aten::conv1d", "aten::conv2d", "aten::conv3d", "aten::convolution", "aten::_convolution"})) {
    return AtenConvolution(op);
  }
  if (type == "aten::convolution_backward") return AtenConvolutionBackward(op);
  if (OneOf(type, {"aten::scaled_dot_product_attention", "aten::_scaled_dot_product_flash_attention_for_cpu",
                   "aten::_scaled_dot_product_flash_attention", "aten::_scaled_dot_product_efficient_attention",
                   "aten::_scaled_dot_product_cudnn_attention"})) {
    const int64_t flops = AttentionForward(op, 0);
    return Formula{flops, flops < 0 ? 0 : flops, CostClass::kAttention, {}};
  }
  if (OneOf(type, {"aten::_scaled_dot_product_flash_attention_for_cpu_backward",
                   "aten::_scaled_dot_product_flash_attention_backward",
                   "aten::_scaled_dot_product_efficient_attention_backward"})) {
    // (grad_out, q, k, v, ...): dV = P^T dO, dP = dO V^T, dQ = dS K, dK = dS^T Q: twice the
    // forward's products (the score matrix that flash kernels recompute is not counted).
    const int64_t forward = AttentionForward(op, 1);
    return Formula{forward < 0 ? -1 : 2 * forward, forward < 0 ? 0 : 2 * forward, CostClass::kAttention, {}};
  }
  if (type == "aten::mkldnn_rnn_layer" || type == "aten::mkldnn_rnn_layer_backward") {
    // (input [T, B, I] (or [B, T, I]), w_ih [4H, I], w_hh [4H, H], b_ih, b_hh, hx, cx, ...).
    const TensorShape* x = Input(op, 0);
    const TensorShape* w_ih = Input(op, 1);
    const TensorShape* w_hh = Input(op, 2);
    if (x == nullptr || w_ih == nullptr || w_hh == nullptr || w_ih->dims.size() != 2 || w_hh->dims.size() != 2) {
      return Formula{-1, 0, CostClass::kRecurrent, {}};
    }
    const int64_t h = w_hh->dims[1], in = w_ih->dims[1];
    const int64_t rows = in > 0 ? NumElements(*x) / in : -1;  // time steps * batch
    // oneDNN adds the two bias vectors once (b_ih + b_hh: the aten::add it calls, 4H) and then
    // one bias per row.
    Formula f = LstmCell(rows, in, h, 1, false);
    const int64_t bias_sum = Input(op, 3) != nullptr ? 4 * h : 0;
    f.flops += bias_sum;
    if (type == "aten::mkldnn_rnn_layer_backward") {
      // The input, hidden and weight gradients: twice the forward's matmul; the gates' gradient
      // per element as TensorFlow's LSTMBlockCellGrad; the bias vectors' sum again.
      f = {2 * f.model_flops + rows * h * 16 + bias_sum, 2 * f.model_flops, CostClass::kRecurrent, {}};
    }
    return f;
  }
  if (OneOf(type, {"aten::native_batch_norm", "aten::_native_batch_norm_legit", "aten::native_layer_norm",
                   "aten::batch_norm", "aten::layer_norm", "aten::group_norm", "aten::native_group_norm"})) {
    const TensorShape* x = Input(op, 0);
    return PerElement(x == nullptr ? -1 : NumElements(*x), 8, CostClass::kNormalization);
  }
  if (OneOf(type, {"aten::native_batch_norm_backward", "aten::native_layer_norm_backward",
                   "aten::native_group_norm_backward"})) {
    const TensorShape* dy = Input(op, 0);
    return PerElement(dy == nullptr ? -1 : NumElements(*dy), 12, CostClass::kNormalization);
  }
  if (OneOf(type, {"aten::_log_softmax", "aten::_softmax", "aten::log_softmax", "aten::softmax",
                   "aten::_log_softmax_backward_data", "aten::_softmax_backward_data"})) {
    const TensorShape* x = Input(op, 0);
    return PerElement(x == nullptr ? -1 : NumElements(*x), 4, CostClass::kLoss);
  }
  if (OneOf(type, {"aten::nll_loss_forward", "aten::nll_loss_backward", "aten::nll_loss", "aten::nll_loss_nd"})) {
    const TensorShape* x = Input(op, type == "aten::nll_loss_backward" ? 1 : 0);  // [B, C]: one pick per row
    return PerElement(x == nullptr || x->dims.empty() ? -1 : x->dims[0], 1, CostClass::kLoss);
  }
  // Element-wise: one operation per output element (PyTorch's count for add and mul), two for
  // the fused multiply-adds addcmul/addcdiv/lerp.
  if (OneOf(type, {"aten::add", "aten::add_", "aten::sub", "aten::sub_", "aten::mul", "aten::mul_", "aten::div",
                   "aten::div_", "aten::relu", "aten::relu_", "aten::clamp_min", "aten::clamp_min_",
                   "aten::threshold_backward", "aten::gelu", "aten::gelu_backward", "aten::sigmoid",
                   "aten::sigmoid_backward", "aten::tanh", "aten::tanh_backward", "aten::neg", "aten::sqrt",
                   "aten::rsqrt", "aten::exp", "aten::log", "aten::pow", "aten::silu", "aten::silu_backward",
                   "aten::maximum", "aten::minimum", "aten::where", "aten::sum", "aten::mean",
                   "aten::max_pool2d_with_indices", "aten::max_pool2d_with_indices_backward",
                   "aten::adaptive_avg_pool2d", "aten::avg_pool2d", "aten::avg_pool2d_backward",
                   "aten::addcmul_", "aten::addcdiv_", "aten::lerp_", "aten::addcmul", "aten::addcdiv"})) {
    const bool fused = OneOf(type, {"aten::addcmul_", "aten::addcdiv_", "aten::lerp_", "aten::addcmul", "aten::addcdiv"});
    const bool reduces = OneOf(type, {"aten::sum", "aten::mean", "aten::max_pool2d_with_indices",
                                      "aten::adaptive_avg_pool2d", "aten::avg_pool2d"});
    // A reduction reads every input element once; the rest write every (broadcast) output element.
    const TensorShape* x = Input(op, 0);
    const TensorShape shape = reduces && x != nullptr ? *x : Broadcast(op);
    if (!IsTensor(shape)) return Formula{-1, 0, CostClass::kElementwise, {}};
    Formula f = PerElement(NumElements(shape), fused ? 2 : 1, CostClass::kElementwise);
    // An in-place op writes its first input, which MovedBytes already counts as read: written too.
    if (!reduces && type.back() != '_') f.outputs.push_back(shape);
    if (!reduces && type.back() == '_' && x != nullptr) f.outputs.push_back(*x);
    return f;
  }
  if (type.starts_with("aten::")) {
    // Ops that move or make tensors without arithmetic.
    if (OneOf(type, {"aten::view", "aten::reshape", "aten::_unsafe_view", "aten::t", "aten::transpose",
                     "aten::permute", "aten::expand", "aten::as_strided", "aten::as_strided_", "aten::empty",
                     "aten::empty_like", "aten::empty_strided", "aten::detach", "aten::unsqueeze",
                     "aten::squeeze", "aten::flatten", "aten::contiguous", "aten::clone", "aten::copy_",
                     "aten::to", "aten::_to_copy", "aten::select", "aten::slice", "aten::split", "aten::chunk",
                     "aten::unbind", "aten::narrow", "aten::resize_", "aten::alias", "aten::lift_fresh",
                     "aten::resolve_conj", "aten::resolve_neg", "aten::zero_", "aten::fill_", "aten::ones_like",
                     "aten::zeros_like", "aten::zeros", "aten::ones", "aten::stack", "aten::cat",
                     "aten::index_select", "aten::embedding", "aten::embedding_backward",
                     "aten::embedding_dense_backward", "aten::cudnn_is_acceptable", "aten::linear",
                     "aten::matmul", "aten::lstm", "aten::dropout", "aten::item", "aten::_local_scalar_dense"})) {
      // aten::linear, aten::matmul and aten::lstm do their work in the ops they call (addmm, mm,
      // bmm, mkldnn_rnn_layer), which are costed; they count as containers, not as work.
      if (OneOf(type, {"aten::linear", "aten::matmul", "aten::lstm"})) return std::nullopt;
      Formula f{0, 0, CostClass::kNoArithmetic, {}};
      f.moves_nothing = OneOf(type, {"aten::view", "aten::reshape", "aten::_unsafe_view", "aten::t", "aten::transpose",
                                     "aten::permute", "aten::expand", "aten::as_strided", "aten::as_strided_",
                                     "aten::empty", "aten::empty_like", "aten::empty_strided", "aten::detach",
                                     "aten::unsqueeze", "aten::squeeze", "aten::flatten", "aten::select",
                                     "aten::slice", "aten::split", "aten::chunk", "aten::unbind", "aten::narrow",
                                     "aten::resize_", "aten::alias", "aten::lift_fresh", "aten::resolve_conj",
                                     "aten::resolve_neg", "aten::cudnn_is_acceptable"});
      return f;
    }
  }
  return std::nullopt;
}

}  // namespace

std::string_view CostSourceName(CostSource source) {
  switch (source) {
    case CostSource::kNone: return "none";
    case CostSource::kTrainerShapes: return "trainer_shapes";
    case CostSource::kTfShapes: return "tf_shapes";
    case CostSource::kPyTorchShapes: return "pytorch_shapes";
    case CostSource::kKinetoFlops: return "kineto_flops";
    case CostSource::kXlaHloStats: return "xla_hlo_stats";
  }
  return "none";
}

std::string_view CostClassName(CostClass cost_class) {
  switch (cost_class) {
    case CostClass::kUnknown: return "unknown";
    case CostClass::kMatmul: return "matmul";
    case CostClass::kConvolution: return "convolution";
    case CostClass::kAttention: return "attention";
    case CostClass::kRecurrent: return "recurrent";
    case CostClass::kNormalization: return "normalization";
    case CostClass::kElementwise: return "elementwise";
    case CostClass::kLoss: return "loss";
    case CostClass::kOptimizer: return "optimizer";
    case CostClass::kNoArithmetic: return "no_arithmetic";
  }
  return "unknown";
}

std::string_view PrecisionName(Precision precision) {
  switch (precision) {
    case Precision::kUnknown: return "unknown";
    case Precision::kFp64: return "fp64";
    case Precision::kFp32: return "fp32";
    case Precision::kTf32: return "tf32";
    case Precision::kBf16: return "bf16";
    case Precision::kFp16: return "fp16";
    case Precision::kFp8: return "fp8";
    case Precision::kInt8: return "int8";
  }
  return "unknown";
}

Precision PrecisionOfDtype(std::string_view dtype) {
  static constexpr std::array<std::pair<std::string_view, Precision>, 24> kNames = {{
      {"DT_FLOAT", Precision::kFp32}, {"float", Precision::kFp32}, {"f32", Precision::kFp32},
      {"float32", Precision::kFp32}, {"DT_DOUBLE", Precision::kFp64}, {"double", Precision::kFp64},
      {"f64", Precision::kFp64}, {"float64", Precision::kFp64}, {"DT_HALF", Precision::kFp16},
      {"c10::Half", Precision::kFp16}, {"f16", Precision::kFp16}, {"float16", Precision::kFp16},
      {"DT_BFLOAT16", Precision::kBf16}, {"c10::BFloat16", Precision::kBf16}, {"bf16", Precision::kBf16},
      {"bfloat16", Precision::kBf16}, {"c10::Float8_e4m3fn", Precision::kFp8},
      {"c10::Float8_e5m2", Precision::kFp8}, {"f8e4m3fn", Precision::kFp8}, {"f8e5m2", Precision::kFp8},
      {"DT_INT8", Precision::kInt8}, {"signed char", Precision::kInt8}, {"s8", Precision::kInt8},
      {"int8", Precision::kInt8}}};
  for (const auto& [name, precision] : kNames) {
    if (dtype == name) return precision;
  }
  return Precision::kUnknown;
}

OpCost CostFromShapes(const OpShapes& op, CostSource source) {
  OpCost cost;
  std::optional<Formula> formula =
      source == CostSource::kPyTorchShapes ? AtenFormula(op) : TfFormula(op, source);
  if (!formula) return cost;
  cost.cost_class = formula->cost_class;
  if (formula->flops < 0) return cost;
  cost.flops = formula->flops;
  cost.model_flops = formula->model_flops;
  cost.source = source;
  // Bytes: the recorded outputs, else those the formula knows.
  const bool recorded = std::any_of(op.outputs.begin(), op.outputs.end(), [](const TensorShape& t) { return IsTensor(t); });
  cost.bytes = formula->moves_nothing ? 0 : MovedBytes(op, recorded ? op.outputs : formula->outputs);
  for (const TensorShape& t : op.inputs) {
    if (IsTensor(t) && (cost.precision = PrecisionOfDtype(t.dtype)) != Precision::kUnknown) break;
  }
  if (cost.precision == Precision::kUnknown) {
    for (const TensorShape& t : op.outputs) {
      if ((cost.precision = PrecisionOfDtype(t.dtype)) != Precision::kUnknown) break;
    }
  }
  return cost;
}

}  // namespace stepscope::analysis
