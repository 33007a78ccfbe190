// A GPU device's data movement without a GPU: GpuResources whose "device memory" is host memory
// (the allocators given to the Device), whose copies are memcpy and which has no kernel context,
// so ops run their CPU kernels on it (runtime/run_kernel.h). A model or the towers on such a
// device move every byte the way they would on a GPU: through the GpuResources calls, which count
// what they moved. Tests compare its results with a CPU device's. It gives the GPU properties it
// is made with (none by default), as a real GPU device gives what CUDA says of its GPU.
#pragma once

#include <atomic>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "trainer/runtime/bfc_allocator.h"
#include "trainer/runtime/cpu_sub_allocator.h"
#include "trainer/runtime/device.h"

namespace stepscope::testing {

struct GpuTransferCounts {
  std::atomic<int64_t> to_device{0}, to_host{0}, row_copies{0}, memsets{0};
};

class HostMemoryGpu final : public runtime::GpuResources {
 public:
  HostMemoryGpu(int ordinal, GpuTransferCounts* counts, runtime::GpuProperties properties = {})
      : ordinal_(ordinal), counts_(counts), properties_(std::move(properties)) {}
  int ordinal() const override { return ordinal_; }
  const kernels::CudaContext* kernel_context() const override { return nullptr; }
  Status MakeCurrent() const override { return Status::Ok(); }
  Status CopyHostToDevice(const void* host, void* device, int64_t bytes) const override {
    ++counts_->to_device;
    std::memcpy(device, host, static_cast<size_t>(bytes));
    return Status::Ok();
  }
  Status CopyDeviceToHost(const void* device, void* host, int64_t bytes) const override {
    ++counts_->to_host;
    std::memcpy(host, device, static_cast<size_t>(bytes));
    return Status::Ok();
  }
  Status CopyRowsOnDevice(void* dst, int64_t dst_pitch, const void* src, int64_t src_pitch,
                          int64_t row_bytes, int64_t rows) const override {
    ++counts_->row_copies;
    // cudaMemcpy2D's contract: pitches of at least the row's width.
    if (dst_pitch < row_bytes || src_pitch < row_bytes) {
      return Internal("row copy with a pitch shorter than its rows");
    }
    for (int64_t r = 0; r < rows; ++r) {
      std::memcpy(static_cast<char*>(dst) + r * dst_pitch,
                  static_cast<const char*>(src) + r * src_pitch, static_cast<size_t>(row_bytes));
    }
    return Status::Ok();
  }
  Status MemsetOnDevice(void* device, int value, int64_t bytes) const override {
    ++counts_->memsets;
    std::memset(device, value, static_cast<size_t>(bytes));
    return Status::Ok();
  }
  Status Synchronize() const override { return Status::Ok(); }
  const runtime::GpuProperties& properties() const override { return properties_; }

 private:
  int ordinal_;
  GpuTransferCounts* counts_;
  runtime::GpuProperties properties_;
};

// An H200 SXM as cudaGetDeviceProperties describes it (a row of device_peaks.tsv), for tests of
// what a profiled step records of its GPU.
inline runtime::GpuProperties H200Properties() {
  runtime::GpuProperties h200;
  h200.name = "NVIDIA H200";
  h200.sm_count = 132;
  h200.memory_bytes = int64_t{150'754'820'096};  // 143,771 MiB as nvidia-smi gives it: the datasheet's 141 GB
  h200.clock_khz = 1'980'000;
  h200.compute_major = 9;
  h200.compute_minor = 0;
  return h200;
}

// GPU device `index` over host memory, named /job:localhost/replica:0/task:0/device:GPU:<index>.
inline std::unique_ptr<runtime::Device> MakeHostMemoryGpuDevice(
    int index, GpuTransferCounts* counts, runtime::GpuProperties properties = {}) {
  auto arena = [](const char* name) {
    return std::make_unique<runtime::BFCAllocator>(std::make_unique<runtime::CpuSubAllocator>(),
                                                   int64_t{4} << 30, name);
  };
  return std::make_unique<runtime::Device>(
      index, runtime::DevicePlacement{},
      std::make_unique<HostMemoryGpu>(index, counts, std::move(properties)), arena("GPU_bfc"),
      arena("cuda_host_bfc"));
}

// The GPU devices `plan` names (runtime::PlanVirtualGpus: several on one CUDA device for
// virtual GPUs), over host memory: device GPU:k with its ordinal and an allocator "GPU_k_bfc"
// holding its share of memory, as the GPU build makes them; each gives `properties`.
inline std::vector<std::unique_ptr<runtime::Device>> MakeHostMemoryGpuDevices(
    const std::vector<runtime::VirtualGpu>& plan, GpuTransferCounts* counts,
    const runtime::GpuProperties& properties = {}) {
  std::vector<std::unique_ptr<runtime::Device>> devices;
  for (const runtime::VirtualGpu& gpu : plan) {
    devices.push_back(std::make_unique<runtime::Device>(
        gpu.tf_id, runtime::DevicePlacement{},
        std::make_unique<HostMemoryGpu>(gpu.ordinal, counts, properties),
        std::make_unique<runtime::BFCAllocator>(std::make_unique<runtime::CpuSubAllocator>(),
                                                gpu.memory_limit_bytes,
                                                "GPU_" + std::to_string(gpu.tf_id) + "_bfc"),
        std::make_unique<runtime::BFCAllocator>(std::make_unique<runtime::CpuSubAllocator>(),
                                                int64_t{1} << 30, "cuda_host_bfc")));
  }
  return devices;
}

}  // namespace stepscope::testing
