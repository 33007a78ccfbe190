// Node times of TensorFlow's step stats in nanoseconds, clamped so that sums and differences of
// times fit: shared by the message import (step_stats_import.cc) and the wire scan
// (step_stats_wire.cc).
#include "profiler/formats/step_stats/step_stats_times.h"

#include <algorithm>

#include "stepscope/tf/run_metadata.pb.h"

namespace stepscope::trace {

namespace {
// Times are kept within ±2^62 ns (±146 years around the epoch) so that any difference or sum of
// two of them fits in int64; a corrupt file's larger values are clamped (and a slice's duration
// counted as repaired where it is built).
constexpr int64_t kTimeLimitNs = int64_t{1} << 62;
}  // namespace

int64_t ClampTimeNs(int64_t ns) { return std::clamp(ns, -kTimeLimitNs, kTimeLimitNs); }

int64_t MicrosToNanos(int64_t micros) {
  constexpr int64_t kLimitMicros = kTimeLimitNs / 1000;
  return std::clamp(micros, -kLimitMicros, kLimitMicros) * 1000;
}

int64_t NodeStartNs(const tf::NodeExecStats& node) {
  return node.all_start_nanos() != 0 ? ClampTimeNs(node.all_start_nanos())
                                     : MicrosToNanos(node.all_start_micros());
}

int64_t NodeDurationNs(const tf::NodeExecStats& node) {
  if (node.all_start_nanos() != 0 || node.all_end_rel_nanos() != 0) {
    return ClampTimeNs(node.all_end_rel_nanos());
  }
  return MicrosToNanos(node.all_end_rel_micros());
}

}  // namespace stepscope::trace
