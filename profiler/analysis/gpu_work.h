// What the GPU analyses (gpu_analyses.h, gpu_attribution.cc, stragglers.h, critical_path.cc) share: the GPU work of a trace per
// stream, in time order, and the links from that work back to the host (launch flows, the op
// enclosing a runtime call). Internal to profiler/analysis.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "profiler/analysis/gpu_analyses.h"
#include "profiler/trace/trace.h"

namespace stepscope::analysis {

// GPU lanes as the summary takes them (trace::IsGpuLane): streams, and TensorFlow's aggregate
// lanes (whose repeats are flagged duplicate and skipped slice by slice, so a trace with only
// aggregates still counts). A CPU device's /memcpy lane is the host's (kHostMemcpy, on import).
inline bool IsGpuDeviceLane(const trace::Trace& trace, uint32_t track) {
  return trace::IsGpuLane(trace.tracks()[track].kind);
}

// True when `start` lies in one of the input's windows (or the input has none).
bool InWindows(const GpuInput& input, int64_t start);

// One stream's GPU work (kernels, copies, memsets, collectives; never duplicates, annotations or
// sync markers), in time order (longer first at equal starts).
struct StreamWork {
  uint32_t device = 0;  // device (or process) track
  uint32_t lane = 0;    // source lane (the first lane of the stream)
  std::vector<uint32_t> slices;
};
// The GPU work of one input that starts in its windows, by source lane, in track order.
std::vector<StreamWork> CollectWork(const GpuInput& input);

std::string TrackName(const trace::Trace& trace, uint32_t track);

// A 4-byte value for each slice of some of a trace's tracks and none for the others: a table
// that only some lanes need (the launch of GPU work, the annotation in effect on the launching
// threads) costs 4 bytes a slice of those lanes only.
class TrackSliceValues {
 public:
  TrackSliceValues() = default;
  // Room for the slices of the tracks `kept` marks, each value `fill`.
  TrackSliceValues(const trace::Trace& trace, const std::vector<bool>& kept, uint32_t fill);
  // The slice's value; `absent` where its track is not kept.
  uint32_t Get(uint32_t slice, uint32_t absent) const {
    if (values_.empty()) return absent;
    const uint32_t track = trace_->slices()[slice].track;
    return offset_[track] == kNotKept ? absent : values_[offset_[track] + (slice - trace_->track_first_slice(track))];
  }
  // The values of a kept track's slices, in the track's order.
  uint32_t* Of(uint32_t track) { return values_.data() + offset_[track]; }

 private:
  static constexpr uint32_t kNotKept = 0xffffffffu;
  const trace::Trace* trace_ = nullptr;
  std::vector<uint32_t> offset_;  // per track: where its slices start in values_
  std::vector<uint32_t> values_;
};

// The slice that launched each slice (the source of its launch flow: a runtime call, or the
// executor op in our traces), -1 where none. 4 bytes a slice of the tracks that launches reach
// (the GPU streams: a third of a Kineto trace's slices), not of every track.
class LaunchIndex {
 public:
  LaunchIndex() = default;  // knows no launch
  int64_t operator[](size_t slice) const {
    const uint32_t from = from_.Get(static_cast<uint32_t>(slice), kNone);
    return from == kNone ? -1 : int64_t{from};
  }

 private:
  friend LaunchIndex LaunchOf(const trace::Trace& trace);
  static constexpr uint32_t kNone = 0xffffffffu;  // no slice index reaches it (indices are < size)
  TrackSliceValues from_;
};
LaunchIndex LaunchOf(const trace::Trace& trace);

// The innermost op (kind kOp) enclosing a slice on its track, -1 when none.
int64_t EnclosingOp(const trace::Trace& trace, uint32_t slice);
// The op that launched GPU work, given the launching slice: the slice itself when it is an op
// (RunMetadata traces link an op to its kernels; one op launches several), else the op
// enclosing the runtime call (Kineto: aten::mm around cudaLaunchKernel); -1 when none.
int64_t LaunchingOp(const trace::Trace& trace, uint32_t launch);


}  // namespace stepscope::analysis
