// The GPU work of a trace per stream and its links back to the host (gpu_work.h).
#include "profiler/analysis/gpu_work.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "profiler/analysis/breakdowns.h"
#include "profiler/analysis/statistics.h"

namespace stepscope::analysis {

using trace::Slice;
using trace::SliceKind;
using trace::Trace;

bool InWindows(const GpuInput& input, int64_t start) {
  if (input.windows.empty()) return true;
  for (const auto& [begin, end] : input.windows) {
    if (start >= begin && start < end) return true;
  }
  return false;
}

// The GPU work of one input by source lane, in track order.
std::vector<StreamWork> CollectWork(const GpuInput& input) {
  const Trace& trace = *input.trace;
  const std::vector<uint32_t> source_lane = SourceLanes(trace);
  std::map<uint32_t, StreamWork> by_lane;
  for (uint32_t t = 0; t < trace.tracks().size(); ++t) {
    if (!IsGpuDeviceLane(trace, t)) continue;
    const uint32_t first = trace.track_first_slice(t);
    const auto lane = trace.track_slices(t);
    for (uint32_t k = 0; k < lane.size(); ++k) {
      const Slice& s = lane[k];
      if (s.duplicate() || !trace::IsDeviceWork(s.kind) || !InWindows(input, s.start_ns)) continue;
      StreamWork& work = by_lane[source_lane[t]];
      if (work.slices.empty()) {
        const int32_t device = trace.DeviceOf(t);
        work.device = static_cast<uint32_t>(device >= 0 ? device : trace.HostOf(t));
        work.lane = source_lane[t];
      }
      work.slices.push_back(first + k);
    }
  }
  std::vector<StreamWork> out;
  for (auto& [lane, work] : by_lane) {
    std::sort(work.slices.begin(), work.slices.end(), [&](uint32_t a, uint32_t b) {
      const Slice& x = trace.slices()[a];
      const Slice& y = trace.slices()[b];
      return std::tie(x.start_ns, y.dur_ns, a) < std::tie(y.start_ns, x.dur_ns, b);
    });
    out.push_back(std::move(work));
  }
  return out;
}

std::string TrackName(const Trace& trace, uint32_t track) { return std::string(trace.str(trace.tracks()[track].name)); }

TrackSliceValues::TrackSliceValues(const Trace& trace, const std::vector<bool>& kept, uint32_t fill)
    : trace_(&trace), offset_(trace.tracks().size(), kNotKept) {
  size_t size = 0;
  for (uint32_t t = 0; t < offset_.size(); ++t) {
    if (!kept[t]) continue;
    offset_[t] = static_cast<uint32_t>(size);
    size += trace.track_slices(t).size();
  }
  values_.assign(size, fill);
}

// The runtime call that launched each slice (launch flows), -1 where none.
LaunchIndex LaunchOf(const Trace& trace) {
  std::vector<bool> reached(trace.tracks().size(), false);
  for (const trace::Flow& flow : trace.flows()) {
    if (flow.kind == trace::FlowKind::kLaunch) reached[trace.slices()[flow.to_slice].track] = true;
  }
  LaunchIndex launch;
  launch.from_ = TrackSliceValues(trace, reached, LaunchIndex::kNone);
  for (const trace::Flow& flow : trace.flows()) {
    if (flow.kind != trace::FlowKind::kLaunch) continue;
    const uint32_t track = trace.slices()[flow.to_slice].track;
    launch.from_.Of(track)[flow.to_slice - trace.track_first_slice(track)] = flow.from_slice;
  }
  return launch;
}

LaunchLinks CountLaunchLinks(const std::vector<GpuInput>& inputs) {
  LaunchLinks links;
  for (const GpuInput& input : inputs) {
    const LaunchIndex launch = LaunchOf(*input.trace);
    for (const StreamWork& w : CollectWork(input)) {
      links.work += static_cast<int64_t>(w.slices.size());
      for (uint32_t i : w.slices) links.linked += launch[i] >= 0 ? 1 : 0;
    }
  }
  return links;
}

// The innermost op (not an annotation) enclosing a slice on its track, -1 when none. Slices of a
// track nest and are sorted by start (longer first), so the parent is the nearest earlier slice of
// lower depth.
int64_t EnclosingOp(const Trace& trace, uint32_t slice) {
  const auto& slices = trace.slices();
  const uint32_t first = trace.track_first_slice(slices[slice].track);
  uint16_t depth = slices[slice].depth;
  for (uint32_t i = slice; i > first && depth > 0;) {
    --i;
    if (slices[i].depth >= depth) continue;
    depth = slices[i].depth;
    if (slices[i].kind == SliceKind::kOp) return i;
  }
  return -1;
}

int64_t LaunchingOp(const Trace& trace, uint32_t launch) {
  return trace.slices()[launch].kind == SliceKind::kOp ? int64_t{launch} : EnclosingOp(trace, launch);
}

}  // namespace stepscope::analysis
