// What the timeline draws from: for every track and nesting depth, the slice indices of that
// level in start order. Slices of one level never overlap (a Trace invariant: slices on a track
// nest or are disjoint, and a slice starting inside another gets a deeper depth), so their
// ends are sorted too and the visible part of a level is found by two binary searches.
//
// CollectBoxes() turns a level's visible part into boxes for one frame. Runs of slices
// narrower than a pixel are folded into one box with a count (as Tracy does): the next slice
// that starts past the fold is found by binary search, so a frame costs O(boxes * log n)
// whatever the number of slices. No Qt here: it is tested with synthetic 10^6-slice tracks.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "profiler/trace/trace.h"
#include "viewer/timeline/time_mapping.h"

namespace stepscope::viewer {

class TimelineIndex {
 public:
  explicit TimelineIndex(const trace::Trace& trace);
  TimelineIndex(const TimelineIndex&) = delete;
  TimelineIndex& operator=(const TimelineIndex&) = delete;

  const trace::Trace& trace() const { return *trace_; }
  // Levels of a track: max depth + 1, 0 for a track without slices.
  int depth_count(uint32_t track) const {
    return static_cast<int>(track_level_[track + 1] - track_level_[track]);
  }
  // Slice indices (into trace.slices()) of one level, sorted by start and by end.
  std::span<const uint32_t> level(uint32_t track, int depth) const;
  // Positions [first, last) in level(track, depth) of the slices that intersect
  // [begin_ns, end_ns] (a zero-length slice at either edge counts).
  std::pair<size_t, size_t> VisibleRange(uint32_t track, int depth, double begin_ns,
                                         double end_ns) const;
  size_t memory_bytes() const;

 private:
  const trace::Trace* trace_;
  std::vector<uint32_t> level_slices_;  // every slice, grouped by (track, depth)
  std::vector<uint32_t> level_begin_;   // per level: offset into level_slices_ (+1 sentinel)
  std::vector<uint32_t> track_level_;   // per track: its first level (+1 sentinel)
};

// One rectangle of a frame: a slice, or a folded run of `count` slices starting at `slice`.
struct DrawBox {
  float x0 = 0;  // pixels from the left of the time area (may be < 0 or > width when clipped)
  float x1 = 0;
  uint32_t slice = 0;
  uint32_t count = 1;
  bool folded() const { return count > 1; }
};

// Appends the boxes of one level for `mapping` to `out`. Every box is at least `min_px` wide;
// slices narrower than that are folded with their neighbours that start within the same
// `min_px`. Returns how many slices the boxes stand for.
size_t CollectBoxes(const TimelineIndex& index, uint32_t track, int depth,
                    const TimeMapping& mapping, std::vector<DrawBox>* out, double min_px = 1.0);

}  // namespace stepscope::viewer
