#include "viewer/timeline/timeline_index.h"

#include <algorithm>

namespace stepscope::viewer {

TimelineIndex::TimelineIndex(const trace::Trace& trace) : trace_(&trace) {
  const auto& tracks = trace.tracks();
  const auto& slices = trace.slices();
  // Pass 1: levels per track and slices per level (counting sort by (track, depth), stable, so
  // each level keeps the track's start order).
  track_level_.assign(tracks.size() + 1, 0);
  for (uint32_t t = 0; t < tracks.size(); ++t) {
    int levels = 0;
    for (const trace::Slice& s : trace.track_slices(t)) levels = std::max(levels, s.depth + 1);
    track_level_[t + 1] = track_level_[t] + static_cast<uint32_t>(levels);
  }
  level_begin_.assign(track_level_.back() + 1, 0);
  for (const trace::Slice& s : slices) ++level_begin_[track_level_[s.track] + s.depth + 1];
  for (size_t l = 1; l < level_begin_.size(); ++l) level_begin_[l] += level_begin_[l - 1];
  // Pass 2: place.
  level_slices_.resize(slices.size());
  std::vector<uint32_t> fill(level_begin_.begin(), level_begin_.end() - 1);
  for (uint32_t i = 0; i < slices.size(); ++i) {
    const trace::Slice& s = slices[i];
    level_slices_[fill[track_level_[s.track] + s.depth]++] = i;
  }
}

std::span<const uint32_t> TimelineIndex::level(uint32_t track, int depth) const {
  const uint32_t l = track_level_[track] + static_cast<uint32_t>(depth);
  return {level_slices_.data() + level_begin_[l], level_begin_[l + 1] - level_begin_[l]};
}

std::pair<size_t, size_t> TimelineIndex::VisibleRange(uint32_t track, int depth, double begin_ns,
                                                      double end_ns) const {
  const auto slices = level(track, depth);
  const auto& all = trace_->slices();
  // First slice ending at or after begin (ends are sorted within a level) ...
  const auto first = std::partition_point(slices.begin(), slices.end(), [&](uint32_t i) {
    return static_cast<double>(all[i].end_ns()) < begin_ns;
  });
  // ... up to the first one starting after end.
  const auto last = std::partition_point(first, slices.end(), [&](uint32_t i) {
    return static_cast<double>(all[i].start_ns) <= end_ns;
  });
  return {static_cast<size_t>(first - slices.begin()), static_cast<size_t>(last - slices.begin())};
}

size_t TimelineIndex::memory_bytes() const {
  return (level_slices_.capacity() + level_begin_.capacity() + track_level_.capacity()) *
         sizeof(uint32_t);
}

size_t CollectBoxes(const TimelineIndex& index, uint32_t track, int depth,
                    const TimeMapping& mapping, std::vector<DrawBox>* out, double min_px) {
  const auto slices = index.level(track, depth);
  const auto& all = index.trace().slices();
  auto [i, end] = index.VisibleRange(track, depth, mapping.begin_ns(), mapping.end_ns());
  const double ns_per_px = mapping.ns_per_px();
  const double min_ns = min_px * ns_per_px;
  size_t covered = 0;
  while (i < end) {
    const trace::Slice& s = all[slices[i]];
    const double x0 = mapping.NsToPx(static_cast<double>(s.start_ns));
    if (static_cast<double>(s.dur_ns) >= min_ns) {
      out->push_back(DrawBox{static_cast<float>(x0),
                             static_cast<float>(mapping.NsToPx(static_cast<double>(s.end_ns()))),
                             slices[i], 1});
      ++i;
      ++covered;
      continue;
    }
    // A narrow slice: fold it with every following slice that starts within min_px of it.
    const double fold_end_ns = static_cast<double>(s.start_ns) + min_ns;
    // Galloping search: the end of the fold is usually a few hundred slices ahead, so doubling
    // strides from i touch far fewer cache lines than a binary search over the whole level.
    auto starts_before = [&](size_t k) { return static_cast<double>(all[slices[k]].start_ns) < fold_end_ns; };
    size_t below = i;  // last position known to start before the fold end
    size_t probe = i + 1;
    for (size_t stride = 1; probe < end && starts_before(probe); stride *= 2) {
      below = probe;
      probe = i + 1 + stride;
    }
    // Positions up to `below` start before the fold end; `probe` (when < end) does not.
    size_t lo = below + 1;
    size_t hi = std::min(probe, end);
    while (lo < hi) {
      const size_t mid = lo + (hi - lo) / 2;
      if (starts_before(mid)) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    size_t j = lo;
    // The last of the run may be a wide slice: it gets its own box.
    if (j - 1 > i && static_cast<double>(all[slices[j - 1]].dur_ns) >= min_ns) --j;
    const double run_end_px = mapping.NsToPx(static_cast<double>(all[slices[j - 1]].end_ns()));
    out->push_back(DrawBox{static_cast<float>(x0), static_cast<float>(std::max(run_end_px, x0 + min_px)),
                           slices[i], static_cast<uint32_t>(j - i)});
    covered += j - i;
    i = j;
  }
  return covered;
}

}  // namespace stepscope::viewer
