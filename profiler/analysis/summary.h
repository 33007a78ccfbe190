// The step summary behind `stepscope summary`: devices and node counts, step span, busy time and
// utilisation per device, op types by total time, memcpy traffic with achieved bandwidth,
// allocator peaks with the tensors live at the peak, and what the import repaired. Records that
// TensorFlow duplicates on aggregate lanes (/stream:all, /memcpy) are counted as nodes but never
// twice in times or bytes. Data only: the CLI formats it as text and JSON.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "profiler/analysis/memory_timeline.h"
#include "profiler/trace/trace.h"

namespace stepscope::analysis {

struct SourceDeviceSummary {   // one dev_stats entry (or one pid/tid of a JSON trace)
  std::string name;
  std::string kind;            // track kind: ops, gpu_stream, gpu_all_streams, gpu_memcpy, ...
  int64_t nodes = 0;
  bool aggregate_duplicates = false;  // every record here is also on another lane
};

struct LaneUsage {             // one GPU stream (its overlap lanes joined)
  std::string name;            // "stream 7", "stream:14"
  int64_t slices = 0;          // kernels, copies and memsets
  int64_t busy_ns = 0;         // union of their intervals
  double utilisation = 0;      // busy / step span
};

// Busy time counts work only: on GPU streams kernels, copies, memsets (and collectives); on host
// lanes every slice but annotations and sync markers, which are listed apart (`annotations`).
struct DeviceUsage {           // one physical device's op lanes, or its GPU streams
  std::string name;            // "/job:localhost/replica:0/task:0/device:GPU:0", "GPU 0"
  std::string lanes;           // "ops" (executor/host lanes) or "gpu streams"
  int64_t slices = 0;          // without aggregate duplicates
  int64_t busy_ns = 0;         // union of its slices' intervals (for a GPU: over all its streams)
  double utilisation = 0;      // busy / step span
  std::vector<LaneUsage> streams;  // GPU streams: each stream's own figures, in track order
};

struct AnnotationUsage {       // annotations or sync markers of one lane: shown, never busy time
  std::string lane;            // track path: "python3.10 / thread 2869224 (python3.10)", "GPU 0 / stream 7"
  std::string kind;            // "annotation" or "sync"
  int64_t slices = 0;
  int64_t span_ns = 0;         // union of their intervals
};

struct OpTypeStats {
  std::string op_type;
  std::string where;           // "ops" (executor/host), "gpu" (kernels), "memcpy", "collective"
  int64_t count = 0;
  int64_t total_ns = 0;
  int64_t mean_ns() const { return count == 0 ? 0 : total_ns / count; }
};

struct MemcpyStats {
  std::string kind;            // HtoD, DtoH, ...
  int64_t count = 0;
  int64_t bytes = 0;
  int64_t total_ns = 0;        // sum of the recorded durations
  // The time bandwidth is computed over: per copy, bytes / the producer's own per-copy figure
  // (Kineto's `memory bandwidth (GB/s)`, from the exact device time) where the trace has it,
  // else the copy's recorded duration (rounded to 1 us in Kineto JSON).
  double transfer_ns = 0;
  int64_t rated = 0;           // copies whose time came from their bandwidth argument
  double bandwidth_gbps() const {  // bytes per ns == GB/s
    return transfer_ns <= 0 ? 0.0 : static_cast<double>(bytes) / transfer_ns;
  }
  // "bandwidth_args" (every copy), "durations" (none) or "mixed".
  std::string bandwidth_from() const {
    return rated == 0 ? "durations" : rated == count ? "bandwidth_args" : "mixed";
  }
};

struct AllocatorPeak {
  std::string allocator;
  std::string curve_origin;    // what the curve was computed from
  int64_t peak_bytes = 0;
  int64_t peak_ns = 0;         // relative to the epoch
  int64_t samples = 0;
  std::vector<LiveTensor> live_at_peak;  // largest first, from outputs and dataflow lifetimes
  int64_t live_tensors_total = 0;        // how many were live (the list may be cut)
};

struct Summary {
  std::string source;
  std::string format;
  int64_t epoch_ns = 0;
  bool unix_clock = false;  // epoch_ns reads ns since the Unix epoch (Trace::clock_is_unix_time)
  int64_t span_begin_ns = 0;
  int64_t span_end_ns = 0;
  int64_t nodes = 0;
  std::vector<SourceDeviceSummary> devices;
  std::vector<DeviceUsage> usage;
  std::vector<OpTypeStats> op_types;     // by total time, descending; annotations and syncs apart
  std::vector<AnnotationUsage> annotations;  // per lane, in track order
  std::vector<MemcpyStats> memcpy;       // by bytes, descending
  std::vector<AllocatorPeak> allocators;
  std::vector<std::pair<std::string, int64_t>> import_stats;
  trace::StepInfo step;
};

struct SummaryOptions {
  size_t live_tensors = 10;  // per allocator, the largest live at its peak
};

Summary Summarize(const trace::Trace& trace, const SummaryOptions& options = {});

// Total length of the union of [start, end) intervals (input in any order).
int64_t UnionLength(std::vector<std::pair<int64_t, int64_t>> intervals);
// The same, sorting the caller's intervals in place (no copy: for a loop over many small sets).
int64_t UnionLengthInPlace(std::span<std::pair<int64_t, int64_t>> intervals);

}  // namespace stepscope::analysis
