// An allocator for big blocks that come and go while a large input is read: blocks of 1 MiB or
// more are mapped straight from the kernel and unmapped when freed, so their memory leaves the
// process at once. (malloc keeps freed blocks of a few MB in its heap once its dynamic mmap
// threshold has risen past them, so memory freed block by block never lowers the peak.)
// Smaller blocks come from operator new as usual.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <new>

namespace stepscope {

template <typename T>
class PageAllocator {
 public:
  using value_type = T;
  static constexpr size_t kMappedFromBytes = size_t{1} << 20;

  PageAllocator() = default;
  template <typename U>
  PageAllocator(const PageAllocator<U>&) {}  // NOLINT(google-explicit-constructor): rebinding

  T* allocate(size_t count) {
    const size_t bytes = count * sizeof(T);
    if (bytes < kMappedFromBytes) return static_cast<T*>(::operator new(bytes));
    void* memory = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (memory == MAP_FAILED) throw std::bad_alloc();
    return static_cast<T*>(memory);
  }
  void deallocate(T* pointer, size_t count) {
    const size_t bytes = count * sizeof(T);
    if (bytes < kMappedFromBytes) {
      ::operator delete(pointer);
    } else {
      munmap(pointer, bytes);
    }
  }

  template <typename U>
  bool operator==(const PageAllocator<U>&) const { return true; }
};

}  // namespace stepscope
