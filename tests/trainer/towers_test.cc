// Data parallelism in one process: N towers on the same global batch train like one device
// (within float tolerance), replicas stay bit-identical, `independent` replicas diverge.
#include "trainer/main/towers.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "trainer/models/lstm_model.h"

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

TowerRun MakeTowers(int n, int global_batch, VariableUpdate update, const std::string& spec = "ring") {
  TowerRun run;
  run.devices = std::move(runtime::CreateDevices(*runtime::ParseDeviceSpec("cpu:" + std::to_string(n))).value());
  std::vector<std::unique_ptr<models::Model>> replicas;
  for (auto& d : run.devices) replicas.push_back(models::MakeLstm(*d, TinyLstm(global_batch / n)).value());
  TowerOptions options;
  options.update = update;
  options.allreduce_spec = spec;
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
    const float* p = v.value.data<float>();
    all.insert(all.end(), p, p + v.value.num_elements());
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

}  // namespace
}  // namespace stepscope::trainer
