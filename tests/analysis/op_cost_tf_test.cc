// The op cost model on a real TensorFlow RunMetadata with its graphs
// (tests/data/tf_run_metadata/tf_convnet_train_step.pb.gz, written by make_tf_flops_fixture.py):
// our FLOPs per op against tfprof's float_ops on the same run, equal where the two count the same
// arithmetic and apart, by tfprof's own approximation, where they do not; resource variables'
// shapes taken from the graphs; a trainer step exported to Chrome JSON costed as the original.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "profiler/analysis/op_cost.h"
#include "profiler/formats/chrome_json/chrome_json_writer.h"
#include "profiler/formats/reader.h"
#include "profiler/trace/slice_details.h"
#include "test_util.h"

namespace stepscope::analysis {
namespace {

TensorShape TfFloat(std::vector<int64_t> dims) { return {std::move(dims), "DT_FLOAT", true}; }

trace::Trace ReadConvNet() {
  auto read = trace::ReadTrace(stepscope::testing::DataPath("tf_run_metadata/tf_convnet_train_step.pb.gz"));
  EXPECT_TRUE(read.ok()) << read.status().message();
  return std::move(read).value();
}

// tfprof's float_ops by node: "node<TAB>op type<TAB>float_ops" lines after a comment.
std::map<std::string, int64_t> TfprofFloatOps() {
  std::ifstream in(stepscope::testing::DataPath("tf_run_metadata/tf_convnet_train_step.tfprof.tsv"));
  std::map<std::string, int64_t> flops;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string node, type;
    int64_t value = -1;
    std::getline(fields, node, '\t');
    std::getline(fields, type, '\t');
    fields >> value;
    flops[node] = value;
  }
  return flops;
}

// Our cost of every op slice, by node name (the step runs each node once).
std::map<std::string, OpCost> OursByNode(const trace::Trace& trace) {
  std::map<std::string, OpCost> ours;
  for (uint32_t i = 0; i < trace.slices().size(); ++i) {
    if (trace.slices()[i].kind != trace::SliceKind::kOp) continue;
    ours[std::string(trace.str(trace.slice_name(trace.slices()[i])))] = CostOfSlice(trace, i);
  }
  return ours;
}

TEST(OpCostTfprof, OurFlopsEqualTfprofsWhereBothCountTheSameArithmetic) {
  const trace::Trace trace = ReadConvNet();
  const std::map<std::string, int64_t> tfprof = TfprofFloatOps();
  ASSERT_EQ(tfprof.size(), 25u);
  const std::map<std::string, OpCost> ours = OursByNode(trace);
  // Where tfprof approximates: a strided convolution's gradients as 2 * (the input's elements) *
  // Kh*Kw*Cout / (stride_h*stride_w), which counts windows the stride skips (conv2: 3x3, 8 -> 16,
  // stride 2, VALID, 16x16 -> 7x7); we count every output gradient's window once, as the
  // forward does, 2 * N*Ho*Wo*Cout * Kh*Kw*Cin. A max pool's gradient as the window area per
  // output plus one per output; we count one per input element.
  const int64_t conv2_tfprof = 2 * (4 * 16 * 16 * 8) * (3 * 3 * 16) / (2 * 2);
  const int64_t conv2_exact = 2 * (4 * 7 * 7 * 16) * (3 * 3 * 8);
  const std::map<std::string, std::pair<int64_t, int64_t>> differences = {  // node: (tfprof, ours)
      {"gradients/conv2/Conv2D_grad/Conv2DBackpropInput", {conv2_tfprof, conv2_exact}},
      {"gradients/conv2/Conv2D_grad/Conv2DBackpropFilter", {conv2_tfprof, conv2_exact}},
      {"gradients/MaxPool2d_grad/MaxPoolGrad", {2 * 2 * (4 * 16 * 16 * 8) + 4 * 16 * 16 * 8, 4 * 32 * 32 * 8}},
  };
  // tfprof counts graph nodes the step did not run: the initializers, the input image's gradient
  // (pruned) and a division constant folding removed.
  const std::set<std::string> not_run_expected = {"gradients/conv1/Conv2D_grad/Conv2DBackpropInput",
                                                  "gradients/Mean_grad/truediv"};
  int equal = 0;
  std::set<std::string> not_run;
  for (const auto& [node, flops] : tfprof) {
    SCOPED_TRACE(node);
    const auto it = ours.find(node);
    if (it == ours.end()) {
      if (node.find("/Initializer/") == std::string::npos) not_run.insert(node);
      continue;
    }
    EXPECT_EQ(it->second.source, CostSource::kTfShapes);
    if (const auto d = differences.find(node); d != differences.end()) {
      EXPECT_EQ(flops, d->second.first);
      EXPECT_EQ(it->second.flops, d->second.second);
      continue;
    }
    EXPECT_EQ(it->second.flops, flops);
    ++equal;
  }
  EXPECT_EQ(not_run, not_run_expected);
  // Conv2D x2, conv1's filter gradient, MatMul x3, BiasAdd, BiasAddGrad, MaxPool, AddV2, Mul,
  // Sum, Mean, Softmax.
  EXPECT_EQ(equal, 14);
  // conv1's gradients at stride 1 with SAME padding: tfprof's approximation is exact there.
  EXPECT_EQ(ours.at("gradients/conv1/Conv2D_grad/Conv2DBackpropFilter").flops, 2 * (4 * 32 * 32 * 8) * (5 * 5 * 3));
}

TEST(OpCostTfprof, EveryOpOfTheStepIsCostedTheVariablesFromTheGraphs) {
  const trace::Trace trace = ReadConvNet();
  const OpCostReport report = ComputeOpCosts(trace);
  EXPECT_TRUE(report.has_shapes);
  EXPECT_TRUE(report.unknown_ops.empty()) << report.unknown_ops.front().op_type;
  // ResourceApplyMomentum(var, accum, lr, grad, momentum) records no output and takes the
  // variable and its accumulator as handles: their shapes are the VarHandleOps' attributes.
  // 4 FLOPs per parameter (accum = m*accum + g; var -= lr*accum); bytes: var, accum, grad and
  // the two scalars read.
  struct Variable {
    int64_t n;         // parameters
    std::string read;  // the ReadVariableOp that hands its value to the forward
  };
  const std::map<std::string, Variable> parameters = {
      {"conv1/w", {5 * 5 * 3 * 8, "conv1/Conv2D"}}, {"conv1/b", {8, "conv1/BiasAdd"}},
      {"conv2/w", {3 * 3 * 8 * 16, "conv2/Conv2D"}}, {"dense/w", {784 * 10, "dense/MatMul"}},
      {"dense/b", {10, "dense/add"}}};
  const std::map<std::string, OpCost> ours = OursByNode(trace);
  for (const auto& [variable, v] : parameters) {
    const int64_t n = v.n;
    SCOPED_TRACE(variable);
    const OpCost& update = ours.at("Momentum/update_" + variable + "/ResourceApplyMomentum");
    EXPECT_EQ(update.flops, 4 * n);
    EXPECT_EQ(update.cost_class, CostClass::kOptimizer);
    EXPECT_EQ(update.bytes, 3 * n * 4 + 2 * 4);
    // Reading the variable: its value in, its value out.
    EXPECT_EQ(ours.at(v.read + "/ReadVariableOp").bytes, 2 * n * 4);
  }
  // The graphs' tensors as the reader gives them.
  trace::DetailReader reader(trace, trace::kDetailOutputs);
  std::map<std::string, trace::GraphTensor> tensors;
  for (trace::GraphTensor& t : reader.GraphTensors()) {
    if (t.slot == 0) tensors[t.producer] = t;
  }
  ASSERT_TRUE(tensors.count("conv2/w"));
  EXPECT_TRUE(tensors.at("conv2/w").variable);
  EXPECT_EQ(tensors.at("conv2/w").dtype, "DT_FLOAT");
  EXPECT_EQ(tensors.at("conv2/w").shape, (std::vector<int64_t>{3, 3, 8, 16}));
  ASSERT_TRUE(tensors.count("conv2/Conv2D"));
  EXPECT_FALSE(tensors.at("conv2/Conv2D").variable);
  EXPECT_EQ(tensors.at("conv2/Conv2D").shape, (std::vector<int64_t>{4, 7, 7, 16}));
}

TEST(OpCostTensorFlow, ResourceUpdatesAreCostedByTheirInputs) {
  // An embedding's sparse update: one add per element of `updates` [ids, width], whatever the
  // handle says.
  const TensorShape handle{{}, "DT_RESOURCE", true};
  const TensorShape ids{{20}, "DT_INT32", true};
  const TensorShape updates{{20, 200}, "DT_FLOAT", true};
  const OpCost scatter = CostFromShapes(OpShapes{"ResourceScatterAdd", {handle, ids, updates}, {}, {}}, CostSource::kTfShapes);
  EXPECT_EQ(scatter.flops, 20 * 200);
  EXPECT_EQ(scatter.cost_class, CostClass::kOptimizer);
  // TensorFlow's own LSTM step on the CPU (resource variables, no graphs): the updates record no
  // output, and are costed from their inputs' producers; every op has a cost.
  auto read = trace::ReadTrace(stepscope::testing::DataPath("tf_run_metadata/lstm_lm_step.pb.gz"));
  ASSERT_TRUE(read.ok()) << read.status().message();
  const OpCostReport report = ComputeOpCosts(*read);
  EXPECT_TRUE(report.unknown_ops.empty()) << report.unknown_ops.front().op_type;
  int64_t updates_flops = 0, updates_costed = 0;
  for (const OpCost& c : report.costs) {
    if (read->str(read->slice_op_type(read->slices()[c.slice])) != "ResourceApplyGradientDescent") continue;
    EXPECT_GT(c.flops, 0);
    updates_flops += c.flops;
    ++updates_costed;
  }
  // 2 FLOPs per parameter of the two LSTM layers (kernel [2H, 4H], bias 4H) and the softmax
  // (weights [H, V], bias V), H = 200, V = 2,000; the embedding is the scatter's: 20x20 ids of
  // width H.
  const int64_t h = 200, v = 2000;
  EXPECT_EQ(updates_costed, 6);
  EXPECT_EQ(updates_flops, 2 * (2 * (2 * h * 4 * h + 4 * h) + h * v + v));
  int64_t scatter_flops = -1;
  for (const OpCost& c : report.costs) {
    if (read->str(read->slice_op_type(read->slices()[c.slice])) == "ResourceScatterAdd") scatter_flops = c.flops;
  }
  EXPECT_EQ(scatter_flops, 20 * 20 * h);
}

TEST(OpCostExport, ATrainerStepExportedToChromeJsonKeepsItsShapesAndCosts) {
  // stepscope-train's ResNet-50 step (batch 2, 32x32) as `convert` writes it to JSON: each op's
  // `Input Dims`/`Input type` and `Output Dims`/`Output type`, and the producer, so the trainer's
  // own formulas apply. Every op the trainer recorded its inputs for costs what it did in the
  // step stats; AddN, whose inputs the trainer names but does not describe (their shapes were
  // their producers' outputs), is listed unknown.
  auto original = trace::ReadTrace(stepscope::testing::DataPath("op_cost/trainer_resnet50_b2_32px_step2.pb.gz"));
  ASSERT_TRUE(original.ok()) << original.status().message();
  auto exported = trace::ReadTraceFromBytes(trace::ExportPerfettoJson(*original), "resnet50.json");
  ASSERT_TRUE(exported.ok()) << exported.status().message();
  EXPECT_EQ(exported->step_info().producer, original->step_info().producer);
  const OpCostReport before = ComputeOpCosts(*original);
  const OpCostReport after = ComputeOpCosts(*exported);
  EXPECT_TRUE(after.has_shapes);
  // By node name (the JSON keeps it as the `name` arg; the slice is named by its op type).
  auto by_node = [](const trace::Trace& trace, const OpCostReport& report, bool json) {
    std::map<std::string, OpCost> costs;
    for (const OpCost& c : report.costs) {
      std::string node(trace.str(trace.slice_name(trace.slices()[c.slice])));
      if (json) {
        for (const trace::SliceArg& arg : trace.slice_args(c.slice)) {
          if (trace.str(arg.key) == "name") node = std::string(trace.str(arg.value));
        }
      }
      OpCost cost = c;
      cost.slice = 0;
      costs[node] = cost;
    }
    return costs;
  };
  const std::map<std::string, OpCost> ours_before = by_node(*original, before, false);
  const std::map<std::string, OpCost> ours_after = by_node(*exported, after, true);
  int64_t model_before = 0, model_after = 0, add_n = 0;
  for (const auto& [node, cost] : ours_before) {
    SCOPED_TRACE(node);
    model_before += cost.model_flops;
    const auto it = ours_after.find(node);
    if (it == ours_after.end()) {
      EXPECT_NE(node.find("AddN"), std::string::npos);
      ++add_n;
      continue;
    }
    EXPECT_EQ(it->second, cost);
    model_after += it->second.model_flops;
  }
  EXPECT_EQ(ours_after.size() + add_n, ours_before.size());
  EXPECT_EQ(model_after, model_before);
  EXPECT_GT(model_after, 0);
  ASSERT_EQ(after.unknown_ops.size(), 1u);
  EXPECT_EQ(after.unknown_ops[0].op_type, "AddN");
  EXPECT_EQ(after.unknown_ops[0].count, add_n);
}

TEST(OpCostTensorFlow, GrapplersFusedMatMulAndConvCountTheProductAndTheBias) {
  // [20, 400] x [400, 800] + bias [800]: 2*20*800*400 + 20*800.
  const OpCost mm = CostFromShapes(OpShapes{"_MklNativeFusedMatMul", {TfFloat({20, 400}), TfFloat({400, 800}), TfFloat({800})},
                                            {TfFloat({20, 800})}, {}},
                                   CostSource::kTfShapes);
  EXPECT_EQ(mm.flops, 2 * 20 * 800 * 400 + 20 * 800);
  EXPECT_EQ(mm.model_flops, 2 * 20 * 800 * 400);
  EXPECT_EQ(mm.cost_class, CostClass::kMatmul);
  // conv 5x5x3 -> 8 at 32x32, batch 4, + bias.
  const OpCost conv = CostFromShapes(OpShapes{"_FusedConv2D", {TfFloat({4, 32, 32, 3}), TfFloat({5, 5, 3, 8}), TfFloat({8})},
                                              {TfFloat({4, 32, 32, 8})}, {}},
                                     CostSource::kTfShapes);
  EXPECT_EQ(conv.model_flops, 2 * (4 * 32 * 32 * 8) * (5 * 5 * 3));
  EXPECT_EQ(conv.flops, conv.model_flops + 4 * 32 * 32 * 8);
  // The LSTM language model's step (H = 200, V = 2,000, batch 20, 20 steps, 2 layers): the
  // forward's 40 fused cell matmuls [20, 2H] x [2H, 4H] and the softmax's [400, H] x [H, V], and
  // the backward's two gradients of each: model FLOPs = 3 x the forward's.
  auto read = trace::ReadTrace(stepscope::testing::DataPath("tf_run_metadata/lstm_lm_step.pb.gz"));
  ASSERT_TRUE(read.ok()) << read.status().message();
  const OpCostReport report = ComputeOpCosts(*read);
  int64_t model = 0;
  for (const OpCost& c : report.costs) model += c.model_flops;
  const int64_t h = 200, v = 2000, b = 20, t = 20, layers = 2;
  EXPECT_EQ(model, 3 * (layers * t * 2 * b * (2 * h) * (4 * h) + 2 * (b * t) * h * v));
}

}  // namespace
}  // namespace stepscope::analysis
