// Analyses of how a step's time is bound: communication hidden behind compute (overlap), and
// the chain of work that bounds the step (critical path).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "profiler/trace/trace.h"

namespace stepscope::analysis {

// ---- overlap ---------------------------------------------------------------------------------
// Communication: collective ops, NCCL kernels, fusion-buffer copies. Computation: every other op
// or kernel. Both are taken per device (work on another device hides nothing), as the union of
// their slices; hidden = |comm ∩ compute|, exposed = |comm| - hidden, as HTA reports it.
struct DeviceOverlap {
  std::string device;          // device track path
  int64_t comm_ns = 0, compute_ns = 0, hidden_ns = 0, exposed_ns = 0;
  int64_t comm_slices = 0;
  double hidden_share = 0;     // hidden / comm (0 when there is no comm)
};
struct OverlapStats {
  std::vector<DeviceOverlap> devices;  // devices with communication or compute, in track order
  int64_t comm_ns = 0, hidden_ns = 0, exposed_ns = 0, span_ns = 0;
  double hidden_share = 0;
  double exposed_share_of_step = 0;    // exposed / span of the step
};
OverlapStats ComputeOverlap(const trace::Trace& trace);
bool IsCommunication(const trace::Trace& trace, const trace::Slice& slice);

// ---- critical path ---------------------------------------------------------------------------
// A dependency graph over the slices: dataflow and launch flows, and lane order (each top-level
// slice waits for the previous one on its lane). Walking back from the slice that ends last, each
// step takes the predecessor that became ready last (the one the slice actually waited for).
struct PathElement {
  uint32_t slice = 0;
  std::string name, op_type, kind, lane;  // lane: track path
  int64_t start_ns = 0, dur_ns = 0;
  int64_t wait_ns = 0;         // gap between the predecessor's end and this start
  std::string edge;            // how it depends on the previous element: "dataflow", "launch", "lane", "" for the first
};
struct PathShare {
  std::string op_type;
  int64_t count = 0, total_ns = 0;
  double share = 0;            // of the path length
};
struct CriticalPath {
  std::vector<PathElement> elements;  // in time order
  int64_t length_ns = 0;       // last end - first start
  int64_t busy_ns = 0, wait_ns = 0;
  std::vector<PathShare> by_op_type;  // by total_ns descending
};
CriticalPath ComputeCriticalPath(const trace::Trace& trace);

}  // namespace stepscope::analysis
