// ResNet with Keras naming: TF 2's op names of a real ResNet-50 step, Keras' parameter count,
// real learning (a tiny batch is overfit), BatchNorm running statistics, the optimizer's rules
// (weight decay on kernels only, twice the learning rate for biases), determinism, and the whole
// model's gradient against finite differences.
#include "trainer/models/resnet_model.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <numeric>
#include <random>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "gradient_check.h"
#include "host_memory_gpu.h"
#include "trainer/runtime/op_scope.h"
#include "trainer/runtime/transfers.h"

namespace stepscope::models {
namespace {

using testing::CentralDifference;
using testing::EntriesToCheck;
using testing::FiniteDifference;

using runtime::DType;
using runtime::Tensor;

std::unique_ptr<runtime::Device> NewCpuDevice() {
  auto devices = runtime::CreateDevices(*runtime::ParseDeviceSpec("cpu:1"));
  EXPECT_TRUE(devices.ok()) << devices.status().message();
  return std::move((*devices)[0]);
}

ResNetConfig SmallConfig(int num_classes = 4) {
  ResNetConfig c;
  c.depth = 14;
  c.image_size = 32;
  c.num_classes = num_classes;
  c.seed = 5;
  return c;
}

std::unique_ptr<Model> Make(const runtime::Device& device, const ResNetConfig& config) {
  auto model = MakeResNet(device, config);
  EXPECT_TRUE(model.ok()) << model.status().message();
  return std::move(*model);
}

// `batch` images of uniform noise in [-0.5, 0.5) plus `stripe` on a band of rows that depends
// on the class (label = i mod classes); with stripe 0 the labels can only be memorised.
Batch SyntheticBatch(const runtime::Device& device, int batch, int size, int classes,
                     float stripe = 1.0f, uint32_t seed = 11) {
  Batch b;
  b.inputs = *device.Allocate(DType::kFloat32, {batch, size, size, 3});
  b.labels = *device.Allocate(DType::kInt32, {batch});
  uint32_t state = seed;
  float* x = b.inputs.data<float>();
  for (int n = 0; n < batch; ++n) {
    const int label = n % classes;
    b.labels.data<int32_t>()[n] = label;
    for (int i = 0; i < size * size * 3; ++i) {
      state = state * 1664525u + 1013904223u;
      const float noise = static_cast<float>(state >> 8) / static_cast<float>(1 << 24) - 0.5f;
      const int row = i / (size * 3);
      const float pattern = ((row * classes / size) == label) ? stripe : 0.0f;
      x[static_cast<size_t>(n) * static_cast<size_t>(size * size * 3) + static_cast<size_t>(i)] =
          noise + pattern;
    }
  }
  return b;
}

int VariableIndex(Model& model, const std::string& name) {
  const auto& vars = model.variables();
  for (size_t i = 0; i < vars.size(); ++i) {
    if (vars[i].name == name) return static_cast<int>(i);
  }
  ADD_FAILURE() << "no variable " << name;
  return -1;
}

std::vector<float> Values(const Tensor& t) {
  return std::vector<float>(t.data<float>(), t.data<float>() + t.num_elements());
}

bool IsMovingStatistic(const Variable& v) { return v.name.find("/moving_") != std::string::npos; }

// Records every op a step runs (name, type) and keeps the outputs of the nodes asked for.
class RecordingListener : public runtime::OpListener {
 public:
  explicit RecordingListener(std::set<std::string> keep = {}) : keep_(std::move(keep)) {}
  void OnOpStart(const runtime::Device&, const runtime::Node&, int64_t) override {}
  void OnOpEnd(const runtime::Device&, const runtime::Node& node, int64_t, int64_t,
               std::span<const Tensor> outputs) override {
    ran.emplace_back(node.name, node.op_type);
    if (keep_.count(node.name)) kept[node.name].assign(outputs.begin(), outputs.end());
  }
  std::vector<std::pair<std::string, std::string>> ran;
  std::map<std::string, std::vector<Tensor>> kept;

