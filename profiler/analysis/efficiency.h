// How much of the machine a run uses: per op type and per kernel the FLOPs and bytes of the ops
// (op_cost.h), the time they took, achieved FLOP/s and GB/s, arithmetic intensity and where they
// sit under the device's roofline; per step the model FLOPs and MFU against the device's peak
// (device_peaks.h), per rank and across ranks. Behind `stepscope efficiency` and the viewer's
// roofline pane, so both show the same numbers.
//
// Definitions (docs/analysis.md, "Efficiency"):
//  - an op's time is the device time of the kernels it launched (kernels linked by launch flows
//    to it or to an op nested in it) when it launched any, else its own duration (a CPU op);
//  - model FLOPs are the matmul, convolution, attention and recurrent-cell FLOPs of the step's
//    ops (OpCost::model_flops), element-wise work excluded; MFU = model FLOPs / step time / peak;
//    HFU = every counted FLOP (element-wise included) / step time / peak;
//  - intensity = FLOPs / bytes; an op is compute-bound when its intensity reaches the ridge
//    (peak FLOP/s / peak bytes/s), else memory-bound; its share of peak is its achieved FLOP/s
//    over what the roofline allows at its intensity (min(peak, intensity x bandwidth)).
// Nothing is guessed: an op without a cost is listed in unknown_ops with its time, a figure the
// trace does not give is -1 (null in JSON), MFU is absent when the peak is unknown.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "profiler/analysis/collective_bandwidth.h"
#include "profiler/analysis/device_peaks.h"
#include "profiler/analysis/op_cost.h"
#include "profiler/analysis/step_windows.h"
#include "profiler/trace/trace.h"

