// The steps of a trace (ProfilerStep markers, step traces, merged ranks) with their totals, the
// steps of many traces collected one trace at a time, and step-to-step variance (steps.h).
#include "profiler/analysis/steps.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <cstdlib>
#include <map>
#include <memory>
#include <unordered_map>

#include "profiler/analysis/merge.h"
#include "profiler/analysis/op_stats.h"
#include "profiler/analysis/statistics.h"

namespace stepscope::analysis {

using trace::Trace;

namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsHexDigit(char c) { return IsDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

bool PrecededBy(std::string_view text, size_t at, std::string_view word) {
  return at >= word.size() && text.substr(at - word.size(), word.size()) == word;
}

}  // namespace

std::string NormalizeKernelName(std::string_view name) {
  std::string_view source = name;
  while (!source.empty() && source.front() == ' ') source.remove_prefix(1);
  if (source.substr(0, 5) == "void ") source.remove_prefix(5);

  // Template arguments: keep `<>` for the outermost list, drop what is inside. `operator<`,
  // `operator<<`, `operator<=` and `->` are not brackets.
  std::string out;
  out.reserve(source.size());
  int depth = 0;
  for (size_t i = 0; i < source.size(); ++i) {
    const char c = source[i];
    if (c == '<' && !PrecededBy(source, i, "operator") && !PrecededBy(source, i, "operator<")) {
      if (depth == 0) out += "<>";
      ++depth;
      continue;
    }
    if (c == '>' && depth > 0 && !PrecededBy(source, i, "-")) {
      --depth;
      continue;
    }
    if (depth == 0) out += c;
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();

  // The parameter list: the parenthesised group that ends the name.
  if (!out.empty() && out.back() == ')') {
    int level = 0;
    for (size_t i = out.size(); i-- > 0;) {
      if (out[i] == ')') ++level;
      if (out[i] == '(' && --level == 0) {
        if (i > 0) out.resize(i);
        break;
      }
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
  }

  // Addresses and lambda numbers.
  std::string cleaned;
  cleaned.reserve(out.size());
  for (size_t i = 0; i < out.size();) {
    if (out[i] == '0' && i + 2 < out.size() && (out[i + 1] == 'x' || out[i + 1] == 'X') && IsHexDigit(out[i + 2]) &&
        (i == 0 || !IsHexDigit(out[i - 1]))) {
      cleaned += "0x";
      i += 2;
      while (i < out.size() && IsHexDigit(out[i])) ++i;
      continue;
    }
    if (out[i] == '#' && i + 1 < out.size() && IsDigit(out[i + 1])) {
      cleaned += '#';
      ++i;
      while (i < out.size() && IsDigit(out[i])) ++i;
      continue;
    }
    cleaned += out[i++];
  }

  // Numeric suffixes: `_3`, `.17`, repeated (`_0_1`).
  for (;;) {
    size_t end = cleaned.size();
    size_t digits = end;
    while (digits > 0 && IsDigit(cleaned[digits - 1])) --digits;
    if (digits == end || digits < 2 || (cleaned[digits - 1] != '_' && cleaned[digits - 1] != '.')) break;
    cleaned.resize(digits - 1);
  }
  return cleaned.empty() ? std::string(name) : cleaned;
}

namespace {

std::vector<StepOpTotal> Totals(const std::vector<OpStatsRow>& rows) {
  std::vector<StepOpTotal> totals;
  totals.reserve(rows.size());
  for (const OpStatsRow& r : rows) {
    if (r.kind == "kernel") continue;  // kernels are a table of their own, by normalised name
    totals.push_back({r.name, r.op_type, r.where, r.total_ns, r.count});
  }
  return totals;
}

std::vector<StepOpTotal> KernelTotals(const std::vector<OpStatsRow>& nodes) {
  std::map<std::pair<std::string, std::string>, StepOpTotal> kernels;
  for (const OpStatsRow& r : nodes) {
    if (r.kind != "kernel") continue;
    const std::string key = NormalizeKernelName(r.name);
    StepOpTotal& total = kernels[{key, r.where}];
    total.name = key;
    total.op_type = "kernel";
    total.where = r.where;
    total.total_ns += r.total_ns;
    total.count += r.count;
  }
  std::vector<StepOpTotal> out;
  out.reserve(kernels.size());
  for (auto& [key, total] : kernels) out.push_back(std::move(total));
  return out;
}

void FillTotals(const Trace& trace, Step& step, bool whole, const SliceWindows* windows = nullptr) {
  OpStatsOptions options;
  options.windows = windows;
  if (!whole) {
    options.begin_ns = step.begin_ns;
    options.end_ns = step.end_ns;
  }
  const OpStats stats = ComputeOpStats(trace, options);
  step.op_types = Totals(stats.by_op_type);
  step.nodes = Totals(stats.by_node);
  step.kernels = KernelTotals(stats.by_node);
}

constexpr std::string_view kProfilerStep = "ProfilerStep#";

}  // namespace

std::vector<Step> StepsOfTrace(const Trace& trace, bool with_totals) {
  std::vector<Step> steps;
  if (trace.slices().empty()) return steps;
  // Kineto's step markers: one window per step number (the first span seen of each).
  std::map<int64_t, const trace::Slice*> markers;
  for (const trace::Slice& s : trace.slices()) {
    if (s.duplicate() || s.dur_ns <= 0) continue;
    const std::string_view name = trace.str(trace.slice_name(s));
    if (name.substr(0, kProfilerStep.size()) != kProfilerStep) continue;
    int64_t number = 0;
    const char* begin = name.data() + kProfilerStep.size();
    const char* end = name.data() + name.size();
    auto [ptr, ec] = std::from_chars(begin, end, number);
    if (ec != std::errc() || ptr != end) continue;
    auto [it, inserted] = markers.try_emplace(number, &s);
    if (!inserted && s.start_ns < it->second->start_ns) it->second = &s;
  }
  if (markers.empty() && !trace.step_windows().empty()) {
    // A merge of step traces: one step per step number, over the windows of its inputs (one
    // rank's, or several ranks' joined).
    std::map<int64_t, std::pair<Step, size_t>> numbered;
    for (const trace::StepWindow& w : trace.step_windows()) {
      auto [it, inserted] = numbered.try_emplace(w.step);
      Step& step = it->second.first;
      if (inserted) {
        step.source = trace.source_path();
        step.step = w.step;
        step.run = trace.source_path();
        step.begin_ns = w.begin_ns;
        step.end_ns = w.end_ns;
      }
      step.begin_ns = std::min(step.begin_ns, w.begin_ns);
      step.end_ns = std::max(step.end_ns, w.end_ns);
      ++it->second.second;
    }
    std::unique_ptr<SliceWindows> windows = with_totals ? std::make_unique<SliceWindows>(trace) : nullptr;
    for (auto& [number, entry] : numbered) {
      Step& step = entry.first;
      step.marker = entry.second > 1 ? "ranks merged" : "trace";
      step.duration_ns = step.end_ns - step.begin_ns;
      if (with_totals) FillTotals(trace, step, /*whole=*/false, windows.get());
      steps.push_back(std::move(step));
    }
    std::sort(steps.begin(), steps.end(), [](const Step& x, const Step& y) { return x.begin_ns < y.begin_ns; });
    return steps;
  }
  if (markers.empty()) {
    Step step;
    step.source = trace.source_path();
    step.step = trace.step_info().step;
    step.marker = "trace";
    step.run = std::filesystem::path(trace.source_path()).parent_path().string();
    step.begin_ns = trace.span_begin_ns();
    step.end_ns = trace.span_end_ns();
    step.duration_ns = step.end_ns - step.begin_ns;
    if (with_totals) FillTotals(trace, step, /*whole=*/true);
    steps.push_back(std::move(step));
    return steps;
  }
  // Thousands of steps in a big trace: each step's totals come from its own slices.
  std::unique_ptr<SliceWindows> windows = with_totals ? std::make_unique<SliceWindows>(trace) : nullptr;
  for (const auto& [number, slice] : markers) {
    Step step;
    step.source = trace.source_path();
    step.step = number;
    step.marker = std::string(trace.str(trace.slice_name(*slice)));
    step.run = trace.source_path();
    step.begin_ns = slice->start_ns;
    step.end_ns = slice->end_ns();
    step.duration_ns = slice->dur_ns;
    if (with_totals) FillTotals(trace, step, /*whole=*/false, windows.get());
    steps.push_back(std::move(step));
  }
  std::sort(steps.begin(), steps.end(), [](const Step& x, const Step& y) { return x.begin_ns < y.begin_ns; });
  return steps;
}

Status StepCollector::AddSteps(std::vector<Step> found, const std::string& source) {
  if (found.empty()) return InvalidInput(source + ": no steps found (the trace holds no slices)");
  for (Step& s : found) {
    if (s.step < 0) s.step = static_cast<int64_t>(order_);
    ++order_;
    steps_.push_back(std::move(s));
  }
  return Status::Ok();
}

// Only traces of a run with several ranks wait for their step's other ranks; the others are
// reduced to their steps' totals at once, so memory holds one trace at a time.
bool StepCollector::WaitsForRanks(const Trace& trace) {
  const trace::StepInfo& info = trace.step_info();
  return info.step >= 0 && info.rank >= 0 && info.world_size > 1 && !trace.slices().empty();
}

TraceSteps StepsOfInput(const Trace& trace) {
  return {.source = trace.source_path(), .waits_for_ranks = StepCollector::WaitsForRanks(trace),
          .step = trace.step_info().step, .rank = trace.step_info().rank, .steps = StepsOfTrace(trace)};
}

Status StepCollector::Add(Trace&& trace) {
  ++traces_;
  if (WaitsForRanks(trace)) {
    const int64_t step = trace.step_info().step;
    TraceSteps digest{.source = trace.source_path(), .waits_for_ranks = true, .step = step,
                      .rank = trace.step_info().rank, .steps = {}};
    by_step_[step].push_back({std::move(trace), std::move(digest)});
    return Status::Ok();
  }
  return AddSteps(StepsOfTrace(trace), trace.source_path());
}

Status StepCollector::Add(const Trace& trace) {
  if (WaitsForRanks(trace)) return Internal(trace.source_path() + ": a rank's step trace is kept until Finish: add it moved");
  ++traces_;
  return AddSteps(StepsOfTrace(trace), trace.source_path());
}

Status StepCollector::Add(TraceSteps digest, std::function<StatusOr<Trace>()> read_again) {
  ++traces_;
  if (digest.waits_for_ranks) {
    const int64_t step = digest.step;
    by_step_[step].push_back({std::nullopt, std::move(digest), std::move(read_again)});
    return Status::Ok();
  }
  const std::string source = digest.source;
  return AddSteps(std::move(digest.steps), source);
}

StatusOr<std::vector<Step>> StepCollector::Finish() && {
  if (traces_ == 0) return InvalidInput("no traces given");
  for (auto& [number, waiting] : by_step_) {
    std::vector<int32_t> ranks;
    for (const Waiting& w : waiting) ranks.push_back(w.digest.rank);
    std::sort(ranks.begin(), ranks.end());
    const bool distinct_ranks = std::adjacent_find(ranks.begin(), ranks.end()) == ranks.end();
    if (waiting.size() == 1 || !distinct_ranks) {
      // One rank, or the same step of several runs: each file is a step of its own.
      for (Waiting& w : waiting) {
        RETURN_IF_ERROR(AddSteps(w.trace ? StepsOfTrace(*w.trace) : std::move(w.digest.steps), w.digest.source));
      }
      continue;
    }
    std::string sources;
    std::vector<Trace> traces;
    for (Waiting& w : waiting) {
      sources += (sources.empty() ? "" : ", ") + w.digest.source;
      if (!w.trace && !w.read_again) {
        return InvalidInput(w.digest.source + ": step " + std::to_string(number) + " of " +
                            std::to_string(waiting.size()) + " ranks is merged from their traces, and " +
                            "this one was given only as its steps");
      }
      if (!w.trace) {
        ASSIGN_OR_RETURN(Trace again, w.read_again());
        w.trace = std::move(again);
      }
      traces.push_back(std::move(*w.trace));
    }
    MergeResult merged = MergeTraces(std::move(traces));
    std::vector<Step> found = StepsOfTrace(merged.trace);
    for (Step& s : found) {
      s.source = sources;
      s.step = number;
      s.marker = "ranks merged";
      s.run = std::filesystem::path(sources.substr(0, sources.find(", "))).parent_path().string();
    }
    RETURN_IF_ERROR(AddSteps(std::move(found), sources));
  }
  std::stable_sort(steps_.begin(), steps_.end(), [](const Step& x, const Step& y) {
    if (x.step != y.step) return x.step < y.step;
    return x.source < y.source;
  });
  return std::move(steps_);
}

namespace {

using Extract = const std::vector<StepOpTotal>& (*)(const Step&);

void FindCauses(const std::vector<Step>& steps, const std::vector<size_t>& outliers, const char* table,
                Extract extract, size_t top, std::vector<StepOutlier>& out) {
  // key -> per-step totals (0 where the step does not have it)
  std::map<std::pair<std::string, std::string>, std::vector<double>> series;
  for (size_t i = 0; i < steps.size(); ++i) {
    for (const StepOpTotal& t : extract(steps[i])) {
      auto& values = series[{t.name, t.where}];
      values.resize(steps.size(), 0.0);
      values[i] += static_cast<double>(t.total_ns);
    }
  }
  for (size_t k = 0; k < outliers.size(); ++k) {
    std::vector<OutlierCause> causes;
    for (auto& [key, values] : series) {
      values.resize(steps.size(), 0.0);
      const double usual = Median(values);
      const double deviation = values[outliers[k]] - usual;
      if (deviation == 0) continue;
      OutlierCause c;
      c.table = table;
      c.name = key.first;
      c.where = key.second;
      c.value_ns = static_cast<int64_t>(values[outliers[k]]);
      c.usual_ns = usual;
      c.deviation_ns = deviation;
      c.z = RobustZScores(values)[outliers[k]];
      causes.push_back(std::move(c));
    }
    std::stable_sort(causes.begin(), causes.end(), [](const OutlierCause& x, const OutlierCause& y) {
      return std::fabs(x.deviation_ns) > std::fabs(y.deviation_ns);
    });
    if (causes.size() > top) causes.resize(top);
    for (auto& c : causes) out[k].causes.push_back(std::move(c));
  }
}

}  // namespace

StepsReport AnalyzeSteps(std::vector<Step> steps, size_t top) {
  StepsReport report;
  report.steps = std::move(steps);
  std::vector<double> durations;
  durations.reserve(report.steps.size());
  for (const Step& s : report.steps) durations.push_back(static_cast<double>(s.duration_ns));
  const Spread spread = Describe(durations);
  report.median_ns = spread.median;
  report.mad_ns = spread.mad;
  report.mean_ns = spread.mean;
  report.stddev_ns = spread.stddev;
  report.cv = spread.cv;
  report.p50_ns = spread.p50;
  report.p95_ns = spread.p95;
  report.p95_over_p50 = spread.p95_over_p50;
  report.min_ns = spread.min;
  report.max_ns = spread.max;
  report.z = RobustZScores(durations);
  std::vector<size_t> outliers;
  for (size_t i = 0; i < report.z.size(); ++i) {
    if (std::fabs(report.z[i]) > kOutlierZ) outliers.push_back(i);
  }
  for (size_t i : outliers) report.outliers.push_back({i, report.z[i], {}});
  if (outliers.empty()) return report;
  FindCauses(report.steps, outliers, "op type", [](const Step& s) -> const std::vector<StepOpTotal>& { return s.op_types; },
             top, report.outliers);
  FindCauses(report.steps, outliers, "node", [](const Step& s) -> const std::vector<StepOpTotal>& { return s.nodes; },
             top, report.outliers);
  FindCauses(report.steps, outliers, "kernel", [](const Step& s) -> const std::vector<StepOpTotal>& { return s.kernels; },
             top, report.outliers);
  return report;
}

}  // namespace stepscope::analysis