 private:
  std::set<std::string> keep_;
};

TEST(ResNetModelTest, RejectsBadConfigs) {
  auto device = NewCpuDevice();
  ResNetConfig c = SmallConfig();
  c.depth = 34;
  auto bad_depth = MakeResNet(*device, c);
  ASSERT_FALSE(bad_depth.ok());
  EXPECT_EQ(bad_depth.status().code(), StatusCode::kInvalidInput);
  EXPECT_NE(bad_depth.status().message().find("14, 26, 38, 50, 101, 152"), std::string::npos)
      << bad_depth.status().message();
  for (int size : {0, 16, 48, 100}) {
    c = SmallConfig();
    c.image_size = size;
    auto bad_size = MakeResNet(*device, c);
    ASSERT_FALSE(bad_size.ok()) << size;
    EXPECT_EQ(bad_size.status().code(), StatusCode::kInvalidInput);
    EXPECT_NE(bad_size.status().message().find("multiple of 32"), std::string::npos);
  }
  c = SmallConfig(1);
  EXPECT_EQ(MakeResNet(*device, c).status().code(), StatusCode::kInvalidInput);
}

TEST(ResNetModelTest, RejectsBadBatchesAndGradients) {
  auto device = NewCpuDevice();
  auto model = Make(*device, SmallConfig());
  Batch wrong_size = SyntheticBatch(*device, 2, 64, 4);
  auto r = model->ComputeGradients(wrong_size);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidInput);
  EXPECT_NE(r.status().message().find("(batch, 32, 32, 3)"), std::string::npos)
      << r.status().message();

  Batch bad_label = SyntheticBatch(*device, 2, 32, 4);
  bad_label.labels.data<int32_t>()[1] = 4;
  r = model->ComputeGradients(bad_label);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("label 4 of example 1"), std::string::npos)
      << r.status().message();

  Gradient g;
  g.variable = 0;  // conv1_conv/kernel (7,7,3,64)
  g.values = *device->Allocate(DType::kFloat32, {3});
  const Status s = model->ApplyGradients({&g, 1}, 0.1f);
  EXPECT_EQ(s.code(), StatusCode::kInvalidInput);
  EXPECT_NE(s.message().find("conv1_conv/kernel"), std::string::npos) << s.message();
  g.variable = VariableIndex(*model, "conv1_bn/moving_mean");  // no gradient exists for it
  g.values = *device->Allocate(DType::kFloat32, {64});
  EXPECT_EQ(model->ApplyGradients({&g, 1}, 0.1f).code(), StatusCode::kInvalidInput);
}

// Depth 50 with 1000 classes, built once for the tests that need the full network.
class ResNet50Test : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    device_ = NewCpuDevice().release();
    ResNetConfig c;
    c.image_size = 32;
    model_ = Make(*device_, c).release();
  }
  static void TearDownTestSuite() {
    delete model_;
    delete device_;
  }
  static runtime::Device* device_;
  static Model* model_;
};
runtime::Device* ResNet50Test::device_ = nullptr;
Model* ResNet50Test::model_ = nullptr;

