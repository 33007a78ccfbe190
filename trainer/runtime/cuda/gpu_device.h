// GPU devices of the trainer (GPU builds only): what TensorFlow's StreamExecutor GPU device sets
// up for GPU k, on the CUDA runtime API.
//   context  the GPU's primary context, made current with cudaSetDevice(k)
//   streams  one compute stream and two copy streams (host-to-device, device-to-host), all
//            non-blocking with respect to the legacy default stream, as TF's
//   memory   "GPU_<k>_bfc" over cudaMalloc and "cuda_host_bfc" over cudaHostAlloc
//            (cuda_allocators.h)
//   properties  the GPU's name, SMs, SM clock, memory and compute capability, read once
// Every CUDA call is checked; a failure is a Status with the call, file:line and
// cudaGetErrorString. Without a driver or GPU, creation fails with kUnavailable before anything is
// allocated, naming the GPU asked for and the CUDA error.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <span>
#include <vector>

#include "base/status.h"
#include "kernels/cuda/cuda_context.h"
#include "trainer/runtime/cuda/ordered_copy.h"
#include "trainer/runtime/device.h"

namespace stepscope::runtime::cuda {

class GpuStreams final : public GpuResources {
 public:
  // Makes GPU `ordinal`'s primary context current on this thread and creates the streams.
  static StatusOr<std::unique_ptr<GpuStreams>> Create(int ordinal);
  ~GpuStreams() override;

  int ordinal() const override { return ordinal_; }
  const kernels::CudaContext* kernel_context() const override { return kernels_.get(); }
  cudaStream_t compute() const;
  cudaStream_t host_to_device() const { return host_to_device_; }
  cudaStream_t device_to_host() const { return device_to_host_; }

  Status MakeCurrent() const override;
  Status CopyHostToDevice(const void* host, void* device, int64_t bytes) const override;
  Status CopyDeviceToHost(const void* device, void* host, int64_t bytes) const override;
  Status CopyRowsOnDevice(void* dst, int64_t dst_pitch, const void* src, int64_t src_pitch,
                          int64_t row_bytes, int64_t rows) const override;
  Status MemsetOnDevice(void* device, int value, int64_t bytes) const override;
  // Waits for the three streams; reports asynchronous errors.
  Status Synchronize() const override;
  std::vector<void*> streams() const override {
    return {compute(), host_to_device_, device_to_host_};
  }
  const GpuProperties& properties() const override { return properties_; }

 private:
  explicit GpuStreams(int ordinal) : ordinal_(ordinal) {}
  // Runs a copy on `copy_stream` after the compute stream's work so far, and makes the compute
  // stream's later work wait for it; returns when the copy is done.
  Status CopyOnStream(cudaStream_t copy_stream, void* dst, const void* src, int64_t bytes,
                      cudaMemcpyKind kind) const;

  int ordinal_;
  GpuProperties properties_;  // read once in Create
  // The compute stream is the kernels' context's own (with its cuBLAS handle bound to it).
  std::unique_ptr<kernels::CudaContext> kernels_;
  cudaStream_t host_to_device_ = nullptr;
  cudaStream_t device_to_host_ = nullptr;
  // The host copies' events (two per copy in flight), reused (ordered_copy.h).
  mutable CudaEventPool copy_events_;
};

// The CUDA device numbers for `ids` (GpuOrdinalsOfRank with the options' local rank and size),
// kUnavailable unless the driver works and each is a present GPU. The message names the GPUs
// asked for ("gpu:0,1") and carries the CUDA error.
StatusOr<std::vector<int>> AvailableGpuOrdinals(std::span<const int> ids,
                                                const DeviceOptions& options);

// The GPU devices for `ids` (AvailableGpuOrdinals first, so nothing is created when one is
// missing), driving the GPUs those stand for: options.virtual_gpus_per_gpu devices on each, named
// and given memory as PlanVirtualGpus says (the GPU's free memory now, shared out).
StatusOr<std::vector<std::unique_ptr<Device>>> CreateGpuDevices(std::span<const int> ids,
                                                                const DeviceOptions& options);

}  // namespace stepscope::runtime::cuda
