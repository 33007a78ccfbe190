// The allocator interface of the runtime's devices, and the hook a tracker uses to see every
// allocation.
//
// Every device owns one allocator named as TensorFlow names its allocators ("cpu", "GPU_0_bfc",
// "cuda_host_bfc"), so the step stats we record read like TensorFlow's. An allocator reports
// statistics (AllocatorStats) and, per live allocation, the id, requested size and allocated size
// that an AllocationDescription carries.
//
// Observation: SetObserver installs one AllocationObserver that the allocator calls synchronously,
// under its own lock, on every successful Allocate and every Deallocate, in the order the
// allocator applied them. With no observer the cost is one atomic load (acquire) per call.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "base/status.h"

namespace stepscope::runtime {

struct AllocatorStats {
  int64_t num_allocs = 0;          // successful allocations made so far
  int64_t bytes_in_use = 0;        // allocated (rounded) bytes of live allocations
  int64_t peak_bytes_in_use = 0;   // maximum of bytes_in_use since construction
  int64_t largest_alloc_size = 0;  // largest allocated (rounded) size handed out
  int64_t bytes_limit = 0;         // the memory limit the allocator was created with
  int64_t bytes_reserved = 0;      // bytes of the regions obtained from the sub-allocator

  bool operator==(const AllocatorStats&) const = default;
};

// What a tracker sees on every allocate (delta_bytes > 0) and free (delta_bytes < 0).
struct AllocationEvent {
  int64_t time_ns = 0;          // runtime::NowNanos() when the allocator applied the change
  int64_t delta_bytes = 0;      // +allocated_bytes on allocate, -allocated_bytes on free
  int64_t requested_bytes = 0;  // what the caller asked for
  int64_t allocated_bytes = 0;  // what the allocator set aside (rounded, possibly unsplit)
  int64_t allocation_id = 0;    // increasing from 1 per allocator; the free repeats the id
  const void* ptr = nullptr;
  int64_t bytes_in_use_after = 0;  // the allocator's bytes_in_use once this event is applied

  bool operator==(const AllocationEvent&) const = default;
};

class Allocator;

class AllocationObserver {
 public:
  virtual ~AllocationObserver() = default;
  // Called under the allocator's lock: keep it cheap and never call back into the allocator.
  virtual void OnAllocation(const Allocator& allocator, const AllocationEvent& event) = 0;
};

class Allocator {
 public:
  Allocator() = default;
  virtual ~Allocator() = default;
  Allocator(const Allocator&) = delete;
  Allocator& operator=(const Allocator&) = delete;

  virtual const std::string& Name() const = 0;

  // Returns memory for `bytes` bytes (256-byte aligned for the BFC allocator), or
  // kResourceExhausted with a message naming the allocator, the bytes requested, the bytes in
  // use and the limit. Zero bytes returns nullptr (no allocation, no event).
  virtual StatusOr<void*> Allocate(size_t bytes) = 0;
  // Returns memory from Allocate; nullptr is a no-op. Any other pointer is a bug (CHECK).
  virtual void Deallocate(void* ptr) = 0;

  virtual AllocatorStats Stats() const = 0;

  // Facts of a live allocation (a pointer Allocate returned and nobody freed yet).
  virtual int64_t AllocationId(const void* ptr) const = 0;
  virtual int64_t RequestedSize(const void* ptr) const = 0;
  virtual int64_t AllocatedSize(const void* ptr) const = 0;

  // Installs `observer` (nullptr removes it). When this returns, calls to a previous observer
  // have finished and none will follow, so the caller may destroy it.
  void SetObserver(AllocationObserver* observer) {
    observer_.store(observer, std::memory_order_release);
    WaitForObserverCalls();
  }

 protected:
  AllocationObserver* observer() const { return observer_.load(std::memory_order_acquire); }
  // Returns once every observer call that started before it has finished (implementations that
  // call the observer under a lock take and release that lock).
  virtual void WaitForObserverCalls() {}

 private:
  std::atomic<AllocationObserver*> observer_{nullptr};
};

// Where an allocator gets its large regions from: aligned host memory, device memory, pinned
// host memory. Returns nullptr when the memory is not available.
class SubAllocator {
 public:
  SubAllocator() = default;
  virtual ~SubAllocator() = default;
  SubAllocator(const SubAllocator&) = delete;
  SubAllocator& operator=(const SubAllocator&) = delete;

  virtual void* Alloc(size_t alignment, size_t bytes) = 0;
  virtual void Free(void* ptr, size_t bytes) = 0;
};

}  // namespace stepscope::runtime
