// cudaMalloc and cudaHostAlloc sub-allocators under the GPU_k_bfc and cuda_host_bfc allocators,
// with the last CUDA failure kept and counted for the caller (GPU builds).
#include "trainer/runtime/cuda/cuda_allocators.h"

#include <cuda_runtime_api.h>

#include <utility>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_runtime_calls.h"
#include "trainer/runtime/bfc_allocator.h"

namespace stepscope::runtime::cuda {
namespace {

Status DeviceMalloc(int ordinal, size_t bytes, void** ptr) {
  // cudaMalloc allocates on the calling thread's current device; any thread may extend a
  // device's arena (towers run on their own threads), so bind the device first.
  STEPSCOPE_CUDA_CHECK_AS(kernels::SetDevice(ordinal), "cudaSetDevice(ordinal)");
  STEPSCOPE_CUDA_CHECK(cudaMalloc(ptr, bytes));
  return Status::Ok();
}

Status DeviceFree(int ordinal, void* ptr) {
  STEPSCOPE_CUDA_CHECK_AS(kernels::SetDevice(ordinal), "cudaSetDevice(ordinal)");
  STEPSCOPE_CUDA_CHECK(cudaFree(ptr));
  return Status::Ok();
}

Status PinnedMalloc(size_t bytes, void** ptr) {
  // Portable: pinned for every GPU of the process, not only the current one.
  STEPSCOPE_CUDA_CHECK(cudaHostAlloc(ptr, bytes, cudaHostAllocPortable));
  return Status::Ok();
}

Status PinnedFree(void* ptr) {
  STEPSCOPE_CUDA_CHECK(cudaFreeHost(ptr));
  return Status::Ok();
}

}  // namespace

std::string GpuBfcAllocatorName(int device_id) { return "GPU_" + std::to_string(device_id) + "_bfc"; }

Status CudaErrorRecord::last_error() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return last_error_;
}

int64_t CudaErrorRecord::num_failures() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return num_failures_;
}

void CudaErrorRecord::Record(Status status) {
  std::lock_guard<std::mutex> lock(mutex_);
  last_error_ = std::move(status);
  ++num_failures_;
}

void* CudaDeviceSubAllocator::Alloc(size_t /*alignment*/, size_t bytes) {
  if (bytes == 0) return nullptr;
  void* ptr = nullptr;
  const Status status = DeviceMalloc(ordinal_, bytes, &ptr);
  if (!status.ok()) {
    Record(status.WithContext("GPU " + std::to_string(ordinal_) + ": allocating " +
                              std::to_string(bytes) + " bytes of device memory"));
    return nullptr;
  }
  return ptr;
}

void CudaDeviceSubAllocator::Free(void* ptr, size_t /*bytes*/) {
  if (ptr == nullptr) return;
  const Status status = DeviceFree(ordinal_, ptr);
  if (!status.ok()) {
    Record(status.WithContext("GPU " + std::to_string(ordinal_) + ": freeing device memory"));
  }
}

void* CudaHostSubAllocator::Alloc(size_t /*alignment*/, size_t bytes) {
  if (bytes == 0) return nullptr;
  void* ptr = nullptr;
  const Status status = PinnedMalloc(bytes, &ptr);
  if (!status.ok()) {
    Record(status.WithContext("allocating " + std::to_string(bytes) + " bytes of pinned host memory"));
    return nullptr;
  }
  return ptr;
}

void CudaHostSubAllocator::Free(void* ptr, size_t /*bytes*/) {
  if (ptr == nullptr) return;
  const Status status = PinnedFree(ptr);
  if (!status.ok()) Record(status.WithContext("freeing pinned host memory"));
}

std::unique_ptr<Allocator> NewGpuBfcAllocator(int device_id, int ordinal,
                                              int64_t memory_limit_bytes) {
  return std::make_unique<BFCAllocator>(std::make_unique<CudaDeviceSubAllocator>(ordinal),
                                        memory_limit_bytes, GpuBfcAllocatorName(device_id));
}

std::unique_ptr<Allocator> NewCudaHostBfcAllocator(int64_t memory_limit_bytes) {
  return std::make_unique<BFCAllocator>(std::make_unique<CudaHostSubAllocator>(),
                                        memory_limit_bytes, kCudaHostAllocatorName);
}

}  // namespace stepscope::runtime::cuda
