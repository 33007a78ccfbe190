#include "viewer/timeline/timeline_index.h"

#include <algorithm>

namespace stepscope::viewer {
namespace {

// The first position in [lo, hi) for which `before` is false (`before` holds for a prefix).
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

}  // namespace

TimelineIndex::TimelineIndex(const trace::Trace& trace) : trace_(&trace) {
  const auto& tracks = trace.tracks();
  const auto& slices = trace.slices();
  // Pass 1: levels per track; a track with one level keeps its slice range, the others count
  // their slices per level.
  track_level_.assign(tracks.size() + 1, 0);
  for (uint32_t t = 0; t < tracks.size(); ++t) {
    int depths = 0;
    for (const trace::Slice& s : trace.track_slices(t)) depths = std::max(depths, s.depth + 1);
    track_level_[t + 1] = track_level_[t] + static_cast<uint32_t>(depths);
    for (int d = 0; d < depths; ++d) levels_.push_back(Level{trace.track_first_slice(t), 0, -1, 0});
    if (depths == 1) {
      levels_.back().size = static_cast<uint32_t>(trace.track_slices(t).size());
    } else {
      for (const trace::Slice& s : trace.track_slices(t)) ++levels_[track_level_[t] + s.depth].size;
    }
  }
  size_t indexed = 0;
  for (uint32_t t = 0; t < tracks.size(); ++t) {
    if (track_level_[t + 1] - track_level_[t] < 2) continue;
    for (uint32_t l = track_level_[t]; l < track_level_[t + 1]; ++l) {
      levels_[l].indices = static_cast<int64_t>(indexed);
      indexed += levels_[l].size;
    }
  }
  // Pass 2: place the slices of indexed levels (a counting sort by level: stable, so each
  // level keeps the track's start order).
  level_slices_.resize(indexed);
  std::vector<size_t> fill(levels_.size(), 0);
  for (size_t l = 0; l < levels_.size(); ++l) fill[l] = static_cast<size_t>(std::max<int64_t>(levels_[l].indices, 0));
  for (uint32_t t = 0; t < tracks.size(); ++t) {
    if (track_level_[t + 1] - track_level_[t] < 2) continue;
    const uint32_t first = trace.track_first_slice(t);
    const auto track_slices = trace.track_slices(t);
    for (uint32_t i = 0; i < track_slices.size(); ++i) {
      level_slices_[fill[track_level_[t] + track_slices[i].depth]++] = first + i;
    }
  }
  // Sampled starts.
  size_t samples = 0;
  for (Level& level : levels_) {
    level.samples = static_cast<uint32_t>(samples);
    samples += (level.size + kSampleStride - 1) / kSampleStride;
  }
  sampled_starts_.reserve(samples);
  for (uint32_t t = 0; t < tracks.size(); ++t) {
    for (int d = 0; d < depth_count(t); ++d) {
      const LevelSlices positions = level(t, d);
      for (size_t k = 0; k < positions.size(); k += kSampleStride) sampled_starts_.push_back(slices[positions[k]].start_ns);
    }
  }
}

LevelSlices TimelineIndex::level(uint32_t track, int depth) const {
  const Level& l = levels_[track_level_[track] + static_cast<uint32_t>(depth)];
  return LevelSlices(l.indices < 0 ? nullptr : level_slices_.data() + l.indices, l.first_slice, l.size);
}

std::span<const int64_t> TimelineIndex::sampled_starts(uint32_t track, int depth) const {
  const Level& l = levels_[track_level_[track] + static_cast<uint32_t>(depth)];
  return {sampled_starts_.data() + l.samples, (l.size + kSampleStride - 1) / kSampleStride};
}

std::pair<size_t, size_t> TimelineIndex::VisibleRange(uint32_t track, int depth, double begin_ns,
                                                      double end_ns) const {
  const LevelSlices slices = level(track, depth);
  const auto& all = trace_->slices();
  // First slice ending at or after begin (ends are sorted within a level) ...
  const size_t first = FirstNotBefore(0, slices.size(), [&](size_t k) {
    return static_cast<double>(all[slices[k]].end_ns()) < begin_ns;
  });
  // ... up to the first one starting after end.
  const size_t last = FirstNotBefore(first, slices.size(), [&](size_t k) {
    return static_cast<double>(all[slices[k]].start_ns) <= end_ns;
  });
  return {first, last};
}

size_t TimelineIndex::memory_bytes() const {
  return level_slices_.capacity() * sizeof(uint32_t) + track_level_.capacity() * sizeof(uint32_t) +
         levels_.capacity() * sizeof(Level) + sampled_starts_.capacity() * sizeof(int64_t);
}

namespace {

// The first position in (from, end) of `slices` whose slice starts at or after `bound_ns`
// (`end` when none does). Gallops a few steps in the level itself (a fold is often short), then
// over the sampled starts, which sit side by side, and ends with a binary search within one
// sample stride: a handful of cache misses however long the fold is.
size_t FirstStartingAtOrAfter(const TimelineIndex& index, uint32_t track, int depth, size_t from, size_t end,
                              double bound_ns) {
  const LevelSlices slices = index.level(track, depth);
  const auto& all = index.trace().slices();
  auto before = [&](size_t k) { return static_cast<double>(all[slices[k]].start_ns) < bound_ns; };
  constexpr size_t kStride = TimelineIndex::kSampleStride;
  size_t below = from;  // the last position known to start before the bound
  for (size_t step = 1; step <= kStride / 8; step *= 2) {
    const size_t probe = from + step;
    if (probe >= end) return FirstNotBefore(below + 1, end, before);
    if (!before(probe)) return FirstNotBefore(below + 1, probe, before);
    below = probe;
  }
  // Sample m holds the start of position m * kStride: find the first sample at or after the
  // bound beyond `below`, galloping, then the position within the stride before it.
  const auto samples = index.sampled_starts(track, depth);
  const size_t sample_end = (end + kStride - 1) / kStride;  // samples of positions < end
  auto sample_before = [&](size_t m) { return static_cast<double>(samples[m]) < bound_ns; };
  size_t known = below / kStride;  // a sample at or before `below`: starts before the bound
  size_t m = known + 1;
  for (size_t step = 1; m < sample_end && sample_before(m); step *= 2) {
    known = m;
    m = known + step;
  }
  const size_t lo = FirstNotBefore(known + 1, std::min(m, sample_end), sample_before);
  // Sample lo is the first at or after the bound (or past the end): the answer lies in
  // (known * kStride, lo * kStride], where `known` is the last sample before the bound.
  known = lo - 1;
  return FirstNotBefore(std::max(below + 1, known * kStride + 1), std::min(lo * kStride, end), before);
}

}  // namespace

size_t CollectBoxes(const TimelineIndex& index, uint32_t track, int depth,
                    const TimeMapping& mapping, std::vector<DrawBox>* out, double min_px) {
  const LevelSlices slices = index.level(track, depth);
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
    size_t j = FirstStartingAtOrAfter(index, track, depth, i, end, static_cast<double>(s.start_ns) + min_ns);
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
