// The timeline's index (timeline_index.h): per track and depth the slices in start order, and
// the visible boxes of a window with sub-pixel runs folded.
#include "viewer/timeline_data/timeline_index.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <future>
#include <memory>

#include "viewer/timeline_data/index_search.h"

namespace stepscope::viewer {

static_assert(std::endian::native == std::endian::little, "LevelSlices reads 3-byte places as the low bytes of 4");

namespace {

// Runs work(first, end) over the tracks [first, end) in two groups of about half the slices
// each, the second on another core, for a trace big enough to gain from it: building the index
// of 10^8 slices reads gigabytes. Each track is one group's alone.
template <typename Work>
void OverTracksOnTwoCores(const trace::Trace& trace, const Work& work) {
  constexpr size_t kAloneBelow = size_t{1} << 20;
  const auto tracks = static_cast<uint32_t>(trace.tracks().size());
  const size_t total = trace.slices().size();
  if (total < kAloneBelow) return work(0u, tracks);
  uint32_t split = 0;
  for (size_t before = 0; split < tracks && before < total / 2; ++split) before += trace.track_slices(split).size();
  auto helper = std::async(std::launch::async, [&] { work(split, tracks); });
  work(0u, split);
  helper.get();
}

}  // namespace

TimelineIndex::TimelineIndex(const trace::Trace& trace, size_t max_narrow_track) : trace_(&trace) {
  max_narrow_track = std::min(max_narrow_track, size_t{LevelSlices::kNarrowMask} + 1);
  const auto& tracks = trace.tracks();
  const auto& slices = trace.slices();
  // Pass 1: the slices of each level of each track, counted in one read of the track (a track
  // with one level keeps its slice range).
  std::vector<std::vector<uint32_t>> per_depth(tracks.size());
  OverTracksOnTwoCores(trace, [&](uint32_t first, uint32_t end) {
    for (uint32_t t = first; t < end; ++t) {
      for (const trace::Slice& s : trace.track_slices(t)) {
        const auto depth = static_cast<size_t>(s.depth);
        if (depth >= per_depth[t].size()) per_depth[t].resize(depth + 1, 0);
        ++per_depth[t][depth];
      }
    }
  });
  track_level_.assign(tracks.size() + 1, 0);
  for (uint32_t t = 0; t < tracks.size(); ++t) {
    track_level_[t + 1] = track_level_[t] + static_cast<uint32_t>(per_depth[t].size());
    for (uint32_t count : per_depth[t]) levels_.push_back(Level{trace.track_first_slice(t), count, -1, false});
  }
  size_t narrow = 0, wide = 0;
  for (uint32_t t = 0; t < tracks.size(); ++t) {
    if (track_level_[t + 1] - track_level_[t] < 2) continue;
    const bool is_wide = trace.track_slices(t).size() > max_narrow_track;
    for (uint32_t l = track_level_[t]; l < track_level_[t + 1]; ++l) {
      size_t& count = is_wide ? wide : narrow;
      levels_[l].places = static_cast<int64_t>(count);
      levels_[l].wide = is_wide;
      count += levels_[l].size;
    }
  }
  // Pass 2: place the slices of indexed levels (a counting sort by level: stable, so each
  // level keeps the track's start order). Every place is written once: the arrays are not
  // cleared first, and their fresh pages are first touched on the core that fills them.
  narrow_bytes_ = narrow * 3 + 1;
  narrow_ = std::make_unique_for_overwrite<uint8_t[]>(narrow_bytes_);
  narrow_[narrow_bytes_ - 1] = 0;  // the spare byte a 4-byte read of the last place takes
  wide_size_ = wide;
  wide_ = std::make_unique_for_overwrite<uint32_t[]>(wide_size_);
  OverTracksOnTwoCores(trace, [&](uint32_t first, uint32_t end) {
    std::vector<size_t> fill;  // per level of the track, its next entry
    for (uint32_t t = first; t < end; ++t) {
      if (track_level_[t + 1] - track_level_[t] < 2) continue;
      fill.clear();
      for (uint32_t l = track_level_[t]; l < track_level_[t + 1]; ++l) fill.push_back(static_cast<size_t>(levels_[l].places));
      const auto track_slices = trace.track_slices(t);
      const bool is_wide = levels_[track_level_[t]].wide;
      for (uint32_t i = 0; i < track_slices.size(); ++i) {
        const size_t entry = fill[track_slices[i].depth]++;
        if (is_wide) {
          wide_[entry] = i;
        } else {
          uint8_t* place = narrow_.get() + 3 * entry;
          place[0] = static_cast<uint8_t>(i);
          place[1] = static_cast<uint8_t>(i >> 8);
          place[2] = static_cast<uint8_t>(i >> 16);
        }
      }
    }
  });
  // Sampled starts.
  size_t samples = 0;
  for (Level& level : levels_) {
    level.samples = static_cast<uint32_t>(samples);
    samples += (level.size + kSampleStride - 1) / kSampleStride;
  }
  sampled_starts_.resize(samples);
  stride_ends_.resize(samples);
  stride_starts_.resize(samples);
  OverTracksOnTwoCores(trace, [&](uint32_t first, uint32_t end) {
    for (uint32_t t = first; t < end; ++t) {
      for (int d = 0; d < depth_count(t); ++d) {
        const LevelSlices positions = level(t, d);
        const uint32_t offset = levels_[track_level_[t] + static_cast<uint32_t>(d)].samples;
        int64_t* starts = sampled_starts_.data() + offset;
        StrideEnds* ends = stride_ends_.data() + offset;
        StrideStarts* inner = stride_starts_.data() + offset;
        for (size_t k = 0; k < positions.size(); k += kSampleStride) {
          const trace::Slice& first_of_stride = slices[positions[k]];
          StrideStarts& every = *inner++;
          every.offset_ns[0] = 0;
          for (size_t e = 1; e < std::size(every.offset_ns); ++e) {
            const size_t position = k + e * StrideStarts::kEvery;
            const int64_t offset_ns = position < positions.size()
                                          ? slices[positions[position]].start_ns - first_of_stride.start_ns
                                          : int64_t{StrideStarts::kUnknown};
            every.offset_ns[e] = static_cast<uint32_t>(std::min<int64_t>(offset_ns, StrideStarts::kUnknown));
          }
          *starts++ = first_of_stride.start_ns;
          *ends++ = StrideEnds{first_of_stride.end_ns(),
                               slices[positions[std::min(positions.size(), k + kSampleStride) - 1]].end_ns()};
        }
      }
    }
  });
  // Time buckets over each level's sampled starts, at most one per sample and 2^16 per level.
  constexpr size_t kMaxBuckets = size_t{1} << 16;
  for (Level& level : levels_) {
    const size_t count = (level.size + kSampleStride - 1) / kSampleStride;
    if (count < 2) continue;
    const int64_t* starts = sampled_starts_.data() + level.samples;
    const size_t buckets = std::min(count, kMaxBuckets);
    level.buckets = static_cast<uint32_t>(bucket_first_sample_.size());
    level.bucket_count = static_cast<uint32_t>(buckets);
    level.bucket_origin_ns = starts[0];
    level.bucket_ns = std::max<int64_t>(1, (starts[count - 1] - starts[0]) / static_cast<int64_t>(buckets) + 1);
    size_t m = 0;
    for (size_t b = 0; b <= buckets; ++b) {
      const int64_t bucket_start = level.bucket_origin_ns + static_cast<int64_t>(b) * level.bucket_ns;
      while (m < count && starts[m] < bucket_start) ++m;
      bucket_first_sample_.push_back(static_cast<uint32_t>(m));
    }
  }
}

std::pair<size_t, size_t> TimelineIndex::SampleBracket(uint32_t track, int depth, double bound_ns) const {
  const Level& l = levels_[track_level_[track] + static_cast<uint32_t>(depth)];
  const size_t count = (l.size + kSampleStride - 1) / kSampleStride;
  if (l.bucket_count == 0) return {0, count};
  const double bucket = std::floor((bound_ns - static_cast<double>(l.bucket_origin_ns)) / static_cast<double>(l.bucket_ns));
  if (bucket < 0) return {0, 0};
  if (bucket >= l.bucket_count) return {count, count};
  const uint32_t* table = bucket_first_sample_.data() + l.buckets + static_cast<size_t>(bucket);
  return {table[0], table[1]};
}

LevelSlices TimelineIndex::level(uint32_t track, int depth) const {
  const Level& l = levels_[track_level_[track] + static_cast<uint32_t>(depth)];
  if (l.places < 0) return LevelSlices(nullptr, nullptr, l.first_slice, l.size);
  const auto entry = static_cast<size_t>(l.places);
  return l.wide ? LevelSlices(nullptr, wide_.get() + entry, l.first_slice, l.size)
                : LevelSlices(narrow_.get() + 3 * entry, nullptr, l.first_slice, l.size);
}

std::span<const int64_t> TimelineIndex::sampled_starts(uint32_t track, int depth) const {
  const Level& l = levels_[track_level_[track] + static_cast<uint32_t>(depth)];
  return {sampled_starts_.data() + l.samples, (l.size + kSampleStride - 1) / kSampleStride};
}

std::span<const StrideEnds> TimelineIndex::stride_ends(uint32_t track, int depth) const {
  const Level& l = levels_[track_level_[track] + static_cast<uint32_t>(depth)];
  return {stride_ends_.data() + l.samples, (l.size + kSampleStride - 1) / kSampleStride};
}

std::span<const StrideStarts> TimelineIndex::stride_starts(uint32_t track, int depth) const {
  const Level& l = levels_[track_level_[track] + static_cast<uint32_t>(depth)];
  return {stride_starts_.data() + l.samples, (l.size + kSampleStride - 1) / kSampleStride};
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
  return narrow_bytes_ + wide_size_ * sizeof(uint32_t) + track_level_.capacity() * sizeof(uint32_t) +
         levels_.capacity() * sizeof(Level) + sampled_starts_.capacity() * sizeof(int64_t) +
         stride_ends_.capacity() * sizeof(StrideEnds) + stride_starts_.capacity() * sizeof(StrideStarts) +
         bucket_first_sample_.capacity() * sizeof(uint32_t);
}

namespace {

// The first position in (from, end) of `slices` whose slice starts at or after `bound_ns`
// (`end` when none does). Gallops a few steps in the level itself (a fold is often short), then
// over the sampled starts, which sit side by side, and ends with a binary search within one
// sample stride: a handful of cache misses however long the fold is.
//
// With `snap_ns` > 0 the answer may be rounded up to the next sampled position when the stride
// it lies in spans less than snap_ns: the slices of a stride sit between its sample and the next
// (a level's slices are disjoint), so all of them are shorter than snap_ns and the fold that
// takes them in grows by less than snap_ns. Deeply zoomed-out frames skip the last search.
size_t FirstStartingAtOrAfter(const TimelineIndex& index, uint32_t track, int depth, size_t from, size_t end,
                              double bound_ns, double snap_ns = 0) {
  const LevelSlices slices = index.level(track, depth);
  const auto& all = index.trace().slices();
  auto before = [&](size_t k) { return static_cast<double>(all[slices[k]].start_ns) < bound_ns; };
  constexpr size_t kStride = TimelineIndex::kSampleStride;
  constexpr size_t kGallop = kStride / 8;
  const auto samples = index.sampled_starts(track, depth);
  size_t below = from;  // the last position known to start before the bound
  // When the sample at or after from + kGallop starts before the bound, so do all the positions
  // the gallop would probe: it ends where it would have, without reading a slice.
  const size_t next_sample = (from + kGallop + kStride - 1) / kStride;
  if (from + kGallop < end && next_sample < samples.size() &&
      static_cast<double>(samples[next_sample]) < bound_ns) {
    below = from + kGallop;
  } else {
    for (size_t step = 1; step <= kGallop; step *= 2) {
      const size_t probe = from + step;
      if (probe >= end) return FirstNotBefore(below + 1, end, before);
      if (!before(probe)) return FirstNotBefore(below + 1, probe, before);
      below = probe;
    }
  }
  // Sample m holds the start of position m * kStride: find the first sample at or after the
  // bound beyond `below` (within the bucket table's bracket, else galloping), then the position
  // within the stride before it.
  const size_t sample_end = (end + kStride - 1) / kStride;  // samples of positions < end
  auto sample_before = [&](size_t m) { return static_cast<double>(samples[m]) < bound_ns; };
  size_t known = below / kStride;  // a sample at or before `below`: starts before the bound
  const auto [bracket_lo, bracket_hi] = index.SampleBracket(track, depth, bound_ns);
  const size_t hi_m = std::min(bracket_hi, sample_end);
  const size_t lo_m = std::min(std::max(known + 1, bracket_lo), hi_m);
  size_t lo = FirstNotBefore(lo_m, hi_m, sample_before);
  // The bracket rests on arithmetic in doubles: the answer is checked, and searched for again
  // by galloping when a rounding put it outside.
  const bool settled = lo >= known + 1 && (lo == known + 1 || sample_before(lo - 1)) &&
                       (lo == sample_end || !sample_before(lo));
  if (!settled) lo = GallopFirstNotBefore(known + 1, sample_end, sample_before);
  // Sample lo is the first at or after the bound (or past the end): the answer lies in
  // (known * kStride, lo * kStride], where `known` is the last sample before the bound.
  known = lo - 1;
  if (lo < sample_end && lo * kStride <= end && static_cast<double>(samples[lo] - samples[known]) < snap_ns) {
    return lo * kStride;
  }
  // Within the stride: narrowed to 8 positions by its every 8th start, then searched.
  size_t first = std::max(below + 1, known * kStride + 1), last = std::min(lo * kStride, end);
  const StrideStarts& every = index.stride_starts(track, depth)[known];
  for (size_t e = 1; e < std::size(every.offset_ns) && every.offset_ns[e] != StrideStarts::kUnknown; ++e) {
    const size_t position = known * kStride + e * StrideStarts::kEvery;
    if (position >= last) break;
    if (position < first) continue;
    if (static_cast<double>(samples[known] + every.offset_ns[e]) >= bound_ns) {
      last = position;
      break;
    }
    first = position + 1;
  }
  return FirstNotBefore(first, last, before);
}

}  // namespace

size_t CollectBoxes(const TimelineIndex& index, uint32_t track, int depth,
                    const TimeMapping& mapping, std::vector<DrawBox>* out, double min_px) {
  const LevelSlices slices = index.level(track, depth);
  const auto& all = index.trace().slices();
  constexpr size_t kStride = TimelineIndex::kSampleStride;
  const auto samples = index.sampled_starts(track, depth);
  const auto stride_ends = index.stride_ends(track, depth);
  auto [i, end] = index.VisibleRange(track, depth, mapping.begin_ns(), mapping.end_ns());
  const double ns_per_px = mapping.ns_per_px();
  const double min_ns = min_px * ns_per_px;
  size_t covered = 0;
  while (i < end) {
    // Where position i starts and ends: a sampled position (where a wide view's folds start) from
    // the sampled tables, any other from its slice.
    int64_t start_ns = 0, end_ns = 0;
    if (i % kStride == 0) {
      start_ns = samples[i / kStride];
      end_ns = stride_ends[i / kStride].first_end_ns;
    } else {
      const trace::Slice& s = all[slices[i]];
      start_ns = s.start_ns;
      end_ns = s.end_ns();
    }
    const double x0 = mapping.NsToPx(static_cast<double>(start_ns));
    if (static_cast<double>(end_ns - start_ns) >= min_ns) {
      out->push_back(DrawBox{static_cast<float>(x0), static_cast<float>(mapping.NsToPx(static_cast<double>(end_ns))),
                             slices[i], 1});
      ++i;
      ++covered;
      continue;
    }
    // A narrow slice: fold it with every following slice that starts within min_px of it.
    // Snapped to a sample when its stride spans under an eighth of a pixel: invisible.
    size_t j = FirstStartingAtOrAfter(index, track, depth, i, end, static_cast<double>(start_ns) + min_ns,
                                      min_ns / 8);
    // The last of the run may be a wide slice: it gets its own box. A run ending with a stride
    // (a snapped fold) knows its last slice's end, and that the slice is no longer than its
    // stride from the stride's first start: most often too short to be wide, read from no slice.
    int64_t run_end_ns = end_ns;  // a run of one slice ends with it
    if (j - 1 > i) {
      const StrideEnds* last_stride = j % kStride == 0 ? &stride_ends[j / kStride - 1] : nullptr;
      if (last_stride != nullptr && static_cast<double>(last_stride->last_end_ns - samples[j / kStride - 1]) < min_ns) {
        run_end_ns = last_stride->last_end_ns;
      } else {
        if (static_cast<double>(all[slices[j - 1]].dur_ns) >= min_ns) --j;
        run_end_ns = all[slices[j - 1]].end_ns();
      }
    }
    const double run_end_px = mapping.NsToPx(static_cast<double>(run_end_ns));
    out->push_back(DrawBox{static_cast<float>(x0), static_cast<float>(std::max(run_end_px, x0 + min_px)),
                           slices[i], static_cast<uint32_t>(j - i)});
    covered += j - i;
    i = j;
  }
  return covered;
}

}  // namespace stepscope::viewer
