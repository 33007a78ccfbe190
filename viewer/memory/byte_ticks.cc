// A memory chart's y-axis ticks (byte_ticks.h).
#include "viewer/memory/byte_ticks.h"

#include <algorithm>

#include "base/units.h"

namespace stepscope::viewer {

std::vector<ByteTick> ByteTicks(int64_t top_bytes, int max_ticks) {
  std::vector<ByteTick> ticks{{0, FormatBytes(0)}};
  if (top_bytes <= 0) return ticks;
  max_ticks = std::max(1, max_ticks);
  int64_t step = top_bytes;  // one tick at the top when no round step fits below it
  bool found = false;
  for (int64_t unit = 1; unit <= (int64_t{1} << 40) && !found; unit <<= 10) {
    for (int64_t multiple : {1, 2, 4, 5, 10, 20, 25, 50, 100, 200, 250, 500}) {
      if (top_bytes / (multiple * unit) <= max_ticks) {
        step = multiple * unit;
        found = true;
        break;
      }
    }
  }
  for (int64_t bytes = step; bytes <= top_bytes; bytes += step) ticks.push_back({bytes, FormatBytes(bytes)});
  return ticks;
}

}  // namespace stepscope::viewer
