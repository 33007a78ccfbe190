// How a step's time is bound (step_analyses.h): communication hidden behind compute.
#include "profiler/analysis/step_analyses.h"

#include <algorithm>
#include <cctype>
#include <map>

#include "profiler/analysis/breakdowns.h"
#include "profiler/analysis/intervals.h"

namespace stepscope::analysis {

using trace::Slice;
using trace::SliceKind;
using trace::Trace;

namespace {

bool ContainsIgnoringCase(std::string_view text, std::string_view needle) {
  auto it = std::search(text.begin(), text.end(), needle.begin(), needle.end(), [](char a, char b) {
    return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
  });
  return it != text.end();
}

}  // namespace

int32_t ResourceOf(const Trace& trace, uint32_t track) {
  const int32_t device = trace.DeviceOf(track);
  return device >= 0 ? device : trace.HostOf(track);
}

bool IsCommunication(const Trace& trace, const Slice& slice) {
  switch (slice.kind) {
    case SliceKind::kCollective: return true;
    case SliceKind::kKernel: return IsCommunicationKernel(trace.str(trace.slice_name(slice)));
    case SliceKind::kMemcpy: return ContainsIgnoringCase(trace.str(trace.slice_name(slice)), "fusion");
    default: return trace.tracks()[slice.track].kind == trace::TrackKind::kCollective;
  }
}

OverlapStats ComputeOverlap(const Trace& trace) {
  OverlapStats stats;
  stats.span_ns = trace.span_end_ns() - trace.span_begin_ns();
  // Each device's tracks merged by start, so the unions are measured as the slices pass (a
  // 10^7-slice trace would otherwise gather an interval per slice). hidden = |comm ∩ compute| =
  // |comm| + |compute| - |comm ∪ compute|.
  std::map<int32_t, std::vector<std::pair<const Slice*, const Slice*>>> tracks_of_resource;
  for (uint32_t t = 0; t < trace.tracks().size(); ++t) {
    const auto lane = trace.track_slices(t);
    if (!lane.empty()) tracks_of_resource[ResourceOf(trace, t)].emplace_back(lane.data(), lane.data() + lane.size());
  }
  struct Lanes {
    UnionInStartOrder comm, compute, either;
    int64_t comm_slices = 0;
    bool used = false;
  };
  // GPU lanes and host lanes of one device are separate resources (PyTorch traces put a GPU's
  // streams and the host threads in one process): rows keyed device * 2 + (gpu lane ? 1 : 0).
  std::map<int32_t, Lanes> by_device;
  for (auto& [resource, lanes] : tracks_of_resource) {
    Lanes of[2];
    MergeByStart(std::move(lanes), [](const Slice& s) { return s.start_ns; }, [&](const Slice& s) {
      if (s.duplicate()) return;
      const bool comm = IsCommunication(trace, s);
      const bool compute = !comm && (s.kind == SliceKind::kKernel || s.kind == SliceKind::kOp);
      if (!comm && !compute) return;
      const bool gpu_lane = s.kind == SliceKind::kKernel || s.kind == SliceKind::kMemcpy ||
                            trace.tracks()[s.track].kind == trace::TrackKind::kGpuStream;
      Lanes& lane = of[gpu_lane ? 1 : 0];
      lane.used = true;
      (comm ? lane.comm : lane.compute).Add(s.start_ns, s.end_ns());
      lane.either.Add(s.start_ns, s.end_ns());
      if (comm) ++lane.comm_slices;
    });
    for (int gpu = 0; gpu < 2; ++gpu) {
      if (of[gpu].used) by_device.emplace(resource * 2 + gpu, of[gpu]);
    }
  }
  for (const auto& [device, lanes] : by_device) {
    DeviceOverlap row;
    row.device = device >= 0 ? trace.TrackPath(static_cast<uint32_t>(device / 2)) + (device % 2 == 1 ? " (gpu)" : " (host)") : "";
    row.comm_ns = lanes.comm.length();
    row.compute_ns = lanes.compute.length();
    row.hidden_ns = row.comm_ns + row.compute_ns - lanes.either.length();
    row.exposed_ns = row.comm_ns - row.hidden_ns;
    row.comm_slices = lanes.comm_slices;
    row.hidden_share = row.comm_ns > 0 ? static_cast<double>(row.hidden_ns) / static_cast<double>(row.comm_ns) : 0;
    stats.comm_ns += row.comm_ns;
    stats.hidden_ns += row.hidden_ns;
    stats.exposed_ns += row.exposed_ns;
    stats.devices.push_back(std::move(row));
  }
  stats.hidden_share = stats.comm_ns > 0 ? static_cast<double>(stats.hidden_ns) / static_cast<double>(stats.comm_ns) : 0;
  stats.exposed_share_of_step =
      stats.span_ns > 0 ? static_cast<double>(stats.exposed_ns) / static_cast<double>(stats.span_ns) : 0;
  return stats;
}

}  // namespace stepscope::analysis
