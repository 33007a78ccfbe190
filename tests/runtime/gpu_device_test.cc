// GPU devices (GPU builds): the error a GPU request gives without a driver or GPU (the machines we
// build on), the CUDA sub-allocators' failures kept with the CUDA call and error, TF's allocator
// names, and, where a GPU is present, the device's parts.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/cuda/cuda_runtime_calls.h"
#include "trainer/models/lstm_model.h"
#include "trainer/runtime/cuda/cuda_allocators.h"
#include "trainer/runtime/cuda/gpu_device.h"
#include "trainer/runtime/device.h"
#include "trainer/runtime/transfers.h"

namespace stepscope::runtime {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

// The driver's answer to "how many GPUs": cudaSuccess and a count, or the error.
struct Probe {
  cudaError_t error = cudaSuccess;
  int count = 0;
  bool has_gpu() const { return error == cudaSuccess && count > 0; }
};

Probe ProbeGpus() {
  Probe probe;
  probe.error = cudaGetDeviceCount(&probe.count);
  if (probe.error != cudaSuccess) probe.count = 0;
  return probe;
}

void ExpectCarriesCudaError(const std::string& message, cudaError_t error) {
  EXPECT_NE(message.find(cudaGetErrorString(error)), std::string::npos) << message;
  EXPECT_NE(message.find(cudaGetErrorName(error)), std::string::npos) << message;
}

TEST(GpuDevices, BuildHasGpuSupport) { EXPECT_TRUE(GpuSupportCompiledIn()); }

TEST(GpuDevices, RequestWithoutDriverOrGpuIsUnavailableNamingTheGpuAndTheCudaError) {
  const Probe probe = ProbeGpus();
  if (probe.has_gpu()) GTEST_SKIP() << "this machine has a GPU";
  for (const auto& [spec, asked] : {std::pair<std::string, std::string>{"gpu:0", "GPU 0 requested (--devices gpu:0)"},
                                    {"gpu:1,0", "GPUs 1,0 requested (--devices gpu:1,0)"}}) {
    const auto devices = CreateDevices(*ParseDeviceSpec(spec));
    ASSERT_FALSE(devices.ok()) << spec;
    EXPECT_EQ(devices.status().code(), StatusCode::kUnavailable);
    EXPECT_EQ(ExitCodeFor(devices.status()), 1);
    const std::string& message = devices.status().message();
    EXPECT_EQ(message.find(asked + " but no GPU is usable: cudaGetDeviceCount(&count) failed at "), 0u)
        << message;
    if (probe.error != cudaErrorNoDevice) ExpectCarriesCudaError(message, probe.error);
  }
}

TEST(GpuDevices, CreatingStreamsWithoutDriverFailsAtTheContext) {
  const Probe probe = ProbeGpus();
  if (probe.has_gpu()) GTEST_SKIP() << "this machine has a GPU";
  const auto streams = cuda::GpuStreams::Create(0);
  ASSERT_FALSE(streams.ok());
  EXPECT_EQ(streams.status().code(), StatusCode::kUnavailable) << streams.status().message();
  EXPECT_NE(streams.status().message().find("cudaSetDevice(ordinal) failed at "), std::string::npos)
      << streams.status().message();
  EXPECT_NE(streams.status().message().find("gpu_device.cc:"), std::string::npos);
}

TEST(GpuDevices, AllocatorsHaveTensorFlowsNames) {
  EXPECT_EQ(cuda::GpuBfcAllocatorName(0), "GPU_0_bfc");
  EXPECT_EQ(cuda::GpuBfcAllocatorName(7), "GPU_7_bfc");
  EXPECT_EQ(cuda::NewGpuBfcAllocator(3, 3, 64 * kMiB)->Name(), "GPU_3_bfc");
  // Named by the device id, not by the CUDA device behind it (a rank's block of GPUs).
  EXPECT_EQ(cuda::NewGpuBfcAllocator(0, 5, 64 * kMiB)->Name(), "GPU_0_bfc");
  EXPECT_EQ(cuda::NewCudaHostBfcAllocator(64 * kMiB)->Name(), "cuda_host_bfc");
  EXPECT_EQ(cuda::NewGpuBfcAllocator(3, 3, 64 * kMiB)->Stats().bytes_limit, 64 * kMiB);
}

TEST(CudaSubAllocators, DeviceMemoryFailureIsKeptWithTheCudaCall) {
  const Probe probe = ProbeGpus();
  cuda::CudaDeviceSubAllocator sub(0);
  EXPECT_TRUE(sub.last_error().ok());
  EXPECT_EQ(sub.Alloc(256, 0), nullptr);  // nothing asked, nothing called
  EXPECT_EQ(sub.num_failures(), 0);
  sub.Free(nullptr, 0);
  EXPECT_EQ(sub.num_failures(), 0);

  // More than any GPU has: fails with or without a GPU.
  const size_t huge = size_t{1} << 62;
  EXPECT_EQ(sub.Alloc(256, huge), nullptr);
  EXPECT_EQ(sub.num_failures(), 1);
  const Status error = sub.last_error();
  ASSERT_FALSE(error.ok());
  EXPECT_EQ(error.message().find("GPU 0: allocating " + std::to_string(huge) +
                                 " bytes of device memory: "), 0u) << error.message();
  EXPECT_NE(error.message().find("cuda_allocators.cc:"), std::string::npos) << error.message();
  if (probe.has_gpu()) {
    EXPECT_NE(error.message().find("cudaMalloc(ptr, bytes) failed at "), std::string::npos)
        << error.message();
    ExpectCarriesCudaError(error.message(), cudaErrorMemoryAllocation);
  } else {
    // Without a driver the device cannot even be made current.
    EXPECT_EQ(error.code(), StatusCode::kUnavailable);
    EXPECT_NE(error.message().find("cudaSetDevice(ordinal) failed at "), std::string::npos)
        << error.message();
    if (probe.error != cudaErrorNoDevice) ExpectCarriesCudaError(error.message(), probe.error);
  }
}

TEST(CudaSubAllocators, PinnedHostFailureIsKeptWithTheCudaCall) {
  const Probe probe = ProbeGpus();
  if (probe.has_gpu()) GTEST_SKIP() << "pinned memory is available on this machine";
  cuda::CudaHostSubAllocator sub;
  EXPECT_EQ(sub.Alloc(256, kMiB), nullptr);
  const Status error = sub.last_error();
  ASSERT_FALSE(error.ok());
  EXPECT_EQ(error.message().find("allocating 1048576 bytes of pinned host memory: "
                                 "cudaHostAlloc(ptr, bytes, cudaHostAllocPortable) failed at "),
            0u)
      << error.message();
  if (probe.error != cudaErrorNoDevice) ExpectCarriesCudaError(error.message(), probe.error);
  EXPECT_EQ(sub.Alloc(256, kMiB), nullptr);
  EXPECT_EQ(sub.num_failures(), 2);
}

TEST(CudaSubAllocators, BfcOverAFailingSubAllocatorReportsExhaustionWithoutCrashing) {
  if (ProbeGpus().has_gpu()) GTEST_SKIP() << "device memory is available on this machine";
  std::unique_ptr<Allocator> allocators[] = {cuda::NewGpuBfcAllocator(0, 0, 256 * kMiB),
                                             cuda::NewCudaHostBfcAllocator(256 * kMiB)};
  for (const auto& allocator : allocators) {
    auto ptr = allocator->Allocate(4096);
    ASSERT_FALSE(ptr.ok()) << allocator->Name();
    EXPECT_EQ(ptr.status().code(), StatusCode::kResourceExhausted);
    EXPECT_NE(ptr.status().message().find(allocator->Name()), std::string::npos)
        << ptr.status().message();
    EXPECT_FALSE(allocator->Allocate(4096).ok());  // and again, after the first retry pass
    EXPECT_EQ(allocator->Stats().bytes_reserved, 0);
    EXPECT_EQ(allocator->Stats().num_allocs, 0);
    auto none = allocator->Allocate(0);
    ASSERT_TRUE(none.ok());
    EXPECT_EQ(*none, nullptr);
  }
}

// Only where a GPU exists: the device's parts, and that models refuse it.
TEST(GpuDevices, DeviceHoldsContextStreamsAndAllocators) {
  const Probe probe = ProbeGpus();
  if (!probe.has_gpu()) GTEST_SKIP() << "no GPU on this machine";
  const auto missing = CreateDevices(*ParseDeviceSpec("gpu:" + std::to_string(probe.count)));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(missing.status().message().find("does not exist"), std::string::npos);

  DeviceOptions options;
  options.placement = {"worker", 2};
  options.memory_limit_bytes = 256 * kMiB;
  auto devices = CreateDevices(*ParseDeviceSpec("gpu:0"), options);
  ASSERT_TRUE(devices.ok()) << devices.status().message();
  const Device& device = *(*devices)[0];
  EXPECT_EQ(device.kind(), DeviceKind::kGpu);
  EXPECT_EQ(device.name(), "/job:worker/replica:0/task:2/device:GPU:0");
  EXPECT_EQ(device.allocator().Name(), "GPU_0_bfc");
  ASSERT_NE(device.host_allocator(), nullptr);
  EXPECT_EQ(device.host_allocator()->Name(), "cuda_host_bfc");
  const auto* streams = dynamic_cast<const cuda::GpuStreams*>(device.gpu());
  ASSERT_NE(streams, nullptr);
  EXPECT_EQ(streams->ordinal(), 0);
  EXPECT_NE(streams->compute(), streams->host_to_device());
  EXPECT_NE(streams->host_to_device(), streams->device_to_host());
  auto tensor = device.Allocate(DType::kFloat32, {1024, 1024});
  ASSERT_TRUE(tensor.ok()) << tensor.status().message();
  EXPECT_EQ(device.allocator().Stats().num_allocs, 1);
  EXPECT_TRUE(streams->Synchronize().ok());
  // The models run on it: a small LSTM's first step gives the CPU device's loss (cuBLAS and the
  // CUDA kernels round differently from OpenBLAS: within float tolerance).
  models::LstmConfig config;
  config.hidden_size = 16, config.num_steps = 4, config.batch_size = 2, config.vocab_size = 20;
  const auto cpu = std::move(CreateDevices(*ParseDeviceSpec("cpu")).value()[0]);
  std::vector<int32_t> words(8);
  for (size_t k = 0; k < words.size(); ++k) words[k] = static_cast<int32_t>((3 * k + 1) % 20);
  double losses[2] = {0, 0};
  int which = 0;
  for (const Device* on : {&device, static_cast<const Device*>(cpu.get())}) {
    auto model = models::MakeLstm(*on, config);
    ASSERT_TRUE(model.ok()) << model.status().message();
    models::Batch batch{*on->Allocate(DType::kInt32, {2, 4}), *on->Allocate(DType::kInt32, {2, 4})};
    ASSERT_TRUE(CopyFromHost<int32_t>(*on, words, batch.inputs).ok());
    ASSERT_TRUE(CopyFromHost<int32_t>(*on, words, batch.labels).ok());
    auto step = (*model)->ComputeGradients(batch);
    ASSERT_TRUE(step.ok()) << step.status().message();
    losses[which++] = step->loss;
  }
  EXPECT_NEAR(losses[0], losses[1], 1e-4 * losses[1]);
}

// The real runtime calls, counted: after the first copy a host copy makes five (no cudaSetDevice,
// no event created or destroyed), and kernels on the current device set it no more.
struct RealCallCounts {
  static inline int set_device = 0, create = 0, destroy = 0, other = 0;
  static const kernels::CudaRuntimeCalls& Real() { return kernels::RealCudaRuntimeCalls(); }
  static kernels::CudaRuntimeCalls Counting() {
    kernels::CudaRuntimeCalls calls = Real();
    calls.set_device = [](int d) {
      ++set_device;
      return Real().set_device(d);
    };
    calls.event_create_with_flags = [](cudaEvent_t* e, unsigned int f) {
      ++create;
      return Real().event_create_with_flags(e, f);
    };
    calls.event_destroy = [](cudaEvent_t e) {
      ++destroy;
      return Real().event_destroy(e);
    };
    calls.event_record = [](cudaEvent_t e, cudaStream_t s) {
      ++other;
      return Real().event_record(e, s);
    };
    calls.event_synchronize = [](cudaEvent_t e) {
      ++other;
      return Real().event_synchronize(e);
    };
    calls.stream_wait_event = [](cudaStream_t s, cudaEvent_t e, unsigned int f) {
      ++other;
      return Real().stream_wait_event(s, e, f);
    };
    calls.memcpy_async = [](void* d, const void* src, size_t n, cudaMemcpyKind k, cudaStream_t s) {
      ++other;
      return Real().memcpy_async(d, src, n, k, s);
    };
    return calls;
  }
};

TEST(GpuDevices, HostCopiesAndKernelsMakeFewRuntimeCalls) {
  if (!ProbeGpus().has_gpu()) GTEST_SKIP() << "no GPU on this machine";
  auto devices = CreateDevices(*ParseDeviceSpec("gpu:0"));
  ASSERT_TRUE(devices.ok()) << devices.status().message();
  const Device& device = *(*devices)[0];
  auto tensor = device.Allocate(DType::kFloat32, {4096});
  ASSERT_TRUE(tensor.ok()) << tensor.status().message();
  std::vector<float> host(4096, 2.5f), back(4096, 0.0f);
  ASSERT_TRUE(CopyFromHost<float>(device, host, *tensor).ok());  // pools the events
  kernels::CudaCalls() = RealCallCounts::Counting();
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(
        device.gpu()->CopyHostToDevice(host.data(), tensor->data<float>(), tensor->bytes()).ok());
    ASSERT_TRUE(device.gpu()->MakeCurrent().ok());  // what every kernel launch does first
    ASSERT_TRUE(
        device.gpu()->CopyDeviceToHost(tensor->data<float>(), back.data(), tensor->bytes()).ok());
  }
  kernels::CudaCalls() = kernels::RealCudaRuntimeCalls();
  EXPECT_EQ(back, host);
  EXPECT_EQ(RealCallCounts::set_device, 0);
  EXPECT_EQ(RealCallCounts::create, 0);
  EXPECT_EQ(RealCallCounts::destroy, 0);
  EXPECT_EQ(RealCallCounts::other, 20 * 5);
}

