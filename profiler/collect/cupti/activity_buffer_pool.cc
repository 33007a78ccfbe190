// Fixed-size activity buffers under a byte budget; see the header.
#include "profiler/collect/cupti/activity_buffer_pool.h"

#include <algorithm>
#include <cstdlib>

namespace stepscope::collect::cupti {
namespace {
constexpr size_t kRecordAlignment = 8;  // CUPTI's ACTIVITY_RECORD_ALIGNMENT
}  // namespace

ActivityBufferPool::ActivityBufferPool(size_t buffer_bytes, size_t budget_bytes)
    : buffer_bytes_((std::max<size_t>(buffer_bytes, kRecordAlignment) + kRecordAlignment - 1) /
                    kRecordAlignment * kRecordAlignment),
      max_buffers_(std::max<size_t>(1, budget_bytes / buffer_bytes_)) {
  free_.reserve(std::min<size_t>(max_buffers_, 4096));  // Release() then rarely allocates
}

ActivityBufferPool::~ActivityBufferPool() {
  // Buffers still out with CUPTI are the source's to return before it lets the pool go.
  for (uint8_t* buffer : free_) std::free(buffer);
}

uint8_t* ActivityBufferPool::Acquire() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!free_.empty()) {
    uint8_t* buffer = free_.back();
    free_.pop_back();
    ++in_use_;
    return buffer;
  }
  if (allocated_ >= max_buffers_) {
    ++refused_;
    return nullptr;
  }
  auto* buffer = static_cast<uint8_t*>(std::aligned_alloc(kRecordAlignment, buffer_bytes_));
  if (buffer == nullptr) {
    ++refused_;
    return nullptr;
  }
  ++allocated_;
  ++in_use_;
  return buffer;
}

void ActivityBufferPool::Release(uint8_t* buffer) {
  if (buffer == nullptr) return;
  std::lock_guard<std::mutex> lock(mu_);
  free_.push_back(buffer);
  --in_use_;
}

size_t ActivityBufferPool::bytes_in_use() const {
  std::lock_guard<std::mutex> lock(mu_);
  return in_use_ * buffer_bytes_;
}

uint64_t ActivityBufferPool::refused() const {
  std::lock_guard<std::mutex> lock(mu_);
  return refused_;
}

}  // namespace stepscope::collect::cupti
