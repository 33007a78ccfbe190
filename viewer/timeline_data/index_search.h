// Searches over table positions through a predicate `before` that holds for a prefix: the
// timeline's index and the counter tracks read their sorted tables (starts, samples, times) this
// way, often without materialising the values searched.
#pragma once

#include <algorithm>
#include <cstddef>

namespace stepscope::viewer {

// The first position in [lo, hi) for which `before` is false (hi when it holds throughout).
template <typename Before>
size_t FirstNotBefore(size_t lo, size_t hi, Before before) {
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    if (before(mid)) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

// The same answer, found by probing lo, lo + 1, lo + 2, lo + 4, ... first: cheap when it lies
// near lo (a view's next edge, a hint carried from the last search).
template <typename Before>
size_t GallopFirstNotBefore(size_t lo, size_t hi, Before before) {
  size_t probe = lo;
  for (size_t step = 1; probe < hi && before(probe); step *= 2) {
    lo = probe + 1;
    probe += step;
  }
  return FirstNotBefore(lo, std::min(probe, hi), before);
}

}  // namespace stepscope::viewer
