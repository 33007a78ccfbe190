#include "profiler/analysis/step_analyses.h"

#include <algorithm>
#include <cctype>
#include <map>

#include "profiler/analysis/breakdowns.h"

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

// The device a slice's time belongs to; for traces without device tracks (Chrome JSON), its
// process (Kineto puts each GPU in its own process).
int32_t ResourceOf(const Trace& trace, uint32_t track) {
  const int32_t device = trace.DeviceOf(track);
  return device >= 0 ? device : trace.HostOf(track);
}

}  // namespace

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
  struct Lists {
    std::vector<std::pair<int64_t, int64_t>> comm, compute;
    int64_t comm_slices = 0;
  };
  std::map<int32_t, Lists> by_device;
  for (const Slice& s : trace.slices()) {
    if (s.duplicate()) continue;
    const bool comm = IsCommunication(trace, s);
    const bool compute = !comm && (s.kind == SliceKind::kKernel || s.kind == SliceKind::kOp);
    if (!comm && !compute) continue;
    // GPU lanes and host lanes of one device are separate resources (PyTorch traces put a GPU's
    // streams and the host threads in one process).
    const bool gpu_lane = s.kind == SliceKind::kKernel || s.kind == SliceKind::kMemcpy ||
                          trace.tracks()[s.track].kind == trace::TrackKind::kGpuStream;
    Lists& lists = by_device[ResourceOf(trace, s.track) * 2 + (gpu_lane ? 1 : 0)];
    (comm ? lists.comm : lists.compute).emplace_back(s.start_ns, s.end_ns());
    if (comm) ++lists.comm_slices;
  }
  for (auto& [device, lists] : by_device) {
    const auto comm = MergeIntervals(std::move(lists.comm));
    const auto compute = MergeIntervals(std::move(lists.compute));
    DeviceOverlap row;
    row.device = device >= 0 ? trace.TrackPath(static_cast<uint32_t>(device / 2)) + (device % 2 == 1 ? " (gpu)" : " (host)") : "";
    for (const auto& [a, b] : comm) row.comm_ns += b - a;
    for (const auto& [a, b] : compute) row.compute_ns += b - a;
    row.hidden_ns = IntersectionLength(comm, compute);
    row.exposed_ns = row.comm_ns - row.hidden_ns;
    row.comm_slices = lists.comm_slices;
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
