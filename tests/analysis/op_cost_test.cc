// The op cost model (analysis/op_cost.h): each formula against figures computed by hand, PyTorch's
// own flop counts on real traces it wrote (tests/data/op_cost), ResNet-50's forward against the
// analytic count from its layer shapes, and traces without shapes saying so.
#include "profiler/analysis/op_cost.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "profiler/formats/reader.h"
#include "profiler/trace/slice_details.h"
#include "test_util.h"

namespace stepscope::analysis {
namespace {

TensorShape F32(std::vector<int64_t> dims) { return {std::move(dims), "DT_FLOAT", true}; }
TensorShape Torch(std::vector<int64_t> dims) { return {std::move(dims), "float", true}; }
TensorShape NotATensor() { return {{}, "Scalar", false}; }

OpCost Tf(std::string_view type, std::vector<TensorShape> in, std::vector<TensorShape> out,
          CostSource source = CostSource::kTrainerShapes) {
  return CostFromShapes(OpShapes{type, std::move(in), std::move(out), {}}, source);
}

OpCost Aten(std::string_view type, std::vector<TensorShape> in, std::vector<std::string> attributes = {}) {
  attributes.resize(in.size());
  return CostFromShapes(OpShapes{type, std::move(in), {}, std::move(attributes)}, CostSource::kPyTorchShapes);
}

TEST(OpCostFormulas, MatMulIsTwoMnk) {
  // [32, 128] x [128, 64]: 2 * 32 * 64 * 128.
  const OpCost c = Tf("MatMul", {F32({32, 128}), F32({128, 64})}, {F32({32, 64})});
  EXPECT_EQ(c.flops, 524'288);
  EXPECT_EQ(c.model_flops, 524'288);
  EXPECT_EQ(c.cost_class, CostClass::kMatmul);
  EXPECT_EQ(c.bytes, (32 * 128 + 128 * 64 + 32 * 64) * 4);
  EXPECT_EQ(c.precision, Precision::kFp32);
  // Transposed A ([128, 32]) is the same work; an unknown B does not matter once A is known.
  EXPECT_EQ(Tf("MatMul", {F32({128, 32}), TensorShape{{}, "", false}}, {F32({32, 64})}).flops, 524'288);
}

TEST(OpCostFormulas, ConvolutionsCountEveryWindowOfTheFilter) {
  // ResNet's first convolution: 7x7x3 filter, 64 outputs, 112x112 at batch 32.
  const OpCost fwd = Tf("Conv2D", {F32({32, 230, 230, 3}), F32({7, 7, 3, 64})}, {F32({32, 112, 112, 64})});
  EXPECT_EQ(fwd.flops, 7'552'892'928);  // 2 * 32*112*112*64 * 7*7*3
  EXPECT_EQ(fwd.cost_class, CostClass::kConvolution);
  // 3x3x64 -> 64 at 56x56: both gradients cost what the forward does.
  const OpCost dx = Tf("Conv2DBackpropInput", {F32({4}), F32({3, 3, 64, 64}), F32({32, 56, 56, 64})},
                       {F32({32, 56, 56, 64})});
  const OpCost dw = Tf("Conv2DBackpropFilter", {F32({32, 56, 56, 64}), F32({4}), F32({32, 56, 56, 64})},
                       {F32({3, 3, 64, 64})});
  EXPECT_EQ(dx.flops, 7'398'752'256);  // 2 * 32*56*56*64 * 3*3*64
  EXPECT_EQ(dw.flops, 7'398'752'256);
  EXPECT_EQ(dw.model_flops, dw.flops);
  // Without the filter's shape the forward is unknown, not zero.
  const OpCost blind = Tf("Conv2D", {F32({32, 230, 230, 3}), TensorShape{{}, "", false}}, {F32({32, 112, 112, 64})});
  EXPECT_EQ(blind.flops, -1);
  EXPECT_EQ(blind.cost_class, CostClass::kConvolution);
}

TEST(OpCostFormulas, LstmBlockCellIsItsGateMatmulPlusElementwise) {
  // Batch 20, input 200, hidden 200: 2*20*(200+200)*800 = 12,800,000 in the matmul, then per row
  // 4H bias + 5H activations + 3H cell + H output + H forget bias = 14H = 2,800: 56,000.
  const OpCost c = Tf("LSTMBlockCell",
                      {F32({20, 200}), F32({20, 200}), F32({20, 200}), F32({400, 800}), F32({200}), F32({200}),
                       F32({200}), F32({800})},
                      {F32({20, 200})});
  EXPECT_EQ(c.flops, 12'856'000);
  EXPECT_EQ(c.model_flops, 12'800'000);
  EXPECT_EQ(c.cost_class, CostClass::kRecurrent);
  EXPECT_EQ(Tf("LSTMBlockCellGrad", {F32({20, 200}), F32({20, 200})}, {F32({20, 200})}).flops, 20 * 200 * 16);
}

TEST(OpCostFormulas, ElementwiseNormalisationLossAndOptimizers) {
  EXPECT_EQ(Tf("Relu", {F32({8, 10})}, {F32({8, 10})}).flops, 80);
  EXPECT_EQ(Tf("BiasAdd", {F32({8, 10}), F32({10})}, {F32({8, 10})}).flops, 80);
  // Reductions and L2Loss as tfprof counts them: n_in - n_out; 3n - 1.
  EXPECT_EQ(Tf("BiasAddGrad", {F32({8, 10})}, {F32({10})}).flops, 70);
  EXPECT_EQ(Tf("Mean", {F32({8, 10}), F32({2})}, {F32({8})}).flops, 80);
  EXPECT_EQ(Tf("L2Loss", {F32({8, 10})}, {F32({})}).flops, 239);
  EXPECT_EQ(Tf("Softmax", {F32({8, 10})}, {F32({8, 10})}).flops, 400);
  EXPECT_EQ(Tf("AddN", {F32({8, 10}), F32({8, 10}), F32({8, 10})}, {F32({8, 10})}).flops, 160);
  EXPECT_EQ(Tf("FusedBatchNormV3", {F32({2, 4, 4, 8}), F32({8}), F32({8})}, {F32({2, 4, 4, 8})}).flops, 8 * 256);
  EXPECT_EQ(Tf("FusedBatchNormGradV3", {F32({2, 4, 4, 8}), F32({2, 4, 4, 8})}, {F32({2, 4, 4, 8})}).flops,
            12 * 256);
  EXPECT_EQ(Tf("SparseSoftmaxCrossEntropyWithLogits", {F32({32, 1000}), TensorShape{{32}, "DT_INT32", true}},
               {F32({32}), F32({32, 1000})}).flops, 5 * 32'000);
  // The trainer's momentum keeps a weight-decay term TensorFlow's has not.
  const std::vector<TensorShape> momentum_in = {TensorShape{{}, "", false}, TensorShape{{}, "", false}, F32({}),
                                                F32({3, 3, 64, 64}), F32({})};
  EXPECT_EQ(Tf("ResourceApplyKerasMomentum", momentum_in, {}).flops, 6 * 36'864);
  EXPECT_EQ(Tf("ResourceApplyKerasMomentum", momentum_in, {}, CostSource::kTfShapes).flops, 4 * 36'864);
  EXPECT_EQ(Tf("ApplyGradientDescent", {F32({100}), F32({}), F32({100})}, {F32({100})}).flops, 200);
  const OpCost reshape = Tf("Reshape", {F32({8, 10}), F32({2})}, {F32({80})});
  EXPECT_EQ(reshape.flops, 0);
  EXPECT_EQ(reshape.cost_class, CostClass::kNoArithmetic);
  EXPECT_EQ(Tf("SomeCustomOp", {F32({8})}, {F32({8})}).flops, -1);
}

TEST(OpCostFormulas, AtenOpsAsPyTorchCountsThem) {
  // The figures PyTorch 2.x's with_flops gives for the same shapes.
  EXPECT_EQ(Aten("aten::mm", {Torch({4, 5}), Torch({5, 6})}).flops, 240);
  EXPECT_EQ(Aten("aten::addmm", {Torch({6}), Torch({4, 5}), Torch({5, 6}), NotATensor(), NotATensor()}).flops, 240);
  EXPECT_EQ(Aten("aten::bmm", {Torch({3, 4, 5}), Torch({3, 5, 6})}).flops, 720);
  EXPECT_EQ(Aten("aten::mul", {Torch({4, 5}), Torch({4, 5})}).flops, 20);
  EXPECT_EQ(Aten("aten::add", {Torch({4, 5}), Torch({1, 5}), NotATensor()}).flops, 20);  // broadcast
  // A stride-2, padding-1 3x3 convolution of [2, 3, 32, 32] into 8 channels: 16x16 outputs.
  const OpCost conv = Aten("aten::conv2d", {Torch({2, 3, 32, 32}), Torch({8, 3, 3, 3}), NotATensor(), NotATensor(),
                                            NotATensor(), NotATensor(), NotATensor()},
                           {"", "", "", "[2, 2]", "[1, 1]", "[1, 1]", "1"});
  EXPECT_EQ(conv.flops, 221'184);  // 2 * 2*16*16*8 * 3*3*3
  EXPECT_EQ(conv.bytes, (2 * 3 * 32 * 32 + 8 * 27 + 2 * 8 * 16 * 16) * 4);
  // Its backward, input and weight gradients wanted, no bias: twice the forward.
  const OpCost back = Aten("aten::convolution_backward",
                           {Torch({2, 8, 16, 16}), Torch({2, 3, 32, 32}), Torch({8, 3, 3, 3}), NotATensor(),
                            NotATensor(), NotATensor(), NotATensor(), NotATensor(), NotATensor(), NotATensor(),
                            NotATensor()},
                           {"", "", "", "[0]", "[2, 2]", "[1, 1]", "[1, 1]", "False", "[0, 0]", "1",
                            "[True, True, False]"});
  EXPECT_EQ(back.flops, 2 * 221'184);
  // Attention, q = k = v = [1, 2, 8, 4]: Q K^T and P V, 2 * 2*8*8 * (4 + 4).
  const OpCost sdpa = Aten("aten::scaled_dot_product_attention", {Torch({1, 2, 8, 4}), Torch({1, 2, 8, 4}), Torch({1, 2, 8, 4})});
  EXPECT_EQ(sdpa.flops, 2'048);
  EXPECT_EQ(sdpa.cost_class, CostClass::kAttention);
  EXPECT_EQ(Aten("aten::view", {Torch({4, 5}), NotATensor()}).flops, 0);
  EXPECT_EQ(Aten("aten::view", {Torch({4, 5}), NotATensor()}).bytes, 0);  // a view moves nothing
  EXPECT_EQ(Aten("aten::copy_", {Torch({4, 5}), Torch({4, 5}), NotATensor()}).bytes, 2 * 20 * 4);
  EXPECT_EQ(Aten("aten::linear", {Torch({4, 5}), Torch({6, 5})}).flops, -1);  // its addmm counts
}

TEST(OpCostFormulas, PrecisionFromEachSourcesDtypeNames) {
  EXPECT_EQ(PrecisionOfDtype("DT_FLOAT"), Precision::kFp32);
  EXPECT_EQ(PrecisionOfDtype("c10::BFloat16"), Precision::kBf16);
  EXPECT_EQ(PrecisionOfDtype("c10::Half"), Precision::kFp16);
  EXPECT_EQ(PrecisionOfDtype("long int"), Precision::kUnknown);
}

// PyTorch's own counts, per op name in start order (make_pytorch_flops_traces.py wrote them).
std::map<std::string, std::vector<int64_t>> TorchFlops(const std::string& file) {
  std::ifstream in(stepscope::testing::DataPath("op_cost/" + file));
  std::stringstream text;
  text << in.rdbuf();
  const std::string s = text.str();
  std::map<std::string, std::vector<int64_t>> flops;
  for (size_t at = s.find("\"aten::"); at != std::string::npos; at = s.find("\"aten::", at + 1)) {
    const size_t end = s.find('"', at + 1);
    std::vector<int64_t>& values = flops[s.substr(at + 1, end - at - 1)];
    const size_t close = s.find(']', end);
    for (size_t i = s.find('[', end) + 1; i < close;) {
      char* next = nullptr;
      values.push_back(std::strtoll(s.c_str() + i, &next, 10));
      i = static_cast<size_t>(next - s.c_str());
      while (i < close && (s[i] == ',' || s[i] == ' ' || s[i] == '\n')) ++i;
    }
  }
  return flops;
}

trace::Trace ReadFixture(const std::string& file) {
  auto read = trace::ReadTrace(stepscope::testing::DataPath("op_cost/" + file));
  EXPECT_TRUE(read.ok()) << read.status().message();
  return std::move(read).value();
}

// Ours per op name in start order, as PyTorch lists its counts.
std::map<std::string, std::vector<int64_t>> OursByName(const trace::Trace& trace, const OpCostReport& report) {
  std::vector<const OpCost*> costs;
  for (const OpCost& c : report.costs) costs.push_back(&c);
  std::stable_sort(costs.begin(), costs.end(), [&](const OpCost* a, const OpCost* b) {
    return trace.slices()[a->slice].start_ns < trace.slices()[b->slice].start_ns;
  });
  std::map<std::string, std::vector<int64_t>> ours;
  for (const OpCost* c : costs) ours[std::string(trace.str(trace.slice_name(trace.slices()[c->slice])))].push_back(c->flops);
  return ours;
}

class PyTorchOracle : public ::testing::TestWithParam<const char*> {};

TEST_P(PyTorchOracle, OurFlopsEqualPyTorchsOnEveryOpItCounts) {
  const std::string name = GetParam();
  const trace::Trace trace = ReadFixture(name + ".json.gz");
  const OpCostReport report = ComputeOpCosts(trace);
  EXPECT_TRUE(report.has_shapes);
  const auto torch = TorchFlops(name + ".torch_flops.json");
  ASSERT_FALSE(torch.empty());
  // Every event PyTorch counts, by its own shapes, in start order.
  std::vector<uint32_t> order(trace.slices().size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    return trace.slices()[a].start_ns < trace.slices()[b].start_ns;
  });
  std::map<std::string, std::vector<int64_t>> each;
  for (uint32_t i : order) {
    const std::string op(trace.str(trace.slice_name(trace.slices()[i])));
    if (torch.count(op)) each[op].push_back(CostOfSlice(trace, i).flops);
  }
  EXPECT_EQ(each, torch);
  // The report counts each of them once: on its own, or inside the op that calls it (the LSTM
  // layer adds its two bias vectors with an aten::add PyTorch counts).
  const auto ours = OursByName(trace, report);
  int64_t nested = 0;
  for (const auto& [op, flops] : torch) {
    SCOPED_TRACE(op);
    const std::vector<int64_t> counted = ours.count(op) ? ours.at(op) : std::vector<int64_t>{};
    EXPECT_LE(counted.size(), flops.size());
    nested += static_cast<int64_t>(flops.size() - counted.size());
  }
  EXPECT_EQ(nested, name == "pytorch_lstm_train" ? 4 : 0);
  for (const OpCost& c : report.costs) EXPECT_EQ(c.source, CostSource::kPyTorchShapes);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, PyTorchOracle,
                         ::testing::Values("pytorch_resnet50_b1_train", "pytorch_lstm_train",
                                           "pytorch_transformer_train"));

// ResNet-50 (torchvision v1.5: the stride on the 3x3) from its layer shapes alone: multiply-adds of
// every convolution and the classifier for one image of `size` x `size`.
int64_t ResNet50ForwardMacs(int64_t size) {
  auto out = [](int64_t in, int64_t k, int64_t s, int64_t p) { return (in + 2 * p - k) / s + 1; };
  int64_t h = out(size, 7, 2, 3);
  int64_t macs = h * h * 64 * 3 * 7 * 7;
  h = out(h, 3, 2, 1);  // max pool
  int64_t cin = 64;
  const int64_t widths[] = {64, 128, 256, 512}, blocks[] = {3, 4, 6, 3};
  for (int stage = 0; stage < 4; ++stage) {
    for (int b = 0; b < blocks[stage]; ++b) {
      const int64_t w = widths[stage], stride = (b == 0 && stage > 0) ? 2 : 1;
      const int64_t ho = out(h, 3, stride, 1);
      macs += h * h * cin * w;             // 1x1 reduce
      macs += ho * ho * w * w * 9;         // 3x3
      macs += ho * ho * w * 4 * w;         // 1x1 expand
      if (b == 0) macs += ho * ho * cin * 4 * w;  // projection shortcut
      cin = 4 * w;
      h = ho;
    }
  }
  return macs + 2048 * 1000;
}

TEST(OpCostResNet50, ForwardFlopsPerImageEqualTheAnalyticCount) {
  // 4,089,184,256 multiply-adds at 224x224: 8,178,368,512 FLOPs.
  ASSERT_EQ(ResNet50ForwardMacs(224), 4'089'184'256);
  const trace::Trace trace = ReadFixture("pytorch_resnet50_b1_train.json.gz");
  const OpCostReport report = ComputeOpCosts(trace);
  int64_t forward = 0, backward = 0;
  for (const OpCost& c : report.costs) {
    const std::string_view op = trace.str(trace.slice_name(trace.slices()[c.slice]));
    if (op == "aten::conv2d" || op == "aten::addmm") forward += c.model_flops;
    if (op == "aten::convolution_backward" || op == "aten::mm") backward += c.model_flops;
  }
  EXPECT_EQ(forward, 2 * ResNet50ForwardMacs(224));
  // The backward computes every gradient but the image's: twice the forward less conv1's input
  // gradient (2 * 112*112*64*147 FLOPs) and less the classifier's input... which it does compute.
  EXPECT_EQ(backward, 2 * forward - 2 * 112 * 112 * 64 * 147);
}

// Our trainer's ResNet-50 is Keras's (v1: the stride on the first 1x1 of a block, biases on the
// convolutions): its forward multiply-adds per image from the layer shapes alone.
int64_t KerasResNet50ForwardMacs(int64_t size, int64_t classes) {
  auto out = [](int64_t in, int64_t k, int64_t s, int64_t p) { return (in + 2 * p - k) / s + 1; };
  int64_t h = out(size, 7, 2, 3);
  int64_t macs = h * h * 64 * 3 * 7 * 7;
  h = out(h, 3, 2, 1);
  int64_t cin = 64;
  const int64_t widths[] = {64, 128, 256, 512}, blocks[] = {3, 4, 6, 3};
  for (int stage = 0; stage < 4; ++stage) {
    for (int b = 0; b < blocks[stage]; ++b) {
      const int64_t w = widths[stage], stride = (b == 0 && stage > 0) ? 2 : 1;
      const int64_t ho = out(h, 1, stride, 0);
      macs += ho * ho * cin * w + ho * ho * w * w * 9 + ho * ho * w * 4 * w;
      if (b == 0) macs += ho * ho * cin * 4 * w;
      cin = 4 * w;
      h = ho;
    }
  }
  return macs + 2048 * classes;
}

std::map<std::string, int64_t> FlopsByOpType(const trace::Trace& trace, const OpCostReport& report,
                                             int64_t* model = nullptr) {
  std::map<std::string, int64_t> by_type;
  for (const OpCost& c : report.costs) {
    by_type[std::string(trace.str(trace.slice_op_type(trace.slices()[c.slice])))] += c.flops;
    if (model != nullptr) *model += c.model_flops;
  }
  return by_type;
}

TEST(OpCostTrainer, ResNet50StepEqualsTheAnalyticCountOfItsLayers) {
  // stepscope-train --model resnet50 --batch_size 2 --image_size 32 --profile: every op costed.
  ASSERT_EQ(KerasResNet50ForwardMacs(224, 1000), 3'857'973'248);  // 7.72 GFLOPs per image
  const trace::Trace trace = ReadFixture("trainer_resnet50_b2_32px_step2.pb.gz");
  const OpCostReport report = ComputeOpCosts(trace);
  EXPECT_TRUE(report.unknown_ops.empty()) << report.unknown_ops.front().op_type;
  EXPECT_EQ(report.ops_costed, report.ops_seen);
  for (const OpCost& c : report.costs) EXPECT_EQ(c.source, CostSource::kTrainerShapes);
  int64_t model = 0;
  const auto by_type = FlopsByOpType(trace, report, &model);
  const int64_t classifier = 2 * 2 * 2048 * 10;
  const int64_t conv = 2 * 2 * KerasResNet50ForwardMacs(32, 10) - classifier;
  const int64_t conv1_dx = 2 * 2 * 16 * 16 * 64 * 7 * 7 * 3;  // the image's gradient is not computed
  EXPECT_EQ(by_type.at("Conv2D"), conv);
  EXPECT_EQ(by_type.at("Conv2DBackpropFilter"), conv);
  EXPECT_EQ(by_type.at("Conv2DBackpropInput"), conv - conv1_dx);
  EXPECT_EQ(by_type.at("MatMul"), 3 * classifier);
  EXPECT_EQ(model, 3 * (conv + classifier) - conv1_dx);
}

TEST(OpCostTrainer, PtbLstmStepEqualsItsConfigsFormula) {
  // stepscope-train --model lstm --config small --batch_size 4: B=4, T=20, 2 layers, H=200,
  // vocabulary 10,000. Forward: per cell 2*B*(H+H)*4H, the logits 2*(B*T)*H*V; backward twice.
  const int64_t b = 4, t = 20, layers = 2, h = 200, v = 10'000;
  const int64_t cells = t * layers * 2 * b * (2 * h) * 4 * h, logits = 2 * b * t * h * v;
  const trace::Trace trace = ReadFixture("trainer_lstm_small_b4_step2.pb.gz");
  const OpCostReport report = ComputeOpCosts(trace);
  int64_t model = 0;
  const auto by_type = FlopsByOpType(trace, report, &model);
  EXPECT_EQ(model, 3 * (cells + logits));
  EXPECT_EQ(by_type.at("LSTMBlockCell"), cells + t * layers * b * 14 * h);
  EXPECT_EQ(by_type.at("MatMul"), 2 * cells + 3 * logits);
  // What no formula covers is listed, with its time.
  for (const UnknownOpType& u : report.unknown_ops) {
    EXPECT_GT(u.count, 0);
    EXPECT_FALSE(u.reason.empty());
  }
}

// The first slice named `name` in start order.
uint32_t FirstNamed(const trace::Trace& trace, std::string_view name) {
  uint32_t found = UINT32_MAX;
  for (uint32_t i = 0; i < trace.slices().size(); ++i) {
    if (trace.str(trace.slice_name(trace.slices()[i])) != name) continue;
    if (found == UINT32_MAX || trace.slices()[i].start_ns < trace.slices()[found].start_ns) found = i;
  }
  return found;
}

TEST(OpCostInputs, DetailReaderReadsPyTorchsRecordShapesArguments) {
  const trace::Trace trace = ReadFixture("pytorch_resnet50_b1_train.json.gz");
  const uint32_t conv = FirstNamed(trace, "aten::conv2d");
  ASSERT_NE(conv, UINT32_MAX);
  trace::DetailReader reader(trace, trace::kDetailInputShapes);
  EXPECT_TRUE(reader.MayHave(trace::kDetailInputShapes));
  const std::span<const trace::TensorInput> in = reader.InputShapes(conv);
  ASSERT_EQ(in.size(), 7u);  // input, weight, bias, stride, padding, dilation, groups
  EXPECT_EQ(std::vector<int64_t>(in[0].shape.begin(), in[0].shape.end()), (std::vector<int64_t>{1, 3, 224, 224}));
  EXPECT_EQ(std::vector<int64_t>(in[1].shape.begin(), in[1].shape.end()), (std::vector<int64_t>{64, 3, 7, 7}));
  EXPECT_EQ(in[0].dtype, "float");
  EXPECT_TRUE(in[2].shape.empty());
  EXPECT_EQ(in[3].dtype, "ScalarList");
  EXPECT_EQ(in[3].value, "[2, 2]");
  EXPECT_EQ(in[4].value, "[3, 3]");
  EXPECT_EQ(reader.ReportedFlops(conv), -1);  // PyTorch's chrome export leaves its count out
  // A tensor list (aten::lstm's hidden state and weights) has no one shape.
  const trace::Trace lstm = ReadFixture("pytorch_lstm_train.json.gz");
  trace::DetailReader lstm_reader(lstm, trace::kDetailInputShapes);
  const std::span<const trace::TensorInput> cell = lstm_reader.InputShapes(FirstNamed(lstm, "aten::lstm"));
  ASSERT_GE(cell.size(), 3u);
  EXPECT_EQ(cell[1].dtype, "TensorList");
  EXPECT_TRUE(cell[1].shape.empty());
}

TEST(OpCostInputs, TheTrainersInputRecordsReachDetailReader) {
  const trace::Trace trace = ReadFixture("trainer_resnet50_b2_32px_step2.pb.gz");
  const uint32_t conv = FirstNamed(trace, "resnet50/conv1_conv/Conv2D");
  ASSERT_NE(conv, UINT32_MAX);
  trace::DetailReader reader(trace, trace::kDetailInputShapes);
  const std::span<const trace::TensorInput> in = reader.InputShapes(conv);
  ASSERT_EQ(in.size(), 2u);  // the padded image, the filter (a variable: no node of the step)
  EXPECT_EQ(std::vector<int64_t>(in[0].shape.begin(), in[0].shape.end()), (std::vector<int64_t>{2, 38, 38, 3}));
  EXPECT_EQ(std::vector<int64_t>(in[1].shape.begin(), in[1].shape.end()), (std::vector<int64_t>{7, 7, 3, 64}));
  EXPECT_EQ(in[1].dtype, "DT_FLOAT");
}

TEST(OpCostTensorFlow, PtbLstmStepFromItsProducersShapes) {
  // TensorFlow 1.x's own step of the PTB LSTM (small config: B=20, T=20, 2 layers, H=200,
  // V=10,000) on a GPU: inputs' shapes are their producers' outputs; the model FLOPs equal the
  // config's formula, 3 * (T*L*2*B*2H*4H + 2*B*T*H*V).
  auto read = trace::ReadTrace(stepscope::testing::SamplePath("ptb_lstm_tf1_gpu_step.pbtxt"));
  ASSERT_TRUE(read.ok());
  const OpCostReport report = ComputeOpCosts(*read);
  int64_t model = 0;
  const auto by_type = FlopsByOpType(*read, report, &model);
  const int64_t b = 20, t = 20, layers = 2, h = 200, v = 10'000;
  EXPECT_EQ(model, 3 * (t * layers * 2 * b * 2 * h * 4 * h + 2 * b * t * h * v));
  EXPECT_EQ(by_type.at("LSTMBlockCell"), t * layers * (2 * b * 2 * h * 4 * h + b * 14 * h));
  for (const OpCost& c : report.costs) EXPECT_EQ(c.source, CostSource::kTfShapes);
  // Ops whose inputs no node of the step produced are listed, not guessed.
  bool listed = false;
  for (const UnknownOpType& u : report.unknown_ops) listed = listed || u.op_type == "LSTMBlockCellGrad";
  EXPECT_TRUE(listed);
}

TEST(OpCostTrace, ASourcesOwnFlopsCountIsKeptAndUsedWhereNoFormulaApplies) {
  // Kineto's `flops` argument (with_flops): on an op we also cost, beside ours; on one we do not,
  // the figure, said to be Kineto's.
  const std::string path = (stepscope::testing::ScratchDir("op_cost") / "kineto_flops.json").string();
  std::ofstream(path) << R"({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10, "dur": 5,
     "args": {"Input Dims": [[4, 5], [5, 6]], "Input type": ["float", "float"], "flops": 240}},
    {"ph": "X", "cat": "cpu_op", "name": "my_ext::fused_thing", "pid": 1, "tid": 1, "ts": 20, "dur": 5,
     "args": {"Input Dims": [[8]], "Input type": ["float"], "flops": 1000}},
    {"ph": "X", "cat": "cpu_op", "name": "my_ext::other", "pid": 1, "tid": 1, "ts": 30, "dur": 7,
     "args": {"Input Dims": [[8]], "Input type": ["float"]}}]})";
  auto read = trace::ReadTrace(path);
  ASSERT_TRUE(read.ok()) << read.status().message();
  const OpCostReport report = ComputeOpCosts(*read);
  ASSERT_EQ(report.costs.size(), 2u);
  EXPECT_EQ(report.costs[0].flops, 240);
  EXPECT_EQ(report.costs[0].reported_flops, 240);
  EXPECT_EQ(report.costs[0].source, CostSource::kPyTorchShapes);
  EXPECT_EQ(report.costs[1].flops, 1000);
  EXPECT_EQ(report.costs[1].source, CostSource::kKinetoFlops);
  ASSERT_EQ(report.unknown_ops.size(), 1u);
  EXPECT_EQ(report.unknown_ops[0].op_type, "my_ext::other");
  EXPECT_EQ(report.unknown_ops[0].time_ns, 7000);
  EXPECT_EQ(report.unknown_ops[0].reason, "no formula for this op type");
}

TEST(OpCostTrace, ATraceWithoutShapesSaysSoAndListsItsOps) {
  auto read = trace::ReadTrace(stepscope::testing::DataPath("pytorch_kineto_alexnet_train.json.gz"));
  ASSERT_TRUE(read.ok());
  const OpCostReport report = ComputeOpCosts(*read);
  EXPECT_FALSE(report.has_shapes);
  ASSERT_FALSE(report.unknown_ops.empty());
  for (const UnknownOpType& u : report.unknown_ops) EXPECT_EQ(u.reason, "shapes not recorded") << u.op_type;
  int64_t unknown = 0;
  for (const UnknownOpType& u : report.unknown_ops) unknown += u.count;
  EXPECT_LE(unknown + report.ops_costed, report.ops_seen);
  EXPECT_GT(unknown, 0);
  for (const OpCost& c : report.costs) EXPECT_EQ(c.flops, 0) << "only ops without arithmetic are known";
}

}  // namespace
}  // namespace stepscope::analysis
