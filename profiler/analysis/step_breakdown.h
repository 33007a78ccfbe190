// Where each step's time went, behind `stepscope step-breakdown` and the viewer's step overview:
// every instant of a step window is given to one part, so the parts add up to the step exactly.
//
// The work of the step (slices clipped to its window; TensorFlow's /stream:all and /memcpy
// repeats, sync markers and Python frames never count; annotations only when they name input):
//  - device compute: GPU work (kernels, copies, memsets on GPU lanes) that is not communication;
//  - communication: IsCommunication (collectives, NCCL kernels, fusion-buffer copies), host ops of
//    a collective type, and copies between devices (PtoP), on any lane;
//  - input: host input ops and input annotations (IsInputOp: TrainInput, IteratorGetNext,
//    DataLoader);
//  - host work: every other host op, runtime call or other host slice.
// An instant is compute when device compute runs; else communication when communication runs
// (exposed communication, as `overlap` counts it); else input when input runs (the step waits for
// data: nothing else but host work may run); else compute when host work runs; else idle
// (nothing recorded runs). So compute = |device| + |host \ (device ∪ comm ∪ input)|,
// communication = |comm \ device|, input = |input \ (device ∪ comm)|, idle = window - |all|.
//
// Slow steps: duration > median + kSlowMads · MAD of the run's step durations, and at least
// kSlowFloor above the median (so a run whose steps barely vary marks none); runs of fewer than
// three steps mark none. Recommendations come from the split (thresholds below), largest first.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "profiler/analysis/step_windows.h"
#include "profiler/trace/trace.h"

namespace stepscope::analysis {

enum class StepPart : uint8_t { kInput, kCompute, kCommunication, kIdle };
inline constexpr int kStepParts = 4;
std::string_view StepPartName(StepPart part);  // "input", "compute", "communication", "idle"

inline constexpr double kSlowMads = 3.0;
inline constexpr double kSlowFloor = 0.05;           // of the median
inline constexpr double kInputBoundShare = 0.10;     // input share that makes a step input-bound
inline constexpr double kCommBoundShare = 0.10;      // exposed communication share
inline constexpr double kLaunchBoundShare = 0.30;    // GPU idle not spent waiting for input
inline constexpr double kIdleShare = 0.20;           // nothing recorded runs

// What a recommendation says; share is of the step (or of all steps for the run's).
enum class Advice : uint8_t { kInputBound, kCommunicationBound, kLaunchBound, kIdle, kComputeBound };
std::string_view AdviceName(Advice advice);  // "input_bound", "communication_bound", ...
struct Recommendation {
  Advice advice = Advice::kComputeBound;
  double share = 0;
  bool operator==(const Recommendation&) const = default;
};
// One line: "input-bound: 31 % of the step waits for data", "GPU idle 40 %: launch-bound, ...".
std::string RecommendationText(const Recommendation& recommendation);

struct StepSplit {
  int64_t number = -1;      // StepWindow::number
  int64_t step = -1;        // as recorded (-1: none)
  std::string marker;
  int64_t begin_ns = 0, end_ns = 0, duration_ns = 0;  // trace time
  int64_t part_ns[kStepParts] = {};  // indexed by StepPart; they add up to duration_ns
  bool gpu = false;         // the step has GPU work
  int64_t gpu_busy_ns = 0;  // union of its GPU work
  bool slow = false;
  std::vector<Recommendation> recommendations;  // largest share first
  int64_t part(StepPart p) const { return part_ns[static_cast<int>(p)]; }
  double share(StepPart p) const {
    return duration_ns > 0 ? static_cast<double>(part(p)) / static_cast<double>(duration_ns) : 0;
  }
};

struct StepBreakdown {
  std::vector<StepSplit> steps;      // in window order
  int64_t part_ns[kStepParts] = {};  // over all steps
  int64_t total_ns = 0, gpu_busy_ns = 0;
  bool gpu = false;
  double median_ns = 0, mad_ns = 0;
  double slow_above_ns = 0;          // a step longer than this is slow (0 with fewer than 3 steps)
  std::vector<Recommendation> recommendations;  // for the run: from the parts over all steps
};

// The split of each window of one trace (NumberedStepWindows, kEveryStep; a window marked
// `whole` is taken as the trace's span). Windows must be in time order and not overlap.
StepBreakdown ComputeStepBreakdown(const trace::Trace& trace, std::span<const StepWindow> windows);
// Every step of the trace (NumberedStepWindows of it alone, kEveryStep).
StepBreakdown ComputeStepBreakdown(const trace::Trace& trace);

}  // namespace stepscope::analysis
