// The step windows that --step/--steps and the per-step reports scope a trace by, numbered by
// the one rule every command uses (the rule of `stepscope steps`):
//  - a step's number is the one its trace records (StepInfo.step, ProfilerStep#N);
//  - a step without one takes its place among all the steps of the inputs, in input order
//    (0 for the first step of the first input, and so on, numbered steps counted too).
// Front ends turn flags into a StepRange and format what comes back; they number nothing.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "profiler/trace/trace.h"

namespace stepscope::analysis {

// [first, last] step numbers; absent: every step.
using StepRange = std::optional<std::pair<int64_t, int64_t>>;

struct StepWindow {
  int64_t number = -1;   // by the rule above; what --step selects
  int64_t step = -1;     // as the trace records it (-1: none)
  std::string marker;    // "ProfilerStep#N", "ranks merged", or "trace" (a step trace, the whole trace)
  int64_t begin_ns = std::numeric_limits<int64_t>::min();
  int64_t end_ns = std::numeric_limits<int64_t>::max();
  bool whole = false;    // the whole trace (begin and end unbounded), not a window of it
};

// How a trace's steps become windows:
//  - kEveryStep: one window per step (StepsOfTrace), a step trace's being its span;
//  - kWholeUnlessSeveral: one window per step when the trace has several, else one window over
//    the whole trace (its recorded step, numbered as its one step): per-step reports.
enum class StepWindowing { kEveryStep, kWholeUnlessSeveral };

// The windows of each trace (in input order) whose number is in `range`: a trace with none in
// it has an empty list.
std::vector<std::vector<StepWindow>> NumberedStepWindows(std::span<const trace::Trace> traces, const StepRange& range,
                                                         StepWindowing windowing);

// "no step 3 in the traces given" / "no step 3-5 ...": the error when no window is in `range`.
std::string NoStepInRangeMessage(const std::pair<int64_t, int64_t>& range);

}  // namespace stepscope::analysis
