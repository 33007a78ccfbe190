// What the timeline draws from: for every track and nesting depth, the slice indices of that
// level in start order. Slices of one level never overlap (a Trace invariant: slices on a track
// nest or are disjoint, and a slice starting inside another gets a deeper depth), so their
// ends are sorted too and the visible part of a level is found by two binary searches.
//
// A track with one level (a GPU stream, a flat lane) needs no index: its level is the track's
// own slice range. The others name each slice by its place in the track in 3 bytes (4 for a
// track of more than 2^24 slices): a quarter less than a slice index, on every slice of a
// nested track. Every 64th start of a level is also kept side by side (sampled starts).
//
// CollectBoxes() turns a level's visible part into boxes for one frame. Runs of slices
// narrower than a pixel are folded into one box with a count (as Tracy does): the next slice
// that starts past the fold is found through a table of equal time buckets over the sampled
// starts, finished within one stride of the level, so a frame costs O(boxes * log stride)
// whatever the number of slices, and touches a few cache lines per box even when the level is
// gigabytes. A wide view's folds start and end at sampled positions, so each stride also keeps
// the ends of its first and last slice (StrideEnds): such a fold reads the small sampled tables
// only, never the slices themselves; a fold that ends inside a stride finds its end among the
// starts of every 8th position of the stride (StrideStarts), then within 8 positions.
// No Qt here: it is tested with synthetic 10^6-slice tracks.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "profiler/trace/trace.h"
#include "viewer/timeline_data/time_mapping.h"

namespace stepscope::viewer {

// The slices of one level, in start order: positions map to slice indices (trace.slices()).
class LevelSlices {
 public:
  // Places in the track of 3 bytes (`narrow`), of 4 (`wide`), or neither: the level is the
  // slice range starting at the track's first slice.
  LevelSlices(const uint8_t* narrow, const uint32_t* wide, uint32_t first_slice, size_t size)
      : narrow_(narrow), wide_(wide), first_slice_(first_slice), size_(size) {}
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  uint32_t operator[](size_t position) const {
    if (narrow_ != nullptr) {
      uint32_t place;  // 4 bytes read, 3 kept: the table ends with a byte to spare
      std::memcpy(&place, narrow_ + 3 * position, sizeof(place));
      return first_slice_ + (place & kNarrowMask);
    }
    return first_slice_ + (wide_ != nullptr ? wide_[position] : static_cast<uint32_t>(position));
  }
  static constexpr uint32_t kNarrowMask = (1u << 24) - 1;

 private:
  const uint8_t* narrow_;
  const uint32_t* wide_;
  uint32_t first_slice_;
  size_t size_;
};

// The ends of the first and the last slice of one stride (kSampleStride positions) of a level.
struct StrideEnds {
  int64_t first_end_ns = 0;
  int64_t last_end_ns = 0;
};

// The starts of positions 8, 16, ..., 56 of one stride, after the stride's sampled start, in
// entries 1..7 (entry 0 unused, so that a stride's entries share a cache line); kUnknown where
// the position is past the level's end or the offset does not fit.
struct StrideStarts {
  static constexpr uint32_t kUnknown = ~uint32_t{0};
  static constexpr size_t kEvery = 8;
  uint32_t offset_ns[8];
};

class TimelineIndex {
 public:
  // One sampled start per this many positions of a level.
  static constexpr size_t kSampleStride = 64;

  // A nested track of more than `max_narrow_track` slices (at most 2^24) gets 4-byte places; a
  // test lowers it to check that path on a small trace.
  explicit TimelineIndex(const trace::Trace& trace, size_t max_narrow_track = size_t{1} << 24);
  TimelineIndex(const TimelineIndex&) = delete;
  TimelineIndex& operator=(const TimelineIndex&) = delete;

  const trace::Trace& trace() const { return *trace_; }
  // Levels of a track: max depth + 1, 0 for a track without slices.
  int depth_count(uint32_t track) const {
    return static_cast<int>(track_level_[track + 1] - track_level_[track]);
  }
  // Slice indices (into trace.slices()) of one level, sorted by start and by end.
  LevelSlices level(uint32_t track, int depth) const;
  // Starts of positions 0, kSampleStride, 2 * kSampleStride, ... of a level.
  std::span<const int64_t> sampled_starts(uint32_t track, int depth) const;
  // Per stride of a level (as sampled_starts), the ends of its first and last slice.
  std::span<const StrideEnds> stride_ends(uint32_t track, int depth) const;
  std::span<const StrideStarts> stride_starts(uint32_t track, int depth) const;
  // Samples [lo, hi] of a level that hold its first sampled start at or after `bound_ns` (the
  // count of samples when none is), from a table of equal time buckets over the level's span:
  // a wide view's folds find their place in one or two samples instead of a search over a
  // million of them. {0, count} for a level without a table.
  std::pair<size_t, size_t> SampleBracket(uint32_t track, int depth, double bound_ns) const;
  // Positions [first, last) in level(track, depth) of the slices that intersect
  // [begin_ns, end_ns] (a zero-length slice at either edge counts).
  std::pair<size_t, size_t> VisibleRange(uint32_t track, int depth, double begin_ns,
                                         double end_ns) const;
  size_t memory_bytes() const;

 private:
  struct Level {
    uint32_t first_slice = 0;    // the track's first slice
    uint32_t size = 0;
    int64_t places = -1;         // entry of its first place in narrow_ or wide_, -1 for an unindexed level
    bool wide = false;           // its places are in wide_
    uint32_t samples = 0;        // offset into sampled_starts_
    uint32_t buckets = 0;        // offset into bucket_first_sample_
    uint32_t bucket_count = 0;   // 0: no table (fewer than two samples)
    int64_t bucket_origin_ns = 0;
    int64_t bucket_ns = 1;
  };
  const trace::Trace* trace_;
  std::vector<Level> levels_;           // grouped by track, then depth
  std::vector<uint32_t> track_level_;   // per track: its first level (+1 sentinel)
  // The places in their track of the slices of tracks with several levels, by level: 3 bytes
  // each (little-endian, and a spare byte at the end), or 4 for a track past 2^24 slices.
  std::unique_ptr<uint8_t[]> narrow_;
  size_t narrow_bytes_ = 0;
  std::unique_ptr<uint32_t[]> wide_;
  size_t wide_size_ = 0;
  std::vector<int64_t> sampled_starts_;
  std::vector<StrideEnds> stride_ends_;  // side by side with sampled_starts_ (1/4 byte a slice)
  std::vector<StrideStarts> stride_starts_;  // the same (1/2 byte a slice)
  // Per level with a table, bucket_count + 1 entries: entry b is the first sample starting at or
  // after bucket_origin_ns + b * bucket_ns (at most one entry per sample: 1/16 byte per slice).
  std::vector<uint32_t> bucket_first_sample_;
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
