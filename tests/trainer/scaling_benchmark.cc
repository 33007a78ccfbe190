// Data-parallel scaling of ResNet training over CPU devices in one process, and how much of the
// all-reduce tensor fusion hides behind backward.
//
// BM_ResNetTowers/<devices>/<fusion>: ResNet-50 (64×64 images, 10 classes) at a fixed per-device
// batch of 8, so the global batch grows with the devices (weak scaling, as tf_cnn_benchmarks
// reports). Each iteration is one training step (towers' forward and backward, the all-reduce,
// the update); `images_per_sec` is the global batch over the mean step time. fusion 1 hands
// gradients to a 64 MiB fusion buffer with a 5 ms cycle as backward finishes them; 0 reduces
// after backward. After the timed steps one more step is profiled and the overlap analysis of
// profiler/analysis (the `stepscope overlap` command's) gives `hidden_share`: the fraction of
// communication time (collectives and fusion copies) during which the same device computed.
//
// The machine's cores are shared by the devices (each gets cores / devices threads), so on a
// small machine more devices add communication without adding compute: read step times as the
// cost of data parallelism here, not as a speed-up.
// Run: build/.../trainer_scaling_benchmark --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>

#include <filesystem>
#include <memory>
#include <vector>

#include "profiler/analysis/step_analyses.h"
#include "profiler/formats/reader.h"
#include "trainer/main/step_profiler.h"
#include "trainer/models/resnet_model.h"
#include "trainer/towers/towers.h"

namespace stepscope::trainer {
namespace {

using runtime::DType;

constexpr int kDepth = 50;
constexpr int kImageSize = 64;
constexpr int kBatchPerDevice = 8;

void BM_ResNetTowers(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const bool fusion = state.range(1) != 0;
  const double cycle_ms = static_cast<double>(state.range(2));
  auto devices = runtime::CreateDevices(*runtime::ParseDeviceSpec("cpu:" + std::to_string(n)));
  if (!devices.ok()) {
    state.SkipWithError(devices.status().message().c_str());
    return;
  }
  std::vector<runtime::Device*> device_list;
  std::vector<std::unique_ptr<models::Model>> replicas;
  models::ResNetConfig config;
  config.depth = kDepth;
  config.image_size = kImageSize;
  config.num_classes = 10;
  for (auto& d : *devices) {
    device_list.push_back(d.get());
    auto model = models::MakeResNet(*d, config);
    if (!model.ok()) {
      state.SkipWithError(model.status().message().c_str());
      return;
    }
    replicas.push_back(std::move(*model));
  }
  ProfileOptions profile;
  profile.enabled = true;
  profile.dir = (std::filesystem::temp_directory_path() / "stepscope_scaling_benchmark").string();
  StepProfiler profiler(profile, "resnet50_" + std::to_string(n) + (fusion ? "_fusion" : ""));
  TowerOptions options;
  options.fusion_threshold_bytes = fusion ? int64_t{64} << 20 : 0;
  options.cycle_time_ms = cycle_ms;
  options.observer = &profiler;
  auto towers = Towers::Create(std::move(replicas), options);
  if (!towers.ok()) {
    state.SkipWithError(towers.status().message().c_str());
    return;
  }

  const int global = kBatchPerDevice * n;
  runtime::Device& host = *(*devices)[0];
  models::Batch batch;
  batch.inputs = *host.Allocate(DType::kFloat32, {global, kImageSize, kImageSize, 3});
  batch.labels = *host.Allocate(DType::kInt32, {global});
  for (int64_t k = 0; k < batch.inputs.num_elements(); ++k) {
    batch.inputs.data<float>()[k] = static_cast<float>((k * 7919) % 255) / 255.0f - 0.5f;
  }
  for (int i = 0; i < global; ++i) batch.labels.data<int32_t>()[i] = i % 10;
  const float learning_rate = 0.1f * static_cast<float>(global) / 256.0f;

  if (!(*towers)->Step(batch, learning_rate).ok()) {  // warm-up: allocator arenas, buffers
    state.SkipWithError("warm-up step failed");
    return;
  }
  for (auto _ : state) {
    auto result = (*towers)->Step(batch, learning_rate);
    if (!result.ok()) {
      state.SkipWithError(result.status().message().c_str());
      return;
    }
  }
  state.counters["images_per_sec"] =
      benchmark::Counter(static_cast<double>(global) * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate);
  state.counters["global_batch"] = global;

  // One profiled step, analysed as `stepscope overlap` does.
  profiler.BeginStep(1, device_list);
  auto profiled = (*towers)->Step(batch, learning_rate);
  auto path = profiler.EndStep();
  if (!profiled.ok() || !path.ok()) {
    state.SkipWithError("profiled step failed");
    return;
  }
  auto trace = trace::ReadTrace(*path);
  if (!trace.ok()) {
    state.SkipWithError(trace.status().message().c_str());
    return;
  }
  const analysis::OverlapStats overlap = analysis::ComputeOverlap(*trace);
  state.counters["comm_ms"] = static_cast<double>(overlap.comm_ns) * 1e-6 / n;  // per device
  state.counters["exposed_ms"] = static_cast<double>(overlap.exposed_ns) * 1e-6 / n;
  state.counters["hidden_share"] = overlap.hidden_share;
  state.counters["profiled_step_ms"] = static_cast<double>(overlap.span_ns) * 1e-6;
}

BENCHMARK(BM_ResNetTowers)
    ->ArgNames({"devices", "fusion", "cycle_ms"})
    ->Args({1, 0, 0})
    ->Args({2, 0, 0})
    ->Args({2, 1, 5})
    ->Args({2, 1, 50})
    ->Args({4, 0, 0})
    ->Args({4, 1, 5})
    ->Args({4, 1, 50})
    ->Iterations(3)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace stepscope::trainer
