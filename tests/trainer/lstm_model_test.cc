// The PTB word LSTM: TF's op names (checked against a real TF step), real learning, gradients
// against finite differences, determinism, and the state carried across batches.
#include "trainer/models/lstm_model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "base/file_io.h"
#include "test_util.h"

namespace stepscope::models {
namespace {

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
  Batch batch;
  batch.inputs = *device.Allocate(DType::kInt32, {c.batch_size, c.num_steps});
  batch.labels = *device.Allocate(DType::kInt32, {c.batch_size, c.num_steps});
  for (int b = 0; b < c.batch_size; ++b) {
    for (int t = 0; t < c.num_steps; ++t) {
      const int64_t k = b * batch_len + static_cast<int64_t>(i) * c.num_steps + t;
      batch.inputs.data<int32_t>()[b * c.num_steps + t] = corpus[static_cast<size_t>(k)];
      batch.labels.data<int32_t>()[b * c.num_steps + t] = corpus[static_cast<size_t>(k + 1)];
    }
  }
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

// The whole backward pass against central differences of the loss, on the largest gradient
// entries of every variable (float model: relative tolerance 3e-2).
TEST(LstmModel, GradientsMatchFiniteDifferences) {
  auto device = MakeCpuDevice();
  LstmConfig c = TinyConfig();
  c.hidden_size = 8;
  c.num_steps = 3;
  c.batch_size = 2;
  c.vocab_size = 7;
  c.init_scale = 0.5f;
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
    int64_t largest = 0;
    for (size_t k = 0; k < dense.size(); ++k) {
      if (std::abs(dense[k]) > std::abs(dense[static_cast<size_t>(largest)])) largest = static_cast<int64_t>(k);
    }
    float* w = var.value.data<float>() + largest;
    const float saved = *w;
    const float h = 1e-2f;
    *w = saved + h;
    const double plus = loss_at();
    *w = saved - h;
    const double minus = loss_at();
    *w = saved;
    const double numeric = (plus - minus) / (2.0 * static_cast<double>(h));
    const double analytic = dense[static_cast<size_t>(largest)];
    EXPECT_NEAR(analytic, numeric, 3e-2 * std::max(1e-2, std::abs(numeric)))
        << var.name << "[" << largest << "]";
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

}  // namespace
}  // namespace stepscope::models
