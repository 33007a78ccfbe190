// Data parallelism in one process: N towers on the same global batch train like one device
// (within float tolerance), replicas stay bit-identical, `independent` replicas diverge; with
// tensor fusion during backward both models train as without it, and the fused collectives run.
#include "trainer/towers/towers.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

#include "host_memory_gpu.h"
#include "trainer/models/lstm_model.h"
#include "trainer/models/resnet_model.h"
#include "trainer/runtime/transfers.h"

namespace stepscope::trainer {
namespace {

using runtime::DType;

models::LstmConfig TinyLstm(int batch_per_tower) {
  models::LstmConfig c;
  c.name = "tiny";
  c.hidden_size = 16;
  c.num_steps = 5;
  c.batch_size = batch_per_tower;
  c.vocab_size = 23;
  c.init_scale = 0.3f;
  c.seed = 11;
  return c;
}

struct TowerRun {
  std::vector<std::unique_ptr<runtime::Device>> devices;
  std::unique_ptr<Towers> towers;
};

TowerRun MakeTowers(int n, int global_batch, VariableUpdate update, const std::string& spec = "ring",
                    int64_t fusion_threshold_bytes = 0) {
  TowerRun run;
  run.devices = std::move(runtime::CreateDevices(*runtime::ParseDeviceSpec("cpu:" + std::to_string(n))).value());
  std::vector<std::unique_ptr<models::Model>> replicas;
  for (auto& d : run.devices) replicas.push_back(models::MakeLstm(*d, TinyLstm(global_batch / n)).value());
  TowerOptions options;
  options.update = update;
  options.allreduce_spec = spec;
  options.fusion_threshold_bytes = fusion_threshold_bytes;
  run.towers = Towers::Create(std::move(replicas), options).value();
  return run;
}

// Step `step`'s global batch: word ids with structure, (global_batch, num_steps).
models::Batch GlobalBatch(const runtime::Device& device, int global_batch, int step) {
  const models::LstmConfig c = TinyLstm(1);
  models::Batch batch;
  batch.inputs = *device.Allocate(DType::kInt32, {global_batch, c.num_steps});
  batch.labels = *device.Allocate(DType::kInt32, {global_batch, c.num_steps});
  for (int64_t k = 0; k < batch.inputs.num_elements(); ++k) {
    const int32_t w = static_cast<int32_t>((k * 7 + step * 3 + k / 5) % c.vocab_size);
    batch.inputs.data<int32_t>()[k] = w;
    batch.labels.data<int32_t>()[k] = (w * 5 + 1) % c.vocab_size;
  }
  return batch;
}

std::vector<float> Parameters(models::Model& model) {
  std::vector<float> all;
  for (const models::Variable& v : model.variables()) {
    const std::vector<float> values = runtime::ToHostVector<float>(model.device(), v.value).value();
    all.insert(all.end(), values.begin(), values.end());
  }
  return all;
}

void Train(TowerRun& run, int global_batch, int steps) {
  for (int step = 0; step < steps; ++step) {
    auto result = run.towers->Step(GlobalBatch(*run.devices[0], global_batch, step), 0.5f);
    ASSERT_TRUE(result.ok()) << result.status().message();
  }
}

class TowersEqualOneDevice : public ::testing::TestWithParam<std::tuple<int, std::string>> {};

TEST_P(TowersEqualOneDevice, SameParametersAsOneDeviceAndBitIdenticalReplicas) {
  const auto [n, spec] = GetParam();
  const int global_batch = 12;  // divisible by 2, 3 and 4
  TowerRun one = MakeTowers(1, global_batch, VariableUpdate::kReplicated);
  TowerRun many = MakeTowers(n, global_batch, VariableUpdate::kReplicated, spec);
  Train(one, global_batch, 3);
  Train(many, global_batch, 3);
  const std::vector<float> reference = Parameters(one.towers->tower(0));
  const std::vector<float> first = Parameters(many.towers->tower(0));
  ASSERT_EQ(reference.size(), first.size());
  double worst = 0;
  for (size_t k = 0; k < reference.size(); ++k) {
    worst = std::max(worst, std::abs(static_cast<double>(reference[k]) - first[k]));
  }
  EXPECT_LT(worst, 2e-5) << n << " towers, " << spec;  // float summation order only
  for (int d = 1; d < n; ++d) {
    const std::vector<float> other = Parameters(many.towers->tower(d));
    EXPECT_EQ(0, std::memcmp(first.data(), other.data(), first.size() * sizeof(float)))
        << "replica " << d << " differs from replica 0";
  }
}

INSTANTIATE_TEST_SUITE_P(Specs, TowersEqualOneDevice,
                         ::testing::Combine(::testing::Values(2, 3, 4),
                                            ::testing::Values("ring", "pscpu", "ring#2",
                                                              "pscpu:64:ring")));

TEST(Towers, ParameterServerAveragesLikeReplicatedSums) {
  const int global_batch = 8;
  TowerRun replicated = MakeTowers(2, global_batch, VariableUpdate::kReplicated);
  TowerRun ps = MakeTowers(2, global_batch, VariableUpdate::kParameterServer);
  Train(replicated, global_batch, 2);
  Train(ps, global_batch, 2);
  const auto a = Parameters(replicated.towers->tower(0));
  const auto b = Parameters(ps.towers->tower(1));
  for (size_t k = 0; k < a.size(); ++k) ASSERT_NEAR(a[k], b[k], 2e-5) << k;
}

TEST(Towers, IndependentReplicasDiverge) {
  const int global_batch = 8;
  TowerRun run = MakeTowers(2, global_batch, VariableUpdate::kIndependent);
  const auto before = Parameters(run.towers->tower(0));
  EXPECT_EQ(before, Parameters(run.towers->tower(1)));  // same seed, same start
  Train(run, global_batch, 1);
  EXPECT_NE(Parameters(run.towers->tower(0)), Parameters(run.towers->tower(1)));
}

// GPU towers reduce host copies of their gradients (every algorithm but nccl) and gather the
// embedding rows through the host. On stand-in GPUs over host memory, each tower must end with
// exactly the parameters CPU towers reach, after and during backward (fusion), and every tower's
// gradients must have gone through its copies.
class GpuTowersMatchCpuTowers : public ::testing::TestWithParam<std::tuple<std::string, int64_t>> {};

TEST_P(GpuTowersMatchCpuTowers, SameParametersThroughHostCopies) {
  const auto [spec, fusion_threshold] = GetParam();
  const int n = 2, global_batch = 8;
  TowerRun cpu = MakeTowers(n, global_batch, VariableUpdate::kReplicated, spec, fusion_threshold);
  testing::GpuTransferCounts counts;
  TowerRun gpu;
  std::vector<std::unique_ptr<models::Model>> replicas;
  for (int d = 0; d < n; ++d) {
    gpu.devices.push_back(testing::MakeHostMemoryGpuDevice(d, &counts));
    replicas.push_back(models::MakeLstm(*gpu.devices.back(), TinyLstm(global_batch / n)).value());
  }
  TowerOptions options;
  options.allreduce_spec = spec;
  options.fusion_threshold_bytes = fusion_threshold;
  gpu.towers = Towers::Create(std::move(replicas), options).value();
  for (int step = 0; step < 3; ++step) {
    // The global batch is the input pipeline's, in host memory (a CPU device's).
    const models::Batch batch = GlobalBatch(*cpu.devices[0], global_batch, step);
    const int64_t to_host_before = counts.to_host.load();
    auto on_gpus = gpu.towers->Step(batch, 0.5f);
    auto on_cpus = cpu.towers->Step(batch, 0.5f);
    ASSERT_TRUE(on_gpus.ok()) << on_gpus.status().message();
    ASSERT_TRUE(on_cpus.ok());
    EXPECT_EQ(on_gpus->losses, on_cpus->losses) << "step " << step;
    // Each tower's 5 dense gradients and its embedding rows and ids, at least.
    EXPECT_GE(counts.to_host.load() - to_host_before, n * (5 + 2)) << "step " << step;
  }
  for (int d = 0; d < n; ++d) {
    EXPECT_EQ(Parameters(gpu.towers->tower(d)), Parameters(cpu.towers->tower(d))) << "tower " << d;
  }
}

INSTANTIATE_TEST_SUITE_P(Specs, GpuTowersMatchCpuTowers,
                         ::testing::Values(std::tuple{"ring", int64_t{0}},
                                           std::tuple{"pscpu:64:ring", int64_t{0}},
                                           std::tuple{"ring", int64_t{1} << 20}));

// Virtual GPUs (`--devices gpu:0 --virtual_gpus_per_gpu 2`): two towers on one GPU, laid out
// as the GPU build lays them out (PlanVirtualGpus), each with its own GPU_k_bfc holding half the
// GPU's memory. Over host-staged all-reduce, fusion and the sparse gathers they train exactly as
// two CPU towers: the same losses to the bit, the same parameters.
class VirtualGpuTowersMatchCpuTowers
    : public ::testing::TestWithParam<std::tuple<std::string, int64_t>> {};

TEST_P(VirtualGpuTowersMatchCpuTowers, TwoTowersOnOneGpuTrainAsTwoCpuTowers) {
  const auto [spec, fusion_threshold] = GetParam();
  const int global_batch = 8;
  const std::vector<int> ids = {0}, ordinals = {0};
  const std::vector<int64_t> free = {int64_t{6} << 30};
  const auto plan = runtime::PlanVirtualGpus(ids, ordinals, free, 2, int64_t{16} << 30);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  testing::GpuTransferCounts counts;
  TowerRun gpu;
  gpu.devices = testing::MakeHostMemoryGpuDevices(*plan, &counts);
  ASSERT_EQ(gpu.devices.size(), 2u);
  std::vector<std::unique_ptr<models::Model>> replicas;
  for (int d = 0; d < 2; ++d) {
    const runtime::Device& device = *gpu.devices[static_cast<size_t>(d)];
    EXPECT_EQ(device.name(), "/job:localhost/replica:0/task:0/device:GPU:" + std::to_string(d));
    EXPECT_EQ(device.gpu()->ordinal(), 0);
    EXPECT_EQ(device.allocator().Name(), "GPU_" + std::to_string(d) + "_bfc");
    EXPECT_EQ(device.allocator().Stats().bytes_limit, int64_t{3} << 30);
    replicas.push_back(models::MakeLstm(device, TinyLstm(global_batch / 2)).value());
  }
  TowerOptions options;
  options.allreduce_spec = spec;
  options.fusion_threshold_bytes = fusion_threshold;
  gpu.towers = Towers::Create(std::move(replicas), options).value();
  TowerRun cpu = MakeTowers(2, global_batch, VariableUpdate::kReplicated, spec, fusion_threshold);
  for (int step = 0; step < 3; ++step) {
    const models::Batch batch = GlobalBatch(*cpu.devices[0], global_batch, step);
    auto on_gpu = gpu.towers->Step(batch, 0.5f);
    auto on_cpus = cpu.towers->Step(batch, 0.5f);
    ASSERT_TRUE(on_gpu.ok()) << on_gpu.status().message();
    ASSERT_TRUE(on_cpus.ok());
    EXPECT_EQ(on_gpu->losses, on_cpus->losses) << "step " << step;
  }
  for (int d = 0; d < 2; ++d) {
    EXPECT_EQ(Parameters(gpu.towers->tower(d)), Parameters(cpu.towers->tower(d))) << "tower " << d;
    EXPECT_GT(gpu.devices[static_cast<size_t>(d)]->allocator().Stats().peak_bytes_in_use, 0)
        << "tower " << d << " used its own allocator";
  }
  EXPECT_GT(counts.to_host.load(), 0);  // gradients and sparse rows went through the host
}

INSTANTIATE_TEST_SUITE_P(Specs, VirtualGpuTowersMatchCpuTowers,
                         ::testing::Values(std::tuple{"ring", int64_t{0}},
                                           std::tuple{"pscpu", int64_t{0}},
                                           std::tuple{"ring", int64_t{1} << 20}));

// NCCL on virtual GPUs of one GPU: refused before any CUDA call, naming both devices, the
// loaded NCCL and the host specs to use, unless the library allows several ranks per GPU.
TEST(Towers, NcclOnVirtualGpusOfOneGpuNamesTheHostSpecs) {
  if (const char* multi = std::getenv("NCCL_MULTI_RANK_GPU_ENABLE"); multi && std::string(multi) == "1") {
    GTEST_SKIP() << "NCCL_MULTI_RANK_GPU_ENABLE=1: NCCL 2.30 and newer take several ranks per GPU";
  }
  const std::vector<int> ids = {0}, ordinals = {0};
  const std::vector<int64_t> free = {int64_t{1} << 30};
  testing::GpuTransferCounts counts;
  auto devices = testing::MakeHostMemoryGpuDevices(
      runtime::PlanVirtualGpus(ids, ordinals, free, 2, int64_t{1} << 30).value(), &counts);
  std::vector<std::unique_ptr<models::Model>> replicas;
  for (auto& d : devices) replicas.push_back(models::MakeLstm(*d, TinyLstm(2)).value());
  TowerOptions options;
  options.allreduce_spec = "nccl";
  const auto towers = Towers::Create(std::move(replicas), options);
  ASSERT_FALSE(towers.ok());
  const std::string& message = towers.status().message();
  if (!GpuAllReduce::CompiledIn()) {
    EXPECT_NE(message.find("NCCL"), std::string::npos) << message;
    return;
  }
  EXPECT_EQ(towers.status().code(), StatusCode::kInvalidInput) << message;
  for (const char* part : {"device:GPU:0 and /job:localhost/replica:0/task:0/device:GPU:1",
                           "virtual GPUs of CUDA device 0", "--allreduce_spec ring or pscpu",
                           "NCCL_MULTI_RANK_GPU_ENABLE"}) {
    EXPECT_NE(message.find(part), std::string::npos) << part << ": " << message;
  }
}

// `nccl` reduces GPU towers in device memory. Here (no GPU, stand-in devices without CUDA
// streams) it must fail cleanly; specs that mix nccl with host algorithms, fusion with nccl, and
// towers on different kinds of device are refused before anything runs.
TEST(Towers, NcclOnGpuTowersNeedsNcclAndCudaAndIsRefusedInMixedSpecs) {
  testing::GpuTransferCounts counts;
  std::vector<std::unique_ptr<runtime::Device>> gpus;
  auto replicas_on = [&](std::initializer_list<const runtime::Device*> devices) {
    std::vector<std::unique_ptr<models::Model>> replicas;
    for (const runtime::Device* d : devices) replicas.push_back(models::MakeLstm(*d, TinyLstm(2)).value());
    return replicas;
  };
  for (int d = 0; d < 2; ++d) gpus.push_back(testing::MakeHostMemoryGpuDevice(d, &counts));
  TowerOptions options;
  options.allreduce_spec = "nccl";
  const auto no_streams = Towers::Create(replicas_on({gpus[0].get(), gpus[1].get()}), options);
  ASSERT_FALSE(no_streams.ok());
  EXPECT_EQ(no_streams.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(no_streams.status().message().find(GpuAllReduce::CompiledIn() ? "no CUDA stream" : "NCCL"),
            std::string::npos)
      << no_streams.status().message();

  options.allreduce_spec = "pscpu:64:nccl";
  const auto mixed = Towers::Create(replicas_on({gpus[0].get(), gpus[1].get()}), options);
  EXPECT_EQ(mixed.status().code(), StatusCode::kInvalidInput);
  EXPECT_NE(mixed.status().message().find("nccl alone"), std::string::npos) << mixed.status().message();

  options.allreduce_spec = "nccl";
  options.fusion_threshold_bytes = 1 << 20;
  const auto fused = Towers::Create(replicas_on({gpus[0].get(), gpus[1].get()}), options);
  EXPECT_EQ(fused.status().code(), StatusCode::kInvalidInput);
  EXPECT_NE(fused.status().message().find("fusion"), std::string::npos) << fused.status().message();

  auto cpus = runtime::CreateDevices(*runtime::ParseDeviceSpec("cpu:1")).value();
  options = TowerOptions();
  const auto kinds = Towers::Create(replicas_on({gpus[0].get(), cpus[0].get()}), options);
  EXPECT_EQ(kinds.status().code(), StatusCode::kInvalidInput);
  EXPECT_NE(kinds.status().message().find("same kind of device"), std::string::npos);
  // CPU towers cannot take nccl at all.
  options.allreduce_spec = "nccl";
  auto two_cpus = runtime::CreateDevices(*runtime::ParseDeviceSpec("cpu:2")).value();
  EXPECT_EQ(Towers::Create(replicas_on({two_cpus[0].get(), two_cpus[1].get()}), options).status().code(),
            StatusCode::kUnavailable);
}

TEST(Towers, BadSpecAndBadBatchAreInvalidInput) {
  auto devices = runtime::CreateDevices(*runtime::ParseDeviceSpec("cpu:2")).value();
  std::vector<std::unique_ptr<models::Model>> replicas;
  for (auto& d : devices) replicas.push_back(models::MakeLstm(*d, TinyLstm(2)).value());
  TowerOptions options;
  options.allreduce_spec = "ring:32k";
  auto towers = Towers::Create(std::move(replicas), options);
  ASSERT_FALSE(towers.ok());
  EXPECT_EQ(ExitCodeFor(towers.status()), 2);
  EXPECT_FALSE(ParseVariableUpdate("horovod").ok());

  TowerRun run = MakeTowers(2, 4, VariableUpdate::kReplicated);
  auto odd = run.towers->Step(GlobalBatch(*run.devices[0], 5, 0), 0.1f);
  EXPECT_FALSE(odd.ok());
}

// ---- tensor fusion during backward ------------------------------------------------------------

class CountingObserver : public parallel::CollectiveObserver {
 public:
  void OnCollective(const parallel::CollectiveEvent& event) override {
    std::lock_guard<std::mutex> lock(mutex_);
    ++phases_[std::string(parallel::CollectivePhaseName(event.phase))];
    if (event.phase == parallel::CollectivePhase::kAllReduce) {
      for (const std::string& tensor : event.tensors) ++reduced_[tensor];
    }
  }
  int phase(const std::string& name) {
    std::lock_guard<std::mutex> lock(mutex_);
    return phases_[name];
  }
  std::map<std::string, int> reduced() {
    std::lock_guard<std::mutex> lock(mutex_);
    return reduced_;
  }

 private:
  std::mutex mutex_;
  std::map<std::string, int> phases_;
  std::map<std::string, int> reduced_;
};

// Tiny ResNet: 7 classes (a bias of 7, a kernel of 2048 x 7: odd sizes among the 64-multiples).
models::ResNetConfig TinyResNet() {
  models::ResNetConfig c;
  c.depth = 14;
  c.image_size = 32;
  c.num_classes = 7;
  c.seed = 5;
  return c;
}

models::Batch ImageBatch(const runtime::Device& device, int global_batch, int step) {
  const models::ResNetConfig c = TinyResNet();
  models::Batch batch;
  batch.inputs = *device.Allocate(DType::kFloat32, {global_batch, c.image_size, c.image_size, 3});
  batch.labels = *device.Allocate(DType::kInt32, {global_batch});
  float* x = batch.inputs.data<float>();
  for (int64_t k = 0; k < batch.inputs.num_elements(); ++k) {
    x[k] = static_cast<float>(((k * 37 + step * 11) % 101) - 50) / 50.0f;
  }
  for (int i = 0; i < global_batch; ++i) {
    batch.labels.data<int32_t>()[i] = (i * 3 + step) % c.num_classes;
  }
  return batch;
}

enum class ModelKind { kLstm, kResNet };

struct FusionCase {
  ModelKind model;
  int towers;
  int64_t threshold_bytes;  // 0: reduce after backward
  double cycle_ms;
  VariableUpdate update;
};

// The parameters the update writes: not BatchNorm's moving statistics, which each tower's
// forward pass updates from its own share of the batch (Keras does the same per replica).
std::vector<float> TrainedParameters(models::Model& model) {
  std::vector<float> all;
  for (const models::Variable& v : model.variables()) {
    if (v.name.find("moving_") != std::string::npos) continue;
    const float* p = v.value.data<float>();
    all.insert(all.end(), p, p + v.value.num_elements());
  }
  return all;
}

TowerRun MakeFusionTowers(const FusionCase& c, int global_batch,
                          parallel::CollectiveObserver* observer) {
  TowerRun run;
  run.devices = std::move(
      runtime::CreateDevices(*runtime::ParseDeviceSpec("cpu:" + std::to_string(c.towers))).value());
  std::vector<std::unique_ptr<models::Model>> replicas;
  for (auto& d : run.devices) {
    replicas.push_back(c.model == ModelKind::kLstm
                           ? models::MakeLstm(*d, TinyLstm(global_batch / c.towers)).value()
                           : models::MakeResNet(*d, TinyResNet()).value());
  }
  TowerOptions options;
  options.update = c.update;
  options.fusion_threshold_bytes = c.threshold_bytes;
  options.cycle_time_ms = c.cycle_ms;
  options.observer = observer;
  auto towers = Towers::Create(std::move(replicas), options);
  EXPECT_TRUE(towers.ok()) << towers.status().message();
  if (towers.ok()) run.towers = std::move(*towers);
  return run;
}

std::vector<float> TrainFusion(const FusionCase& c, int steps, CountingObserver* observer) {
  const int global_batch = 6;  // 3 or 2 per tower
  TowerRun run = MakeFusionTowers(c, global_batch, observer);
  if (run.towers == nullptr) return {};
  EXPECT_EQ(run.towers->fusing(), c.threshold_bytes > 0);
  for (int step = 0; step < steps; ++step) {
    const models::Batch batch = c.model == ModelKind::kLstm
                                    ? GlobalBatch(*run.devices[0], global_batch, step)
                                    : ImageBatch(*run.devices[0], global_batch, step);
    auto result = run.towers->Step(batch, c.model == ModelKind::kLstm ? 0.5f : 0.05f);
    EXPECT_TRUE(result.ok()) << result.status().message();
    if (!result.ok()) return {};
  }
  const std::vector<float> first = TrainedParameters(run.towers->tower(0));
  for (int d = 1; d < c.towers; ++d) {
    const std::vector<float> other = TrainedParameters(run.towers->tower(d));
    EXPECT_EQ(0, std::memcmp(first.data(), other.data(), first.size() * sizeof(float)))
        << "replica " << d << " differs from replica 0 with fusion threshold " << c.threshold_bytes;
  }
  return first;
}

class FusionMatchesReduceAfterBackward
    : public ::testing::TestWithParam<std::tuple<ModelKind, int>> {};

TEST_P(FusionMatchesReduceAfterBackward, SameParametersAndBitIdenticalReplicas) {
  const auto [model, n] = GetParam();
  // ResNet compares after one step: with 2 images per tower its last BatchNorm normalizes 2
  // values per channel, which magnifies the rounding of a different summation order within a
  // few steps; the update itself is what fusion may change. The LSTM compares after three.
  const int steps = model == ModelKind::kLstm ? 3 : 1;
  const std::vector<float> reference =
      TrainFusion({model, n, 0, 5.0, VariableUpdate::kReplicated}, steps, nullptr);
  ASSERT_FALSE(reference.empty());
  // Horovod's 64 MiB buffer (everything of a cycle fuses), a buffer smaller than some gradients
  // (those go alone, the rest in several batches), and no cycle wait at all.
  const std::vector<std::pair<int64_t, double>> settings = {
      {int64_t{64} << 20, 5.0}, {10000, 1.0}, {4096, 0.0}};
  for (const auto& [threshold, cycle] : settings) {
    SCOPED_TRACE("threshold " + std::to_string(threshold) + " cycle " + std::to_string(cycle));
    CountingObserver observer;
    const std::vector<float> fused =
        TrainFusion({model, n, threshold, cycle, VariableUpdate::kReplicated}, steps, &observer);
    ASSERT_EQ(fused.size(), reference.size());
    double worst = 0;
    size_t worst_at = 0;
    for (size_t k = 0; k < reference.size(); ++k) {
      const double diff = std::abs(static_cast<double>(reference[k]) - fused[k]) /
                          (1.0 + std::abs(static_cast<double>(reference[k])));
      if (diff > worst) {
        worst = diff;
        worst_at = k;
      }
    }
    EXPECT_LT(worst, 2e-5) << "at parameter " << worst_at;  // summation grouping only
    // The reduction really ran through the fusion buffer, each dense gradient once per step.
    const std::map<std::string, int> reduced = observer.reduced();
    EXPECT_FALSE(reduced.empty());
    for (const auto& [name, count] : reduced) {
      EXPECT_EQ(count, steps) << name;
      EXPECT_EQ(name.rfind("HorovodAllreduce_", 0), 0u) << name;
    }
    if (threshold == int64_t{64} << 20) {
      EXPECT_GT(observer.phase("MEMCPY_IN_FUSION_BUFFER"), 0);
    }
    EXPECT_EQ(observer.phase("MEMCPY_IN_FUSION_BUFFER"),
              observer.phase("MEMCPY_OUT_FUSION_BUFFER"));
  }
}

TEST(TowersFusion, ResNetStepsReduceEveryGradientOncePerStep) {
  CountingObserver observer;
  const FusionCase c{ModelKind::kResNet, 2, 10000, 1.0, VariableUpdate::kReplicated};
  ASSERT_FALSE(TrainFusion(c, 2, &observer).empty());  // replicas bit-identical inside
  const std::map<std::string, int> reduced = observer.reduced();
  EXPECT_EQ(reduced.size(), 4u * 17 + 2);  // 17 conv+BN layers of 4 variables, the dense layer's 2
  for (const auto& [name, count] : reduced) EXPECT_EQ(count, 2) << name;
  EXPECT_EQ(reduced.count("HorovodAllreduce_conv1_conv_kernel_0"), 1u);
}

INSTANTIATE_TEST_SUITE_P(Models, FusionMatchesReduceAfterBackward,
                         ::testing::Combine(::testing::Values(ModelKind::kLstm, ModelKind::kResNet),
                                            ::testing::Values(2, 3)));

TEST(TowersFusion, ParameterServerAveragesWithFusionToo) {
  const std::vector<float> after =
      TrainFusion({ModelKind::kLstm, 2, 0, 5.0, VariableUpdate::kParameterServer}, 2, nullptr);
  const std::vector<float> fused = TrainFusion(
      {ModelKind::kLstm, 2, int64_t{64} << 20, 1.0, VariableUpdate::kParameterServer}, 2, nullptr);
  ASSERT_EQ(after.size(), fused.size());
  for (size_t k = 0; k < after.size(); ++k) ASSERT_NEAR(after[k], fused[k], 2e-5) << k;
}

TEST(TowersFusion, NegativeThresholdIsInvalidAndOneTowerDoesNotFuse) {
  auto devices = runtime::CreateDevices(*runtime::ParseDeviceSpec("cpu:2")).value();
  std::vector<std::unique_ptr<models::Model>> replicas;
  for (auto& d : devices) replicas.push_back(models::MakeLstm(*d, TinyLstm(2)).value());
  TowerOptions options;
  options.fusion_threshold_bytes = -1;
  auto towers = Towers::Create(std::move(replicas), options);
  ASSERT_FALSE(towers.ok());
  EXPECT_EQ(ExitCodeFor(towers.status()), 2);
  EXPECT_NE(towers.status().message().find("fusion_threshold_bytes"), std::string::npos);

  TowerRun one = MakeTowers(1, 4, VariableUpdate::kReplicated, "ring", int64_t{64} << 20);
  EXPECT_FALSE(one.towers->fusing());  // nothing to communicate
  TowerRun independent = MakeTowers(2, 4, VariableUpdate::kIndependent, "ring", int64_t{64} << 20);
  EXPECT_FALSE(independent.towers->fusing());
}

}  // namespace
}  // namespace stepscope::trainer