TEST_F(ResNet50Test, ParameterCountIsKeras) {
  int64_t trainable = 0, statistics = 0;
  int trainable_variables = 0;
  for (const Variable& v : model_->variables()) {
    if (IsMovingStatistic(v)) {
      statistics += v.value.num_elements();
      EXPECT_EQ(v.role, VariableRole::kNormalization) << v.name;
    } else {
      trainable += v.value.num_elements();
      ++trainable_variables;
    }
  }
  EXPECT_EQ(trainable, 25'583'592);
  EXPECT_EQ(statistics, 53'120);
  EXPECT_EQ(trainable + statistics, 25'636'712);
  EXPECT_EQ(trainable_variables, 214);  // 53 conv + 53 BN, two each, and the dense layer's two
  ASSERT_EQ(model_->variables().size(), 214u + 106u);

  // Keras' order: trainable first, block 1's shortcut before its main path.
  const auto& vars = model_->variables();
  EXPECT_EQ(vars[0].name, "conv1_conv/kernel");
  EXPECT_EQ(vars[0].role, VariableRole::kWeight);
  EXPECT_EQ(vars[1].name, "conv1_conv/bias");
  EXPECT_EQ(vars[1].role, VariableRole::kBias);
  EXPECT_EQ(vars[2].name, "conv1_bn/gamma");
  EXPECT_EQ(vars[3].name, "conv1_bn/beta");
  EXPECT_EQ(vars[3].role, VariableRole::kNormalization);
  EXPECT_EQ(vars[4].name, "conv2_block1_0_conv/kernel");
  EXPECT_EQ(vars[8].name, "conv2_block1_1_conv/kernel");
  EXPECT_EQ(vars[212].name, "predictions/kernel");
  EXPECT_EQ(vars[213].name, "predictions/bias");
  EXPECT_EQ(vars[214].name, "conv1_bn/moving_mean");
  EXPECT_EQ(vars[215].name, "conv1_bn/moving_variance");
  // v1: the stride sits on the first 1×1 of conv3..5 block 1, whose shapes are Keras'.
  EXPECT_EQ(
      vars[static_cast<size_t>(VariableIndex(*model_, "conv3_block1_1_conv/kernel"))].value.shape(),
      (runtime::Shape{1, 1, 256, 128}));
  EXPECT_EQ(
      vars[static_cast<size_t>(VariableIndex(*model_, "conv5_block3_3_conv/kernel"))].value.shape(),
      (runtime::Shape{1, 1, 512, 2048}));

  // He normal: the standard deviation of a large kernel is sqrt(2 / fan_in).
  const Tensor& k =
      vars[static_cast<size_t>(VariableIndex(*model_, "conv4_block1_2_conv/kernel"))].value;
  double sum = 0, sum_sq = 0;
  for (float w : Values(k)) {
    sum += w;
    sum_sq += static_cast<double>(w) * w;
  }
  const double n = static_cast<double>(k.num_elements());
  const double stddev = std::sqrt(sum_sq / n - (sum / n) * (sum / n));
  EXPECT_NEAR(stddev, std::sqrt(2.0 / (3 * 3 * 256)), 0.02 * std::sqrt(2.0 / (3 * 3 * 256)));
}

// Keras' ResNet101 and ResNet152 (the same blocks with [3,4,23,3] and [3,8,36,3]).
TEST(ResNetModelTest, DeeperParameterCountsAreKeras) {
  auto device = NewCpuDevice();
  for (const auto& [depth, parameters] : {std::pair{101, 44'707'176}, std::pair{152, 60'419'944}}) {
    ResNetConfig c;
    c.depth = depth;
    c.image_size = 32;
    auto model = Make(*device, c);
    int64_t total = 0;
    for (const Variable& v : model->variables()) total += v.value.num_elements();
    EXPECT_EQ(total, parameters) << "depth " << depth;
  }
}

// The op names of one training step against TF 2's ResNet-50 step
// (docs/trainers.md §4, layout-optimizer suffixes stripped): the counts there
// are 53 Conv2D, 53 Conv2DBackpropFilter, 52 Conv2DBackpropInput (none for conv1), 53
// FusedBatchNormV3 and as many FusedBatchNormGradV3, 54 BiasAdd / BiasAddGrad, 49 Relu /
// ReluGrad, 16 add, 16 AddN, 3 MatMul, 2 Pad, 214 variable updates.
TEST_F(ResNet50Test, OpNamesOfOneStepAreTensorFlows) {
  RecordingListener listener;
  device_->set_op_listener(&listener);
  Batch batch = SyntheticBatch(*device_, 2, 32, 1000);
  auto step = model_->ComputeGradients(batch);
  ASSERT_TRUE(step.ok()) << step.status().message();
  ASSERT_TRUE(model_->ApplyGradients(step->gradients, 0.01f).ok());
  device_->set_op_listener(nullptr);

  const std::string conv = R"((conv1|conv[2-5]_block\d+_[0-3]))";
  const std::string relu = R"((conv1_relu|conv[2-5]_block\d+_(1_relu|2_relu|out)))";
  struct Expected {
    std::string op_type;
    int count;
    std::string pattern;
  };
  const std::vector<Expected> expected = {
      {"Conv2D", 53, "resnet50/" + conv + "_conv/Conv2D"},
      {"Conv2DBackpropFilter", 53,
       "gradient_tape/resnet50/" + conv + "_conv/Conv2D/Conv2DBackpropFilter"},
      {"Conv2DBackpropInput", 52,
       R"(gradient_tape/resnet50/conv[2-5]_block\d+_[0-3]_conv/Conv2D/Conv2DBackpropInput)"},
      {"FusedBatchNormV3", 53, "resnet50/" + conv + "_bn/FusedBatchNormV3"},
      {"FusedBatchNormGradV3", 53, "gradient_tape/resnet50/" + conv + "_bn/FusedBatchNormGradV3"},
      {"BiasAdd", 54, "resnet50/(" + conv + "_conv|predictions)/BiasAdd"},
      {"BiasAddGrad", 54,
       "gradient_tape/resnet50/(" + conv + "_conv|predictions)/BiasAdd/BiasAddGrad"},
      {"Relu", 49, "resnet50/" + relu + "/Relu"},
      {"ReluGrad", 49, "gradient_tape/resnet50/" + relu + "/ReluGrad"},
      {"AddV2", 16, R"(resnet50/conv[2-5]_block\d+_add/add)"},
      {"AddN", 16, R"(AddN(_\d+)?)"},
      {"MatMul", 3, "(gradient_tape/)?resnet50/predictions/MatMul(_1)?"},
      {"Pad", 2, "resnet50/(conv1|pool1)_pad/Pad"},
      {"MaxPool", 1, "resnet50/pool1_pool/MaxPool"},
      {"MaxPoolGrad", 1, "gradient_tape/resnet50/pool1_pool/MaxPool/MaxPoolGrad"},
      {"Slice", 1, "gradient_tape/resnet50/pool1_pad/Slice_1"},
      {"Mean", 1, "resnet50/avg_pool/Mean"},
      {"SparseSoftmaxCrossEntropyWithLogits", 1,
       "SparseSoftmaxCrossEntropyWithLogits/SparseSoftmaxCrossEntropyWithLogits"},
      {"Mul", 1, "gradient_tape/SparseSoftmaxCrossEntropyWithLogits/mul"},
      {"ResourceApplyKerasMomentum", 214, R"(SGD/SGD/update(_\d+)?/ResourceApplyKerasMomentum)"},
  };
  std::map<std::string, int> counts;
  std::set<std::string> names;
  for (const auto& [name, type] : listener.ran) {
    ++counts[type];
    EXPECT_TRUE(names.insert(name).second) << "ran twice: " << name;
  }
  int accounted = 0;
  for (const Expected& e : expected) {
    EXPECT_EQ(counts[e.op_type], e.count) << e.op_type;
    accounted += e.count;
    const std::regex re(e.pattern);
    for (const auto& [name, type] : listener.ran) {
      if (type == e.op_type) {
        EXPECT_TRUE(std::regex_match(name, re)) << name << " (" << type << ")";
      }
    }
  }
  // Nothing else ran (the avg-pool gradient is one RealDiv), and every node of the graph ran.
  EXPECT_EQ(counts["RealDiv"], 1);
  EXPECT_EQ(static_cast<int>(listener.ran.size()), accounted + 1);
  EXPECT_EQ(listener.ran.size(), model_->graph().nodes().size());
  EXPECT_TRUE(names.count("gradient_tape/resnet50/conv2_block1_0_conv/Conv2D/Conv2DBackpropInput"));
  EXPECT_FALSE(names.count("gradient_tape/resnet50/conv1_conv/Conv2D/Conv2DBackpropInput"));
  EXPECT_TRUE(names.count("AddN_15"));

  // update_N updates trainable variable N.
  for (const runtime::Node& node : model_->graph().nodes()) {
    if (node.op_type != "ResourceApplyKerasMomentum") continue;
    const std::string n = node.name.substr(std::string("SGD/SGD/update").size());
    const size_t index = n[0] == '/' ? 0 : std::stoul(n.substr(1));
    ASSERT_FALSE(node.inputs.empty());
    EXPECT_EQ(node.inputs[0], model_->variables()[index].name) << node.name;
  }
  // A gradient for every trainable variable, none for the moving statistics.
  ASSERT_EQ(step->gradients.size(), 214u);
  for (size_t i = 0; i < step->gradients.size(); ++i) {
    EXPECT_EQ(step->gradients[i].variable, static_cast<int>(i));
    EXPECT_FALSE(IsMovingStatistic(model_->variables()[i]));
    EXPECT_NE(step->gradients[i].producer, nullptr);
  }
}

// Eight images of pure noise with four labels: only memorising them lowers the loss. The
// learning rate is small because the gradients are large at this size: conv5 is 1×1 at 32
// pixels, so its BatchNorm normalises 8 values per channel (the finite-difference test confirms
// the gradients); at 2e-5 the loss falls smoothly.
TEST(ResNetModelTest, OverfitsATinyBatch) {
  auto device = NewCpuDevice();
  auto model = Make(*device, SmallConfig());
  const Batch batch = SyntheticBatch(*device, 8, 32, 4, /*stripe=*/0.0f);
  std::vector<double> losses;
  int64_t correct = 0;
  constexpr int kMaxSteps = 25;
  while (static_cast<int>(losses.size()) < kMaxSteps) {
    auto r = model->ComputeGradients(batch);
    ASSERT_TRUE(r.ok()) << r.status().message();
    losses.push_back(r->loss);
    correct = r->correct;
    if (r->loss < 0.1 * losses[0] && correct == 8) break;
    ASSERT_TRUE(model->ApplyGradients(r->gradients, 2e-5f).ok());
  }
  // Chance is ln 4 ≈ 1.39.
  EXPECT_GT(losses[0], 1.0);
  EXPECT_LT(losses.back(), 0.1 * losses[0]) << "after " << losses.size() << " steps";
  EXPECT_EQ(correct, 8);
  ASSERT_GE(losses.size(), 6u);  // it takes a few steps at this rate
  for (size_t i = 1; i < 6; ++i) EXPECT_LT(losses[i], losses[i - 1]) << "step " << i;
}

TEST(ResNetModelTest, BatchNormRunningStatisticsMoveTowardTheBatch) {
  auto device = NewCpuDevice();
  auto model = Make(*device, SmallConfig());
  const Batch batch = SyntheticBatch(*device, 4, 32, 4);
  const std::vector<std::string> bns = {"conv1_bn", "conv3_block1_2_bn", "conv5_block1_0_bn"};
  std::set<std::string> keep;
  for (const std::string& bn : bns) keep.insert("resnet14/" + bn + "/FusedBatchNormV3");
  RecordingListener listener(keep);
  device->set_op_listener(&listener);
  auto r = model->ComputeGradients(batch);
  device->set_op_listener(nullptr);
  ASSERT_TRUE(r.ok()) << r.status().message();

  // Rows normalised per channel: batch × spatial size of the layer's output.
  const std::map<std::string, double> rows = {{"conv1_bn", 4 * 16 * 16},
                                              {"conv3_block1_2_bn", 4 * 4 * 4},
                                              {"conv5_block1_0_bn", 4 * 1 * 1}};
  for (const std::string& bn : bns) {
    const auto& outputs = listener.kept.at("resnet14/" + bn + "/FusedBatchNormV3");
    ASSERT_EQ(outputs.size(), 3u);  // y, batch mean, 1/sqrt(batch variance + ε)
    const std::vector<float> mean = Values(outputs[1]);
    const std::vector<float> inv_std = Values(outputs[2]);
    const std::vector<float> moving_mean = Values(
        model->variables()[static_cast<size_t>(VariableIndex(*model, bn + "/moving_mean"))].value);
    const std::vector<float> moving_var = Values(
        model->variables()[static_cast<size_t>(VariableIndex(*model, bn + "/moving_variance"))]
            .value);
    const double r_rows = rows.at(bn);
    int moved = 0;
    for (size_t c = 0; c < mean.size(); ++c) {
      // Keras momentum 0.99: running = 0.99·running + 0.01·batch (variance unbiased).
      EXPECT_NEAR(moving_mean[c], 0.01 * mean[c], 1e-6 + 1e-5 * std::abs(mean[c])) << bn << c;
      const double var = 1.0 / (static_cast<double>(inv_std[c]) * inv_std[c]) - 1.001e-5;
      const double expected_var = 0.99 + 0.01 * var * r_rows / (r_rows - 1);
      EXPECT_NEAR(moving_var[c], expected_var, 1e-5 * expected_var + 1e-6) << bn << c;
      moved += moving_mean[c] != 0.0f && moving_var[c] != 1.0f;
    }
    EXPECT_GT(moved, static_cast<int>(mean.size()) / 2) << bn;
  }
}

TEST(ResNetModelTest, WeightDecayOnlyOnKernelsAndBiasesTakeTwiceTheRate) {
  auto device = NewCpuDevice();
  ResNetConfig config = SmallConfig();
  config.weight_decay = 0.01f;
  auto model = Make(*device, config);
  auto& vars = model->variables();
  std::vector<std::vector<float>> before;
  for (const Variable& v : vars) before.push_back(Values(v.value));

  // Zero gradients: only the decay moves anything. First step: accum = wd·w, w -= lr·accum.
  const float lr = 0.5f;
  std::vector<Gradient> zeros;
  for (size_t i = 0; i < vars.size(); ++i) {
    if (IsMovingStatistic(vars[i])) continue;
    Gradient g;
    g.variable = static_cast<int>(i);
    g.values = *device->Allocate(DType::kFloat32, vars[i].value.shape());
    std::fill_n(g.values.data<float>(), g.values.num_elements(), 0.0f);
    zeros.push_back(std::move(g));
  }
  ASSERT_TRUE(model->ApplyGradients(zeros, lr).ok());
  int kernels = 0;
  for (size_t i = 0; i < vars.size(); ++i) {
    const std::vector<float> after = Values(vars[i].value);
    if (vars[i].role == VariableRole::kWeight) {
      ++kernels;
      for (size_t e = 0; e < after.size(); ++e) {
        const double expected = before[i][e] - lr * 0.01 * before[i][e];
        ASSERT_NEAR(after[e], expected, 1e-6 * std::abs(expected) + 1e-12) << vars[i].name;
      }
    } else {
      EXPECT_EQ(after, before[i]) << vars[i].name;  // biases, BN gamma/beta, statistics
    }
  }
  EXPECT_EQ(kernels, 1 + 4 * 3 + 4 + 1);  // conv1, 3 per block, 4 shortcuts, predictions

  // A unit gradient: a bias moves by 2·lr, a BN parameter by lr (fresh model: empty slots).
  auto fresh = Make(*device, config);
  const int bias = VariableIndex(*fresh, "predictions/bias");
  const int gamma = VariableIndex(*fresh, "conv2_block1_2_bn/gamma");
  std::vector<Gradient> ones(2);
  for (int k = 0; k < 2; ++k) {
    ones[static_cast<size_t>(k)].variable = k == 0 ? bias : gamma;
    Tensor& t = ones[static_cast<size_t>(k)].values;
    t = *device->Allocate(
        DType::kFloat32,
        fresh->variables()[static_cast<size_t>(ones[static_cast<size_t>(k)].variable)]
            .value.shape());
    std::fill_n(t.data<float>(), t.num_elements(), 1.0f);
  }
  ASSERT_TRUE(fresh->ApplyGradients(ones, lr).ok());
  for (float b : Values(fresh->variables()[static_cast<size_t>(bias)].value))
    EXPECT_FLOAT_EQ(b, -2 * lr);
  for (float g : Values(fresh->variables()[static_cast<size_t>(gamma)].value))
    EXPECT_FLOAT_EQ(g, 1 - lr);
}

TEST(ResNetModelTest, DeterministicForASeed) {
  auto device = NewCpuDevice();
  const Batch batch = SyntheticBatch(*device, 4, 32, 4);
  auto run = [&](uint64_t seed) {
    ResNetConfig c = SmallConfig();
    c.seed = seed;
    auto model = Make(*device, c);
    std::vector<double> losses;
    for (int step = 0; step < 3; ++step) {
      auto r = model->ComputeGradients(batch);
      EXPECT_TRUE(r.ok()) << r.status().message();
      losses.push_back(r->loss);
      EXPECT_TRUE(model->ApplyGradients(r->gradients, 0.05f).ok());
    }
    return losses;
  };
  const std::vector<double> a = run(9), b = run(9), other = run(10);
  EXPECT_EQ(a, b);
  EXPECT_NE(a[0], other[0]);
  EXPECT_NE(a[2], a[0]);  // it trained
}

// The whole model's analytic gradient against central differences of its loss, on several
// variables from the loss back to conv1: per variable the entry of largest gradient and
// kSampledEntries more drawn with a fixed seed (a gradient written to the wrong index, or
// transposed, leaves the largest entry right and moves the others).
// Images are 64×64, not 32×32: at 32 with batch 2, conv5 is 1×1 and its BatchNorm normalises 2
// values per channel to ±1 (up to ε), a surface so curved that no float step size measures it.
//
// δ, the loss's float error (gradient_check.h), is kLossUlps units in the last place of the loss:
// BatchNorm over 8 values per channel at conv5 amplifies the float rounding of the layers below
// it; D(h) and D(h/2) differ by up to 7e-3 at conv1, a δ of about 17 ulps (with 32, observed
// errors stay below a third of the tolerance).
constexpr size_t kSampledEntries = 8;
constexpr double kLossUlps = 32;

TEST(ResNetModelTest, GradientMatchesFiniteDifferences) {
  auto device = NewCpuDevice();
  ResNetConfig config = SmallConfig();
  config.image_size = 64;
  auto model = Make(*device, config);
  const Batch batch = SyntheticBatch(*device, 2, config.image_size, 4);
  auto base = model->ComputeGradients(batch);
  ASSERT_TRUE(base.ok()) << base.status().message();
  const std::vector<std::string> names = {"predictions/kernel",         "predictions/bias",
                                          "conv5_block1_3_bn/gamma",    "conv5_block1_0_bn/beta",
                                          "conv4_block1_2_conv/kernel", "conv3_block1_1_bn/gamma",
                                          "conv2_block1_0_conv/kernel", "conv1_conv/kernel"};
  auto loss_at = [&] { return model->ComputeGradients(batch)->loss; };
  for (const std::string& name : names) {
    const int v = VariableIndex(*model, name);
    const std::vector<float> grad = Values(base->gradients[static_cast<size_t>(v)].values);
    for (const size_t e : EntriesToCheck(grad, kSampledEntries, 2000u + static_cast<uint32_t>(v))) {
      float* w = model->variables()[static_cast<size_t>(v)].value.data<float>() + e;
      const FiniteDifference numeric =
          CentralDifference(w, 1e-3f * std::max(1.0f, std::abs(*w)), kLossUlps, loss_at);
      EXPECT_NEAR(grad[e], numeric.extrapolated, numeric.tolerance) << name << "[" << e << "]";
        }
  }
}

// A copy of `batch` (on `from`) on device `to`, moved through the host as the input pipeline does.
Batch CopyBatch(const runtime::Device& from, const Batch& batch, const runtime::Device& to) {
  Batch copy;
  copy.inputs = *to.Allocate(DType::kFloat32, batch.inputs.shape());
  copy.labels = *to.Allocate(DType::kInt32, batch.labels.shape());
  EXPECT_TRUE(runtime::CopyFromHost<float>(
      to, *runtime::ToHostVector<float>(from, batch.inputs), copy.inputs).ok());
  EXPECT_TRUE(runtime::CopyFromHost<int32_t>(
      to, *runtime::ToHostVector<int32_t>(from, batch.labels), copy.labels).ok());
  return copy;
}

// On a GPU device the initial values, labels, losses and logits move through the device's
// copies; on a stand-in GPU over host memory the model trains exactly as on a CPU device.
TEST(ResNetModelTest, TrainsOnAGpuDeviceThroughItsCopiesAsOnACpuDevice) {
  testing::GpuTransferCounts counts;
  const auto gpu = testing::MakeHostMemoryGpuDevice(0, &counts);
  const runtime::Device cpu(runtime::DeviceKind::kCpu, 0, {}, 1,
                            std::make_unique<runtime::BFCAllocator>(
                                std::make_unique<runtime::CpuSubAllocator>(), int64_t{1} << 30, "cpu"));
  const ResNetConfig config = SmallConfig();
  auto on_gpu = Make(*gpu, config);
  auto on_cpu = Make(cpu, config);
  ASSERT_TRUE(on_gpu != nullptr && on_cpu != nullptr);
  for (int step = 0; step < 2; ++step) {
    const Batch cpu_batch = SyntheticBatch(cpu, 4, config.image_size, config.num_classes, 1.0f,
                                           static_cast<uint32_t>(11 + step));
    const int64_t copies_before = counts.to_host.load();
    auto gpu_result = on_gpu->ComputeGradients(CopyBatch(cpu, cpu_batch, *gpu));
    auto cpu_result = on_cpu->ComputeGradients(cpu_batch);
    ASSERT_TRUE(gpu_result.ok()) << gpu_result.status().message();
    ASSERT_TRUE(cpu_result.ok());
    EXPECT_GE(counts.to_host.load() - copies_before, 3);  // labels to check, losses, logits
    EXPECT_EQ(gpu_result->loss, cpu_result->loss);
    EXPECT_EQ(gpu_result->correct, cpu_result->correct);
    ASSERT_TRUE(on_gpu->ApplyGradients(gpu_result->gradients, 0.1f).ok());
    ASSERT_TRUE(on_cpu->ApplyGradients(cpu_result->gradients, 0.1f).ok());
  }
  for (size_t v = 0; v < on_cpu->variables().size(); ++v) {
    EXPECT_EQ(*runtime::ToHostVector<float>(*gpu, on_gpu->variables()[v].value),
              *runtime::ToHostVector<float>(cpu, on_cpu->variables()[v].value))
        << on_cpu->variables()[v].name;
  }
  EXPECT_GE(counts.memsets.load(), 1);  // the momentum accumulators start at zero
}

}  // namespace
}  // namespace stepscope::models
