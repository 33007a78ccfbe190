// Comparing runs: `steps` (every step of the traces given, step-to-step variance and outlier
// steps, analysis/steps.h) and `diff` (run A against run B: with several steps per side per op
// type, node and kernel with confidence, analysis/run_diff.h, and a regression gate for CI; with
// one step per side the aggregate deltas of analysis/diff.h).
#include <cmath>
#include <functional>
#include <map>
#include <span>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "profiler/analysis/diff.h"
#include "profiler/analysis/merge.h"
#include "profiler/analysis/run_diff.h"
#include "profiler/analysis/statistics.h"
#include "profiler/analysis/steps.h"
#include "profiler/cli/commands/commands.h"
#include "profiler/cli/commands/rank_digests.h"
#include "profiler/cli/commands/report.h"
#include "profiler/cli/report_format.h"
#include "profiler/formats/inputs.h"
#include "profiler/formats/reader.h"

namespace stepscope::cli {
namespace {

using trace::Trace;
using analysis::RunDiff;
using analysis::RunDiffRow;
using analysis::Step;

constexpr size_t kDefaultCauses = 5;
constexpr double kDefaultGateMinMs = 0.1;

std::string Signed(double ns) { return (ns > 0 ? "+" : "") + FormatDuration(ns); }

std::string SignedPercent(double share) { return (share > 0 ? "+" : "") + FormatPercent(share); }

std::string Z(double z) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%+.1f", z);
  return buffer;
}

std::string P(double p) {
  char buffer[32];
  if (p < 0.001) {
    std::snprintf(buffer, sizeof buffer, "%.1e", p);
  } else {
    std::snprintf(buffer, sizeof buffer, "%.3f", p);
  }
  return buffer;
}

std::string FileName(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// ---- steps -------------------------------------------------------------------------------------

// The steps of traces already read. A rank's step trace waits in the collector for its step's
// other ranks, to be merged with them: the collector takes it moved, so that one is read again
// from its file (a trace is never copied); every other is reduced where it lies.
StatusOr<std::vector<Step>> StepsOf(std::span<const Trace> traces) {
  analysis::StepCollector collector;
  for (const Trace& trace : traces) {
    if (!analysis::StepCollector::WaitsForRanks(trace)) {
      RETURN_IF_ERROR(collector.Add(trace));
      continue;
    }
    RETURN_IF_ERROR(trace::ForEachTrace({trace.source_path()}, [&](Trace again) { return collector.Add(std::move(again)); }));
  }
  return std::move(collector).Finish();
}

// `steps` on its steps (the JSON document, or text).
Status StepsReport(size_t top, std::vector<Step> steps, const ParsedArgs& args, CommandOutput& output) {
  std::ostream& out = output.text;
  const analysis::StepsReport report = analysis::AnalyzeSteps(std::move(steps), top);
  if (args.Has("json")) {
    Json doc;
    doc["schema"] = "stepscope.steps/1";
    doc["duration"] = {{"steps", report.steps.size()}, {"median_ns", report.median_ns}, {"mad_ns", report.mad_ns},
                       {"mean_ns", report.mean_ns}, {"stddev_ns", report.stddev_ns}, {"cv", report.cv},
                       {"p50_ns", report.p50_ns}, {"p95_ns", report.p95_ns},
                       {"p95_over_p50", report.p95_over_p50}, {"min_ns", report.min_ns}, {"max_ns", report.max_ns}};
    Json list = Json::array();
    for (size_t i = 0; i < report.steps.size(); ++i) {
      const Step& s = report.steps[i];
      list.push_back({{"step", s.step}, {"source", s.source}, {"marker", s.marker}, {"begin_ns", s.begin_ns},
                      {"duration_ns", s.duration_ns}, {"z", report.z[i]},
                      {"outlier", std::fabs(report.z[i]) > analysis::kOutlierZ}});
    }
    doc["steps"] = list;
    Json outliers = Json::array();
    for (const auto& o : report.outliers) {
      Json causes = Json::array();
      for (const auto& c : o.causes) {
        causes.push_back({{"table", c.table}, {"name", c.name}, {"where", c.where}, {"value_ns", c.value_ns},
                          {"usual_ns", c.usual_ns}, {"deviation_ns", c.deviation_ns}, {"z", c.z}});
      }
      const Step& s = report.steps[o.step];
      outliers.push_back({{"step", s.step}, {"source", s.source}, {"duration_ns", s.duration_ns}, {"z", o.z},
                          {"causes", causes}});
    }
    doc["outliers"] = outliers;
    output.doc = std::move(doc);
    return Status::Ok();
  }
  out << "steps      " << report.steps.size() << "\n";
  out << "duration   median " << FormatDuration(report.median_ns) << ", MAD " << FormatDuration(report.mad_ns)
      << ", mean " << FormatDuration(report.mean_ns) << ", CV " << FormatPercent(report.cv) << ", p95/p50 "
      << FormatFixed(report.p95_over_p50, 3) << ", min " << FormatDuration(report.min_ns) << ", max "
      << FormatDuration(report.max_ns) << "\n";
  out << "outliers   " << report.outliers.size() << " (robust z = 0.6745 (x - median) / MAD, |z| > 3.5)\n\n";
  TextTable table({8, 12, 8, -48, -8});
  table.Row({"step", "duration", "z", "source", ""});
  for (size_t i = 0; i < report.steps.size(); ++i) {
    const Step& s = report.steps[i];
    std::string where = FileName(s.source);
    if (s.marker != "trace") where += " (" + s.marker + ")";
    table.Row({IntText(s.step), FormatDuration(s.duration_ns), Z(report.z[i]), Truncate(where, 48),
               std::fabs(report.z[i]) > analysis::kOutlierZ ? "outlier" : ""});
  }
  out << table.str();
  for (const auto& o : report.outliers) {
    const Step& s = report.steps[o.step];
    out << "\nStep " << s.step << " (" << FormatDuration(s.duration_ns) << ", z " << Z(o.z)
        << "): what deviated most from its median over the steps\n";
    TextTable causes({-8, -40, -6, 12, 12, 12, 8});
    causes.Row({"table", "name", "where", "this step", "usual", "deviation", "z"});
    for (const auto& c : o.causes) {
      causes.Row({c.table, Truncate(c.name, 40), c.where, FormatDuration(c.value_ns), FormatDuration(c.usual_ns),
                  Signed(c.deviation_ns), Z(c.z)});
    }
    out << causes.str();
  }
  return Status::Ok();
}

Status AnalyseSteps(const LoadedInputs& inputs, const ParsedArgs& args, CommandOutput& output) {
  ASSIGN_OR_RETURN(const size_t top, PositiveFlag(args, "top", kDefaultCauses));
  ASSIGN_OR_RETURN(std::vector<Step> steps, StepsOf(inputs.traces));
  return StepsReport(top, std::move(steps), args, output);
}

// The steps of the traces `paths` name, read one at a time, each reduced to its digest (StepsOfInput)
// as a process of a spread run sends it; a rank's step trace that waits for its step's other ranks
// is kept whole until they are merged.
StatusOr<std::vector<Step>> StepsOfPaths(const std::vector<std::string>& paths) {
  analysis::StepCollector collector;
  RETURN_IF_ERROR(trace::ForEachTrace(paths, [&](Trace trace) {
    if (analysis::StepCollector::WaitsForRanks(trace)) return collector.Add(std::move(trace));
    return collector.Add(analysis::StepsOfInput(trace));
  }));
  return std::move(collector).Finish();
}

// The same from the digests of a spread run (those of side `side`, or all), in input order: its
// first unreadable input fails it, as ForEachTrace stops; a waiting rank's step trace is read
// again where its step is merged.
StatusOr<std::vector<Step>> StepsOfDigests(std::span<const analysis::InputDigest> inputs,
                                           std::optional<uint32_t> side) {
  analysis::StepCollector collector;
  for (const analysis::InputDigest& input : inputs) {
    if (side && input.side != *side) continue;
    RETURN_IF_ERROR(input.read);
    RETURN_IF_ERROR(collector.Add(input.steps, [path = input.path] { return trace::ReadTrace(path); }));
  }
  return std::move(collector).Finish();
}

// Reads the traces one at a time, each reduced to its steps (StepsOfInput: what a process of
// `mpirun -np N stepscope steps` sends, combined by the same collector) before the next is read;
// a rank's step trace that waits for its step's other ranks is kept whole, to be merged with them.
Status RunSteps(const ParsedArgs& args, std::ostream& out, std::ostream& err) {
  ASSIGN_OR_RETURN(const size_t top, PositiveFlag(args, "top", kDefaultCauses));
  ASSIGN_OR_RETURN(std::vector<Step> steps, StepsOfPaths(args.positional));
  return AnalyseAndPrint(
      [&](const LoadedInputs&, const ParsedArgs&, CommandOutput& output) {
        return StepsReport(top, std::move(steps), args, output);
      },
      {}, args, out, err);
}

// ---- diff over steps ---------------------------------------------------------------------------

struct Gate {
  bool on = false;
  double pct = 0, min_ms = kDefaultGateMinMs;
};

StatusOr<Gate> ParseGate(const ParsedArgs& args) {
  Gate gate;
  const auto text = args.Get("fail-on-regression");
  if (!text) return gate;
  gate.on = true;
  const std::string& t = *text;
  const size_t comma = t.find(',');
  auto number = [&](const std::string& part, double& value) {
    char* end = nullptr;
    value = std::strtod(part.c_str(), &end);
    return !part.empty() && end == part.c_str() + part.size() && std::isfinite(value) && value >= 0;
  };
  if (!number(t.substr(0, comma), gate.pct) ||
      (comma != std::string::npos && !number(t.substr(comma + 1), gate.min_ms))) {
    return InvalidInput("--fail-on-regression " + t + ": expected PCT[,MIN_MS], e.g. 10 or 10,0.5 (numbers >= 0)");
  }
  return gate;
}

Json RowJson(const RunDiffRow& r) {
  return {{"name", r.name}, {"op_type", r.op_type}, {"where", r.where}, {"verdict", r.verdict},
          {"steps_present_a", r.present_a}, {"steps_present_b", r.present_b},
          {"median_a_ns", r.median_a}, {"median_b_ns", r.median_b}, {"delta_ns", r.delta_ns},
          {"change", r.change}, {"ci_low_ns", r.ci_low_ns}, {"ci_high_ns", r.ci_high_ns},
          {"p", r.p}, {"q", r.q}, {"exact", r.exact},
          {"mad_a_ns", r.spread_a.mad}, {"mad_b_ns", r.spread_b.mad}, {"cv_a", r.spread_a.cv}, {"cv_b", r.spread_b.cv},
          {"per_step_a_ns", r.a}, {"per_step_b_ns", r.b}};
}

std::string Counts(const std::vector<RunDiffRow>& rows) {
  int64_t regressed = 0, improved = 0, unchanged = 0, inconclusive = 0, added = 0, gone = 0;
  for (const auto& r : rows) {
    if (r.verdict == "regressed") ++regressed;
    else if (r.verdict == "improved") ++improved;
    else if (r.verdict == "new") ++added;
    else if (r.verdict == "gone") ++gone;
    else if (r.verdict == "unchanged") ++unchanged;
    else ++inconclusive;
  }
  return IntText(regressed) + " regressed, " + IntText(improved) + " improved, " + IntText(unchanged) + " unchanged, " +
         IntText(inconclusive) + " inconclusive, " + IntText(added) + " new, " + IntText(gone) + " gone";
}

std::string Side(const std::vector<std::string>& sources, size_t steps, size_t runs) {
  std::string text = IntText(static_cast<int64_t>(steps)) + " steps of " + IntText(static_cast<int64_t>(runs)) + " run" +
                     (runs == 1 ? "" : "s") + " from " + IntText(static_cast<int64_t>(sources.size())) + " trace" +
                     (sources.size() == 1 ? "" : "s");
  if (!sources.empty()) {
    text += " (" + sources.front() + (sources.size() > 1 ? " ... " + FileName(sources.back()) : "") + ")";
  }
  return text;
}

std::string DiffText(const RunDiff& d, size_t top) {
  std::string out;
  out += "A      " + Side(d.sources_a, d.steps_a, d.runs_a) + "\n";
  out += "B      " + Side(d.sources_b, d.steps_b, d.runs_b) + "\n";
  const RunDiffRow& s = d.step;
  out += "step   A median " + FormatDuration(s.median_a) + " (MAD " + FormatDuration(s.spread_a.mad) + ", CV " +
         FormatPercent(s.spread_a.cv) + "), B median " + FormatDuration(s.median_b) + " (MAD " +
         FormatDuration(s.spread_b.mad) + ", CV " + FormatPercent(s.spread_b.cv) + ")\n";
  out += "       delta " + Signed(s.delta_ns) + " (" + SignedPercent(s.change) + "), " +
         FormatPercent(d.options.bootstrap.confidence) + " CI [" + Signed(s.ci_low_ns) + ", " + Signed(s.ci_high_ns) +
         "], p " + P(s.p) + ": " + s.verdict + "\n";
  out += std::string("method ") +
         (d.per_run ? "Welch's t on the log run medians per row" : "Mann-Whitney U over the steps per row") +
         ", Benjamini-Hochberg q over each table, " +
         IntText(d.options.bootstrap.resamples) + " bootstrap resamples of runs and their steps (seed " +
         std::to_string(d.options.bootstrap.seed) + "); verdict when q < " + FormatFixed(d.options.alpha, 3) +
         ", the CI excludes 0 and |change| >= " + FormatPercent(d.options.min_change) + "; unchanged when the CI lies within +-" +
         FormatPercent(d.options.tolerance) + " of A's median, else inconclusive\n";
  if (!d.confident) {
    out += "note   with " + IntText(static_cast<int64_t>(d.steps_a)) + " and " + IntText(static_cast<int64_t>(d.steps_b)) +
           " steps the smallest possible p is " + P(d.min_p) + ": no change can be shown with confidence\n";
  }
  if (d.confident && !d.per_run) {
    const bool few_a = d.runs_a < analysis::kMinRunsForRunTest, few_b = d.runs_b < analysis::kMinRunsForRunTest;
    out += "note   fewer than " + IntText(static_cast<int64_t>(analysis::kMinRunsForRunTest)) + " runs on " +
           std::string(few_a && few_b ? "each side" : few_a ? "side A" : "side B") +
           ": the steps are tested, and a difference between whole runs (the machine's load while each\n"
           "       ran) looks like a change here; give several runs per side (docs/compare.md)\n";
  }
  out += "op types  " + Counts(d.by_op_type) + "\n";
  out += "nodes     " + Counts(d.by_node) + "\n";
  if (!d.by_kernel.empty()) out += "kernels   " + Counts(d.by_kernel) + "\n";
  auto table = [&](const std::vector<RunDiffRow>& rows, const char* title, const char* column) {
    if (rows.empty()) return;
    out += std::string("\n") + title + " by impact on the step (median per step; top " +
           std::to_string(std::min(top, rows.size())) + " of " + std::to_string(rows.size()) + ")\n";
    TextTable t({-40, -6, 11, 11, 11, -25, 8, 8, -9});
    t.Row({column, "where", "A", "B", "delta", "CI", "change", "q", "verdict"});
    for (size_t i = 0; i < rows.size() && i < top; ++i) {
      const RunDiffRow& r = rows[i];
      t.Row({Truncate(r.name, 40), r.where, FormatDuration(r.median_a), FormatDuration(r.median_b), Signed(r.delta_ns),
             "[" + Signed(r.ci_low_ns) + ", " + Signed(r.ci_high_ns) + "]",
             r.median_a != 0 ? SignedPercent(r.change) : "-", P(r.q), r.verdict});
    }
    out += t.str();
  };
  table(d.by_op_type, "Op types", "op type");
  table(d.by_node, "Nodes", "node");
  table(d.by_kernel, "Kernels (names normalised)", "kernel");
  return out;
}

std::vector<FlagSpec> DiffCompareFlags() {
  return {{"vs", "", "A... --vs B...: the traces before it are side A, those after it side B"},
          {"fail-on-regression", "PCT[,MIN_MS]",
           "exit 3 when an op type, node or kernel regressed with confidence by more than PCT percent and "
           "MIN_MS ms of median per-step time (default 0.1 ms); needs several steps per side"},
          {"min-change", "PCT", "smallest change of the median a verdict reports (default 2)"},
          {"tolerance", "PCT",
           "unchanged only when the change's CI lies within +-PCT percent of A's median, else inconclusive (default 5)"},
          {"alpha", "A", "false discovery rate for verdicts (default 0.05)"},
          {"resamples", "N", "bootstrap resamples (default 2000)"},
          {"seed", "N", "bootstrap seed (default 1)"}};
}

StatusOr<std::pair<std::vector<std::string>, std::vector<std::string>>> DiffSides(const ParsedArgs& args) {
  const std::vector<std::string>& p = args.positional;
  std::pair<std::vector<std::string>, std::vector<std::string>> sides;
  if (args.Has("vs")) {
    const size_t split = args.positional_before.at("vs");
    sides.first.assign(p.begin(), p.begin() + static_cast<std::ptrdiff_t>(split));
    sides.second.assign(p.begin() + static_cast<std::ptrdiff_t>(split), p.end());
    if (sides.first.empty()) return InvalidInput("side A is empty: give traces or directories before --vs");
    if (sides.second.empty()) return InvalidInput("side B is empty: give traces or directories after --vs");
    return sides;
  }
  if (p.size() != 2) {
    return InvalidInput("expected A B (a trace or directory each) or A... --vs B..., got " +
                        std::to_string(p.size()) + " argument(s)");
  }
  sides.first = {p[0]};
  sides.second = {p[1]};
  return sides;
}

// Each side's steps: read from the paths, or of traces already read.
using StepsOfSide = std::function<StatusOr<std::vector<Step>>()>;

Status RunStepDiff(const ParsedArgs& args, const StepsOfSide& a, const StepsOfSide& b, CommandOutput& output,
                   bool& handled) {
  std::ostream& out = output.text;
  std::ostream& err = output.err;
  handled = false;
  ASSIGN_OR_RETURN(const size_t top, PositiveFlag(args, "top", kDefaultTop));
  ASSIGN_OR_RETURN(const Gate gate, ParseGate(args));
  analysis::RunDiffOptions options;
  ASSIGN_OR_RETURN(const double min_change, args.GetDouble("min-change", 100 * options.min_change, 0, 1e6));
  ASSIGN_OR_RETURN(const double tolerance, args.GetDouble("tolerance", 100 * options.tolerance, 0, 1e6));
  ASSIGN_OR_RETURN(options.alpha, args.GetDouble("alpha", options.alpha, 1e-12, 1));
  ASSIGN_OR_RETURN(const int64_t resamples, args.GetInt("resamples", options.bootstrap.resamples, 1, 1000000));
  ASSIGN_OR_RETURN(const int64_t seed, args.GetInt("seed", 1, 0));
  options.min_change = min_change / 100;
  options.tolerance = tolerance / 100;
  options.bootstrap.resamples = static_cast<int>(resamples);
  options.bootstrap.seed = static_cast<uint64_t>(seed);

  ASSIGN_OR_RETURN(std::vector<Step> steps_a, a());
  ASSIGN_OR_RETURN(std::vector<Step> steps_b, b());
  if (steps_a.size() == 1 && steps_b.size() == 1) {
    err << "note: one step on each side: this is the aggregate diff, no confidence can be given (give several "
           "steps per side for statistics)\n";
    if (gate.on) err << "note: --fail-on-regression needs several steps per side; the gate is not applied\n";
    return Status::Ok();
  }
  handled = true;
  const RunDiff diff = analysis::DiffRuns(steps_a, steps_b, options);
  const std::vector<analysis::GateHit> hits = analysis::RegressionGate(diff, gate.pct, gate.min_ms * 1e6);
  if (gate.on && !diff.confident) {
    err << "note: with " << diff.steps_a << " and " << diff.steps_b
        << " steps no change can be shown with confidence; the gate cannot fail\n";
  }
  if (args.Has("json")) {
    Json doc;
    doc["schema"] = "stepscope.diff/2";
    doc["a"] = {{"sources", diff.sources_a}, {"steps", diff.steps_a}, {"runs", diff.runs_a}};
    doc["b"] = {{"sources", diff.sources_b}, {"steps", diff.steps_b}, {"runs", diff.runs_b}};
    doc["method"] = {{"test", diff.per_run ? "welch-t-log-run-medians" : "mann-whitney-u"}, {"correction", "benjamini-hochberg"},
                     {"bootstrap_resamples", diff.options.bootstrap.resamples},
                     {"confidence", diff.options.bootstrap.confidence}, {"seed", diff.options.bootstrap.seed},
                     {"alpha", diff.options.alpha}, {"min_change", diff.options.min_change},
                     {"tolerance", diff.options.tolerance}};
    doc["min_p"] = diff.min_p;
    doc["confident"] = diff.confident;
    doc["step"] = RowJson(diff.step);
    for (auto [key, rows] : {std::pair{"by_op_type", &diff.by_op_type}, std::pair{"by_node", &diff.by_node},
                             std::pair{"by_kernel", &diff.by_kernel}}) {
      Json list = Json::array();
      for (const RunDiffRow& r : *rows) list.push_back(RowJson(r));
      doc[key] = list;
    }
    Json gate_doc = {{"enabled", gate.on}, {"pct", gate.pct}, {"min_ms", gate.min_ms},
                     {"failed", gate.on && !hits.empty()}};
    Json hit_list = Json::array();
    if (gate.on) {
      for (const auto& h : hits) {
        hit_list.push_back({{"table", h.table}, {"name", h.row->name}, {"where", h.row->where},
                            {"change", h.row->change}, {"delta_ns", h.row->delta_ns}, {"q", h.row->q}});
      }
    }
    gate_doc["regressions"] = hit_list;
    doc["gate"] = gate_doc;
    output.doc = std::move(doc);
  } else {
    out << DiffText(diff, top);
    if (gate.on) {
      out << "\ngate   --fail-on-regression " << FormatFixed(gate.pct, 1) << "%, " << FormatFixed(gate.min_ms, 3)
          << " ms: " << (hits.empty() ? "passed" : "FAILED") << "\n";
      for (const auto& h : hits) {
        out << "  " << h.table << " " << h.row->name << " (" << h.row->where << ") " << Signed(h.row->delta_ns) << " ("
            << SignedPercent(h.row->change) << ") per step, q " << P(h.row->q) << "\n";
      }
    }
  }
  if (gate.on && !hits.empty()) {
    return CheckFailed("regression gate: " + std::to_string(hits.size()) + " op(s) regressed by more than " +
                       FormatFixed(gate.pct, 1) + "% and " + FormatFixed(gate.min_ms, 3) + " ms per step (first: " +
                       hits.front().table + " " + hits.front().row->name + ", " +
                       SignedPercent(hits.front().row->change) + ")");
  }
  return Status::Ok();
}

// ---- diff ------------------------------------------------------------------------------------

std::vector<FlagSpec> DiffFlags() {
  std::vector<FlagSpec> flags = {{"json", "", "write the result as JSON"},
                                 {"top", "N", "rows per table in text output (default 15)"}};
  for (FlagSpec& f : DiffCompareFlags()) flags.push_back(std::move(f));
  return flags;
}

// The aggregate diff of one step per side: each side as one trace.
Status TraceDiffReport(const Trace& a, const Trace& b, size_t top, const ParsedArgs& args, CommandOutput& output) {
  std::ostream& out = output.text;
  const analysis::TraceDiff diff = analysis::DiffTraces(a, b);
  if (args.Has("json")) {
    nlohmann::ordered_json doc;
    doc["schema"] = "stepscope.diff/1";
    doc["a"] = a.source_path();
    doc["b"] = b.source_path();
    doc["span_a_ns"] = diff.span_a;
    doc["span_b_ns"] = diff.span_b;
    doc["total_a_ns"] = diff.total_a;
    doc["total_b_ns"] = diff.total_b;
    auto rows = [](const std::vector<analysis::DiffRow>& list) {
      auto json = nlohmann::ordered_json::array();
      for (const auto& r : list) {
        json.push_back({{"name", r.name}, {"op_type", r.op_type}, {"where", r.where}, {"presence", r.presence},
                        {"count_a", r.count_a}, {"count_b", r.count_b}, {"total_a_ns", r.total_a},
                        {"total_b_ns", r.total_b}, {"delta_ns", r.delta_ns}, {"delta_count", r.delta_count},
                        {"ratio", r.ratio}});
      }
      return json;
    };
    doc["by_op_type"] = rows(diff.by_op_type);
    doc["by_node"] = rows(diff.by_node);
    output.doc = std::move(doc);
    return Status::Ok();
  }
  out << "A      " << a.source_path() << "  span " << FormatDuration(diff.span_a) << ", op time "
      << FormatDuration(diff.total_a) << "\n";
  out << "B      " << b.source_path() << "  span " << FormatDuration(diff.span_b) << ", op time "
      << FormatDuration(diff.total_b) << "\n";
  out << "delta  span " << FormatDuration(diff.span_b - diff.span_a) << ", op time "
      << FormatDuration(diff.total_b - diff.total_a) << "\n";
  auto table = [&](const std::vector<analysis::DiffRow>& list, const char* title, const char* column) {
    out << "\n" << title << " by impact (top " << std::min(top, list.size()) << " of " << list.size() << ")\n";
    TextTable t({-40, -6, 13, 12, 12, 12, 7});
    t.Row({column, "where", "count A>B", "A", "B", "delta", "B/A"});
    for (size_t i = 0; i < list.size() && i < top; ++i) {
      const auto& r = list[i];
      t.Row({Truncate(r.name, 40), r.where, IntText(r.count_a) + ">" + IntText(r.count_b), FormatDuration(r.total_a),
             FormatDuration(r.total_b), (r.delta_ns > 0 ? "+" : "") + FormatDuration(r.delta_ns),
             r.presence == "only_b" ? "new" : r.presence == "only_a" ? "gone" : FormatFixed(r.ratio, 2)});
    }
    out << t.str();
  };
  table(diff.by_op_type, "Op types", "op type");
  table(diff.by_node, "Nodes", "node");
  return Status::Ok();
}

// The diff of the sides' steps (`a`, `b`) printed; with one step a side, the aggregate diff of the
// sides' traces read again, merged. One process and process 0 of several (DiffFromDigests) print
// through here alike.
Status PrintDiff(const ParsedArgs& args, const StepsOfSide& a, const StepsOfSide& b, std::ostream& out,
                 std::ostream& err) {
  ASSIGN_OR_RETURN(const size_t top, PositiveFlag(args, "top", kDefaultTop));
  ASSIGN_OR_RETURN(const auto sides, DiffSides(args));
  bool handled = false;
  CommandOutput output{.text = out, .err = err};
  const Status steps = RunStepDiff(args, a, b, output, handled);
  if (output.doc) EmitJson(out, *output.doc);
  if (!steps.ok() || handled) return steps;
  ASSIGN_OR_RETURN(std::vector<Trace> traces_a, trace::ReadTraces(sides.first));
  ASSIGN_OR_RETURN(std::vector<Trace> traces_b, trace::ReadTraces(sides.second));
  const Trace a_trace = analysis::OneTrace(std::move(traces_a));
  const Trace b_trace = analysis::OneTrace(std::move(traces_b));
  return AnalyseAndPrint([&](const LoadedInputs&, const ParsedArgs&, CommandOutput& o) {
    return TraceDiffReport(a_trace, b_trace, top, args, o);
  }, {}, args, out, err);
}

// Side A and side B read one trace at a time for their steps, and again, merged, for the
// aggregate diff of one step each.
Status RunTraceDiff(const ParsedArgs& args, std::ostream& out, std::ostream& err) {
  RETURN_IF_ERROR(PositiveFlag(args, "top", kDefaultTop).status());
  ASSIGN_OR_RETURN(const auto sides, DiffSides(args));
  return PrintDiff(
      args, [&] { return StepsOfPaths(sides.first); }, [&] { return StepsOfPaths(sides.second); }, out, err);
}

// The same on traces already read: side A `traces` (or `one`), side B `vs`, each one trace for
// the aggregate diff (kInternal otherwise: merging takes the traces).
Status AnalyseDiff(const LoadedInputs& inputs, const ParsedArgs& args, CommandOutput& output) {
  ASSIGN_OR_RETURN(const size_t top, PositiveFlag(args, "top", kDefaultTop));
  RETURN_IF_ERROR(DiffSides(args).status());
  bool handled = false;
  RETURN_IF_ERROR(RunStepDiff(
      args, [&] { return StepsOf(inputs.traces); }, [&] { return StepsOf(inputs.vs); }, output, handled));
  if (handled) return Status::Ok();
  if (inputs.traces.size() != 1 || inputs.vs.size() != 1) {
    return Internal("diff of one step per side takes one trace per side");
  }
  return TraceDiffReport(inputs.traces.front(), inputs.vs.front(), top, args, output);
}

}  // namespace

Status StepsFromDigests(const ParsedArgs& args, std::span<const analysis::InputDigest> inputs, CommandOutput& out) {
  ASSIGN_OR_RETURN(const size_t top, PositiveFlag(args, "top", kDefaultCauses));
  ASSIGN_OR_RETURN(std::vector<Step> steps, StepsOfDigests(inputs, std::nullopt));
  return StepsReport(top, std::move(steps), args, out);
}

analysis::InputDigest DiffDigest(const Trace& trace, size_t input, size_t /*inputs*/, const ParsedArgs& /*args*/) {
  analysis::InputDigest digest;
  digest.input = input;
  digest.steps = analysis::StepsOfInput(trace);
  return digest;
}

Status DiffFromDigests(const ParsedArgs& args, std::span<const analysis::InputDigest> inputs, std::ostream& out,
                       std::ostream& err) {
  return PrintDiff(args, [&] { return StepsOfDigests(inputs, 0); }, [&] { return StepsOfDigests(inputs, 1); }, out, err);
}

StatusOr<std::pair<std::vector<std::string>, std::vector<std::string>>> DiffSidesOf(const ParsedArgs& args) {
  return DiffSides(args);
}

CommandSpec StepsCommand() {
  return {.name = "steps",
          .synopsis = "TRACE|DIR... [--json] [--top N]",
          .description =
              "Every step in the traces given: each step trace (stepscope-train's per-step files, a\n"
              "RunMetadata without step markers; one step's files from several ranks are merged) and\n"
              "each ProfilerStep#N span of a PyTorch profiler trace. Prints each step's duration, the\n"
              "jitter across steps (median, MAD, coefficient of variation, p95/p50), and the outlier\n"
              "steps by robust z-score 0.6745 (x - median) / MAD, |z| > 3.5, each with the op types,\n"
              "nodes and kernels whose time in it deviated most from their median over the steps.",
          .flags =
              {{"json", "", "write the result as JSON"},
              {"top", "N", "causes listed per outlier and table (default 5)"}},
          .run = RunSteps,
          .analyse = AnalyseSteps};
}

CommandSpec DiffCommand() {
  return {.name = "diff",
          .synopsis = "A B | A... --vs B... [--json] [--top N] [--fail-on-regression PCT[,MIN_MS]]",
          .description =
              "Compares run A with run B. Each side is a trace, a directory, or several of them (A... --vs\n"
              "B...); every step in them counts (see `stepscope steps`). With several steps per side: per\n"
              "op type, node and kernel (names normalised), the per-step totals of each side, the change\n"
              "of the median with a bootstrap 95% confidence interval, a Mann-Whitney p-value, Benjamini-\n"
              "Hochberg q-values over each table, and a verdict (regressed, improved, unchanged, new,\n"
              "gone), sorted by impact on the step (JSON schema stepscope.diff/2). With one step per side:\n"
              "count and time deltas from A to B (stepscope.diff/1), no confidence given. Ops present on\n"
              "one side only are marked, so runs of different configurations compare too.",
          .flags = DiffFlags(),
          .min_positional = 0,
          .run = RunTraceDiff,
          .analyse = AnalyseDiff,
          .more_exit_codes = ", 3 a check failed: regression gate (--fail-on-regression)"};
}

}  // namespace stepscope::cli
