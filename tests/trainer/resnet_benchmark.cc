// One ResNet training step (forward, backward, momentum update) on one CPU device: step time and
// images/s. Default shape: ResNet-50, 64×64 images, batch 8, 1000 classes (Keras' head).
// Run: build/.../resnet_benchmark [--benchmark_min_time=10] ; args are depth, image size, batch.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <memory>

#include "trainer/models/resnet_model.h"

namespace stepscope::models {
namespace {

using runtime::DType;

void BM_ResNetTrainingStep(benchmark::State& state) {
  auto devices = runtime::CreateDevices(*runtime::ParseDeviceSpec("cpu:1"));
  if (!devices.ok()) {
    state.SkipWithError(devices.status().message().c_str());
    return;
  }
  const runtime::Device& device = *(*devices)[0];
  ResNetConfig config;
  config.depth = static_cast<int>(state.range(0));
  config.image_size = static_cast<int>(state.range(1));
  const int64_t batch_size = state.range(2);
  auto made = MakeResNet(device, config);
  if (!made.ok()) {
    state.SkipWithError(made.status().message().c_str());
    return;
  }
  std::unique_ptr<Model> model = std::move(*made);

  Batch batch;
  batch.inputs =
      *device.Allocate(DType::kFloat32, {batch_size, config.image_size, config.image_size, 3});
  batch.labels = *device.Allocate(DType::kInt32, {batch_size});
  uint32_t seed = 3;
  float* x = batch.inputs.data<float>();
  for (int64_t i = 0; i < batch.inputs.num_elements(); ++i) {
    seed = seed * 1664525u + 1013904223u;
    x[i] = static_cast<float>(seed >> 8) / static_cast<float>(1 << 24) - 0.5f;
  }
  for (int64_t i = 0; i < batch_size; ++i) {
    batch.labels.data<int32_t>()[i] = static_cast<int32_t>(i % config.num_classes);
  }

  auto step = [&]() -> bool {
    auto r = model->ComputeGradients(batch);
    if (!r.ok()) {
      state.SkipWithError(r.status().message().c_str());
      return false;
    }
    const Status applied = model->ApplyGradients(r->gradients, 0.01f);
    if (!applied.ok()) {
      state.SkipWithError(applied.message().c_str());
      return false;
    }
    return true;
  };
  if (!step()) return;  // warm-up: the allocator's arena grows to the step's peak once
  for (auto _ : state) {
    if (!step()) return;
  }
  state.SetItemsProcessed(state.iterations() * batch_size);  // images/s
  state.counters["images_per_second"] = benchmark::Counter(
      static_cast<double>(batch_size), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["threads"] = device.num_threads();
}
BENCHMARK(BM_ResNetTrainingStep)
    ->ArgNames({"depth", "image", "batch"})
    ->Args({50, 64, 8})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace stepscope::models
