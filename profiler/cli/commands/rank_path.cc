// `stepscope critical-path DIR` over several ranks: after each input's own paths, the path of
// each step across the ranks (analysis/rank_critical_path.h), its segments and the waits that
// joined them, in text and as the JSON key "across_ranks".
#include <string>

#include "profiler/analysis/rank_critical_path.h"
#include "profiler/cli/commands/commands.h"
#include "profiler/cli/commands/rank_digests.h"
#include "profiler/cli/commands/report.h"
#include "profiler/cli/report_format.h"

namespace stepscope::cli {
namespace {

using analysis::CrossRankPath;
using analysis::PathBoundName;

// "waiting for rank 1 (its op AddmmBackward0) 5.0 ms at gloo:all_reduce", "" when no rank held.
std::string WaitingFor(const CrossRankPath& path) {
  if (path.held_by < 0) return "";
  const analysis::RankHold& h = path.holds[static_cast<size_t>(path.held_by)];
  return "waiting for rank " + std::to_string(h.rank) + " (its op " + (h.op.empty() ? "-" : h.op) + ") " +
         FormatDuration(h.late_ns) + " at " + h.collective;
}

Json WaitJson(const analysis::RankWait& w, int64_t origin) {
  return {{"rank", w.rank}, {"waited_for", w.waited_for}, {"collective", w.collective},
          {"arrival_ns", w.arrival_ns - origin}, {"wait_ns", w.wait_ns}, {"transfer_ns", w.transfer_ns}};
}

Json HoldJson(const analysis::RankHold& h, int64_t origin) {
  return {{"rank", h.rank}, {"collective", h.collective}, {"op", h.op}, {"op_name", h.op_name},
          {"arrival_ns", h.arrival_ns - origin}, {"late_ns", h.late_ns}};
}

Json StepJson(std::span<const std::string> sources, const CrossRankPath& path, int64_t origin) {
  Json step = {{"step", path.step}, {"begin_ns", path.begin_ns - origin}, {"end_ns", path.end_ns - origin},
               {"length_ns", path.length_ns}, {"bound_by", std::string(PathBoundName(path.bound_by))}};
  Json bounds = Json::object();
  for (int b = 0; b < analysis::kPathBounds; ++b) {
    bounds[std::string(PathBoundName(static_cast<analysis::PathBound>(b)))] = path.bound_ns[b];
  }
  step["bound_ns"] = bounds;
  step["transfer_ns"] = path.transfer_ns;
  step["gap_ns"] = path.gap_ns;
  step["waiting_for"] =
      path.held_by < 0 ? Json(nullptr) : HoldJson(path.holds[static_cast<size_t>(path.held_by)], origin);
  auto segments = Json::array();
  for (const analysis::RankSegment& s : path.segments) {
    segments.push_back({{"rank", s.rank}, {"source", sources[s.input]}, {"begin_ns", s.begin_ns - origin},
                        {"end_ns", s.end_ns - origin}, {"length_ns", s.length_ns},
                        {"bound_by", std::string(PathBoundName(s.bound_by))}, {"slices", s.slices}});
  }
  step["segments"] = segments;
  auto waits = Json::array();
  for (const analysis::RankWait& w : path.waits) waits.push_back(WaitJson(w, origin));
  step["waits"] = waits;
  auto holds = Json::array();
  for (const analysis::RankHold& h : path.holds) holds.push_back(HoldJson(h, origin));
  step["holds"] = holds;
  return step;
}

std::string StepText(const CrossRankPath& path, const TableOptions& options) {
  std::string ranks;
  for (const analysis::RankSegment& s : path.segments) ranks += (ranks.empty() ? "" : " -> ") + std::to_string(s.rank);
  std::string out = "== step " + std::to_string(path.step) + " across ranks\npath   " + FormatDuration(path.length_ns) +
                    " through rank(s) " + ranks + "\nbound  by " + std::string(PathBoundName(path.bound_by));
  const std::string waiting = WaitingFor(path);
  out += (waiting.empty() ? "" : "; " + waiting) + "\n\n";
  TextTable bounds({-20, 12, 7});
  bounds.Row({"bound by", "time", "share"});
  auto share = [&](int64_t ns) {
    return FormatPercent(path.length_ns > 0 ? static_cast<double>(ns) / static_cast<double>(path.length_ns) : 0);
  };
  for (int b = 0; b < analysis::kPathBounds; ++b) {
    if (path.bound_ns[b] == 0) continue;
    bounds.Row({std::string(PathBoundName(static_cast<analysis::PathBound>(b))), FormatDuration(path.bound_ns[b]),
                share(path.bound_ns[b])});
  }
  if (path.transfer_ns > 0) bounds.Row({"collective transfer", FormatDuration(path.transfer_ns), share(path.transfer_ns)});
  // A minus where the joins overlap (no plus: a gap is the usual case).
  if (path.gap_ns != 0) bounds.Row({"around joins", FormatSignedDuration(path.gap_ns), share(path.gap_ns)});
  out += bounds.str();
  if (!path.waits.empty()) {
    out += "\nWhere the path changes rank (in path order)\n";
    TextTable waits({6, 11, 12, 12, -36});
    waits.Row({"rank", "waited for", "wait", "transfer", "collective"});
    for (const analysis::RankWait& w : path.waits) {
      waits.Row({std::to_string(w.rank), std::to_string(w.waited_for), FormatDuration(w.wait_ns),
                 FormatDuration(w.transfer_ns), ElideMiddle(w.collective, 36)});
    }
    out += waits.str();
  }
  if (path.holds.empty()) return out;
  // The holds that kept the others waiting longest, in path order.
  std::vector<size_t> order(path.holds.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return path.holds[a].late_ns > path.holds[b].late_ns; });
  if (order.size() > options.top) order.resize(options.top);
  std::sort(order.begin(), order.end());
  out += "\nOthers waiting for the path's rank (" + std::to_string(order.size()) + " of " +
         std::to_string(path.holds.size()) + ", the longest, in path order)\n";
  TextTable holds({6, 12, -30, -40});
  holds.Row({"rank", "late by", "collective", "its op"});
  for (size_t k : order) {
    const analysis::RankHold& h = path.holds[k];
    holds.Row({std::to_string(h.rank), FormatDuration(h.late_ns), ElideMiddle(h.collective, 30),
               ElideMiddle(h.op.empty() ? "-" : h.op, 40)});
  }
  return out + holds.str();
}

}  // namespace

void PrintCrossRankPaths(const analysis::CrossRankPaths& paths, std::span<const std::string> sources,
                         const TableOptions& options, Json* doc, std::string* text, std::ostream& err) {
  if (paths.alignment.ranks.size() < 2) return;  // one rank: its own paths say it all
  PrintAlignmentNotes("critical-path", paths.alignment, err);
  if (doc != nullptr) {
    Json across = {{"method", std::string(analysis::AlignMethodName(paths.alignment.method))},
                   {"ranks", static_cast<int64_t>(paths.alignment.ranks.size())}};
    auto steps = Json::array();
    for (const CrossRankPath& path : paths.steps) steps.push_back(StepJson(sources, path, paths.origin_ns));
    across["steps"] = steps;
    (*doc)["across_ranks"] = across;
    return;
  }
  std::string& out = *text;
  out += "\n== across " + std::to_string(paths.alignment.ranks.size()) + " ranks, " +
         AlignmentLine(paths.alignment) + "\n";
  for (const CrossRankPath& path : paths.steps) out += "\n" + StepText(path, options);
}

}  // namespace stepscope::cli
