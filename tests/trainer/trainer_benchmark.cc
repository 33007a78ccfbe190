// Training-step speed of the PTB LSTM (small config, batch 20, one CPU device) with profiling off
// and with --profile on every step (collection, RunMetadata, file write), and the collector's
// cost per recorded op. Run: build/.../trainer_benchmark [--benchmark_min_time=5]
#include <benchmark/benchmark.h>

#include <filesystem>
#include <memory>

#include "profiler/collect/step_collector.h"
#include "trainer/main/step_profiler.h"
#include "trainer/models/lstm_model.h"
#include "trainer/runtime/clock.h"

namespace stepscope::trainer {
namespace {

using runtime::DType;

void BM_LstmSmallTrainingStep(benchmark::State& state) {
  const bool profile = state.range(0) != 0;
  auto devices = runtime::CreateDevices(*runtime::ParseDeviceSpec("cpu:1"));
  runtime::Device& device = *(*devices)[0];
  const models::LstmConfig config = *models::LstmConfigByName("small");
  std::unique_ptr<models::Model> model = models::MakeLstm(device, config).value();
  models::Batch batch;
  batch.inputs = *device.Allocate(DType::kInt32, {config.batch_size, config.num_steps});
  batch.labels = *device.Allocate(DType::kInt32, {config.batch_size, config.num_steps});
  for (int64_t k = 0; k < batch.inputs.num_elements(); ++k) {
    batch.inputs.data<int32_t>()[k] = static_cast<int32_t>((k * 7919) % config.vocab_size);
    batch.labels.data<int32_t>()[k] = static_cast<int32_t>((k * 104729 + 1) % config.vocab_size);
  }
  ProfileOptions options;
  options.enabled = true;
  options.dir = (std::filesystem::temp_directory_path() / "stepscope_trainer_benchmark").string();
  StepProfiler profiler(options, "lstm_small");
  std::vector<runtime::Device*> device_list = {&device};
  int64_t step = 0;
  auto run_step = [&]() -> bool {
    if (profile) profiler.BeginStep(++step, device_list);
    auto result = model->ComputeGradients(batch);
    if (!result.ok() || !model->ApplyGradients(result->gradients, 0.1f).ok()) {
      state.SkipWithError("training step failed");
      return false;
    }
    if (profile && !profiler.EndStep().ok()) {
      state.SkipWithError("writing the trace failed");
      return false;
    }
    return true;
  };
  if (!run_step()) return;  // warm-up: allocator arena and collector buffers reach their size
  for (auto _ : state) {
    if (!run_step()) return;
  }
  const double words = static_cast<double>(config.batch_size) * config.num_steps;
  state.counters["words_per_second"] =
      benchmark::Counter(words, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_LstmSmallTrainingStep)
    ->ArgName("profile")
    ->Arg(0)
    ->Arg(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

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

BENCHMARK_MAIN();
