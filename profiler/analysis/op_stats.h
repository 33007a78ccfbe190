// Per-op-type and per-node statistics over a trace or a window of it: count, total and self time,
// min/max/mean/p50/p95, share of the window. Shared by `stepscope ops` and the viewer's
// statistics pane (which passes the visible window and the selected tracks).
//
// What is counted: every slice that is not an aggregate duplicate (TensorFlow's /stream:all and
// /memcpy repeats), clipped to the window, except annotations and sync markers (listed apart in
// `annotations`: spans that only enclose other work are not ops). A zero-length slice counts when
// its start lies in the window. Self time is the clipped duration minus the parts of the slices
// nested directly inside it on the same lane (its overlap lanes included, so a child that
// overhangs its parent's end takes away only the part inside it); Kineto CPU ops call each other;
// executor ops and kernels never nest, so there self == total.
// Rows are keyed by (name, where): the same op type as an executor op on the host and as a kernel
// on a GPU stream are different resources and get different rows.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "profiler/trace/trace.h"

namespace stepscope::analysis {

// Finds the slices of a track that can overlap a time window without walking the track from its
// start, for many windows over one trace (a statistic per step of a trace of thousands of steps).
// Per track, the few longest slices (a profiler span over the whole trace) are listed apart; every
// other slice is at most `bound` long, so those overlapping [begin, end] start in
// [begin - bound, end]: a binary search on the track's start-sorted slices.
class SliceWindows {
 public:
  explicit SliceWindows(const trace::Trace& trace);
  // Appends, in the track's order, the indices of its slices that can overlap [begin, end]: all
  // that do, and some that end before `begin`.
  void Collect(uint32_t track, int64_t begin, int64_t end, std::vector<uint32_t>& out) const;

 private:
  struct Track {
    int64_t bound_ns = 0;              // the longest duration of the slices not listed apart
    std::vector<uint32_t> long_slices;  // trace indices, in the track's order
  };
  const trace::Trace& trace_;
  std::vector<Track> tracks_;
};

struct OpStatsOptions {
  int64_t begin_ns = std::numeric_limits<int64_t>::min();  // window in trace time (Trace's ns)
  int64_t end_ns = std::numeric_limits<int64_t>::max();    // slices are clipped to the window
  // Empty: every track. A host or device track stands for all the tracks below it.
  std::vector<uint32_t> tracks;
  // For many windows over the same trace: built once, it makes a window cost its own slices
  // rather than the trace's (null: each track is walked from its start).
  const SliceWindows* windows = nullptr;
};

struct OpStatsRow {
  std::string name;       // op type (by_op_type) or node name (by_node)
  std::string op_type;
  std::string where;      // "host" (executor ops, CPU ops, runtime calls) or "device" (GPU lanes)
  std::string kind;       // slice kind of the first slice seen: op, kernel, memcpy, collective, ...
  int64_t count = 0, total_ns = 0, self_ns = 0, min_ns = 0, max_ns = 0;
  double mean_ns = 0, p50_ns = 0, p95_ns = 0;  // percentiles interpolate linearly between ranks
  double share = 0;       // total_ns / window_ns
  uint32_t longest_slice = 0;  // slice index to jump to (the longest clipped slice)

  bool operator==(const OpStatsRow&) const = default;
};

struct OpStats {
  std::vector<OpStatsRow> by_op_type, by_node;  // sorted by total_ns descending, then name
  // Annotations (the profiler's own span, ProfilerStep#N, user annotations on the host or a GPU
  // stream) and sync markers, by name: not ops, so in no other row, total or self time.
  std::vector<OpStatsRow> annotations;
  int64_t window_ns = 0;   // the window clipped to the trace span
  int64_t window_begin_ns = 0;
  int64_t slices = 0;      // slices counted
  // Summed total_ns per side: every thread's and stream's op time, nesting levels each counted
  // (a Kineto op's children again), so it can be many windows long.
  int64_t host_total_ns = 0, device_total_ns = 0;
  // Busy per side: the time in the window when at least one of the side's selected lanes runs a
  // counted slice (the union over lanes and nesting levels): never more than window_ns.
  int64_t host_busy_ns = 0, device_busy_ns = 0;
};

OpStats ComputeOpStats(const trace::Trace& trace, const OpStatsOptions& options = {});

// "host" or "device" for a track (GPU stream, /stream:all and /memcpy lanes are the device).
const char* WhereOfTrack(const trace::Trace& trace, uint32_t track);

// Linear-interpolated percentile (0..1) of a sorted vector; 0 for an empty one.
double Percentile(const std::vector<int64_t>& sorted, double fraction);

}  // namespace stepscope::analysis
