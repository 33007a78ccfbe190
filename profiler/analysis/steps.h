// The steps of one or more runs: where each training step is in the traces given, how long it
// took, what each op type, node and kernel cost in it, and how much step time varies.
//
// Where steps come from:
//  - one step per step trace (stepscope-train's `<model>_step<N>.pb`, any RunMetadata/StepStats
//    or Chrome JSON without step markers): the whole trace, numbered by StepInfo.step; files of
//    the same step from several ranks (`_rank<R>`) are merged into one step (analysis/merge.h);
//  - in a merged trace (a directory of step traces opened as one): one step per step number, over
//    the windows its inputs had (Trace::step_windows), numbered as the files are;
//  - one step per `ProfilerStep#N` span in a PyTorch profiler (Kineto) trace: its window;
//    slices are clipped to it (ComputeOpStats with the window), so GPU work still running after
//    the span ends counts with the next step (or not at all after the last one).
// Clipping, not attribution by launch: a step's totals are the time spent inside its window, so
// they never exceed it and a trace's steps add up to its windows; a kernel that crosses a
// boundary is split (its part in each window, and a call in each).
// Per-step totals come from ComputeOpStats on the step's window, so every rule of what counts as
// an op (duplicates, annotations) is the same as in `stepscope ops`.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "profiler/trace/trace.h"

namespace stepscope::analysis {

// A kernel's name with what changes between builds and runs without changing the kernel
// removed, so kernels match across runs (as AMD's TraceLens groups them): the leading `void `,
// template arguments (`<...>`, nested), the parameter list, hexadecimal addresses (`0x7f3a...`
// becomes `0x`), lambda numbers (`{lambda()#3}` becomes `{lambda()#}`) and numeric suffixes
// (`triton_poi_fused_add_3`, `kernel.17`). Names without any of these are returned unchanged.
std::string NormalizeKernelName(std::string_view name);

// Per-step total of one op type, node or kernel.
struct StepOpTotal {
  std::string name;      // op type, node name, or normalised kernel name
  std::string op_type;
  std::string where;     // "host" or "device"
  int64_t total_ns = 0;
  int64_t count = 0;
};

struct Step {
  std::string source;    // the file (several joined with ", " when ranks were merged)
  int64_t step = -1;     // step number (StepInfo.step, ProfilerStep#N; the input's order if none)
  std::string marker;    // "trace", "ProfilerStep#N" or "ranks merged"
  // The run (process) the step belongs to: the directory of a step trace (the trainer writes one
  // run's steps to one --profile_dir), the file of a multi-step trace. Steps of one run share its
  // conditions; comparisons resample runs as well as steps.
  std::string run;
  int64_t begin_ns = 0, end_ns = 0;  // the window in its trace's time
  int64_t duration_ns = 0;
  // Kernels are not in op_types and nodes: they are in kernels, by normalised name, so a kernel
  // renamed between runs (other template arguments) is one row, not a new one and a gone one.
  std::vector<StepOpTotal> op_types, nodes, kernels;
};

// The steps of one trace, in time order; none when the trace has no slices. Without
// `with_totals` only the windows and durations are found (no op statistics are computed).
std::vector<Step> StepsOfTrace(const trace::Trace& trace, bool with_totals = true);

// What the collector keeps of one trace where it was read (a process of `mpirun -np N stepscope
// steps` sends it to process 0, analysis/distributed_digest.h): its steps with their totals, and
// what decides whether it waits for its step's other ranks.
struct TraceSteps {
  std::string source;
  bool waits_for_ranks = false;  // StepCollector::WaitsForRanks
  int64_t step = -1;             // StepInfo.step and .rank
  int32_t rank = -1;
  std::vector<Step> steps;       // StepsOfTrace
};
TraceSteps StepsOfInput(const trace::Trace& trace);

// Every step of the traces given one at a time (profiler/formats/inputs.h's ForEachTrace: memory
// holds about one trace at a time), sorted by step number then source. A step's traces from
// several ranks of one run are merged into that step; a trace without a number gets its place
// among the traces as its number.
class StepCollector {
 public:
  // Fails naming the trace's source when it holds no step.
  Status Add(trace::Trace&& trace);
  // A trace of a run with several ranks (rank and step known) waits in Add for its step's other
  // ranks, to be merged with them in Finish; any other is reduced to its steps at once.
  static bool WaitsForRanks(const trace::Trace& trace);
  // The same for a trace the caller keeps, one that does not wait (kInternal for one that does).
  Status Add(const trace::Trace& trace);
  // A trace as its TraceSteps, read elsewhere: it counts as the trace would, in the order added.
  // One that waits for its step's other ranks and has some (the step is merged from the traces
  // themselves) is read again by `read_again` in Finish; without it, Finish fails saying so.
  Status Add(TraceSteps digest, std::function<StatusOr<trace::Trace>()> read_again = nullptr);
  // kInvalidInput when no trace was added.
  StatusOr<std::vector<Step>> Finish() &&;

 private:
  Status AddSteps(std::vector<Step> found, const std::string& source);

  // A trace waiting for its step's other ranks: the trace, or only its digest.
  struct Waiting {
    std::optional<trace::Trace> trace;
    TraceSteps digest;  // source, step and rank (and steps when there is no trace)
    std::function<StatusOr<trace::Trace>()> read_again;  // when there is no trace
  };
  size_t traces_ = 0;
  size_t order_ = 0;
  std::vector<Step> steps_;
  std::map<int64_t, std::vector<Waiting>> by_step_;  // traces waiting for their step's other ranks
};

// Step-to-step variance and outliers.
struct OutlierCause {
  std::string table;     // "op type", "node" or "kernel"
  std::string name, where;
  int64_t value_ns = 0;  // in the outlier step
  double usual_ns = 0;   // median over the steps
  double deviation_ns = 0;  // value - usual
  double z = 0;          // robust z among the steps (0 when they do not vary)
};

struct StepOutlier {
  size_t step = 0;       // index into StepsReport::steps
  double z = 0;
  std::vector<OutlierCause> causes;  // by |deviation| descending
};

struct StepsReport {
  std::vector<Step> steps;
  std::vector<double> z;          // robust z of each step's duration
  double median_ns = 0, mad_ns = 0, mean_ns = 0, stddev_ns = 0, cv = 0;
  double p50_ns = 0, p95_ns = 0, p95_over_p50 = 0, min_ns = 0, max_ns = 0;
  std::vector<StepOutlier> outliers;  // |z| > 3.5, in step order
};

// `top`: how many causes to keep per outlier and table.
StepsReport AnalyzeSteps(std::vector<Step> steps, size_t top = 5);

}  // namespace stepscope::analysis
