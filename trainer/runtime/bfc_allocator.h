// BFCAllocator: TensorFlow's "best-fit with coalescing" allocator, the allocator of every device.
//
// Design (as tensorflow/core/common_runtime/bfc_allocator.h):
// - Memory comes in large regions from a SubAllocator. A region starts as one free chunk; chunks
//   of a region form a doubly linked list in address order (chunks of different regions are never
//   linked, so never merged).
// - Every size is rounded up to a multiple of kMinAllocationSize (256 B), which is also the
//   alignment of every pointer handed out.
// - Free chunks sit in one of kNumBins bins: bin b holds sizes in [256 << b, 256 << (b + 1)), the
//   last bin everything larger. Inside a bin free chunks are ordered by (size, address).
// - Allocate finds the smallest free chunk that fits (searching bins upward; lowest address on a
//   tie), splits off the remainder when the chunk is at least twice the rounded size or the waste
//   would reach 128 MiB, and otherwise hands out the whole chunk (so the allocated size may exceed
//   the rounded request).
// - Deallocate merges the chunk with a free next and a free previous neighbour, so two adjacent
//   free chunks never exist.
// - When nothing fits, a new region is obtained: the region size starts at
//   min(memory_limit, Options::initial_region_bytes) and doubles (as TF with allow_growth), and
//   is capped by what remains of the memory limit. Past the limit Allocate fails with
//   kResourceExhausted.
// - Allocation ids increase from 1; one mutex guards everything (the observer runs under it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "trainer/runtime/allocator.h"

namespace stepscope::runtime {

class BFCAllocator final : public Allocator {
 public:
  static constexpr int kNumBins = 21;
  static constexpr int kMinAllocationBits = 8;
  static constexpr size_t kMinAllocationSize = size_t{1} << kMinAllocationBits;  // 256 B
  // A chunk is split when handing it out whole would waste this much or more.
  static constexpr size_t kMaxInternalFragmentation = size_t{128} << 20;

  struct Options {
    // Size of the first region (TF's allow_growth start); later regions double.
    int64_t initial_region_bytes = int64_t{2} << 20;
  };

  // One chunk as seen from outside, for tests and memory dumps.
  struct ChunkInfo {
    const void* ptr = nullptr;
    int64_t size = 0;
    int64_t requested_size = 0;  // 0 for a free chunk
    int64_t allocation_id = -1;  // -1 for a free chunk
    int bin = -1;                // the bin of a free chunk; -1 when in use
    bool in_use() const { return allocation_id != -1; }
    bool operator==(const ChunkInfo&) const = default;
  };

  BFCAllocator(std::unique_ptr<SubAllocator> sub_allocator, int64_t memory_limit, std::string name);
  BFCAllocator(std::unique_ptr<SubAllocator> sub_allocator, int64_t memory_limit, std::string name,
               Options options);
  ~BFCAllocator() override;

  const std::string& Name() const override { return name_; }
  StatusOr<void*> Allocate(size_t bytes) override;
  void Deallocate(void* ptr) override;
  AllocatorStats Stats() const override;
  int64_t AllocationId(const void* ptr) const override;
  int64_t RequestedSize(const void* ptr) const override;
  int64_t AllocatedSize(const void* ptr) const override;

  // Every chunk of every region, regions in address order, chunks in address order.
  std::vector<ChunkInfo> Chunks() const;
  int64_t NumRegions() const;

  // Size rounding and bin choice, exposed so tests state the contract.
  static size_t RoundedBytes(size_t bytes);
  static int BinForSize(size_t bytes);

 protected:
  void WaitForObserverCalls() override;

 private:
  using ChunkHandle = uint32_t;
  static constexpr ChunkHandle kInvalidChunk = UINT32_MAX;

  struct Chunk {
    char* ptr = nullptr;
    size_t size = 0;                   // bytes of the chunk (a multiple of kMinAllocationSize)
    size_t requested_size = 0;         // what the client asked for; 0 when free
    int64_t allocation_id = -1;        // -1 when free
    ChunkHandle prev = kInvalidChunk;  // neighbours inside the region, address order
    ChunkHandle next = kInvalidChunk;
    int bin = -1;  // the bin holding this free chunk; -1 when in use or between bins
    bool in_use() const { return allocation_id != -1; }
  };

  // Free chunks of a bin ordered by size then address: lower_bound gives the best fit.
  struct FreeKey {
    size_t size;
    const char* ptr;
    ChunkHandle handle;
    bool operator<(const FreeKey& other) const {
      return size != other.size ? size < other.size : ptr < other.ptr;
    }
  };

  struct Region {
    char* ptr = nullptr;
    size_t bytes = 0;
    // The chunk starting at ptr + i * kMinAllocationSize, or kInvalidChunk.
    std::vector<ChunkHandle> handles;
    const char* end() const { return ptr + bytes; }
  };

  // All below require mutex_.
  void* FindChunkPtr(size_t rounded_bytes, size_t requested_bytes);
  bool Extend(size_t rounded_bytes);
  void SplitChunk(ChunkHandle handle, size_t bytes);
  void MergeWithNext(ChunkHandle handle);
  void InsertFreeChunk(ChunkHandle handle);
  void RemoveFreeChunk(ChunkHandle handle);
  ChunkHandle NewChunk();
  void DeleteChunk(ChunkHandle handle);
  Region* RegionFor(const void* ptr);
  const Region* RegionFor(const void* ptr) const;
  ChunkHandle& HandleSlot(const void* ptr);
  // The live chunk at `ptr`; a pointer this allocator did not hand out is a bug (CHECK).
  const Chunk& LiveChunk(const void* ptr) const;
  void Notify(const Chunk& chunk, int64_t delta_bytes);

  const std::string name_;
  const std::unique_ptr<SubAllocator> sub_allocator_;
  const size_t memory_limit_;

  mutable std::mutex mutex_;
  size_t next_region_bytes_;
  bool started_backpedal_ = false;  // a failed sub-allocation is retried with less, once
  std::vector<Region> regions_;     // sorted by address
  std::vector<Chunk> chunks_;
  ChunkHandle free_chunk_slots_ = kInvalidChunk;  // recycled entries of chunks_, linked by next
  std::set<FreeKey> bins_[kNumBins];
  int64_t next_allocation_id_ = 1;
  AllocatorStats stats_;
};

}  // namespace stepscope::runtime