// Only where a GPU exists: two virtual GPUs on GPU 0, with the GPU's free and total memory read
// just before they were made.
struct TwoVirtualGpus {
  size_t free = 0, total = 0;
  StatusOr<std::vector<std::unique_ptr<Device>>> devices;
};
TwoVirtualGpus MakeTwoVirtualGpus(int64_t memory_limit_bytes) {
  TwoVirtualGpus made{0, 0, Internal("not made")};
  EXPECT_EQ(cudaSetDevice(0), cudaSuccess);
  EXPECT_EQ(cudaMemGetInfo(&made.free, &made.total), cudaSuccess);
  DeviceOptions options;
  options.virtual_gpus_per_gpu = 2;
  options.memory_limit_bytes = memory_limit_bytes;
  made.devices = CreateDevices(*ParseDeviceSpec("gpu:0"), options);
  return made;
}

// What a profiled step records of the GPU, read once when the device is made: memory checked
// against cudaMemGetInfo's total, the rest against what any CUDA GPU has.
TEST(GpuDevices, DeviceReadsItsGpusProperties) {
  const Probe probe = ProbeGpus();
  if (!probe.has_gpu()) GTEST_SKIP() << "no GPU on this machine";
  const TwoVirtualGpus made = MakeTwoVirtualGpus(64 * kMiB);
  const auto& devices = made.devices;
  ASSERT_TRUE(devices.ok()) << devices.status().message();
  ASSERT_EQ(devices->size(), 2u);
  const GpuProperties& gpu = (*devices)[0]->gpu()->properties();
  EXPECT_EQ(gpu.name.rfind("NVIDIA ", 0), 0u) << gpu.name;
  EXPECT_GT(gpu.sm_count, 0);
  EXPECT_EQ(gpu.memory_bytes, static_cast<int64_t>(made.total));  // the whole GPU's, not the share
  EXPECT_GT(gpu.clock_khz, 100'000);  // above 100 MHz: kHz, not MHz
  EXPECT_GE(gpu.compute_major, 8);    // the build's architectures: sm_80 and up
  // A virtual GPU is the same GPU.
  EXPECT_EQ((*devices)[1]->gpu()->properties(), gpu);
}

// Two virtual GPUs are two devices with their own streams and allocators, sharing the GPU's memory.
TEST(GpuDevices, VirtualGpusOfOneGpuAreDevicesOfTheirOwn) {
  const Probe probe = ProbeGpus();
  if (!probe.has_gpu()) GTEST_SKIP() << "no GPU on this machine";
  const TwoVirtualGpus made = MakeTwoVirtualGpus(int64_t{1} << 50);  // the GPU's share decides
  const auto& devices = made.devices;
  ASSERT_TRUE(devices.ok()) << devices.status().message();
  ASSERT_EQ(devices->size(), 2u);
  std::vector<void*> all_streams;
  int64_t limits = 0;
  for (int k = 0; k < 2; ++k) {
    const Device& device = *(*devices)[static_cast<size_t>(k)];
    EXPECT_EQ(device.name(), "/job:localhost/replica:0/task:0/device:GPU:" + std::to_string(k));
    EXPECT_EQ(device.allocator().Name(), "GPU_" + std::to_string(k) + "_bfc");
    EXPECT_EQ(device.gpu()->ordinal(), 0);
    limits += device.allocator().Stats().bytes_limit;
    for (void* stream : device.gpu()->streams()) all_streams.push_back(stream);
    auto tensor = device.Allocate(DType::kFloat32, {256, 256});
    ASSERT_TRUE(tensor.ok()) << tensor.status().message();
  }
  EXPECT_LE(limits, static_cast<int64_t>(made.free));
  EXPECT_GT(limits, static_cast<int64_t>(made.free) / 2);
  std::sort(all_streams.begin(), all_streams.end());
  EXPECT_EQ(std::adjacent_find(all_streams.begin(), all_streams.end()), all_streams.end());
  EXPECT_EQ(all_streams.size(), 6u);
}

}  // namespace
}  // namespace stepscope::runtime
