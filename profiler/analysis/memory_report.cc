// Per allocator: the peak, the tensors live at it, fragmentation, what the ops recorded
// (temporary and persistent bytes, the allocator's own figures).
#include "profiler/analysis/memory_report.h"

#include <algorithm>
#include <map>
#include <string>
#include <utility>

#include "base/saturating.h"
#include "profiler/trace/slice_details.h"

namespace stepscope::analysis {

std::vector<AllocatorReport> ComputeMemoryReport(const trace::Trace& trace, size_t top) {
  std::vector<AllocatorReport> reports;
  // What the producer recorded per allocator (one pass over the nodes that hold memory figures):
  // the largest allocator_bytes_in_use and the largest peak_bytes of one node.
  std::map<std::string, std::pair<int64_t, int64_t>> recorded;
  {
    trace::DetailReader memory(trace, trace::kDetailAllocators);
    for (uint32_t i = 0; i < trace.slices().size(); ++i) {
      for (const trace::AllocatorUse& used : memory.Allocators(i)) {
        auto& [in_use, peak] = recorded[std::string(used.allocator)];
        in_use = std::max(in_use, used.bytes_in_use);
        peak = std::max(peak, used.peak_bytes);
      }
    }
  }
  LiveTensorIndex live(trace);  // every allocator's peak asks it
  for (AllocatorTimeline& timeline : ComputeMemoryTimelines(trace)) {
    AllocatorReport report;
    report.live_at_peak = live.At(timeline, timeline.peak_ns);
    report.live_tensors = static_cast<int64_t>(report.live_at_peak.size());
    for (const LiveTensor& t : report.live_at_peak) {
      // Sizes from a file may be anywhere in int64: the sums saturate.
      report.live_requested_bytes = SaturatingAdd(report.live_requested_bytes, t.bytes);
      if (t.allocated_bytes > 0) {
        report.live_allocated_bytes = SaturatingAdd(report.live_allocated_bytes, t.allocated_bytes);
        report.live_requested_with_allocated =
            SaturatingAdd(report.live_requested_with_allocated, t.bytes);
      }
    }
    if (report.live_allocated_bytes > 0) {
      report.fragmentation = 1.0 - static_cast<double>(report.live_requested_with_allocated) /
                                       static_cast<double>(report.live_allocated_bytes);
    }
    const int64_t attributed = std::max(
        SaturatingSub(SaturatingAdd(report.live_allocated_bytes, report.live_requested_bytes),
                      report.live_requested_with_allocated),
        int64_t{0});
    report.unattributed_bytes = std::max<int64_t>(0, SaturatingSub(timeline.peak_bytes, attributed));
    if (report.live_at_peak.size() > top) report.live_at_peak.resize(top);
    // Temporary and persistent bytes of the ops that ran on the allocator's device.
    trace::DetailReader details(trace, trace::kDetailOpMemory);
    for (uint32_t i = 0; i < trace.slices().size() && timeline.device_track >= 0; ++i) {
      if (trace.DeviceOf(trace.slices()[i].track) != timeline.device_track) continue;
      const std::optional<trace::OpMemory> memory = details.Memory(i);
      if (!memory) continue;
      report.temp_bytes = SaturatingAdd(report.temp_bytes, memory->temp_bytes);
      report.persistent_bytes = SaturatingAdd(report.persistent_bytes, memory->persistent_bytes);
    }
    if (auto it = recorded.find(timeline.allocator); it != recorded.end()) {
      report.max_allocator_bytes_in_use = it->second.first;
      report.max_op_peak_bytes = it->second.second;
    }
    report.timeline = std::move(timeline);
    reports.push_back(std::move(report));
  }
  return reports;
}

}  // namespace stepscope::analysis
