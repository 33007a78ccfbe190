// What is selected on the timeline besides the one current slice: several slices (Ctrl+click
// adds or removes one) and an area (Shift+drag: a time range on the tracks of the rows dragged
// over, or on every track when dragged on the ruler). Plain data: the timeline edits it, the
// range and call tree panes read it and show its aggregate statistics.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "profiler/analysis/op_stats.h"
#include "profiler/trace/trace.h"

namespace stepscope::viewer {

struct SelectedArea {
  int64_t begin_ns = 0, end_ns = 0;  // trace time
  std::vector<uint32_t> tracks;      // sorted, distinct; empty: every track
  bool operator==(const SelectedArea&) const = default;
};

class TimelineSelection {
 public:
  // Adds the slice, or removes it when it is already selected; whether it is selected now.
  bool Toggle(uint32_t slice);
  const std::vector<uint32_t>& slices() const { return slices_; }  // in the order added
  bool Contains(uint32_t slice) const;

  void SetArea(SelectedArea area);
  const std::optional<SelectedArea>& area() const { return area_; }
  void ClearSlices() { slices_.clear(); }
  void ClearArea() { area_.reset(); }
  void Clear() {
    slices_.clear();
    area_.reset();
  }
  bool empty() const { return slices_.empty() && !area_; }

 private:
  std::vector<uint32_t> slices_;
  std::optional<SelectedArea> area_;
};

// The tracks of an area whose work counts: the listed ones and every track below them.
std::vector<char> TracksOfArea(const trace::Trace& trace, const SelectedArea& area);

// The slices of an area: on its tracks, overlapping [begin, end] (a zero-length one when it lies
// in it), /stream:all and /memcpy repeats left out; in index order.
std::vector<uint32_t> SlicesInArea(const trace::Trace& trace, const SelectedArea& area);

// Statistics per name of a set of slices, as the op statistics give them: count, total (each
// slice's whole duration), self (its duration minus its direct children's, selected or not),
// mean, min, max, p50/p95, share of the set's total; sorted by total descending.
std::vector<analysis::OpStatsRow> SliceSetStats(const trace::Trace& trace, std::span<const uint32_t> slices);

}  // namespace stepscope::viewer
