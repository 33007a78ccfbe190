// The order in which ScatterAdd/ScatterSub add the rows of a repeated id (shared CPU/CUDA): the
// positions holding one id form a chain in increasing position order, and the id's table row
// adds the rows along that chain, which is the order of the CPU's loop over positions. Without
// a fixed order (atomics add in whatever order threads arrive) reruns and replicas drift apart.
#pragma once

#include <cstdint>

#include "kernels/math/scalar_math.h"

namespace stepscope::kernels::math {

// Whether no position before n holds ids[n].
STEPSCOPE_HD inline bool IsFirstOccurrence(const int32_t* ids, int64_t n) {
  for (int64_t m = n - 1; m >= 0; --m) {
    if (ids[m] == ids[n]) return false;
  }
  return true;
}

// The next position after n that holds ids[n], or -1.
STEPSCOPE_HD inline int64_t NextOccurrence(const int32_t* ids, int64_t count, int64_t n) {
  for (int64_t m = n + 1; m < count; ++m) {
    if (ids[m] == ids[n]) return m;
  }
  return -1;
}

// start + Σ scale·rows(·, dim)[m, d] over the chain that begins at `first` (next[m] is
// NextOccurrence(m)), added one position at a time in chain order.
template <typename T>
STEPSCOPE_HD inline T AddAlongChain(T start, const int64_t* next, int64_t first, const T* rows,
                                    int64_t dim, int64_t d, T scale) {
  T acc = start;
  for (int64_t m = first; m >= 0; m = next[m]) acc += scale * rows[m * dim + d];
  return acc;
}

}  // namespace stepscope::kernels::math