namespace stepscope::analysis {

// Where a set of ops or kernels sits under the roofline.
struct Achieved {
  double flops_per_s = -1;    // -1: no FLOPs known, or no time
  double bytes_per_s = -1;
  double intensity = -1;      // FLOPs per byte; -1 when either is unknown or bytes is 0
  std::string bound;          // "compute", "memory"; empty when the peak or the intensity is unknown
  double share_of_peak = -1;  // achieved FLOP/s over the roof at this intensity; -1 when unknown
};

// One op type's costed ops, or one kernel's launches.
struct EfficiencyRow {
  std::string name;           // the op type, or the kernel's name
  std::string op_type;        // for a kernel: the op type that launched it most ("" when none)
  int64_t count = 0;
  int64_t time_ns = 0;        // device time where there were kernels, else the ops' own time
  int64_t device_time_ns = 0; // of that, the kernels' time
  int64_t flops = -1;         // -1: none known
  int64_t model_flops = 0;
  int64_t bytes = -1;
  int64_t reported_flops = -1;  // the source's own count (Kineto `flops`, HLO), summed where given
  int64_t costed = 0;         // kernels: launches whose op launched only this kernel (they carry its cost)
  std::string flops_source;   // CostSourceName of the figures, "+"-joined when several
  CostClass cost_class = CostClass::kUnknown;
  Precision precision = Precision::kUnknown;
  Achieved achieved;
  // The longest of its ops (or kernels) in the last trace added, where the viewer jumps; -1 none.
  int64_t longest_slice = -1;
  int64_t longest_ns = 0;
};

struct StepEfficiency {
  int32_t rank = -1;          // as the trace records it; else the input's place
  bool rank_recorded = false;
  int64_t number = -1;        // analysis::StepWindow::number
  int64_t step = -1;          // as recorded (-1: none)
  std::string marker;
  int64_t duration_ns = 0;
  // False when the step's trace records no shapes or FLOPs at all: its FLOPs are unknown (null,
  // "-"), not zero, and it has no MFU.
  bool flops_known = false;
  int64_t model_flops = 0;
  int64_t flops = 0;          // every counted FLOP
  std::optional<double> mfu, hfu;
};

// Steps added up: one rank's, or every rank's.
struct EfficiencyTotal {
  int32_t rank = -1;          // -1 for the total across ranks
  int64_t steps = 0;
  int64_t duration_ns = 0;    // of the steps whose FLOPs are known (all of them when none is)
  bool flops_known = false;   // some step's FLOPs are known
  int64_t model_flops = 0;
  int64_t flops = 0;
  std::optional<double> mfu, hfu;
  double model_flops_per_s = -1;
};

struct EfficiencyReport {
  PeakChoice peak;
  std::string precision_why;  // why this precision's peak: the ops' inputs, or --precision
  std::vector<std::string> sources;
  std::vector<EfficiencyRow> ops;      // by op type, longest time first
  std::vector<EfficiencyRow> kernels;  // by kernel name, longest time first
  std::vector<UnknownOpType> unknown_ops;
  std::vector<StepEfficiency> steps;   // in input order, then step order
  std::vector<EfficiencyTotal> ranks;  // by rank
  EfficiencyTotal total;
  int64_t ops_seen = 0, ops_costed = 0;
  bool has_shapes = false;             // some op of some input carried shapes or flops
  // What a reader must know before trusting the figures: MFU above 100 % (the peak, the
  // precision or the recorded shapes cannot all be right).
  std::vector<std::string> notes;
  // Per collective (collective_bandwidth.h), every input's rows; `calls` are not kept.
  CollectiveBandwidth collectives;
};

// The roofline's verdict for `flops` and `bytes` done in `time_ns` (-1: unknown).
Achieved Roofline(int64_t flops, int64_t bytes, int64_t time_ns, const PeakChoice& peak);

// A row while traces are added: its sums (EfficiencyRow's count, times, FLOPs, bytes, costed
// launches and longest) and what decides its source, class, precision and launching op.
struct EfficiencyRowSums {
  EfficiencyRow row;
  uint32_t sources = 0;  // bit per CostSource
  std::map<std::string, int64_t> launcher_time_ns;   // kernels: time per launching op type
  std::array<int64_t, 8> precision_flops{};          // by Precision
  std::array<int64_t, 10> class_count{};             // by CostClass
};

// One input's part of the report before the peak is chosen: the sums its ops, kernels, steps and
// collectives add (a few hundred bytes per step, op type, kernel name and collective row, not
// per op). Inputs costed apart (in other processes: profiler/cli/distributed.h) and added in
// input order give the report of the inputs added one after the other.
struct EfficiencyInput {
  std::string source;
  std::vector<trace::DeviceProperties> devices;
  int64_t ops_seen = 0, ops_costed = 0;
  bool has_shapes = false;
  std::vector<UnknownOpType> unknown_ops;
  std::map<std::string, EfficiencyRowSums> ops, kernels;  // by op type, by kernel name
  std::array<int64_t, 8> model_flops_by_precision{};
  std::vector<StepEfficiency> steps;  // one per window, FLOPs summed (mfu, hfu: by Finish)
  CollectiveBandwidth collectives;    // its rows (their rank set), totals, link and notes; no calls
};

// The part of `trace`: `windows` its step windows (NumberedStepWindows), `input` its place among
// the inputs (the rank when the trace records none); `options` and `collective_options` as the
// builder's (the link of its collectives is --device's, else the trace's first GPU's).
EfficiencyInput CostEfficiencyInput(const trace::Trace& trace, std::span<const StepWindow> windows, int32_t input,
                                    const PeakOptions& options, const CollectiveOptions& collective_options);

// Adds traces one at a time (a 1 GB trace is read, costed and dropped before the next), or their
// parts costed apart, then picks the peak and finishes the figures.
class EfficiencyBuilder {
 public:
  explicit EfficiencyBuilder(PeakOptions options, CollectiveOptions collective_options = {})
      : options_(std::move(options)), collective_options_(std::move(collective_options)) {}
  // `windows`: the trace's step windows (NumberedStepWindows); `input` its place among the inputs
  // (the rank when the trace records none). Adds CostEfficiencyInput's part.
  void Add(const trace::Trace& trace, std::span<const StepWindow> windows, int32_t input);
  // One input's part, in input order.
  void Add(EfficiencyInput input);
  // An unknown --device is InvalidInput.
  StatusOr<EfficiencyReport> Finish() &&;

 private:
  PeakOptions options_;
  CollectiveOptions collective_options_;
  EfficiencyReport report_;
  std::vector<trace::DeviceProperties> devices_;
  std::array<int64_t, 8> model_flops_by_precision_{};
  std::map<std::string, EfficiencyRowSums> ops_, kernels_;
  std::map<std::string, UnknownOpType> unknown_;
};

// One trace, every step window (kWholeUnlessSeveral), for the viewer and tests.
StatusOr<EfficiencyReport> ComputeEfficiency(const trace::Trace& trace, const PeakOptions& options = {});

}  // namespace stepscope::analysis
