// `stepscope step-breakdown`: each step's time split into input, compute, communication and idle,
// the slow steps and one-line recommendations (analysis/step_breakdown.h), as text and JSON.
#include <string>

#include "profiler/analysis/step_breakdown.h"
#include "profiler/cli/commands/commands.h"
#include "profiler/cli/commands/report.h"
#include "profiler/cli/report_format.h"

namespace stepscope::cli {
namespace {

using analysis::StepBreakdown;
using analysis::StepPart;
using analysis::StepSplit;
using trace::Trace;

constexpr StepPart kParts[] = {StepPart::kInput, StepPart::kCompute, StepPart::kCommunication, StepPart::kIdle};

std::string StepLabel(const StepSplit& s) {
  return s.step >= 0 || s.marker == "trace" || s.marker == "ranks merged" ? std::to_string(s.number) : s.marker;
}

std::string BreakdownText(const Trace& trace, const TableOptions&) {
  const StepBreakdown report = analysis::ComputeStepBreakdown(trace);
  std::string out = std::to_string(report.steps.size()) + (report.steps.size() == 1 ? " step" : " steps") + ", median " +
                    FormatDurationSignificant(report.median_ns) + ", MAD " + FormatDurationSignificant(report.mad_ns);
  out += report.slow_above_ns > 0 ? "; slow: longer than " + FormatDurationSignificant(report.slow_above_ns) +
                                        " (median + 3 MAD, at least 5 % over the median)\n"
                                  : "; slow steps need at least 3 steps\n";
  TextTable table({6, 12, 11, 8, 8, 14, 8, report.gpu ? 9 : 0, -4});
  table.Row({"step", "start", "duration", "input", "compute", "communication", "idle", report.gpu ? "gpu busy" : "", ""});
  for (const StepSplit& s : report.steps) {
    std::vector<std::string> row = {StepLabel(s), "+" + FormatDuration(s.begin_ns - trace.span_begin_ns()),
                                    FormatDuration(s.duration_ns)};
    for (StepPart p : kParts) row.push_back(FormatPercent(s.share(p)));
    row.push_back(report.gpu && s.duration_ns > 0
                      ? FormatPercent(static_cast<double>(s.gpu_busy_ns) / static_cast<double>(s.duration_ns))
                      : "");
    row.push_back(s.slow ? "slow" : "");
    table.Row(row);
  }
  out += table.str() + "run:\n";
  for (const auto& r : report.recommendations) out += "  " + analysis::RecommendationText(r) + "\n";
  for (const StepSplit& s : report.steps) {
    if (!s.slow) continue;
    out += "slow step " + StepLabel(s) + ":\n";
    for (const auto& r : s.recommendations) out += "  " + analysis::RecommendationText(r) + "\n";
  }
  return out;
}

Json PartsJson(const int64_t (&part_ns)[analysis::kStepParts]) {
  Json parts = Json::object();
  for (StepPart p : kParts) parts[std::string(analysis::StepPartName(p)) + "_ns"] = part_ns[static_cast<int>(p)];
  return parts;
}

Json RecommendationsJson(const std::vector<analysis::Recommendation>& recommendations) {
  auto out = Json::array();
  for (const auto& r : recommendations) {
    out.push_back({{"advice", analysis::AdviceName(r.advice)}, {"share", r.share},
                   {"text", analysis::RecommendationText(r)}});
  }
  return out;
}

Json BreakdownJson(const Trace& trace, size_t) {
  const StepBreakdown report = analysis::ComputeStepBreakdown(trace);
  auto doc = Document("step-breakdown", trace);
  doc["median_ns"] = report.median_ns;
  doc["mad_ns"] = report.mad_ns;
  doc["slow_above_ns"] = report.slow_above_ns;
  doc["total_ns"] = report.total_ns;
  doc["parts"] = PartsJson(report.part_ns);
  if (report.gpu) doc["gpu_busy_ns"] = report.gpu_busy_ns;
  doc["recommendations"] = RecommendationsJson(report.recommendations);
  auto steps = Json::array();
  for (const StepSplit& s : report.steps) {
    Json step = {{"number", s.number}, {"step", s.step}, {"marker", s.marker},
                 {"begin_ns", s.begin_ns - trace.span_begin_ns()}, {"end_ns", s.end_ns - trace.span_begin_ns()},
                 {"duration_ns", s.duration_ns}, {"parts", PartsJson(s.part_ns)}};
    if (s.gpu) step["gpu_busy_ns"] = s.gpu_busy_ns;
    step["slow"] = s.slow;
    step["recommendations"] = RecommendationsJson(s.recommendations);
    steps.push_back(step);
  }
  doc["steps"] = steps;
  return doc;
}

}  // namespace

CommandSpec StepBreakdownCommand() {
  return TraceReportCommand(
      "step-breakdown",
      "Each step's time split into input (the step waits for data: input ops run and no device\n"
      "work or communication does), compute (device compute, else host work), communication\n"
      "(collectives, NCCL kernels, copies between devices, not hidden by device compute) and\n"
      "idle (nothing recorded runs); the parts add up to the step. Steps longer than the median\n"
      "+ 3 MAD (and 5 % over the median) are marked slow. One-line recommendations for the run\n"
      "and for each slow step: input-bound, communication-bound, launch-bound (GPU idle not\n"
      "spent waiting for input), idle, else compute-bound. Several inputs or a directory are\n"
      "merged into one run first.",
      {.text = BreakdownText, .json = BreakdownJson});
}

}  // namespace stepscope::cli
