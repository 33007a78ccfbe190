// Small helpers the GPU analyses share (gpu_analyses.cc, stragglers.cc): which lanes hold GPU
// work, and which runtime call launched each slice.
#pragma once

#include <cstdint>
#include <vector>

#include "profiler/trace/trace.h"

namespace stepscope::analysis {

// GPU lanes as the summary takes them: streams, and TensorFlow's aggregate lanes (whose repeats
// are flagged duplicate and skipped slice by slice, so a trace with only aggregates still counts).
inline bool IsGpuLane(trace::TrackKind kind) {
  return kind == trace::TrackKind::kGpuStream || kind == trace::TrackKind::kGpuAllStreams ||
         kind == trace::TrackKind::kGpuMemcpy;
}

// A GPU lane of a GPU: TensorFlow's and our CPU devices have a /memcpy lane too, whose copies are
// the host's (a device track named CPU is no GPU).
inline bool IsGpuDeviceLane(const trace::Trace& trace, uint32_t track) {
  if (!IsGpuLane(trace.tracks()[track].kind)) return false;
  const int32_t device = trace.DeviceOf(track);
  return device < 0 || trace.str(trace.tracks()[static_cast<size_t>(device)].name).find("CPU") == std::string_view::npos;
}

// The runtime call that launched each slice (launch flows), -1 where none.
inline std::vector<int64_t> LaunchOf(const trace::Trace& trace) {
  std::vector<int64_t> launch(trace.slices().size(), -1);
  for (const trace::Flow& flow : trace.flows()) {
    if (flow.kind == trace::FlowKind::kLaunch) launch[flow.to_slice] = flow.from_slice;
  }
  return launch;
}

}  // namespace stepscope::analysis
