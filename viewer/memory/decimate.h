// Per-pixel decimation of a memory curve (a step function) that keeps its peaks: for every
// pixel column the lowest and highest level the curve takes inside it, including the level
// carried in from before the column. Binary search for each column's first point, so a frame
// costs O(columns * log n + points in view). No Qt: tested on its own.
#pragma once

#include <cstdint>
#include <vector>

#include "profiler/analysis/memory_timeline.h"
#include "viewer/timeline_data/time_mapping.h"

namespace stepscope::viewer {

struct ColumnExtent {
  int64_t low = 0;
  int64_t high = 0;
  bool operator==(const ColumnExtent&) const = default;
};

// One extent per column of `mapping` (width rounded up). Before the first point the level is 0.
std::vector<ColumnExtent> DecimateCurve(const std::vector<analysis::MemoryPoint>& curve,
                                        const TimeMapping& mapping);

}  // namespace stepscope::viewer
