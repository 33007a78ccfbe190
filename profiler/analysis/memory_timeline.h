// Bytes in use per allocator over time, and what was live at a given instant.
//
// Where a curve comes from, best source first:
//  - the trace's allocator counters: our traces and TensorFlow's step stats (the importer builds
//    them from every figure recorded: allocation_records for the shape, passing through every
//    allocator_bytes_in_use sample, never below a node's peak_bytes while it runs; `sources`
//    says which of them an allocator had), PyTorch's `[memory]` events (Total Allocated);
//  - otherwise, for TensorFlow traces without allocation records, the outputs' allocation
//    descriptions, as timeline.py does: a tensor is live from its producer's start until the end
//    of its last consumer (its producer's end when nothing consumed it). Such curves are marked
//    derived_from_outputs.
// Tensor lifetimes are half-open [alloc_ns, free_ns) and frees sort before allocations at equal
// times, so on a derived curve the bytes at any instant equal the sum of LiveTensorsAt().
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "profiler/trace/trace.h"

namespace stepscope::analysis {

struct MemoryPoint {
  int64_t time_ns;
  int64_t bytes;
  bool operator==(const MemoryPoint&) const = default;
};

struct LiveTensor {
  std::string name;        // tensor ("node" or "node:slot") or producing op
  int64_t bytes = 0;       // requested bytes
  int64_t alloc_ns = 0, free_ns = -1;  // trace time; free_ns -1: still live at the end
  int64_t producer_slice = -1;         // slice index of the producing op, -1 if unknown
  std::string producer_op;   // op type of the producer
  std::string allocator;
  int64_t allocated_bytes = 0;  // what the allocator handed out (>= bytes; 0 when unknown)
  int64_t allocation_id = 0;    // the producer's id of the allocation, shared by aliases (0: none)
  bool allocated_in_step = true;  // false: the allocator has records, none of them this tensor's
  bool LiveAt(int64_t time_ns) const { return alloc_ns <= time_ns && (free_ns < 0 || time_ns < free_ns); }
};

struct AllocatorTimeline {
  std::string allocator;      // e.g. "GPU_0_bfc", "cpu"
  std::string device;         // device track name (path from the host)
  int32_t device_track = -1;
  bool derived_from_outputs = false;  // true: TF traces without allocation records, curve from outputs as timeline.py does
  std::string origin;         // "allocation_records+allocator_bytes_in_use+peak_bytes", "outputs", ...
  std::vector<std::string> sources;  // origin split on '+': what the curve came from
  std::vector<MemoryPoint> curve;     // step function, time-sorted, one point per instant
  int64_t peak_bytes = 0, peak_ns = 0;  // the first instant the maximum is reached
};

// Sorted by allocator name.
std::vector<AllocatorTimeline> ComputeMemoryTimelines(const trace::Trace& trace);

// Tensors of the timeline's allocator live at time_ns, sorted by bytes descending (then name):
// on a curve derived from outputs, TensorsFromOutputs (they add up to the curve); on a curve from
// allocation records, BuffersFromOutputs (their allocated bytes add up to no more than the curve).
// Empty when the trace records no tensors (e.g. PyTorch traces).
std::vector<LiveTensor> LiveTensorsAt(const trace::Trace& trace, const AllocatorTimeline& timeline,
                                      int64_t time_ns);

// LiveTensorsAt for many instants or allocators of one trace: the tensors and buffers it picks
// from are built once, on first use (each build reads every slice's outputs), not per question.
// The viewer's memory pane asks at every instant the user points at. Refers to `trace`, which
// must outlive it.
class LiveTensorIndex {
 public:
  explicit LiveTensorIndex(const trace::Trace& trace) : trace_(&trace) {}
  std::vector<LiveTensor> At(const AllocatorTimeline& timeline, int64_t time_ns);

 private:
  const trace::Trace* trace_;
  std::optional<std::vector<LiveTensor>> tensors_, buffers_;  // TensorsFromOutputs, BuffersFromOutputs
};

// Every output tensor with an allocation description (StepStats inputs), in slice order, live
// from its producer's start to its last consumer's end, as timeline.py draws them.
std::vector<LiveTensor> TensorsFromOutputs(const trace::Trace& trace);
// The same outputs as the buffers they occupied: outputs sharing an allocation id (an op
// forwarding its input, an in-place update) are one buffer, named after its first producer and
// live over their union; where the allocator has allocation records, each output's buffer lives
// from its producer's record of that size to the free record matched to it (the one most likely
// released first among the open allocations of that size; -1 when never freed in the step), and
// outputs with no record of their own are marked allocated before the step. LiveTensorsAt lists
// those only within the level the step's buffers leave, so what it lists at any instant takes no
// more than the curve.
std::vector<LiveTensor> BuffersFromOutputs(const trace::Trace& trace);

// The sources named in a curve origin ("allocation_records+allocator_bytes_in_use" -> both).
std::vector<std::string> CurveSources(std::string_view origin);
// The same for people: "allocation records, allocator_bytes_in_use samples, peak_bytes".
std::string DescribeCurveSources(std::string_view origin);

// Value of a step-function curve at time_ns (0 before the first point).
int64_t BytesAt(const std::vector<MemoryPoint>& curve, int64_t time_ns);

}  // namespace stepscope::analysis
