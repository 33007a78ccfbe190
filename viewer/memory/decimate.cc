// Per-pixel decimation of a memory curve keeping its peaks (decimate.h).
#include "viewer/memory/decimate.h"

#include <algorithm>
#include <cmath>

namespace stepscope::viewer {

std::vector<ColumnExtent> DecimateCurve(const std::vector<analysis::MemoryPoint>& curve,
                                        const TimeMapping& mapping) {
  const size_t columns = static_cast<size_t>(std::ceil(mapping.width_px()));
  std::vector<ColumnExtent> extents(columns);
  auto first_after = [&](double t, std::vector<analysis::MemoryPoint>::const_iterator from) {
    // First point at or after time t.
    return std::partition_point(from, curve.end(), [&](const analysis::MemoryPoint& p) {
      return static_cast<double>(p.time_ns) < t;
    });
  };
  auto it = first_after(mapping.PxToNs(0), curve.begin());
  for (size_t c = 0; c < columns; ++c) {
    const double column_end = mapping.PxToNs(static_cast<double>(c + 1));
    // The level entering the column: the last point before it.
    const int64_t carried = it == curve.begin() ? 0 : std::prev(it)->bytes;
    ColumnExtent extent{carried, carried};
    const auto end = first_after(column_end, it);
    for (auto p = it; p != end; ++p) {
      extent.low = std::min(extent.low, p->bytes);
      extent.high = std::max(extent.high, p->bytes);
    }
    extents[c] = extent;
    it = end;
  }
  return extents;
}

}  // namespace stepscope::viewer
