// The ticks of a memory chart's y-axis: round byte counts (1, 2, 4 or 5 B, KiB, MiB, GiB or TiB,
// or 10, 20, 25, 50, 100, 200, 250 or 500 of them), from 0 up to the chart's top, labelled
// as every byte count is (FormatBytes, base/units.h). No Qt: tested on its own.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace stepscope::viewer {

struct ByteTick {
  int64_t bytes = 0;
  std::string label;
};

// 0 and every multiple of the smallest round step that gives at most `max_ticks` ticks above 0
// and no tick above `top_bytes`. Only 0 when `top_bytes` <= 0.
std::vector<ByteTick> ByteTicks(int64_t top_bytes, int max_ticks);

}  // namespace stepscope::viewer
