// Step windows numbered by one rule for every command (step_windows.h).
#include "profiler/analysis/step_windows.h"

#include "profiler/analysis/steps.h"

namespace stepscope::analysis {

std::vector<std::vector<StepWindow>> NumberedStepWindows(std::span<const trace::Trace> traces, const StepRange& range,
                                                         StepWindowing windowing) {
  std::vector<std::vector<StepWindow>> windows(traces.size());
  int64_t order = 0;  // the place of the next step among all the inputs' steps
  auto in_range = [&](int64_t number) { return !range || (number >= range->first && number <= range->second); };
  for (size_t i = 0; i < traces.size(); ++i) {
    const trace::Trace& trace = traces[i];
    const std::vector<Step> steps = StepsOfTrace(trace, /*with_totals=*/false);
    std::vector<StepWindow> numbered;
    numbered.reserve(steps.size());
    for (const Step& step : steps) {
      numbered.push_back({step.step >= 0 ? step.step : order, step.step, step.marker, step.begin_ns, step.end_ns});
      ++order;
    }
    if (windowing == StepWindowing::kWholeUnlessSeveral && numbered.size() <= 1) {
      // A trace with no slices has no step: its number is its recorded one (none: never selected).
      const int64_t number = numbered.empty() ? trace.step_info().step : numbered.front().number;
      numbered = {StepWindow{.number = number, .step = trace.step_info().step, .marker = "trace", .whole = true}};
    }
    for (StepWindow& w : numbered) {
      if (in_range(w.number)) windows[i].push_back(std::move(w));
    }
  }
  return windows;
}

std::string NoStepInRangeMessage(const std::pair<int64_t, int64_t>& range) {
  return "no step " + std::to_string(range.first) +
         (range.second != range.first ? "-" + std::to_string(range.second) : "") +
         " in the traces given (see `stepscope steps`)";
}

}  // namespace stepscope::analysis
