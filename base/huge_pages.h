// A hint that a big array read and written at random (a hash table, the nodes of a tree) be
// backed by 2 MiB pages where the kernel gives them on request (transparent huge pages in its
// "madvise" mode, the usual default): a random access into hundreds of MB then rarely misses
// the TLB, where with 4 KiB pages nearly every one does and walks the page tables. Only the
// whole 2 MiB pages inside [begin, begin + bytes) are marked; nothing else changes.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>

namespace stepscope {

inline void AdviseHugePages(const void* begin, size_t bytes) {
#ifdef MADV_HUGEPAGE
  constexpr uintptr_t kHugePage = uintptr_t{2} << 20;
  const auto start = reinterpret_cast<uintptr_t>(begin);
  const uintptr_t first = (start + kHugePage - 1) & ~(kHugePage - 1);
  const uintptr_t last = (start + bytes) & ~(kHugePage - 1);
  // Only a hint: where it fails (no THP, an older kernel) the pages stay small.
  if (last > first) (void)madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);
#else
  (void)begin;
  (void)bytes;
#endif
}

}  // namespace stepscope
