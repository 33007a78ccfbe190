// Aligned host memory (posix_memalign) for a CPU device's BFC allocator.
#include "trainer/runtime/cpu_sub_allocator.h"

#include <bit>
#include <cstdlib>

namespace stepscope::runtime {

void* CpuSubAllocator::Alloc(size_t alignment, size_t bytes) {
  if (bytes == 0) return nullptr;
  alignment = std::bit_ceil(alignment < sizeof(void*) ? sizeof(void*) : alignment);
  void* ptr = nullptr;
  // posix_memalign only reserves address space until pages are touched, so large regions of a
  // generous memory limit cost nothing until used.
  if (::posix_memalign(&ptr, alignment, bytes) != 0) return nullptr;
  return ptr;
}

void CpuSubAllocator::Free(void* ptr, size_t /*bytes*/) { std::free(ptr); }

}  // namespace stepscope::runtime
