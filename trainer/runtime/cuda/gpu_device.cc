// Sets up a GPU device's context and its compute and copy streams, reads the GPU's properties,
// copies and memsets on them, and which of the requested GPUs this rank gets (GPU builds).
#include "trainer/runtime/cuda/gpu_device.h"

#include <algorithm>
#include <cstdlib>
#include <string>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_runtime_calls.h"
#include "trainer/runtime/cuda/cuda_allocators.h"

namespace stepscope::runtime::cuda {
namespace {

std::string IdList(std::span<const int> ids) {
  std::string text;
  for (int id : ids) text += (text.empty() ? "" : ",") + std::to_string(id);
  return text;
}

Status FreeDeviceMemory(int ordinal, int64_t* free_bytes) {
  size_t free = 0, total = 0;
  STEPSCOPE_CUDA_CHECK_AS(kernels::SetDevice(ordinal), "cudaSetDevice(ordinal)");
  STEPSCOPE_CUDA_CHECK(cudaMemGetInfo(&free, &total));
  *free_bytes = static_cast<int64_t>(free);
  return Status::Ok();
}

// What the trace records of the GPU (GpuProperties). CUDA 13 dropped cudaDeviceProp::clockRate:
// the SM clock comes from its attribute, in kHz as the field gave it.
Status ReadGpuProperties(int ordinal, GpuProperties* properties) {
  cudaDeviceProp prop{};
  STEPSCOPE_CUDA_CHECK(cudaGetDeviceProperties(&prop, ordinal));
  int clock_khz = 0;
  STEPSCOPE_CUDA_CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, ordinal));
  properties->name = prop.name;
  properties->sm_count = prop.multiProcessorCount;
  properties->memory_bytes = static_cast<int64_t>(prop.totalGlobalMem);
  properties->clock_khz = clock_khz;
  properties->compute_major = prop.major;
  properties->compute_minor = prop.minor;
  return Status::Ok();
}

}  // namespace

StatusOr<std::unique_ptr<GpuStreams>> GpuStreams::Create(int ordinal) {
  std::unique_ptr<GpuStreams> streams(new GpuStreams(ordinal));
  // Since CUDA 12, cudaSetDevice initialises the device's primary context right away.
  STEPSCOPE_CUDA_CHECK_AS(kernels::SetDevice(ordinal), "cudaSetDevice(ordinal)");
  RETURN_IF_ERROR(ReadGpuProperties(ordinal, &streams->properties_));
  ASSIGN_OR_RETURN(streams->kernels_, kernels::CudaContext::Create(ordinal));
  STEPSCOPE_CUDA_CHECK(cudaStreamCreateWithFlags(&streams->host_to_device_, cudaStreamNonBlocking));
  STEPSCOPE_CUDA_CHECK(cudaStreamCreateWithFlags(&streams->device_to_host_, cudaStreamNonBlocking));
  return StatusOr<std::unique_ptr<GpuStreams>>(std::move(streams));
}

GpuStreams::~GpuStreams() {
  // Nothing to report to from a destructor; a failure here leaks a stream at worst.
  for (cudaStream_t stream : {host_to_device_, device_to_host_}) {
    if (stream != nullptr) (void)cudaStreamDestroy(stream);
  }
}

cudaStream_t GpuStreams::compute() const { return kernels_->stream(); }

// Per kernel launch: cudaSetDevice only when this thread last set another device.
Status GpuStreams::MakeCurrent() const {
  STEPSCOPE_CUDA_CHECK_AS(kernels::SetDevice(ordinal_), "cudaSetDevice(ordinal_)");
  return Status::Ok();
}

Status GpuStreams::CopyOnStream(cudaStream_t copy_stream, void* dst, const void* src,
                                int64_t bytes, cudaMemcpyKind kind) const {
  if (bytes <= 0) return Status::Ok();
  RETURN_IF_ERROR(MakeCurrent());
  return OrderedCopy(copy_events_, compute(), copy_stream, dst, src, bytes, kind);
}

Status GpuStreams::CopyHostToDevice(const void* host, void* device, int64_t bytes) const {
  return CopyOnStream(host_to_device_, device, host, bytes, cudaMemcpyHostToDevice);
}

