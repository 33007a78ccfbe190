// Breakdowns of one trace by resource: GPU kernels, copies, and per-stream busy time and idle
// gaps. Each counts slices that are not aggregate duplicates (TensorFlow's /stream:all and
// /memcpy repeats), so a kernel is counted once whichever lanes repeat it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "profiler/trace/slice_details.h"
#include "profiler/trace/trace.h"

namespace stepscope::analysis {

// ---- kernels ---------------------------------------------------------------------------------
struct KernelRow {
  std::string name;           // kernel name (TF: the launching node; ours/PyTorch: the kernel)
  std::string op_type;
  int64_t launches = 0, total_ns = 0, min_ns = 0, max_ns = 0;
  double mean_ns = 0;
  double share = 0;           // of all kernel time
  std::string grid, block;    // "x,y,z"; "varied" when launches differ; empty when unknown
  std::string registers;      // registers per thread; "varied" / empty likewise
  bool communication = false; // an NCCL kernel
};
struct KernelStream {
  std::string stream;         // track path of the stream
  int64_t launches = 0, total_ns = 0;
  double share = 0;           // of all kernel time
};
struct KernelStats {
  std::vector<KernelRow> kernels;    // by total_ns descending
  std::vector<KernelStream> streams; // by total_ns descending
  int64_t launches = 0, total_ns = 0;
};
KernelStats ComputeKernelStats(const trace::Trace& trace);

// True for NCCL kernels ("ncclKernel_AllReduce_...", "ncclDevKernel_...").
bool IsCommunicationKernel(std::string_view name);

// ---- memcpy ----------------------------------------------------------------------------------
struct MemcpyRow {
  std::string kind;           // HtoD, DtoH, DtoD, ...
  std::string memory;         // "Pageable to Device"; empty when unknown
  int64_t count = 0, bytes = 0, total_ns = 0;
  // bytes / ns of the copies that report bytes; each copy's time is bytes / its own bandwidth
  // where the producer recorded one (Kineto's `memory bandwidth (GB/s)`, from the exact device
  // time: its durations are rounded to 1 us), else its recorded duration.
  double bandwidth_gbps = 0;
  std::string bandwidth_from;  // "bandwidth_args", "durations", "mixed"; empty without bytes
  int64_t rated = 0;           // copies timed by their bandwidth argument
  int64_t without_bytes = 0;
  double step_share = 0;      // total_ns / step span
};
struct MemcpyBreakdown {
  std::vector<MemcpyRow> rows;  // by total_ns descending
  int64_t count = 0, bytes = 0, total_ns = 0, span_ns = 0;
  int64_t without_bytes = 0;    // copies whose byte count the trace does not record
};
MemcpyBreakdown ComputeMemcpyStats(const trace::Trace& trace);

// Kind and memory kinds from a copy's name (profiler/trace/slice_details.h).
using trace::CopyName;
using trace::ParseCopyName;

// ---- streams ---------------------------------------------------------------------------------
struct IdleGap {
  int64_t begin_ns = 0, end_ns = 0;  // trace time
  std::string before, after;         // slice names either side; "" at the step's edges
  int64_t length() const { return end_ns - begin_ns; }
};
struct StreamUsage {
  std::string device;         // device track path
  std::string stream;         // lane name: "stream:14", "ops", "thread 3"
  std::string kind;           // track kind: ops, gpu_stream, collective, ...
  // What the row counts: "work" (on GPU streams kernels, copies and memsets; elsewhere every
  // slice but annotations, Python frames and syncs), or a lane's "annotation" (with Python
  // frames), "sync" (Kineto's cuda_sync) or
  // "other" (non-work on a GPU stream) slices, shown on their own rows and never busy time.
  std::string content = "work";
  int64_t slices = 0, busy_ns = 0, idle_ns = 0;
  double utilisation = 0;     // busy / step span
  int64_t first_ns = 0, last_ns = 0;  // first start, last end
  std::vector<IdleGap> largest_gaps;  // longest first
};
struct StreamStats {
  std::vector<StreamUsage> streams;  // in track order
  int64_t span_begin_ns = 0, span_ns = 0;
};
// A source lane and its overlap lanes count as one stream. `gaps` caps the listed gaps.
StreamStats ComputeStreamStats(const trace::Trace& trace, size_t gaps = 5);

// For each track, the lane-0 track of its source: an overlap lane ("stream:7 #2") maps to
// "stream:7", every other track to itself.
std::vector<uint32_t> SourceLanes(const trace::Trace& trace);

// Union of intervals, merged and sorted.
std::vector<std::pair<int64_t, int64_t>> MergeIntervals(std::vector<std::pair<int64_t, int64_t>> intervals);

}  // namespace stepscope::analysis
