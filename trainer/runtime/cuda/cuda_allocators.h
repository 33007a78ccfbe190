// The memory of a GPU device, as TensorFlow's GPU device gets it: a BFC allocator "GPU_<k>_bfc"
// over cudaMalloc'd regions of device k, and a BFC allocator "cuda_host_bfc" over pinned host
// regions from cudaHostAlloc (what host<->device copies stage through). GPU builds only.
//
// The SubAllocator interface returns nullptr when memory is not available, and the BFC allocator
// turns that into kResourceExhausted naming itself; the CUDA error behind a failure is kept in
// last_error() (the call's text and file:line and cudaGetErrorString), so a caller can say why.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "base/status.h"
#include "trainer/runtime/allocator.h"

namespace stepscope::runtime::cuda {

// "GPU_<k>_bfc", TF's name for the BFC allocator of its device GPU:<k>.
std::string GpuBfcAllocatorName(int device_id);
// TF's name for the pinned host allocator.
inline constexpr char kCudaHostAllocatorName[] = "cuda_host_bfc";

// Shared by the two sub-allocators: the most recent CUDA failure, readable from any thread.
class CudaErrorRecord {
 public:
  // Ok until a CUDA call of the sub-allocator fails; then that call's Status (the latest one).
  Status last_error() const;
  int64_t num_failures() const;

 protected:
  void Record(Status status);

 private:
  mutable std::mutex mutex_;
  Status last_error_;
  int64_t num_failures_ = 0;
};

// Device memory of one GPU: cudaSetDevice(ordinal), then cudaMalloc / cudaFree. cudaMalloc's
// alignment (256 B at least) covers what the BFC allocator asks for.
class CudaDeviceSubAllocator final : public SubAllocator, public CudaErrorRecord {
 public:
  explicit CudaDeviceSubAllocator(int ordinal) : ordinal_(ordinal) {}
  void* Alloc(size_t alignment, size_t bytes) override;
  void Free(void* ptr, size_t bytes) override;
  int ordinal() const { return ordinal_; }

 private:
  const int ordinal_;
};

// Pinned (page-locked) host memory usable by every GPU: cudaHostAlloc(cudaHostAllocPortable) /
// cudaFreeHost.
class CudaHostSubAllocator final : public SubAllocator, public CudaErrorRecord {
 public:
  void* Alloc(size_t alignment, size_t bytes) override;
  void Free(void* ptr, size_t bytes) override;
};

// The two allocators of a GPU device. Creating them touches no GPU (the BFC allocator asks its
// sub-allocator for memory on the first Allocate), so they exist on machines without one.
// The allocator of the device named GPU `device_id`, over CUDA device `ordinal` (they differ
// when a rank's ids stand for another block of the host's GPUs: GpuOrdinalsOfRank).
std::unique_ptr<Allocator> NewGpuBfcAllocator(int device_id, int ordinal,
                                              int64_t memory_limit_bytes);
std::unique_ptr<Allocator> NewCudaHostBfcAllocator(int64_t memory_limit_bytes);

}  // namespace stepscope::runtime::cuda
