// Aligned host memory for the BFC allocator of a CPU device.
#pragma once

#include <cstddef>

#include "trainer/runtime/allocator.h"

namespace stepscope::runtime {

class CpuSubAllocator final : public SubAllocator {
 public:
  // `alignment` is rounded up to a power of two of at least sizeof(void*).
  void* Alloc(size_t alignment, size_t bytes) override;
  void Free(void* ptr, size_t bytes) override;
};

}  // namespace stepscope::runtime
