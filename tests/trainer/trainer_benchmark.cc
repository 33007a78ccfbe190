// The cost of --profile on training steps, measured the only way that survives a shared machine's
// drifting load: profiled and unprofiled steps alternate in the same run (the order flips every
// pair), each timed on its own; the medians give the overhead. A profiled step includes what
// --profile does on every step: hooks, collection, building the RunMetadata and writing the file.
// Models: PTB LSTM small (batch 20) and ResNet-50 (64×64 images, batch 8), one CPU device.
// Also the collector's cost per recorded op.
// Run: build/.../trainer_benchmark [--benchmark_min_time=20]
#include <benchmark/benchmark.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <memory>

#include "profiler/collect/step_collector.h"
#include "trainer/main/step_profiler.h"
#include "trainer/models/lstm_model.h"
#include "trainer/models/resnet_model.h"
#include "trainer/runtime/clock.h"

namespace stepscope::trainer {
namespace {

using runtime::DType;

// A model with one fixed batch on one CPU device, ready to take training steps.
struct TrainingFixture {
  std::vector<std::unique_ptr<runtime::Device>> devices;
  std::unique_ptr<models::Model> model;
  models::Batch batch;
  float learning_rate = 0.1f;
  double examples_per_step = 0;  // words or images
  std::string name;
};

StatusOr<TrainingFixture> MakeLstmFixture() {
  TrainingFixture f;
  ASSIGN_OR_RETURN(auto spec, runtime::ParseDeviceSpec("cpu:1"));
  ASSIGN_OR_RETURN(auto devices, runtime::CreateDevices(spec));
  f.devices = std::move(devices);
  runtime::Device& device = *f.devices[0];
  ASSIGN_OR_RETURN(const models::LstmConfig config, models::LstmConfigByName("small"));
  ASSIGN_OR_RETURN(f.model, models::MakeLstm(device, config));
  ASSIGN_OR_RETURN(f.batch.inputs, device.Allocate(DType::kInt32, {config.batch_size, config.num_steps}));
  ASSIGN_OR_RETURN(f.batch.labels, device.Allocate(DType::kInt32, {config.batch_size, config.num_steps}));
  for (int64_t k = 0; k < f.batch.inputs.num_elements(); ++k) {
    f.batch.inputs.data<int32_t>()[k] = static_cast<int32_t>((k * 7919) % config.vocab_size);
    f.batch.labels.data<int32_t>()[k] = static_cast<int32_t>((k * 104729 + 1) % config.vocab_size);
  }
  f.learning_rate = 0.1f;
  f.examples_per_step = static_cast<double>(config.batch_size) * config.num_steps;
  f.name = "lstm_small";
  return f;
}

StatusOr<TrainingFixture> MakeResNetFixture() {
  TrainingFixture f;
  ASSIGN_OR_RETURN(auto spec, runtime::ParseDeviceSpec("cpu:1"));
  ASSIGN_OR_RETURN(auto devices, runtime::CreateDevices(spec));
  f.devices = std::move(devices);
  runtime::Device& device = *f.devices[0];
  models::ResNetConfig config;
  config.image_size = 64;
  const int64_t batch_size = 8;
  ASSIGN_OR_RETURN(f.model, models::MakeResNet(device, config));
  ASSIGN_OR_RETURN(f.batch.inputs, device.Allocate(DType::kFloat32, {batch_size, 64, 64, 3}));
  ASSIGN_OR_RETURN(f.batch.labels, device.Allocate(DType::kInt32, {batch_size}));
  uint32_t seed = 3;
  float* x = f.batch.inputs.data<float>();
  for (int64_t i = 0; i < f.batch.inputs.num_elements(); ++i) {
    seed = seed * 1664525u + 1013904223u;
    x[i] = static_cast<float>(seed >> 8) / static_cast<float>(1 << 24) - 0.5f;
  }
  for (int64_t i = 0; i < batch_size; ++i) {
    f.batch.labels.data<int32_t>()[i] = static_cast<int32_t>(i % config.num_classes);
  }
  f.learning_rate = 0.01f;
  f.examples_per_step = static_cast<double>(batch_size);
  f.name = "resnet50_img64";
  return f;
}

double Median(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

void ProfileOverhead(benchmark::State& state, StatusOr<TrainingFixture> (*make)()) {
  StatusOr<TrainingFixture> made = make();
  if (!made.ok()) {
    state.SkipWithError(made.status().message().c_str());
    return;
  }
  TrainingFixture& f = *made;
  ProfileOptions options;
  options.enabled = true;
  options.dir = (std::filesystem::temp_directory_path() / "stepscope_trainer_benchmark").string();
  // A fresh directory, as a new run's: renaming over an earlier run's trace makes ext4 flush the
  // new file first (auto_da_alloc), a wait a first write does not have.
  std::filesystem::remove_all(options.dir);
  StepProfiler profiler(options, f.name);
  std::vector<runtime::Device*> device_list = {f.devices[0].get()};
  int64_t step = 0;
  // One training step, profiled or not; its wall time in ms, or < 0 after an error.
  auto timed_step = [&](bool profile) -> double {
    const int64_t start = runtime::NowNanos();
    if (profile) profiler.BeginStep(++step, device_list);
    auto result = f.model->ComputeGradients(f.batch);
    if (!result.ok() || !f.model->ApplyGradients(result->gradients, f.learning_rate).ok()) {
      state.SkipWithError("training step failed");
      return -1;
    }
    if (profile && !profiler.EndStep().ok()) {
      state.SkipWithError("writing the trace failed");
      return -1;
    }
    return static_cast<double>(runtime::NowNanos() - start) * 1e-6;
  };
  // Warm-up: the allocator's arena and the collector's buffers reach their steady size.
  if (timed_step(false) < 0 || timed_step(true) < 0) return;
  std::vector<double> off_ms, on_ms;
  bool profile_first = false;
  for (auto _ : state) {
    const double first = timed_step(profile_first);
    const double second = timed_step(!profile_first);
    if (first < 0 || second < 0) return;
    (profile_first ? on_ms : off_ms).push_back(first);
    (profile_first ? off_ms : on_ms).push_back(second);
    state.SetIterationTime((first + second) * 1e-3);
    profile_first = !profile_first;
  }
  const double off = Median(off_ms), on = Median(on_ms);
  state.counters["off_ms"] = off;
  state.counters["profiled_ms"] = on;
  state.counters["overhead_pct"] = (on / off - 1.0) * 100.0;
  state.counters["examples_per_s"] = f.examples_per_step / (off * 1e-3);  // unprofiled
}

// Each iteration is one unprofiled and one profiled step.
BENCHMARK_CAPTURE(ProfileOverhead, lstm_small_batch20, &MakeLstmFixture)
    ->Unit(benchmark::kMillisecond)
    ->UseManualTime();
BENCHMARK_CAPTURE(ProfileOverhead, resnet50_img64_batch8, &MakeResNetFixture)
    ->Unit(benchmark::kMillisecond)
    ->UseManualTime();

// The hot path per op: begin, two outputs, one allocation record, end.
void BM_CollectorCostPerOp(benchmark::State& state) {
  collect::StepCollector collector;
  const std::string device = "/job:localhost/replica:0/task:0/device:CPU:0";
  const std::string name = "Train/Model/RNN/RNN/multi_rnn_cell/cell_0/lstm_cell/LSTMBlockCell";
  const std::string type = "LSTMBlockCell", allocator = "cpu";
  const std::vector<std::string> inputs = {"a", "b"};
  collect::TensorRecord tensor;
  tensor.rank = 2;
  tensor.dims = {20, 200};
  tensor.allocator = &allocator;
  collect::AllocationRecord record;
  record.allocator = &allocator;
  int64_t ops = 0;
  collector.BeginStep(1);
  for (auto _ : state) {
    if (++ops % 100000 == 0) collector.BeginStep(ops);  // keep the buffers at a steady size
    const int64_t now = runtime::NowNanos();
    collector.BeginOp(&device, &name, &type, &inputs, now);
    record.time_ns = now;
    collector.RecordAllocation(record);
    collector.AddOutput(tensor);
    collector.AddOutput(tensor);
    collector.EndOp(runtime::NowNanos());
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_CollectorCostPerOp);

}  // namespace
}  // namespace stepscope::trainer
