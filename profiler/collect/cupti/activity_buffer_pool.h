// Bounded memory for CUPTI's activity buffers (docs/formats.md §5): buffers of a fixed size
// handed to CUPTI on request and returned when CUPTI has delivered them; freed buffers are
// reused, so a steady run allocates nothing. Once the byte budget is in use, a request is refused and counted:
// CUPTI then drops the records it had no room for (and counts those itself).
//
// Thread-safe: CUPTI asks for and returns buffers on its own threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

namespace stepscope::collect::cupti {

class ActivityBufferPool {
 public:
  // `buffer_bytes` is rounded up to CUPTI's 8-byte record alignment; the budget allows at least
  // one buffer.
  ActivityBufferPool(size_t buffer_bytes, size_t budget_bytes);
  ~ActivityBufferPool();
  ActivityBufferPool(const ActivityBufferPool&) = delete;
  ActivityBufferPool& operator=(const ActivityBufferPool&) = delete;

  // A buffer of buffer_bytes(), 8-byte aligned, or nullptr when the budget is spent.
  uint8_t* Acquire();
  // Gives back a buffer from Acquire(); nullptr is ignored.
  void Release(uint8_t* buffer);

  size_t buffer_bytes() const { return buffer_bytes_; }
  size_t budget_bytes() const { return max_buffers_ * buffer_bytes_; }
  size_t bytes_in_use() const;
  uint64_t refused() const;  // requests turned down since construction

 private:
  const size_t buffer_bytes_;
  const size_t max_buffers_;
  mutable std::mutex mu_;  // guards the fields below; never held while calling into CUPTI
  std::vector<uint8_t*> free_;
  size_t allocated_ = 0;  // buffers alive (in use or free)
  size_t in_use_ = 0;
  uint64_t refused_ = 0;
};

}  // namespace stepscope::collect::cupti
