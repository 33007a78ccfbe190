// GPU-side analyses behind `stepscope gpu`, `idle` and `launches`: where each GPU's time went
// (compute, communication, memory, idle), why each stream sat idle between kernels, and what
// launching the kernels cost. They read the GPU work of a trace: kernels, copies, memsets and
// collectives on GPU stream lanes (trace::IsDeviceWork), never annotations or sync markers, and
// never TensorFlow's /stream:all and /memcpy repeats. Kernels are linked to their runtime call by
// the trace's launch flows: what the reader made of Kineto's correlation ids (HTA's join) and flow
// events, our KernelLaunch records. Every analysis that follows a launch says how much of the work
// it could link (LaunchLinks): work without a link cannot be told apart (idle gaps it ends are
// "other", annotations do not see it).
// Definitions and how they differ from HTA's are in docs/analysis.md.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "profiler/trace/trace.h"

namespace stepscope::analysis {

// One trace and the windows of it to analyse (trace time, [begin, end)); GPU work counts when it
// starts in one of them. No windows: the whole trace.
struct GpuInput {
  const trace::Trace* trace = nullptr;
  std::vector<std::pair<int64_t, int64_t>> windows;
};

// ---- launch links --------------------------------------------------------------------------------
// GPU work (kernels, copies, memsets, collectives as CollectWork takes them) and, of it, the
// pieces linked to the host call or op that launched them.
struct LaunchLinks {
  int64_t work = 0, linked = 0;
  double fraction() const { return work > 0 ? static_cast<double>(linked) / static_cast<double>(work) : 0; }
};
LaunchLinks CountLaunchLinks(const std::vector<GpuInput>& inputs);

// ---- gpu: time breakdown ---------------------------------------------------------------------
// span: first start to last end of the GPU work; busy: union of it; idle = span - busy. compute:
// non-communication kernels; communication: IsCommunication (NCCL kernels, collectives, fusion
// copies); memory: other copies and memsets; each a union; overlap = |compute ∩ communication|.
struct GpuTime {
  int64_t span_ns = 0, busy_ns = 0, idle_ns = 0;
  int64_t compute_ns = 0, communication_ns = 0, memory_ns = 0;
  int64_t compute_communication_overlap_ns = 0;
  int64_t slices = 0;
};
struct GpuStreamTime {
  std::string stream;   // "stream 7", "stream:14"
  GpuTime time;
};
struct GpuBreakdown {
  int32_t rank = -1;    // StepInfo.rank, -1 when unknown
  std::string device;   // "GPU 0", "GPU:0"
  GpuTime time;         // over all its streams
  std::vector<GpuStreamTime> streams;  // in track order
};
// Per (rank, device), in rank then track order. Several inputs of one rank and device (steps of
// one run) add up: each figure is the sum over the inputs.
std::vector<GpuBreakdown> ComputeGpuBreakdown(const std::vector<GpuInput>& inputs);
std::vector<GpuBreakdown> ComputeGpuBreakdown(const trace::Trace& trace);
// The same in two halves, where the inputs are read apart (`mpirun -np N stepscope gpu`): one
// input's rows (its devices in track order), then the rows of every input, in input order, added
// up per (rank, device) and stream. The figures are integers: the sums are exact in any split.
std::vector<GpuBreakdown> GpuBreakdownOfInput(const GpuInput& input);
std::vector<GpuBreakdown> CombineGpuBreakdowns(std::span<const std::vector<GpuBreakdown>> inputs);

// ---- idle: why each stream sat idle ------------------------------------------------------------
// Each gap (> 0) between consecutive pieces of GPU work on a stream is classified by the launch
// of the work after it:
//  kLaunchEnd (ours): host wait when its launch (the runtime call) ended after the previous work
//    ended (the host had not handed it over when the stream ran dry), kernel wait when it ended
//    before (it was queued behind the previous work: the gap is the GPU's and the driver's), other
//    when no launch is known.
//  kHta: HTA's get_idle_time_breakdown: host wait when the runtime call *started* after the
//    previous work ended, kernel wait when not and the gap is under `consecutive_kernel_delay_ns`,
//    other for the rest (no launch known included).
enum class IdleRule { kLaunchEnd, kHta };
enum class IdleCause : uint8_t { kHostWait, kKernelWait, kOther };
std::string_view IdleCauseName(IdleCause cause);  // "host_wait", "kernel_wait", "other"

struct IntervalStats {
  int64_t count = 0, total_ns = 0, max_ns = 0;
  double p50_ns = 0, p95_ns = 0;  // linear-interpolated (statistics.h Quantile)
};
struct IdleGapDetail {
  int32_t rank = -1;
  std::string device, stream;
  int64_t begin_ns = 0, end_ns = 0;  // trace time of its input
  IdleCause cause = IdleCause::kOther;
  std::string before, after;       // the work either side
  std::string launch;              // runtime call of `after`; "" when unknown
  int64_t launch_end_ns = 0;       // its end (0 when unknown)
  std::string host_op;             // the host op enclosing that call; "" when none
  int64_t length() const { return end_ns - begin_ns; }
};
struct StreamIdle {
  int32_t rank = -1;
  std::string device, stream;
  int64_t work = 0;                // pieces of GPU work on the stream
  IntervalStats all;               // every gap
  IntervalStats by_cause[3];       // indexed by IdleCause
};
// A GPU as a whole: idle while none of its streams runs work. Its gaps are those of the union of
// its streams' work (so idle = span - busy of GpuTime), each classified by the same rule as a
// stream's gap, by the work that starts first after it on any of its streams. Never more than the
// GPU's span, however many streams wait at once (the streams' gaps summed can be many spans).
struct GpuIdle {
  int32_t rank = -1;
  std::string device;
  int64_t work = 0;                // pieces of GPU work on its streams
  IntervalStats all;               // every gap; all.total_ns == GpuTime::idle_ns
  IntervalStats by_cause[3];       // indexed by IdleCause; totals add up to all.total_ns
};
struct IdleReport {
  IdleRule rule = IdleRule::kLaunchEnd;
  int64_t consecutive_kernel_delay_ns = 0;
  std::vector<StreamIdle> streams;     // in rank then track order
  // The gaps of every stream taken together (their distribution): the totals add up the streams'
  // gaps, so they exceed the span where streams sit idle at the same time. `gpus` holds the
  // per-GPU idle time.
  IntervalStats by_cause[3];
  std::vector<GpuIdle> gpus;           // in rank then track order; several inputs of one GPU add up
  std::vector<IdleGapDetail> largest;  // longest first
  LaunchLinks links;                   // gaps are classified by the launch of the work after them
};
struct IdleOptions {
  IdleRule rule = IdleRule::kLaunchEnd;
  // HTA's default, 30, is in the trace's unit: microseconds for Kineto JSON (kHta only).
  int64_t consecutive_kernel_delay_ns = 30'000;
  size_t largest = 10;
};
IdleReport ComputeIdle(const std::vector<GpuInput>& inputs, const IdleOptions& options = {});

// ---- launches: what launching cost -------------------------------------------------------------
// Every piece of GPU work with a known launch: the runtime call's CPU duration, the work's GPU
// duration and the launch delay = work start - runtime call end (not clipped: negative when the
// kernel started before the call returned; HTA clips at 0).
struct Launch {
  int32_t rank = -1;
  std::string device, stream;
  std::string runtime;        // "cudaLaunchKernel"
  std::string kernel;         // the work's name
  std::string kind;           // kernel, memcpy, memset, collective
  std::string host_op;        // op enclosing the runtime call ("" when none)
  int64_t correlation = -1;   // when the trace records one
  int64_t runtime_start_ns = 0, cpu_ns = 0, gpu_start_ns = 0, gpu_ns = 0, delay_ns = 0;
  int64_t op_to_launch_ns = -1;  // runtime start - host op start (HTA's aten_op_delay); -1 without an op
};
struct DurationStats {
  int64_t count = 0, min_ns = 0, max_ns = 0;
  double mean_ns = 0, p50_ns = 0, p95_ns = 0;
};
struct OpKernelLaunches {     // one kernel an op type launched
  std::string kernel;
  int64_t count = 0;
  DurationStats delay;
};
struct OpLaunches {           // one op type
  std::string op;
  int64_t launches = 0;
  DurationStats delay, op_to_launch;
  std::vector<OpKernelLaunches> kernels;  // by count descending
};
struct LaunchReport {
  int64_t work = 0;           // GPU work considered
  int64_t unlinked = 0;       // of it, without a known launch (left out)
  DurationStats cpu, gpu, delay;
  int64_t runtime_cutoff_ns = 0, delay_cutoff_ns = 0;
  std::vector<Launch> long_runtime;  // cpu_ns > runtime cutoff, longest first
  std::vector<Launch> long_delay;    // delay_ns > delay cutoff, longest first
  int64_t long_runtime_count = 0, long_delay_count = 0;
  std::vector<OpLaunches> by_op;     // by launches descending
  int64_t linked = 0;                // GPU work with a known launch
  // In input then time order, when asked for (LaunchOptions): every launch whole (hundreds of
  // bytes each), or its work's start and delay.
  std::vector<Launch> launches;
  struct Delay {
    int64_t gpu_start_ns = 0, delay_ns = 0;
  };
  std::vector<Delay> delays;
};
struct LaunchOptions {
  int64_t runtime_cutoff_ns = 50'000;   // HTA's runtime_cutoff (50 us)
  int64_t delay_cutoff_ns = 100'000;    // HTA's launch_delay_cutoff (100 us)
  size_t outliers = 10;                 // listed per kind of outlier
  bool keep_all = false;                // fill `launches`
  bool keep_delays = false;             // fill `delays`
  bool by_op = true;                    // fill `by_op` (its delays per op and kernel: 8 bytes a launch)
};
LaunchReport ComputeLaunches(const std::vector<GpuInput>& inputs, const LaunchOptions& options = {});

// ---- annotations: GPU time per user annotation -------------------------------------------------
// Each piece of GPU work counts for the annotations (record_function / user spans, `## name ##`,
// TensorFlow's profiler ranges; the profiler's own span and ProfilerStep#N are left out: steps are
// chosen with --step) found, in this order:
//  1. on its stream: the annotation spans the PyTorch profiler draws on GPU streams
//     (gpu_user_annotation) around it, as PyTorch attributes it;
//  2. around the host slice that launched it, on its thread;
//  3. on another thread of the same process, at the time of that slice (the autograd thread's
//     kernels in a span of the main thread); where several threads' spans overlap, the latest to
//     start holds;
//  4. traces without host annotations (TensorFlow's, ours): the name scopes of the op that
//     launched the work ("tower_0/conv1/Conv2D": tower_0 > conv1).
// Rows form a tree keyed by the annotation path: instances of the same path (several steps,
// ranks) add up.
struct AnnotationTime {
  std::vector<std::string> path;  // outermost first; the last element is this row's name
  bool name_scope = false;        // from op names, not annotation spans
  int64_t instances = 0;          // annotation spans (name scopes: launching ops) behind the row
  int64_t cpu_ns = 0;             // their host duration, summed
  int64_t work = 0, gpu_ns = 0;   // GPU work launched inside (nested rows included), its time summed
  int64_t gpu_busy_ns = 0;        // union of that work per GPU, summed over GPUs
  int64_t self_work = 0, self_gpu_ns = 0;  // of it, launched with this row the innermost
};
struct AnnotationReport {
  std::vector<AnnotationTime> rows;  // depth first, siblings by gpu_ns descending
  int64_t work = 0, gpu_ns = 0;      // all GPU work considered
  int64_t unannotated_work = 0, unannotated_gpu_ns = 0;  // launched outside every annotation
  // Not attributed at all: outside the GPU annotation spans and no known launch.
  int64_t unlinked_work = 0, unlinked_gpu_ns = 0;
  int64_t gpu_annotation_work = 0;  // attributed by the annotation spans on its stream (1.)
  int64_t other_thread_work = 0;    // attributed by another thread's annotation (3.)
  LaunchLinks links;
};
AnnotationReport ComputeAnnotationTime(const std::vector<GpuInput>& inputs);

// ---- kernel patterns: frequent kernel sequences ------------------------------------------------
// Sequences of `length` consecutive kernels on one stream (copies, memsets and collectives are
// not kernels and are skipped over), counted without overlap (a run of 5 identical kernels holds
// one sequence of 3, not three). Fusion candidates: a frequent sequence's launches and the gaps
// between its kernels are what fusing it would save.
struct KernelPattern {
  std::vector<std::string> kernels;  // in stream order
  int64_t count = 0;                 // occurrences
  int64_t gpu_ns = 0;                // the kernels' time, summed over occurrences
  int64_t span_ns = 0;               // first start to last end, summed over occurrences
  int64_t gap_ns = 0;                // span - busy: the stream idle inside the occurrences
  std::string host_op;               // the op that launched its first kernel most often ("" none)
};
struct KernelPatternOptions {
  size_t length = 3;
  int64_t min_count = 2;
  bool by_time = false;  // order by gpu_ns instead of count
  size_t top = 10;
};
struct KernelPatternReport {
  size_t length = 0;
  int64_t kernels = 0;               // kernels considered
  int64_t distinct_patterns = 0;     // with at least min_count occurrences
  std::vector<KernelPattern> patterns;  // the top ones
  LaunchLinks links;                 // of the kernels considered (host_op follows the launch)
};
KernelPatternReport ComputeKernelPatterns(const std::vector<GpuInput>& inputs,
                                          const KernelPatternOptions& options = {});

}  // namespace stepscope::analysis
