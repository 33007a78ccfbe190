// Counter tracks of the timeline: values over time drawn under their device's header, so a
// memory spike lines up with the kernels that caused it. Each allocator's bytes in use
// (analysis::ComputeMemoryTimelines), each GPU's utilisation (the union of its streams' work, as
// analysis::ComputeGpuBreakdown counts busy time), each GPU's launch delays (kernel start - runtime
// call end, as analysis::ComputeLaunches) and queue length (work whose call has returned and that
// has not started), and the other counters the trace carries (Kineto/Perfetto/Chrome counter
// events).
//
// A frame asks for one extent per pixel column. Sampled counters keep a min/max pyramid (blocks
// of kFanout samples, then of kFanout blocks, ...), so a column costs O(kFanout * levels) however
// many samples it covers, and utilisation keeps the busy intervals with their running busy time,
// so a column's busy fraction is two binary searches: a frame is O(pixels), not O(samples), at any
// zoom. No Qt: tested on its own.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "profiler/analysis/memory_timeline.h"
#include "profiler/trace/trace.h"
#include "viewer/timeline_data/time_mapping.h"

namespace stepscope::viewer {

// What a pixel column of a counter holds: the lowest and highest value the counter takes in it
// (for a step counter the level carried in from before the column counts). `any` false: no
// sample there (an event counter between events).
struct CounterColumn {
  double low = 0, high = 0;
  bool any = false;
};

// Samples in time order with a min/max pyramid. A step counter holds each value until the next
// sample (0 before the first); an event counter's values are instants (one launch's delay).
class SampledCounter {
 public:
  static constexpr size_t kFanout = 16;
  SampledCounter() = default;
  // `times` sorted ascending, one value each.
  SampledCounter(std::vector<int64_t> times, std::vector<int64_t> values, bool step);

  bool step() const { return step_; }
  size_t size() const { return size_; }
  int64_t time(size_t i) const { return wide_times_.empty() ? block_base_[i / kFanout] + offsets_[i] : wide_times_[i]; }
  int64_t value(size_t i) const { return wide_values_.empty() ? int64_t{narrow_values_[i]} : wide_values_[i]; }
  // Lowest and highest value of the samples [first, last), by the pyramid.
  std::pair<int64_t, int64_t> Extent(size_t first, size_t last) const;
  // What the counter takes in [begin_ns, end_ns): the samples in it and, for a step counter, the
  // level entering it.
  CounterColumn Window(double begin_ns, double end_ns) const;
  // Window for every pixel column of `mapping`: each column's first sample found through the
  // sampled times from the previous column's, so a column costs a few cache lines however many
  // samples it holds.
  void Columns(const TimeMapping& mapping, std::vector<CounterColumn>* out) const;
  // A step counter's level at `time_ns` (0 before the first sample).
  int64_t LevelAt(double time_ns) const;
  size_t bytes() const;

 private:
  // The column [first, last) of samples with the level entering it.
  CounterColumn Column(size_t first, size_t last) const;
  // The first sample in [low, high) at or after t (high when none).
  size_t FirstAtOrAfter(double t, size_t low, size_t high) const;
  // The first sample at or after t (size() when none): the sampled times (every kFanout^2-th,
  // side by side) from `*hint` on, galloping, then one block's base times and one block's offsets,
  // a few cache lines where a search over the samples themselves touched one per probe. `hint`
  // (start at 0) is where the search for an earlier or equal t ended: a frame's columns ask in order.
  size_t FirstAtOrAfterFrom(double t, size_t* hint) const;

  size_t size_ = 0;
  bool step_ = true;
  std::vector<int64_t> block_base_;   // per kFanout samples, the first one's time
  std::vector<uint32_t> offsets_;     // each sample's time after its block's first
  std::vector<int64_t> wide_times_;   // instead, where a block spans more than 2^32 ns
  std::vector<int32_t> narrow_values_;
  std::vector<int64_t> wide_values_;  // instead, where a value does not fit 32 bits
  // The time of every kFanout^2-th sample (1/32 byte a sample): where a column's search starts.
  std::vector<int64_t> sampled_times_;
  // levels_[k]: per block of kFanout^(k+1) samples its (min, max).
  std::vector<std::vector<std::pair<int64_t, int64_t>>> levels_;
};

// Busy intervals (sorted, disjoint) with the busy time before each: the busy fraction of any
// window in two binary searches.
class CoverageCounter {
 public:
  CoverageCounter() = default;
  // Intervals [begin, end) in any order, overlapping or not: merged into their union.
  explicit CoverageCounter(std::vector<std::pair<int64_t, int64_t>> intervals);
  // Busy time within [begin_ns, end_ns).
  double BusyIn(double begin_ns, double end_ns) const;
  // Busy time before t. `hint`: where the search for the previous, earlier or equal t ended
  // (start at 0): a frame's columns ask in order, each search galloping on from the last.
  double BusyUntil(double t, size_t* hint) const;
  int64_t busy_ns() const { return busy_before_.empty() ? 0 : busy_before_.back() + (ends_.back() - begins_.back()); }
  size_t intervals() const { return begins_.size(); }
  size_t bytes() const;

 private:
  std::vector<int64_t> begins_, ends_, busy_before_;
};

struct CounterTrack {
  enum class Kind : uint8_t { kMemory, kUtilization, kLaunchDelay, kQueue, kTraceCounter };
  Kind kind = Kind::kTraceCounter;
  uint32_t track = 0;   // the device (or process) track it is drawn under
  std::string name;     // "GPU_0_bfc", "GPU utilisation", "launch delay", "queue"
  std::string unit;     // "bytes", "%", "ns", "kernels", or the trace counter's own
  std::string origin;   // where the values come from, for the tooltip
  int64_t peak = 0, peak_ns = 0;  // the largest value and the first instant it is reached
  SampledCounter samples;   // every kind but kUtilization
  CoverageCounter busy;     // kUtilization

  // One column per pixel of `mapping` (width rounded up), in the track's unit (utilisation in
  // percent), into `out` (reused between frames).
  void Columns(const TimeMapping& mapping, std::vector<CounterColumn>* out) const;
  // A value as the tooltip and the max label show it ("1.2 GiB", "83 %", "41 us", "3").
  std::string Format(double value) const;
};

class CounterTracks {
 public:
  CounterTracks() = default;
  explicit CounterTracks(std::vector<CounterTrack> tracks) : tracks_(std::move(tracks)) {}
  const std::vector<CounterTrack>& tracks() const { return tracks_; }
  size_t bytes() const;

 private:
  std::vector<CounterTrack> tracks_;
};

// The counter tracks of a trace: memory from `memory` (ComputeMemoryTimelines of the same trace),
// the rest from the trace. In track order, a device's memory first, then utilisation, launch
// delay and queue, then the trace's other counters.
CounterTracks BuildCounterTracks(const trace::Trace& trace, const std::vector<analysis::AllocatorTimeline>& memory);

}  // namespace stepscope::viewer
