// The PTB word LSTM: TF's op names (checked against a real TF step), real learning, gradients
// against finite differences, determinism, the state carried across batches, and dropout
// (TF's dropout ops, mask statistics, gradients with a fixed mask, repeatability per seed).
#include "trainer/models/lstm_model.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <numeric>
#include <random>
#include <regex>
#include <set>
#include <sstream>

#include "base/file_io.h"
#include "gradient_check.h"
#include "test_util.h"
#include "trainer/runtime/bfc_allocator.h"
#include "trainer/runtime/cpu_sub_allocator.h"
#include "trainer/runtime/op_scope.h"
#include "trainer/runtime/transfers.h"
#include "host_memory_gpu.h"
#include "kernels/elementwise.h"
#include "trainer/models/rng.h"

namespace stepscope::runtime {
// Test failures print the counts by name.
static void PrintTo(const DeviceOpCounts& c, std::ostream* os) {
  *os << "{kernel_calls " << c.kernel_calls << ", device_copies " << c.device_copies
      << ", memsets " << c.memsets << ", host_reads " << c.host_reads << ", host_writes "
      << c.host_writes << "}";
}
}  // namespace stepscope::runtime

namespace stepscope::models {
namespace {

using testing::CentralDifference;
using testing::EntriesToCheck;
using testing::FiniteDifference;

using runtime::DType;
using runtime::Tensor;

std::unique_ptr<runtime::Device> MakeCpuDevice() {
  auto devices = runtime::CreateDevices(*runtime::ParseDeviceSpec("cpu:1"));
  EXPECT_TRUE(devices.ok()) << devices.status().message();
  return std::move((*devices)[0]);
}

LstmConfig TinyConfig() {
  LstmConfig c;
  c.name = "tiny";
  c.num_layers = 2;
  c.hidden_size = 24;
  c.num_steps = 6;
  c.batch_size = 4;
  c.vocab_size = 16;
  c.max_grad_norm = 5.0f;
  c.seed = 7;
  return c;
}

// A corpus with strong structure: word w is followed by (3w + 1) mod V, except every 7th word,
// which is random-ish; its conditional perplexity is far below the vocabulary size.
std::vector<int32_t> PatternCorpus(int vocab, int length) {
  std::vector<int32_t> words;
  int32_t w = 0;
  uint32_t noise = 12345;
  for (int k = 0; k < length; ++k) {
    words.push_back(w);
    noise = noise * 1664525u + 1013904223u;
    w = (k % 7 == 6) ? static_cast<int32_t>((noise >> 16) % static_cast<uint32_t>(vocab))
                     : (3 * w + 1) % vocab;
  }
  return words;
}

// reader.py's batching of one epoch's batch `i`: rows of the corpus split into batch_size strips.
Batch MakeBatch(const runtime::Device& device, const std::vector<int32_t>& corpus,
                const LstmConfig& c, int i) {
  const int64_t batch_len = static_cast<int64_t>(corpus.size()) / c.batch_size;
  std::vector<int32_t> inputs, labels;
  for (int b = 0; b < c.batch_size; ++b) {
    for (int t = 0; t < c.num_steps; ++t) {
      const int64_t k = b * batch_len + static_cast<int64_t>(i) * c.num_steps + t;
      inputs.push_back(corpus[static_cast<size_t>(k)]);
      labels.push_back(corpus[static_cast<size_t>(k + 1)]);
    }
  }
  Batch batch;
  batch.inputs = *device.Allocate(DType::kInt32, {c.batch_size, c.num_steps});
  batch.labels = *device.Allocate(DType::kInt32, {c.batch_size, c.num_steps});
  EXPECT_TRUE(runtime::CopyFromHost<int32_t>(device, inputs, batch.inputs).ok());
  EXPECT_TRUE(runtime::CopyFromHost<int32_t>(device, labels, batch.labels).ok());
  return batch;
}

std::map<std::string, int> CountOpTypes(const runtime::Graph& graph) {
  std::map<std::string, int> counts;
  for (const runtime::Node& node : graph.nodes()) ++counts[node.op_type];
  return counts;
}

// The node names of the real TF 1.x GPU step of the small config.
std::set<std::string> SampleNodeNames() {
  auto text = ReadFile(testing::DataPath("ptb_lstm_tf1_gpu_step.pbtxt"));
  EXPECT_TRUE(text.ok());
  std::set<std::string> names;
  std::istringstream in(*text);
  std::string line;
  const std::regex node_name(R"re(^\s*node_name: "([^"]+)")re");
  std::smatch m;
  while (std::getline(in, line)) {
    if (std::regex_search(line, m, node_name)) names.insert(m[1]);
  }
  return names;
}

TEST(LstmModel, SmallConfigHasTheOpsAndNamesOfTheTensorFlowStep) {
  auto device = MakeCpuDevice();
  auto config = LstmConfigByName("small");
  ASSERT_TRUE(config.ok());
  auto model = MakeLstm(*device, *config);
  ASSERT_TRUE(model.ok()) << model.status().message();
  const auto counts = CountOpTypes((*model)->graph());
  EXPECT_EQ(counts.at("LSTMBlockCell"), 2 * 20);
  EXPECT_EQ(counts.at("LSTMBlockCellGrad"), 2 * 20);
  EXPECT_EQ(counts.at("ApplyGradientDescent"), 6);
  EXPECT_EQ(counts.at("ScatterSub"), 1);
  EXPECT_EQ(counts.at("L2Loss"), 7);
  EXPECT_EQ(counts.at("SparseSoftmaxCrossEntropyWithLogits"), 1);
  // keep_prob 1: no dropout op at all.
  for (const char* op : {"RandomUniform", "Floor", "RealDiv"}) EXPECT_EQ(counts.count(op), 0u) << op;
  // Mul: the loss gradient, the clip factor, the 7 clipped gradients, the embedding's update.
  EXPECT_EQ(counts.at("Mul"), 10);
  EXPECT_EQ((*model)->graph().nodes().size(), 418u);

  // Every cell, cell gradient, update and clipping node is named exactly as TF named it.
  const std::set<std::string> sample = SampleNodeNames();
  ASSERT_GT(sample.size(), 1000u);
  int checked = 0;
  for (const runtime::Node& node : (*model)->graph().nodes()) {
    if (node.op_type == "LSTMBlockCell" || node.op_type == "LSTMBlockCellGrad" ||
        node.op_type == "ApplyGradientDescent" || node.op_type == "ScatterSub" ||
        node.op_type == "L2Loss" || node.op_type == "SparseSoftmaxCrossEntropyWithLogits" ||
        node.name.find("_grad/BiasAddGrad") != std::string::npos ||
        node.name.find("_grad/MatMul") != std::string::npos) {
      EXPECT_TRUE(sample.count(node.name)) << node.name << " is not a node of the TF step";
      ++checked;
    }
  }
  EXPECT_EQ(checked, 40 + 40 + 6 + 1 + 7 + 1 + 40 * 3 + 1 + 2);
}

TEST(LstmModel, OneSmallConfigStepRunsAndGivesAllGradients) {
  auto device = MakeCpuDevice();
  LstmConfig c = *LstmConfigByName("small");
  c.vocab_size = 200;  // keeps the test fast; the shapes of the cells are the small config's
  auto model = MakeLstm(*device, c).value();
  const auto corpus = PatternCorpus(c.vocab_size, 20 * 20 * 3);
  auto result = model->ComputeGradients(MakeBatch(*device, corpus, c, 0));
  ASSERT_TRUE(result.ok()) << result.status().message();
  ASSERT_EQ(result->gradients.size(), model->variables().size());
  // Untrained, the loss per word is close to log(V).
  EXPECT_NEAR(result->loss / c.num_steps, std::log(200.0), 0.1);
  EXPECT_TRUE(result->gradients[0].sparse());
  EXPECT_EQ(result->gradients[0].values.shape()[0], c.batch_size * c.num_steps);
  ASSERT_TRUE(model->ApplyGradients(result->gradients, 1.0f).ok());
}

TEST(LstmModel, PerplexityFallsFarBelowItsStart) {
  auto device = MakeCpuDevice();
  const LstmConfig c = TinyConfig();
  auto model = MakeLstm(*device, c).value();
  const auto corpus = PatternCorpus(c.vocab_size, 4000);
  const int epoch_size = static_cast<int>((corpus.size() / c.batch_size - 1) / c.num_steps);
  double first = 0, last = 0;
  for (int step = 0; step < 1500; ++step) {
    if (step % epoch_size == 0) model->ResetState();
    auto result = model->ComputeGradients(MakeBatch(*device, corpus, c, step % epoch_size));
    ASSERT_TRUE(result.ok()) << result.status().message();
    const double perplexity = std::exp(result->loss / c.num_steps);
    if (step == 0) first = perplexity;
    last = perplexity;
    ASSERT_TRUE(model->ApplyGradients(result->gradients, 1.0f).ok());
  }
  EXPECT_NEAR(first, 16.0, 1.5);  // uniform over 16 words at the start
  // 6 of 7 transitions are deterministic: the trained model is far below the vocabulary size.
  EXPECT_LT(last, 4.0) << "first " << first;
}

TEST(LstmModel, TrainingIsDeterministicForASeed) {
  auto device = MakeCpuDevice();
  const LstmConfig c = TinyConfig();
  const auto corpus = PatternCorpus(c.vocab_size, 2000);
  std::vector<double> losses[2];
  for (int run = 0; run < 2; ++run) {
    auto model = MakeLstm(*device, c).value();
    for (int step = 0; step < 5; ++step) {
      auto result = model->ComputeGradients(MakeBatch(*device, corpus, c, step));
      ASSERT_TRUE(result.ok());
      losses[run].push_back(result->loss);
      ASSERT_TRUE(model->ApplyGradients(result->gradients, 1.0f).ok());
    }
  }
  EXPECT_EQ(losses[0], losses[1]);
  LstmConfig other = c;
  other.seed = 8;
  auto model = MakeLstm(*device, other).value();
  EXPECT_NE(model->ComputeGradients(MakeBatch(*device, corpus, other, 0))->loss, losses[0][0]);
}

TEST(LstmModel, StateIsCarriedAcrossBatchesUntilReset) {
  auto device = MakeCpuDevice();
  const LstmConfig c = TinyConfig();
  const auto corpus = PatternCorpus(c.vocab_size, 2000);
  auto model = MakeLstm(*device, c).value();
  const double fresh = model->ComputeGradients(MakeBatch(*device, corpus, c, 1))->loss;
  const double carried = model->ComputeGradients(MakeBatch(*device, corpus, c, 1))->loss;
  model->ResetState();
  const double reset = model->ComputeGradients(MakeBatch(*device, corpus, c, 1))->loss;
  EXPECT_NE(fresh, carried);
  EXPECT_EQ(fresh, reset);
}

// The whole backward pass against central differences of the loss, per variable on its largest
// gradient entry and on kSampledEntries entries drawn with a fixed seed: a gradient written to the
// wrong index (or transposed) leaves the largest entry right and moves the others.
//
// δ, the loss's float error (gradient_check.h), is kLossUlps units in the last place of the loss:
// a double sum of float per-example cross entropies, each within about an ulp, whose errors partly
// cancel (observed errors stay below a sixth of the tolerance).
constexpr size_t kSampledEntries = 12;
constexpr double kLossUlps = 1;

void ExpectGradientsMatchFiniteDifferences(const LstmConfig& c) {
  auto device = MakeCpuDevice();
  const auto corpus = PatternCorpus(c.vocab_size, 200);
  auto model = MakeLstm(*device, c).value();
  const Batch batch = MakeBatch(*device, corpus, c, 0);
  auto result = model->ComputeGradients(batch);
  ASSERT_TRUE(result.ok());
  auto loss_at = [&]() {
    model->ResetState();
    return model->ComputeGradients(batch)->loss;
  };
  for (const Gradient& g : result->gradients) {
    Variable& var = model->variables()[static_cast<size_t>(g.variable)];
    // Dense view of this variable's gradient (sparse rows summed at their ids).
    std::vector<double> dense(static_cast<size_t>(var.value.num_elements()), 0.0);
    const int64_t cols = var.value.shape().rank == 2 ? var.value.shape()[1] : 1;
    for (int64_t r = 0; r < g.values.num_elements() / cols; ++r) {
      const int64_t row = g.sparse() ? g.indices.data<int32_t>()[r] : r;
      for (int64_t k = 0; k < cols; ++k) {
        dense[static_cast<size_t>(row * cols + k)] += g.values.data<float>()[r * cols + k];
      }
    }
    for (const size_t entry :
         EntriesToCheck(dense, kSampledEntries, 1000u + static_cast<uint32_t>(g.variable))) {
      const FiniteDifference numeric =
          CentralDifference(var.value.data<float>() + entry, 1e-2f, kLossUlps, loss_at);
      const double analytic = dense[entry];
      EXPECT_NEAR(analytic, numeric.extrapolated, numeric.tolerance) << var.name << "[" << entry << "]";
        }
  }
}

LstmConfig GradientCheckConfig() {
  LstmConfig c = TinyConfig();
  c.hidden_size = 8;
  c.num_steps = 3;
  c.batch_size = 2;
  c.vocab_size = 7;
  c.init_scale = 0.5f;
  return c;
}

TEST(LstmModel, GradientsMatchFiniteDifferences) {
  ExpectGradientsMatchFiniteDifferences(GradientCheckConfig());
}

// With dropout: the same masks on every evaluation (a fixed mask), so the loss is a smooth
// function of the weights and the backward pass (masks and 1/keep_prob) can be checked.
TEST(LstmModel, GradientsWithDropoutMatchFiniteDifferencesForAFixedMask) {
  LstmConfig c = GradientCheckConfig();
  c.keep_prob = 0.5f;
  c.fixed_dropout_masks = true;
  ExpectGradientsMatchFiniteDifferences(c);
}

LstmConfig DropoutConfig(float keep_prob) {
  LstmConfig c = TinyConfig();
  c.keep_prob = keep_prob;
  return c;
}

// Keeps the outputs of every op of one type (copied: the tensors die after the op).
class OutputRecorder : public runtime::OpListener {
 public:
  explicit OutputRecorder(std::string op_type) : op_type_(std::move(op_type)) {}
  void OnOpStart(const runtime::Device&, const runtime::Node&, int64_t) override {}
  void OnOpEnd(const runtime::Device&, const runtime::Node& node, int64_t, int64_t,
               std::span<const Tensor> outputs) override {
    if (node.op_type != op_type_) return;
    ++ops;
    for (const Tensor& t : outputs) {
      values.insert(values.end(), t.data<float>(), t.data<float>() + t.num_elements());
    }
  }
  int ops = 0;
  std::vector<float> values;

 private:
  std::string op_type_;
};

TEST(LstmDropout, GraphHasTensorFlowsDropoutOpsPerSite) {
  auto device = MakeCpuDevice();
  const LstmConfig c = DropoutConfig(0.5f);  // 2 layers, 6 steps
  auto model = MakeLstm(*device, c).value();
  const auto counts = CountOpTypes(model->graph());
  const int sites = 1 + c.num_layers * c.num_steps;  // embedding + each cell output
  EXPECT_EQ(counts.at("RandomUniform"), sites);
  EXPECT_EQ(counts.at("Floor"), sites);
  EXPECT_EQ(counts.at("Add"), sites);
  EXPECT_EQ(counts.at("RealDiv"), 2 * sites);  // forward div and div_grad
  EXPECT_EQ(counts.at("LSTMBlockCell"), 2 * 6);

  std::map<std::string, const runtime::Node*> by_name;
  for (const runtime::Node& node : model->graph().nodes()) by_name[node.name] = &node;
  const auto node = [&](const std::string& name) -> const runtime::Node& {
    EXPECT_TRUE(by_name.count(name)) << name << " is not in the graph";
    static const runtime::Node kMissing;
    return by_name.count(name) ? *by_name[name] : kMissing;
  };
  const std::string cell = "Train/Model/RNN/RNN/multi_rnn_cell/cell_";
  EXPECT_EQ(node("Train/Model/dropout/random_uniform/RandomUniform").op_type, "RandomUniform");
  EXPECT_EQ(node("Train/Model/dropout/mul").inputs,
            std::vector<std::string>({"Train/Model/dropout/div", "Train/Model/dropout/Floor"}));
  EXPECT_EQ(node("Train/Model/dropout/div").inputs[0], "Train/Model/embedding_lookup");
  // The embedding's dropout feeds the time steps; each cell's output dropout feeds the layer
  // above and, for the top layer, the softmax's concat; the state goes on undropped.
  EXPECT_EQ(node("Train/Model/RNN/strided_slice_3").inputs[0], "Train/Model/dropout/mul");
  EXPECT_EQ(node(cell + "0/dropout_3/div").inputs[0], cell + "0/lstm_cell/LSTMBlockCell_3:6");
  EXPECT_EQ(node(cell + "1/lstm_cell/LSTMBlockCell_3").inputs[0], cell + "0/dropout_3/mul");
  EXPECT_EQ(node(cell + "1/lstm_cell/LSTMBlockCell_3").inputs[2], cell + "1/lstm_cell/LSTMBlockCell_2:6");
  EXPECT_EQ(node("Train/Model/concat").inputs[5], cell + "1/dropout_5/mul");
  EXPECT_EQ(by_name.count(cell + "1/dropout_6/mul"), 0u);  // one site per step: 0..5
  // Gradients: the mask, then 1/keep_prob; the embedding's is what gets clipped and applied.
  const std::string g = "Train/Model/gradients/";
  EXPECT_EQ(node(g + "Train/Model/dropout/mul_grad/Mul").inputs,
            std::vector<std::string>({g + "Train/Model/RNN/strided_slice_grad/StridedSliceGrad",
                                      "Train/Model/dropout/Floor"}));
  EXPECT_EQ(node(g + "Train/Model/dropout/div_grad/RealDiv").op_type, "RealDiv");
  EXPECT_EQ(node(g + cell + "1/dropout_5/mul_grad/Mul").inputs[0], g + "Train/Model/concat_grad/split:5");
  EXPECT_EQ(node(g + cell + "0/dropout_2/mul_grad/Mul").inputs[0],
            g + cell + "1/lstm_cell/LSTMBlockCell_2_grad/Slice");
  EXPECT_EQ(node("Train/Model/global_norm/L2Loss").inputs[0],
            g + "Train/Model/dropout/div_grad/RealDiv");
}

TEST(LstmDropout, MasksKeepTheRightShareAndScaleTheKeptValues) {
  for (const float keep : {0.5f, 0.35f}) {  // medium's and large's keep_prob
    auto device = MakeCpuDevice();
    LstmConfig c = DropoutConfig(keep);
    c.hidden_size = 50;
    auto model = MakeLstm(*device, c).value();
    const auto corpus = PatternCorpus(c.vocab_size, 2000);
    OutputRecorder masks("Floor");
    device->set_op_listener(&masks);
    auto result = model->ComputeGradients(MakeBatch(*device, corpus, c, 0));
    device->set_op_listener(nullptr);
    ASSERT_TRUE(result.ok()) << result.status().message();
    EXPECT_EQ(masks.ops, 1 + c.num_layers * c.num_steps);
    ASSERT_EQ(masks.values.size(), size_t{4 * 50} * (6 + 2 * 6));  // (B·T, H) + L·T of (B, H)
    double ones = 0;
    for (float m : masks.values) {
      ASSERT_TRUE(m == 0.0f || m == 1.0f) << m;
      ones += m;
    }
    // 3600 Bernoulli(keep) draws: the share is within 4 standard deviations (~0.033).
    EXPECT_NEAR(ones / static_cast<double>(masks.values.size()), keep, 0.035) << keep;
  }
  // The site's output is x / keep_prob where kept, 0 elsewhere (RealDiv runs fused into the
  // site's one kernel and keeps no output of its own: x is the embedding lookup's).
  auto device = MakeCpuDevice();
  const LstmConfig c = DropoutConfig(0.5f);
  auto model = MakeLstm(*device, c).value();
  OutputRecorder lookups("GatherV2"), muls("Mul");
  struct Both : runtime::OpListener {
    OutputRecorder *a, *b;
    void OnOpStart(const runtime::Device&, const runtime::Node&, int64_t) override {}
    void OnOpEnd(const runtime::Device& d, const runtime::Node& n, int64_t s, int64_t e,
                 std::span<const Tensor> out) override {
      if (n.name == "Train/Model/embedding_lookup") a->OnOpEnd(d, n, s, e, out);
      if (n.name == "Train/Model/dropout/mul") b->OnOpEnd(d, n, s, e, out);
    }
  } both;
  both.a = &lookups, both.b = &muls;
  device->set_op_listener(&both);
  ASSERT_TRUE(model->ComputeGradients(MakeBatch(*device, PatternCorpus(c.vocab_size, 2000), c, 0)).ok());
  device->set_op_listener(nullptr);
  ASSERT_EQ(lookups.values.size(), muls.values.size());
  ASSERT_FALSE(lookups.values.empty());
  int zeroed = 0;
  for (size_t k = 0; k < muls.values.size(); ++k) {
    if (muls.values[k] == 0.0f) {
      ++zeroed;
    } else {
      EXPECT_EQ(muls.values[k], lookups.values[k] / 0.5f);
    }
  }
  EXPECT_GT(zeroed, 0);
  EXPECT_LT(zeroed, static_cast<int>(muls.values.size()));
}

// Dropout draws its uniforms on the device from the Rng's state: the numbers the host Rng would
// have drawn one by one, and the Rng goes on after them.
TEST(LstmDropout, DeviceDrawsAreTheHostRngsStream) {
  Rng host(1234), counter(1234);
  std::vector<float> drawn(777);
  ASSERT_TRUE(kernels::RandomUniform(kernels::CpuContext(), counter.state(),
                                     kernels::Out<float>{drawn.data(), {777}})
                  .ok());
  counter.Skip(777);
  for (float u : drawn) ASSERT_EQ(u, host.UniformFloat(0.0f, 1.0f));
  EXPECT_EQ(counter.Next(), host.Next());
}

TEST(LstmDropout, RepeatableForASeedNewMasksEachStepAndPerDevice) {
  const LstmConfig c = DropoutConfig(0.5f);
  const auto corpus = PatternCorpus(c.vocab_size, 2000);
  auto losses = [&](const LstmConfig& config, const runtime::Device& device) {
    auto model = MakeLstm(device, config).value();
    std::vector<double> out;
    for (int step = 0; step < 4; ++step) {
      model->ResetState();  // same batch, same weights: only the masks can change the loss
      out.push_back(model->ComputeGradients(MakeBatch(device, corpus, config, 0))->loss);
    }
    return out;
  };
  auto devices = runtime::CreateDevices(*runtime::ParseDeviceSpec("cpu:2")).value();
  const std::vector<double> first = losses(c, *devices[0]);
  EXPECT_EQ(first, losses(c, *devices[0]));  // the same seed gives the same run
  EXPECT_NE(first[0], first[1]);             // each step draws new masks
  EXPECT_NE(first[1], first[2]);
  EXPECT_NE(first, losses(c, *devices[1]));  // another tower draws other masks
  LstmConfig other_seed = c;
  other_seed.seed = 8;
  EXPECT_NE(losses(other_seed, *devices[0])[0], first[0]);
  LstmConfig fixed = c;
  fixed.fixed_dropout_masks = true;
  const std::vector<double> repeated = losses(fixed, *devices[0]);
  EXPECT_EQ(repeated, std::vector<double>(4, first[0]));  // the first step's masks, every step
  // Without dropout the tower does not matter, and the loss differs from the dropped one.
  LstmConfig none = c;
  none.keep_prob = 1.0f;
  const std::vector<double> plain = losses(none, *devices[0]);
  EXPECT_EQ(plain, losses(none, *devices[1]));
  EXPECT_EQ(plain, std::vector<double>(4, plain[0]));
  EXPECT_NE(plain[0], first[0]);
}

TEST(LstmDropout, TrainingWithDropoutStillLearns) {
  auto device = MakeCpuDevice();
  const LstmConfig c = DropoutConfig(0.8f);
  auto model = MakeLstm(*device, c).value();
  const auto corpus = PatternCorpus(c.vocab_size, 4000);
  const int epoch_size = static_cast<int>((corpus.size() / c.batch_size - 1) / c.num_steps);
  double first = 0, recent = 0;
  constexpr int kSteps = 1000, kAveraged = 100;
  for (int step = 0; step < kSteps; ++step) {
    if (step % epoch_size == 0) model->ResetState();
    auto result = model->ComputeGradients(MakeBatch(*device, corpus, c, step % epoch_size));
    ASSERT_TRUE(result.ok()) << result.status().message();
    const double perplexity = std::exp(result->loss / c.num_steps);
    if (step == 0) first = perplexity;
    if (step >= kSteps - kAveraged) recent += perplexity / kAveraged;
    ASSERT_TRUE(model->ApplyGradients(result->gradients, 1.0f).ok());
  }
  EXPECT_NEAR(first, 16.0, 2.0);
  EXPECT_LT(recent, 6.0) << "first " << first;
}

TEST(LstmDropout, KeepProbOutsideZeroToOneIsRejected) {
  auto device = MakeCpuDevice();
  for (const float bad : {0.0f, -0.5f, 1.5f, std::nanf("")}) {
    const auto model = MakeLstm(*device, DropoutConfig(bad));
    ASSERT_FALSE(model.ok()) << bad;
    EXPECT_EQ(model.status().code(), StatusCode::kInvalidInput);
    EXPECT_NE(model.status().message().find("keep_prob"), std::string::npos)
        << model.status().message();
  }
  EXPECT_EQ(LstmConfigByName("small")->keep_prob, 1.0f);
  EXPECT_EQ(LstmConfigByName("medium")->keep_prob, 0.5f);
  EXPECT_EQ(LstmConfigByName("large")->keep_prob, 0.35f);
}

// The operations a training step (ComputeGradients and ApplyGradients) asks of its device, by
// the model's structure: T steps, L layers, V variables, D = 1 with dropout.
//   kernel calls: forward Gather, D embedding dropout, per cell LSTMBlockCell and D dropout,
//     the logits' MatMul and BiasAdd, the loss; backward the loss gradient's Mul, BiasAddGrad, two
//     MatMuls, per cell D dropout gradient, LSTMBlockCellGrad, one GEMM for [dx, dh_prev] (two in
//     the first layer, whose dx goes into the embedding gradient's rows), two for the kernel's
//     gradient and BiasAddGrad, D embedding dropout gradient, L bias AddNs;
//     update: one global norm, V clips, V updates and the embedding's learning-rate Mul.
//   copies within the device: none (every slice, split and concatenation is a view).
//   memsets: the cell-state gradient's zeros (and the zero state on the first step).
//   reads into the host: the loss, once.
runtime::DeviceOpCounts ExpectedStepOps(const LstmConfig& c, bool first_step) {
  const int64_t T = c.num_steps, L = c.num_layers, V = 1 + 2 * L + 2;
  const int64_t D = c.keep_prob < 1.0f ? 1 : 0;
  const int64_t forward = 1 + D + T * L * (1 + D) + 3;
  const int64_t backward = 4 + T * L * (D + 4) + T * (L + 1) + D + L;
  const int64_t update = 1 + 2 * V + 1;
  return {.kernel_calls = forward + backward + update, .device_copies = 0,
          .memsets = first_step ? 2 : 1, .host_reads = 1, .host_writes = 0};
}

// On a GPU device every byte moves through the device's copies: initial values, the batch and
// the loss; dropout's numbers are drawn on the device, and slices, splits and concatenations
// are views. On a stand-in GPU whose memory is host memory (no GPU here) the model must train
// exactly as on a CPU device, asking both devices for the same operations: the counts above.
TEST(LstmModel, TrainsOnAGpuDeviceThroughItsCopiesAsOnACpuDevice) {
  LstmConfig c = TinyConfig();
  c.keep_prob = 0.6f;
  testing::GpuTransferCounts counts;
  const auto gpu = testing::MakeHostMemoryGpuDevice(0, &counts);
  EXPECT_EQ(gpu->name(), "/job:localhost/replica:0/task:0/device:GPU:0");
  // One thread, as the stand-in's kernels run on its single host thread.
  const runtime::Device cpu(runtime::DeviceKind::kCpu, 0, {}, 1,
                            std::make_unique<runtime::BFCAllocator>(
                                std::make_unique<runtime::CpuSubAllocator>(), int64_t{1} << 30, "cpu"));
  auto on_gpu = MakeLstm(*gpu, c);
  ASSERT_TRUE(on_gpu.ok()) << on_gpu.status().message();
  auto on_cpu = MakeLstm(cpu, c).value();
  EXPECT_GT(counts.to_device.load(), 0);  // the initial values
  const auto corpus = PatternCorpus(c.vocab_size, 2000);
  for (int step = 0; step < 3; ++step) {
    const Batch gpu_batch = MakeBatch(*gpu, corpus, c, step), cpu_batch = MakeBatch(cpu, corpus, c, step);
    const runtime::DeviceOpCounts gpu_before = gpu->op_counts(), cpu_before = cpu.op_counts();
    const int64_t to_host_before = counts.to_host.load(), memsets_before = counts.memsets.load();
    auto gpu_result = (*on_gpu)->ComputeGradients(gpu_batch);
    auto cpu_result = on_cpu->ComputeGradients(cpu_batch);
    ASSERT_TRUE(gpu_result.ok()) << gpu_result.status().message();
    ASSERT_TRUE(cpu_result.ok());
    EXPECT_EQ(gpu_result->loss, cpu_result->loss) << "step " << step;
    ASSERT_TRUE((*on_gpu)->ApplyGradients(gpu_result->gradients, 1.0f).ok());
    ASSERT_TRUE(on_cpu->ApplyGradients(cpu_result->gradients, 1.0f).ok());
    const runtime::DeviceOpCounts expected = ExpectedStepOps(c, step == 0);
    EXPECT_EQ(gpu->op_counts() - gpu_before, expected) << "step " << step;
    EXPECT_EQ(cpu.op_counts() - cpu_before, expected) << "step " << step;
    // The stand-in's own calls agree: one read (the loss), the memsets counted.
    EXPECT_EQ(counts.to_host.load() - to_host_before, 1) << "step " << step;
    EXPECT_EQ(counts.memsets.load() - memsets_before, expected.memsets) << "step " << step;
  }
  for (size_t v = 0; v < on_cpu->variables().size(); ++v) {
    const auto gpu_values = runtime::ToHostVector<float>(*gpu, (*on_gpu)->variables()[v].value);
    const auto cpu_values = runtime::ToHostVector<float>(cpu, on_cpu->variables()[v].value);
    ASSERT_TRUE(gpu_values.ok() && cpu_values.ok());
    EXPECT_EQ(*gpu_values, *cpu_values) << on_cpu->variables()[v].name;
  }
  EXPECT_EQ(counts.row_copies.load(), 0);  // slices, concatenations and splits are views
}

// Without dropout the top layer's h is written straight into the softmax's input rows and its
// gradient read straight from the split's: still no copy within the device, one read per step.
TEST(LstmModel, StepWithoutDropoutCopiesNothingWithinTheDevice) {
  const LstmConfig c = TinyConfig();
  auto device = MakeCpuDevice();
  auto model = MakeLstm(*device, c).value();
  const auto corpus = PatternCorpus(c.vocab_size, 2000);
  for (int step = 0; step < 2; ++step) {
    const Batch batch = MakeBatch(*device, corpus, c, step);
    const runtime::DeviceOpCounts before = device->op_counts();
    auto result = model->ComputeGradients(batch);
    ASSERT_TRUE(result.ok()) << result.status().message();
    ASSERT_TRUE(model->ApplyGradients(result->gradients, 1.0f).ok());
    EXPECT_EQ(device->op_counts() - before, ExpectedStepOps(c, step == 0)) << "step " << step;
  }
}

TEST(LstmModel, ConfigsAndLearningRateSchedule) {
  EXPECT_EQ(LstmConfigByName("medium")->hidden_size, 650);
  EXPECT_EQ(LstmConfigByName("large")->hidden_size, 1500);
  EXPECT_EQ(LstmConfigByName("large")->max_grad_norm, 10.0f);
  EXPECT_FALSE(LstmConfigByName("huge").ok());
  const LstmConfig small = *LstmConfigByName("small");
  EXPECT_FLOAT_EQ(LstmLearningRate(small, 0), 1.0f);
  EXPECT_FLOAT_EQ(LstmLearningRate(small, 3), 1.0f);
  EXPECT_FLOAT_EQ(LstmLearningRate(small, 4), 0.5f);
  EXPECT_FLOAT_EQ(LstmLearningRate(small, 6), 0.125f);
}

// scripts/bench/torch_step_time.py builds the PyTorch reference with these trainable parameter
// counts and refuses to time a model that differs: embedding V·H, per layer the kernel
// [2H, 4H] and one bias [4H], softmax_w H·V and softmax_b V.
TEST(LstmModel, TrainableParameterCountsAreTheOnesThePyTorchReferenceBuilds) {
  auto device = MakeCpuDevice();
  for (const auto& [name, expected] : {std::pair<std::string, int64_t>{"small", 4'651'600},
                                       std::pair<std::string, int64_t>{"medium", 19'775'200}}) {
    auto model = MakeLstm(*device, LstmConfigByName(name).value()).value();
    int64_t count = 0;
    for (const auto& v : model->variables()) count += v.value.num_elements();
    EXPECT_EQ(count, expected) << name;
  }
}

}  // namespace
}  // namespace stepscope::models
