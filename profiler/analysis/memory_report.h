// The `memory` analysis: per allocator, the curve and its peak, what was live at the peak
// (tensor, size, producing op, lifetime), temporary vs persistent memory, and fragmentation
// (bytes the allocator handed out vs bytes requested, over the tensors live at the peak).
#pragma once

#include <cstdint>
#include <vector>

#include "profiler/analysis/memory_timeline.h"

namespace stepscope::analysis {

struct AllocatorReport {
  AllocatorTimeline timeline;
  std::vector<LiveTensor> live_at_peak;  // largest first, cut to `top`
  int64_t live_tensors = 0;              // how many were live at the peak
  int64_t live_requested_bytes = 0;      // summed over all live tensors
  int64_t live_allocated_bytes = 0;      // of those that report allocated bytes
  int64_t live_requested_with_allocated = 0;  // requested bytes of the same tensors
  double fragmentation = 0;              // 1 - requested / allocated over those tensors
  int64_t unattributed_bytes = 0;        // peak bytes no live tensor accounts for (>= 0)
  // From the nodes of the allocator's device (TensorFlow MemoryStats).
  int64_t temp_bytes = 0, persistent_bytes = 0;
  // The largest figures the producer recorded for this allocator (TensorFlow step stats): the
  // allocator's own in-use total at a node's end, and what one node held at once. The curve's
  // peak is never below either.
  int64_t max_allocator_bytes_in_use = 0, max_op_peak_bytes = 0;
};

std::vector<AllocatorReport> ComputeMemoryReport(const trace::Trace& trace, size_t top = 10);

}  // namespace stepscope::analysis