Status GpuStreams::CopyDeviceToHost(const void* device, void* host, int64_t bytes) const {
  return CopyOnStream(device_to_host_, host, device, bytes, cudaMemcpyDeviceToHost);
}

Status GpuStreams::CopyRowsOnDevice(void* dst, int64_t dst_pitch, const void* src,
                                    int64_t src_pitch, int64_t row_bytes, int64_t rows) const {
  if (row_bytes <= 0 || rows <= 0) return Status::Ok();
  RETURN_IF_ERROR(MakeCurrent());
  STEPSCOPE_CUDA_CHECK(cudaMemcpy2DAsync(dst, static_cast<size_t>(dst_pitch), src,
                                         static_cast<size_t>(src_pitch),
                                         static_cast<size_t>(row_bytes), static_cast<size_t>(rows),
                                         cudaMemcpyDeviceToDevice, compute()));
  return Status::Ok();
}

Status GpuStreams::MemsetOnDevice(void* device, int value, int64_t bytes) const {
  if (bytes <= 0) return Status::Ok();
  RETURN_IF_ERROR(MakeCurrent());
  STEPSCOPE_CUDA_CHECK(cudaMemsetAsync(device, value, static_cast<size_t>(bytes), compute()));
  return Status::Ok();
}

Status GpuStreams::Synchronize() const {
  RETURN_IF_ERROR(MakeCurrent());
  STEPSCOPE_CUDA_CHECK(cudaStreamSynchronize(compute()));
  STEPSCOPE_CUDA_CHECK(cudaStreamSynchronize(host_to_device_));
  STEPSCOPE_CUDA_CHECK(cudaStreamSynchronize(device_to_host_));
  return Status::Ok();
}

StatusOr<std::vector<int>> AvailableGpuOrdinals(std::span<const int> ids,
                                                const DeviceOptions& options) {
  const std::string asked = (ids.size() == 1 ? "GPU " : "GPUs ") + IdList(ids) +
                            " requested (--devices gpu:" + IdList(ids) + ")";
  const StatusOr<int> count = kernels::CudaDeviceCount();
  if (!count.ok()) {
    return Unavailable(asked + " but no GPU is usable: " + count.status().message());
  }
  auto ordinals = GpuOrdinalsOfRank(ids, options.local_rank, options.local_size, *count,
                                    std::getenv("CUDA_VISIBLE_DEVICES") != nullptr);
  if (!ordinals.ok()) return Unavailable(asked + " but " + ordinals.status().message());
  return ordinals;
}

StatusOr<std::vector<std::unique_ptr<Device>>> CreateGpuDevices(std::span<const int> ids,
                                                                const DeviceOptions& options) {
  ASSIGN_OR_RETURN(const std::vector<int> ordinals, AvailableGpuOrdinals(ids, options));
  std::vector<int64_t> free(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    RETURN_IF_ERROR(FreeDeviceMemory(ordinals[i], &free[i])
                        .WithContext("creating GPU " + std::to_string(ids[i])));
  }
  ASSIGN_OR_RETURN(const std::vector<VirtualGpu> plan,
                   PlanVirtualGpus(ids, ordinals, free, options.virtual_gpus_per_gpu,
                                   options.memory_limit_bytes));
  std::vector<std::unique_ptr<Device>> devices;
  for (const VirtualGpu& gpu : plan) {
    const std::string which =
        "creating GPU " + std::to_string(gpu.tf_id) +
        (gpu.ordinal != gpu.tf_id ? " (CUDA device " + std::to_string(gpu.ordinal) + ")" : "");
    // Each device, virtual or not, has streams of its own: towers sharing a GPU overlap.
    auto streams = GpuStreams::Create(gpu.ordinal);
    if (!streams.ok()) return streams.status().WithContext(which);
    devices.push_back(std::make_unique<Device>(
        gpu.tf_id, options.placement, std::move(*streams),
        NewGpuBfcAllocator(gpu.tf_id, gpu.ordinal, gpu.memory_limit_bytes),
        NewCudaHostBfcAllocator(options.pinned_memory_limit_bytes)));
  }
  return devices;
}

}  // namespace stepscope::runtime::cuda
