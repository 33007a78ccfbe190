// The BFC allocator's bins, chunk splitting and coalescing, region growth through the
// SubAllocator, and TensorFlow's allocator statistics.
#include "trainer/runtime/bfc_allocator.h"

#include <algorithm>
#include <bit>
#include <utility>

#include "base/check.h"
#include "trainer/runtime/clock.h"

namespace stepscope::runtime {

size_t BFCAllocator::RoundedBytes(size_t bytes) {
  const size_t rounded = (bytes + kMinAllocationSize - 1) / kMinAllocationSize * kMinAllocationSize;
  return std::max(rounded, kMinAllocationSize);
}

int BFCAllocator::BinForSize(size_t bytes) {
  const size_t units = std::max(bytes, kMinAllocationSize) >> kMinAllocationBits;
  return std::min(kNumBins - 1, static_cast<int>(std::bit_width(units)) - 1);
}

BFCAllocator::BFCAllocator(std::unique_ptr<SubAllocator> sub_allocator, int64_t memory_limit,
                           std::string name)
    : BFCAllocator(std::move(sub_allocator), memory_limit, std::move(name), Options{}) {}

BFCAllocator::BFCAllocator(std::unique_ptr<SubAllocator> sub_allocator, int64_t memory_limit,
                           std::string name, Options options)
    : name_(std::move(name)),
      sub_allocator_(std::move(sub_allocator)),
      memory_limit_(static_cast<size_t>(memory_limit)) {
  STEPSCOPE_CHECK(sub_allocator_ != nullptr);
  STEPSCOPE_CHECK(memory_limit > 0);
  STEPSCOPE_CHECK(options.initial_region_bytes > 0);
  next_region_bytes_ =
      RoundedBytes(std::min(memory_limit_, static_cast<size_t>(options.initial_region_bytes)));
  stats_.bytes_limit = memory_limit;
}

BFCAllocator::~BFCAllocator() {
  for (const Region& region : regions_) sub_allocator_->Free(region.ptr, region.bytes);
}

void BFCAllocator::WaitForObserverCalls() { std::lock_guard<std::mutex> lock(mutex_); }

StatusOr<void*> BFCAllocator::Allocate(size_t bytes) {
  if (bytes == 0) return static_cast<void*>(nullptr);
  // Beyond the limit nothing can succeed; checking first also keeps the rounding from overflowing.
  const size_t rounded = bytes > memory_limit_ ? 0 : RoundedBytes(bytes);
  std::lock_guard<std::mutex> lock(mutex_);
  void* ptr = nullptr;
  if (rounded != 0) {
    ptr = FindChunkPtr(rounded, bytes);
    if (ptr == nullptr && Extend(rounded)) ptr = FindChunkPtr(rounded, bytes);
  }
  if (ptr == nullptr) {
    return ResourceExhausted("allocator " + name_ + " ran out of memory trying to allocate " +
                             std::to_string(bytes) + " bytes (rounded to " +
                             std::to_string(rounded == 0 ? bytes : rounded) +
                             "): " + std::to_string(stats_.bytes_in_use) + " bytes in use, " +
                             std::to_string(stats_.bytes_reserved) + " bytes reserved, limit " +
                             std::to_string(stats_.bytes_limit) + " bytes");
  }
  return ptr;
}

void* BFCAllocator::FindChunkPtr(size_t rounded_bytes, size_t requested_bytes) {
  for (int bin = BinForSize(rounded_bytes); bin < kNumBins; ++bin) {
    auto it = bins_[bin].lower_bound(FreeKey{rounded_bytes, nullptr, 0});
    if (it == bins_[bin].end()) continue;
    const ChunkHandle handle = it->handle;
    RemoveFreeChunk(handle);
    const size_t chunk_size = chunks_[handle].size;
    if (chunk_size >= rounded_bytes * 2 ||
        chunk_size - rounded_bytes >= kMaxInternalFragmentation) {
      SplitChunk(handle, rounded_bytes);
    }
    Chunk& chunk = chunks_[handle];
    chunk.requested_size = requested_bytes;
    chunk.allocation_id = next_allocation_id_++;
    const auto size = static_cast<int64_t>(chunk.size);
    ++stats_.num_allocs;
    stats_.bytes_in_use += size;
    stats_.peak_bytes_in_use = std::max(stats_.peak_bytes_in_use, stats_.bytes_in_use);
    stats_.largest_alloc_size = std::max(stats_.largest_alloc_size, size);
    Notify(chunk, size);
    return chunk.ptr;
  }
  return nullptr;
}

bool BFCAllocator::Extend(size_t rounded_bytes) {
  size_t available = memory_limit_ - static_cast<size_t>(stats_.bytes_reserved);
  available = available / kMinAllocationSize * kMinAllocationSize;
  if (rounded_bytes > available) return false;

  bool increased = false;
  while (rounded_bytes > next_region_bytes_) {
    next_region_bytes_ *= 2;
    increased = true;
  }
  size_t bytes = std::min(next_region_bytes_, available);
  void* memory = sub_allocator_->Alloc(kMinAllocationSize, bytes);
  if (memory == nullptr && !started_backpedal_) {
    // The system may hold less than the limit promised: retry with 10% less each time, once.
    started_backpedal_ = true;
    while (memory == nullptr) {
      bytes = RoundedBytes(bytes / 10 * 9);
      if (bytes < rounded_bytes) break;
      memory = sub_allocator_->Alloc(kMinAllocationSize, bytes);
    }
  }
  if (memory == nullptr) return false;
  if (!increased) next_region_bytes_ *= 2;
  stats_.bytes_reserved += static_cast<int64_t>(bytes);

  Region region;
  region.ptr = static_cast<char*>(memory);
  region.bytes = bytes;
  region.handles.assign(bytes / kMinAllocationSize, kInvalidChunk);
  auto at = std::upper_bound(regions_.begin(), regions_.end(), region.ptr,
                             [](const char* p, const Region& r) { return p < r.ptr; });
  regions_.insert(at, std::move(region));

  const ChunkHandle handle = NewChunk();
  Chunk& chunk = chunks_[handle];
  chunk.ptr = static_cast<char*>(memory);
  chunk.size = bytes;
  HandleSlot(chunk.ptr) = handle;
  InsertFreeChunk(handle);
  return true;
}

void BFCAllocator::SplitChunk(ChunkHandle handle, size_t bytes) {
  const ChunkHandle rest = NewChunk();  // may grow chunks_: take references afterwards
  Chunk& chunk = chunks_[handle];
  Chunk& remainder = chunks_[rest];
  STEPSCOPE_CHECK(!chunk.in_use() && chunk.bin == -1 && chunk.size > bytes);
  remainder.ptr = chunk.ptr + bytes;
  remainder.size = chunk.size - bytes;
  remainder.prev = handle;
  remainder.next = chunk.next;
  if (chunk.next != kInvalidChunk) chunks_[chunk.next].prev = rest;
  chunk.next = rest;
  chunk.size = bytes;
  HandleSlot(remainder.ptr) = rest;
  // The old chunk was free, so its next neighbour is in use: nothing to merge the remainder with.
  InsertFreeChunk(rest);
}

void BFCAllocator::MergeWithNext(ChunkHandle handle) {
  Chunk& chunk = chunks_[handle];
  const ChunkHandle next_handle = chunk.next;
  Chunk& next = chunks_[next_handle];
  STEPSCOPE_CHECK(!chunk.in_use() && !next.in_use());
  chunk.size += next.size;
  chunk.next = next.next;
  if (next.next != kInvalidChunk) chunks_[next.next].prev = handle;
  HandleSlot(next.ptr) = kInvalidChunk;
  DeleteChunk(next_handle);
}

void BFCAllocator::Deallocate(void* ptr) {
  if (ptr == nullptr) return;
  std::lock_guard<std::mutex> lock(mutex_);
  const Region* region = RegionFor(ptr);
  STEPSCOPE_CHECK(region != nullptr);  // not memory of this allocator
  ChunkHandle handle = HandleSlot(ptr);
  STEPSCOPE_CHECK(handle != kInvalidChunk && chunks_[handle].in_use());  // not a live allocation

  const auto size = static_cast<int64_t>(chunks_[handle].size);
  stats_.bytes_in_use -= size;
  Notify(chunks_[handle], -size);
  chunks_[handle].allocation_id = -1;
  chunks_[handle].requested_size = 0;

  // Coalesce with free neighbours so that no two adjacent chunks are both free.
  const ChunkHandle next = chunks_[handle].next;
  if (next != kInvalidChunk && !chunks_[next].in_use()) {
    RemoveFreeChunk(next);
    MergeWithNext(handle);
  }
  const ChunkHandle prev = chunks_[handle].prev;
  if (prev != kInvalidChunk && !chunks_[prev].in_use()) {
    RemoveFreeChunk(prev);
    MergeWithNext(prev);
    handle = prev;
  }
  InsertFreeChunk(handle);
}

void BFCAllocator::InsertFreeChunk(ChunkHandle handle) {
  Chunk& chunk = chunks_[handle];
  STEPSCOPE_CHECK(!chunk.in_use() && chunk.bin == -1);
  chunk.bin = BinForSize(chunk.size);
  bins_[chunk.bin].insert(FreeKey{chunk.size, chunk.ptr, handle});
}

void BFCAllocator::RemoveFreeChunk(ChunkHandle handle) {
  Chunk& chunk = chunks_[handle];
  STEPSCOPE_CHECK(!chunk.in_use() && chunk.bin != -1);
  const size_t erased = bins_[chunk.bin].erase(FreeKey{chunk.size, chunk.ptr, handle});
  STEPSCOPE_CHECK(erased == 1);
  chunk.bin = -1;
}

BFCAllocator::ChunkHandle BFCAllocator::NewChunk() {
  if (free_chunk_slots_ != kInvalidChunk) {
    const ChunkHandle handle = free_chunk_slots_;
    free_chunk_slots_ = chunks_[handle].next;
    chunks_[handle] = Chunk{};
    return handle;
  }
  STEPSCOPE_CHECK(chunks_.size() < kInvalidChunk);
  chunks_.emplace_back();
  return static_cast<ChunkHandle>(chunks_.size() - 1);
}

void BFCAllocator::DeleteChunk(ChunkHandle handle) {
  chunks_[handle] = Chunk{};
  chunks_[handle].next = free_chunk_slots_;
  free_chunk_slots_ = handle;
}

const BFCAllocator::Region* BFCAllocator::RegionFor(const void* ptr) const {
  const char* p = static_cast<const char*>(ptr);
  auto it = std::upper_bound(regions_.begin(), regions_.end(), p,
                             [](const char* q, const Region& r) { return q < r.ptr; });
  if (it == regions_.begin()) return nullptr;
  --it;
  return p < it->end() ? &*it : nullptr;
}

BFCAllocator::Region* BFCAllocator::RegionFor(const void* ptr) {
  return const_cast<Region*>(std::as_const(*this).RegionFor(ptr));
}

BFCAllocator::ChunkHandle& BFCAllocator::HandleSlot(const void* ptr) {
  Region* region = RegionFor(ptr);
  STEPSCOPE_CHECK(region != nullptr);
  const auto offset = static_cast<size_t>(static_cast<const char*>(ptr) - region->ptr);
  STEPSCOPE_CHECK(offset % kMinAllocationSize == 0);
  return region->handles[offset / kMinAllocationSize];
}

const BFCAllocator::Chunk& BFCAllocator::LiveChunk(const void* ptr) const {
  const Region* region = RegionFor(ptr);
  STEPSCOPE_CHECK(region != nullptr);
  const auto offset = static_cast<size_t>(static_cast<const char*>(ptr) - region->ptr);
  STEPSCOPE_CHECK(offset % kMinAllocationSize == 0);
  const ChunkHandle handle = region->handles[offset / kMinAllocationSize];
  STEPSCOPE_CHECK(handle != kInvalidChunk && chunks_[handle].in_use());
  return chunks_[handle];
}

void BFCAllocator::Notify(const Chunk& chunk, int64_t delta_bytes) {
  AllocationObserver* sink = observer();
  if (sink == nullptr) return;
  AllocationEvent event;
  event.time_ns = NowNanos();
  event.delta_bytes = delta_bytes;
  event.requested_bytes = static_cast<int64_t>(chunk.requested_size);
  event.allocated_bytes = static_cast<int64_t>(chunk.size);
  event.allocation_id = chunk.allocation_id;
  event.ptr = chunk.ptr;
  event.bytes_in_use_after = stats_.bytes_in_use;
  sink->OnAllocation(*this, event);
}

AllocatorStats BFCAllocator::Stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

int64_t BFCAllocator::AllocationId(const void* ptr) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return LiveChunk(ptr).allocation_id;
}

int64_t BFCAllocator::RequestedSize(const void* ptr) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<int64_t>(LiveChunk(ptr).requested_size);
}

int64_t BFCAllocator::AllocatedSize(const void* ptr) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<int64_t>(LiveChunk(ptr).size);
}

std::vector<BFCAllocator::ChunkInfo> BFCAllocator::Chunks() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<ChunkInfo> result;
  for (const Region& region : regions_) {
    ChunkHandle handle = region.handles.empty() ? kInvalidChunk : region.handles[0];
    while (handle != kInvalidChunk) {
      const Chunk& chunk = chunks_[handle];
      result.push_back(ChunkInfo{chunk.ptr, static_cast<int64_t>(chunk.size),
                                 static_cast<int64_t>(chunk.requested_size), chunk.allocation_id,
                                 chunk.bin});
      handle = chunk.next;
    }
  }
  return result;
}

int64_t BFCAllocator::NumRegions() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<int64_t>(regions_.size());
}

}  // namespace stepscope::runtime
