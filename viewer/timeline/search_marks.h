// The search matches marked on the timeline: each matching slice on screen tinted and outlined
// (sub-pixel ones as a thin bar, one per pixel), found per row by binary search, so a frame with
// a million matches costs what the matches on screen cost.
#pragma once

#include <QPainter>
#include <cstdint>
#include <utility>
#include <vector>

#include "profiler/trace/trace.h"
#include "viewer/timeline_data/time_mapping.h"

namespace stepscope::viewer {

class SearchMarks {
 public:
  static constexpr QRgb kOutline = 0xffe8590c;  // orange: apart from the selection's black
  static constexpr QRgb kTint = 0x60ffd43b;     // translucent yellow over the slice's colour

  // The matching slices (slice ids, in any order); empty: no marks.
  void Set(const trace::Trace& trace, std::vector<uint32_t> matches);
  const std::vector<uint32_t>& matches() const { return matches_; }
  bool empty() const { return matches_.empty(); }

  // The matches of lane `track` at nesting level `depth` that overlap the mapping's window, in
  // time order.
  std::vector<uint32_t> OnRow(const trace::Trace& trace, uint32_t track, int depth, const TimeMapping& map) const;
  // Marks the matches of one row whose time area starts at x `left`, the row at [top, top + height).
  void PaintRow(QPainter& painter, const trace::Trace& trace, const TimeMapping& map, uint32_t track, int depth,
                double left, double top, double height) const;

 private:
  std::pair<const uint32_t*, const uint32_t*> Window(const trace::Trace& trace, uint32_t track, int depth,
                                                     const TimeMapping& map) const;

  std::vector<uint32_t> matches_;   // as given
  std::vector<uint32_t> by_level_;  // sorted by (track, depth, start)
};

}  // namespace stepscope::viewer
