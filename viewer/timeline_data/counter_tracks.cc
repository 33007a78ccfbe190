// Counter tracks of the timeline (counter_tracks.h): the min/max pyramid and busy-interval
// columns a frame reads, and the tracks built from a trace and its memory timelines.
#include "viewer/timeline_data/counter_tracks.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <numeric>
#include <span>

#include "base/units.h"
#include "profiler/analysis/gpu_work.h"
#include "viewer/timeline_data/index_search.h"

namespace stepscope::viewer {

// ---- SampledCounter ------------------------------------------------------------------------

SampledCounter::SampledCounter(std::vector<int64_t> times, std::vector<int64_t> values, bool step)
    : size_(times.size()), step_(step) {
  // Times as offsets from their block's first (4 bytes a sample) unless a block spans more than
  // 2^32 ns; values in 4 bytes when they all fit. A launch-delay track holds a sample per launch.
  bool narrow_times = true;
  for (size_t b = 0; b < size_; b += kFanout) {
    const size_t end = std::min(size_, b + kFanout);
    narrow_times = narrow_times && times[end - 1] - times[b] <= std::numeric_limits<uint32_t>::max();
  }
  if (narrow_times) {
    block_base_.reserve((size_ + kFanout - 1) / kFanout);
    offsets_.resize(size_);
    for (size_t i = 0; i < size_; ++i) {
      if (i % kFanout == 0) block_base_.push_back(times[i]);
      offsets_[i] = static_cast<uint32_t>(times[i] - block_base_.back());
    }
  } else {
    wide_times_ = std::move(times);
    wide_times_.shrink_to_fit();
  }
  const bool narrow_values = std::all_of(values.begin(), values.end(), [](int64_t v) {
    return v >= std::numeric_limits<int32_t>::min() && v <= std::numeric_limits<int32_t>::max();
  });
  if (narrow_values) {
    narrow_values_.assign(values.begin(), values.end());
  } else {
    wide_values_ = std::move(values);
    wide_values_.shrink_to_fit();
  }
  constexpr size_t kTimeStride = kFanout * kFanout;
  sampled_times_.reserve((size_ + kTimeStride - 1) / kTimeStride);
  for (size_t i = 0; i < size_; i += kTimeStride) sampled_times_.push_back(time(i));
  // Level 0 from the samples, each further level from the one below.
  std::vector<std::pair<int64_t, int64_t>>* below = nullptr;
  while ((below == nullptr ? size_ : below->size()) > kFanout) {
    const size_t count = below == nullptr ? size_ : below->size();
    std::vector<std::pair<int64_t, int64_t>> level((count + kFanout - 1) / kFanout);
    for (size_t b = 0; b < level.size(); ++b) {
      int64_t low = std::numeric_limits<int64_t>::max(), high = std::numeric_limits<int64_t>::min();
      for (size_t i = b * kFanout; i < std::min(count, (b + 1) * kFanout); ++i) {
        const auto [l, h] = below == nullptr ? std::pair{value(i), value(i)} : (*below)[i];
        low = std::min(low, l);
        high = std::max(high, h);
      }
      level[b] = {low, high};
    }
    levels_.push_back(std::move(level));
    below = &levels_.back();
  }
}

size_t SampledCounter::FirstAtOrAfter(double t, size_t low, size_t high) const {
  return FirstNotBefore(low, high, [&](size_t i) { return static_cast<double>(time(i)) < t; });
}

size_t SampledCounter::FirstAtOrAfterFrom(double t, size_t* hint) const {
  constexpr size_t kTimeStride = kFanout * kFanout;
  auto sampled_before = [&](size_t m) { return static_cast<double>(sampled_times_[m]) < t; };
  // The first sampled time at or after t, galloping on from the hint.
  const size_t low = GallopFirstNotBefore(std::min(*hint, sampled_times_.size()),
                                          sampled_times_.size(), sampled_before);
  // Sampled time `low` is at or after t and the one before it is not: the answer lies in
  // ((low - 1) * kTimeStride, low * kTimeStride].
  *hint = low == 0 ? 0 : low - 1;
  if (low == 0) return 0;
  const size_t from = (low - 1) * kTimeStride + 1, to = std::min(size_, low * kTimeStride);
  if (!wide_times_.empty()) return FirstAtOrAfter(t, from, to);
  // The first block base at or after t among the kFanout blocks of that stretch, then the offsets
  // of the block before it.
  size_t block = (from - 1) / kFanout + 1;
  const size_t block_end = (to + kFanout - 1) / kFanout;
  while (block < block_end && static_cast<double>(block_base_[block]) < t) ++block;
  return FirstAtOrAfter(t, std::max(from, (block - 1) * kFanout + 1), std::min(to, block * kFanout));
}

std::pair<int64_t, int64_t> SampledCounter::Extent(size_t first, size_t last) const {
  int64_t low = std::numeric_limits<int64_t>::max(), high = std::numeric_limits<int64_t>::min();
  // Units of `width` samples at level `level` (-1: the samples). At each level only the partial
  // blocks at both ends are read one by one; whole blocks go up a level.
  // Each kind of unit in a loop of its own: a frame's columns spend their time here.
  auto scan = [&](int level, size_t width, size_t from, size_t to) {
    const size_t first_unit = from / width, end_unit = to / width;
    if (level >= 0) {
      for (const auto& [l, h] : std::span(levels_[static_cast<size_t>(level)]).subspan(first_unit, end_unit - first_unit)) {
        low = std::min(low, l);
        high = std::max(high, h);
      }
    } else if (!narrow_values_.empty()) {
      int32_t narrow_low = std::numeric_limits<int32_t>::max(), narrow_high = std::numeric_limits<int32_t>::min();
      for (const int32_t v : std::span(narrow_values_).subspan(first_unit, end_unit - first_unit)) {
        narrow_low = std::min(narrow_low, v);
        narrow_high = std::max(narrow_high, v);
      }
      if (end_unit > first_unit) {
        low = std::min<int64_t>(low, narrow_low);
        high = std::max<int64_t>(high, narrow_high);
      }
    } else {
      for (const int64_t v : std::span(wide_values_).subspan(first_unit, end_unit - first_unit)) {
        low = std::min(low, v);
        high = std::max(high, v);
      }
    }
  };
  int level = -1;
  size_t width = 1;
  while (first < last) {
    const size_t next = width * kFanout;
    const size_t a = (first + next - 1) / next * next, b = last / next * next;
    if (static_cast<size_t>(level + 1) >= levels_.size() || a >= b) {
      scan(level, width, first, last);
      break;
    }
    scan(level, width, first, a);
    scan(level, width, b, last);
    first = a;
    last = b;
    width = next;
    ++level;
  }
  return {low, high};
}

CounterColumn SampledCounter::Column(size_t first, size_t last) const {
  CounterColumn column;
  if (step_) {
    const int64_t carried = first == 0 ? 0 : value(first - 1);
    column = {static_cast<double>(carried), static_cast<double>(carried), true};
  }
  if (last > first) {
    const auto [low, high] = Extent(first, last);
    column.low = column.any ? std::min(column.low, static_cast<double>(low)) : static_cast<double>(low);
    column.high = column.any ? std::max(column.high, static_cast<double>(high)) : static_cast<double>(high);
    column.any = true;
  }
  return column;
}

CounterColumn SampledCounter::Window(double begin_ns, double end_ns) const {
  size_t hint = 0;
  const size_t first = FirstAtOrAfterFrom(begin_ns, &hint);
  return Column(first, std::max(first, FirstAtOrAfterFrom(end_ns, &hint)));
}

void SampledCounter::Columns(const TimeMapping& mapping, std::vector<CounterColumn>* out) const {
  const size_t columns = static_cast<size_t>(std::ceil(mapping.width_px()));
  out->resize(columns);
  size_t hint = 0;
  size_t first = FirstAtOrAfterFrom(mapping.PxToNs(0), &hint);
  for (size_t c = 0; c < columns; ++c) {
    const double end = mapping.PxToNs(static_cast<double>(c + 1));
    // Zoomed in, a column holds a few samples: step over them. Past a few, search.
    size_t last = first;
    while (last < size_ && last < first + kFanout / 2 && static_cast<double>(time(last)) < end) ++last;
    if (last == first + kFanout / 2 && last < size_ && static_cast<double>(time(last)) < end) {
      last = FirstAtOrAfterFrom(end, &hint);
    }
    (*out)[c] = Column(first, last);
    first = last;
  }
}

int64_t SampledCounter::LevelAt(double time_ns) const {
  // The last sample at or before time_ns.
  size_t low = 0, high = size_;
  while (low < high) {
    const size_t mid = low + (high - low) / 2;
    if (static_cast<double>(time(mid)) <= time_ns) {
      low = mid + 1;
    } else {
      high = mid;
    }
  }
  return low == 0 ? 0 : value(low - 1);
}

size_t SampledCounter::bytes() const {
  size_t total = block_base_.capacity() * sizeof(int64_t) + offsets_.capacity() * sizeof(uint32_t) +
                 wide_times_.capacity() * sizeof(int64_t) + narrow_values_.capacity() * sizeof(int32_t) +
                 wide_values_.capacity() * sizeof(int64_t) + sampled_times_.capacity() * sizeof(int64_t);
  for (const auto& level : levels_) total += level.capacity() * sizeof(level[0]);
  return total;
}

// ---- CoverageCounter -----------------------------------------------------------------------

CoverageCounter::CoverageCounter(std::vector<std::pair<int64_t, int64_t>> intervals) {
  std::sort(intervals.begin(), intervals.end());
  int64_t busy = 0;
  for (const auto& [begin, end] : intervals) {
    if (end <= begin) continue;
    if (!ends_.empty() && begin <= ends_.back()) {
      if (end > ends_.back()) ends_.back() = end;
      continue;
    }
    if (!ends_.empty()) busy += ends_.back() - begins_.back();
    begins_.push_back(begin);
    ends_.push_back(end);
    busy_before_.push_back(busy);
  }
}

double CoverageCounter::BusyUntil(double t, size_t* hint) const {
  // The intervals starting at or before t, the last one cut at t. Galloping from the hint: the
  // next column's boundary is a few intervals on when zoomed in, not a search over millions.
  auto starts_by = [t](int64_t b) { return static_cast<double>(b) <= t; };
  size_t low = std::min(*hint, begins_.size()), step = 1, high = low;
  while (high < begins_.size() && starts_by(begins_[high])) {
    low = high + 1;
    high = std::min(begins_.size(), high + step);
    step *= 2;
  }
  const size_t k = static_cast<size_t>(
      std::partition_point(begins_.begin() + static_cast<ptrdiff_t>(low),
                           begins_.begin() + static_cast<ptrdiff_t>(std::max(low, high)), starts_by) -
      begins_.begin());
  *hint = k;
  if (k == 0) return 0.0;
  const size_t j = k - 1;
  return static_cast<double>(busy_before_[j]) + std::min(t, static_cast<double>(ends_[j])) -
         static_cast<double>(begins_[j]);
}

double CoverageCounter::BusyIn(double begin_ns, double end_ns) const {
  if (end_ns <= begin_ns) return 0.0;
  size_t hint = 0;
  const double before = BusyUntil(begin_ns, &hint);
  return BusyUntil(end_ns, &hint) - before;
}

size_t CoverageCounter::bytes() const {
  return (begins_.capacity() + ends_.capacity() + busy_before_.capacity()) * sizeof(int64_t);
}

// ---- CounterTrack --------------------------------------------------------------------------

void CounterTrack::Columns(const TimeMapping& mapping, std::vector<CounterColumn>* out) const {
  if (kind != Kind::kUtilization) return samples.Columns(mapping, out);
  const size_t columns = static_cast<size_t>(std::ceil(mapping.width_px()));
  out->resize(columns);
  // Each boundary searched once, in order: a column's end is the next one's begin.
  size_t hint = 0;
  double begin = mapping.PxToNs(0);
  double busy_before = busy.BusyUntil(begin, &hint);
  for (size_t c = 0; c < columns; ++c) {
    const double end = mapping.PxToNs(static_cast<double>(c + 1));
    const double busy_by_end = busy.BusyUntil(end, &hint);
    const double percent = end > begin ? 100.0 * (busy_by_end - busy_before) / (end - begin) : 0.0;
    (*out)[c] = {percent, percent, true};
    begin = end;
    busy_before = busy_by_end;
  }
}

std::string CounterTrack::Format(double value) const {
  char text[64];
  if (unit == "bytes") return FormatBytes(static_cast<int64_t>(std::llround(value)));
  if (unit == "ns") return FormatDurationSignificant(value);
  if (unit == "%") {
    std::snprintf(text, sizeof text, "%.0f %%", value);
  } else if (unit.empty()) {
    std::snprintf(text, sizeof text, "%.6g", value);
  } else {
    std::snprintf(text, sizeof text, "%.6g %s", value, unit.c_str());
  }
  return text;
}

size_t CounterTracks::bytes() const {
  size_t total = tracks_.capacity() * sizeof(CounterTrack);
  for (const CounterTrack& t : tracks_) total += t.samples.bytes() + t.busy.bytes();
  return total;
}

// ---- building ------------------------------------------------------------------------------
namespace {

// The largest value of a sampled track and the first instant it is reached.
void SetPeak(CounterTrack& track) {
  const SampledCounter& samples = track.samples;
  if (samples.size() == 0) return;
  size_t at = 0;
  for (size_t i = 1; i < samples.size(); ++i) {
    if (samples.value(i) > samples.value(at)) at = i;
  }
  track.peak = samples.value(at);
  track.peak_ns = samples.time(at);
}

uint32_t OwnerTrack(const trace::Trace& trace, int32_t track) {
  if (track >= 0 && static_cast<size_t>(track) < trace.tracks().size()) return static_cast<uint32_t>(track);
  return 0;  // a counter of no particular track: under the first
}

// Per GPU (device track): utilisation, launch delays and queue length, from the work CollectWork
// takes and the launches LaunchOf links, as the GPU analyses count them.
void AddGpuTracks(const trace::Trace& trace, std::vector<CounterTrack>* out) {
  const std::vector<analysis::StreamWork> work = analysis::CollectWork({&trace, {}});
  if (work.empty()) return;
  const analysis::LaunchIndex launch = analysis::LaunchOf(trace);
  std::map<uint32_t, std::vector<const analysis::StreamWork*>> by_device;
  for (const analysis::StreamWork& w : work) by_device[w.device].push_back(&w);
  const auto& slices = trace.slices();
  for (const auto& [device, streams] : by_device) {
    std::vector<std::pair<int64_t, int64_t>> busy;
    std::vector<std::pair<int64_t, int64_t>> delays;  // (work start, delay)
    std::vector<std::pair<int64_t, int>> queue;       // (time, +1 at the call's end / -1 at the start)
    for (const analysis::StreamWork* w : streams) {
      for (uint32_t i : w->slices) {
        const trace::Slice& s = slices[i];
        busy.emplace_back(s.start_ns, s.end_ns());
        const int64_t r = launch[i];
        if (r < 0) continue;
        const int64_t call_end = slices[static_cast<size_t>(r)].end_ns();
        delays.emplace_back(s.start_ns, s.start_ns - call_end);
        // Work that started before its call returned never waited in the queue.
        if (s.start_ns > call_end) {
          queue.emplace_back(call_end, +1);
          queue.emplace_back(s.start_ns, -1);
        }
      }
    }
    CounterTrack util;
    util.kind = CounterTrack::Kind::kUtilization;
    util.track = device;
    util.name = "GPU utilisation";
    util.unit = "%";
    util.origin = "the union of its streams' kernels, copies, memsets and collectives per pixel";
    util.busy = CoverageCounter(std::move(busy));
    util.peak = util.busy.busy_ns() > 0 ? 100 : 0;
    out->push_back(std::move(util));
    if (delays.empty()) continue;
    std::stable_sort(delays.begin(), delays.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    CounterTrack delay;
    delay.kind = CounterTrack::Kind::kLaunchDelay;
    delay.track = device;
    delay.name = "launch delay";
    delay.unit = "ns";
    delay.origin = "each kernel's start - its runtime call's end; the largest per pixel";
    std::vector<int64_t> times(delays.size()), values(delays.size());
    for (size_t k = 0; k < delays.size(); ++k) std::tie(times[k], values[k]) = delays[k];
    delay.samples = SampledCounter(std::move(times), std::move(values), /*step=*/false);
    SetPeak(delay);
    out->push_back(std::move(delay));
    // Frees before arrivals at one instant: a kernel starting as the next call returns does not
    // count the two as queued together.
    std::sort(queue.begin(), queue.end());
    CounterTrack length;
    length.kind = CounterTrack::Kind::kQueue;
    length.track = device;
    length.name = "queue";
    length.unit = "kernels";
    length.origin = "work whose launch call has returned and that has not started";
    std::vector<int64_t> queue_times, queue_values;
    int64_t level = 0;
    for (size_t k = 0; k < queue.size(); ++k) {
      level += queue[k].second;
      if (k + 1 < queue.size() && queue[k + 1].first == queue[k].first) continue;  // one point per instant
      queue_times.push_back(queue[k].first);
      queue_values.push_back(level);
    }
    length.samples = SampledCounter(std::move(queue_times), std::move(queue_values), /*step=*/true);
    SetPeak(length);
    out->push_back(std::move(length));
  }
}

}  // namespace

CounterTracks BuildCounterTracks(const trace::Trace& trace, const std::vector<analysis::AllocatorTimeline>& memory) {
  std::vector<CounterTrack> tracks;
  if (trace.tracks().empty()) return CounterTracks();
  for (const analysis::AllocatorTimeline& timeline : memory) {
    CounterTrack track;
    track.kind = CounterTrack::Kind::kMemory;
    track.track = OwnerTrack(trace, timeline.device_track);
    track.name = timeline.allocator;
    track.unit = "bytes";
    track.origin = analysis::DescribeCurveSources(timeline.origin);
    std::vector<int64_t> times(timeline.curve.size()), values(timeline.curve.size());
    for (size_t k = 0; k < timeline.curve.size(); ++k) {
      times[k] = timeline.curve[k].time_ns;
      values[k] = timeline.curve[k].bytes;
    }
    track.samples = SampledCounter(std::move(times), std::move(values), /*step=*/true);
    track.peak = timeline.peak_bytes;
    track.peak_ns = timeline.peak_ns;
    tracks.push_back(std::move(track));
  }
  AddGpuTracks(trace, &tracks);
  // The trace's other counters: every one in bytes is an allocator's, a memory track already
  // (ComputeMemoryTimelines takes them all).
  for (const trace::CounterSeries& series : trace.counters()) {
    const std::string name(trace.str(series.name));
    if (series.ts_ns.empty() || series.unit == "bytes") continue;
    std::vector<size_t> order(series.ts_ns.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return series.ts_ns[a] < series.ts_ns[b]; });
    std::vector<int64_t> times, values;
    for (size_t k : order) {
      if (!times.empty() && times.back() == series.ts_ns[k]) {
        values.back() = series.values[k];  // one point per instant: the last recorded
        continue;
      }
      times.push_back(series.ts_ns[k]);
      values.push_back(series.values[k]);
    }
    CounterTrack track;
    track.kind = CounterTrack::Kind::kTraceCounter;
    track.track = OwnerTrack(trace, series.track);
    track.name = name;
    track.unit = series.unit;
    track.origin = series.origin;
    track.samples = SampledCounter(std::move(times), std::move(values), /*step=*/true);
    SetPeak(track);
    tracks.push_back(std::move(track));
  }
  return CounterTracks(std::move(tracks));
}

}  // namespace stepscope::viewer
