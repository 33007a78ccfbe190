// The reports on each input (a step, a rank) on its own: `overlap` (communication hidden behind
// computation, per device) and `critical-path` (what bounds each step, one path per step window:
// analysis::VisitStepCriticalPaths). Declared with StepReportCommand (report.h): --step/--steps
// select steps by the one numbering rule of analysis/step_windows.h, --rank the ranks.
#include <algorithm>
#include <numeric>
#include <set>
#include <string>

#include "profiler/analysis/gpu_analyses.h"
#include "profiler/analysis/step_analyses.h"
#include "profiler/analysis/distributed_digest.h"
#include "profiler/analysis/rank_critical_path.h"
#include "profiler/cli/commands/commands.h"
#include "profiler/cli/commands/rank_digests.h"
#include "profiler/cli/commands/report.h"
#include "profiler/cli/report_format.h"
#include "profiler/cli/scope_flags.h"
#include "profiler/formats/inputs.h"

namespace stepscope::cli {
namespace {

using analysis::StepWindow;
using trace::Trace;

std::string OverlapDescription() {
  return "Communication (collectives, NCCL kernels, fusion-buffer copies) against computation\n"
         "(other ops and kernels) per device, as HTA reports it: total communication time, the\n"
         "part hidden behind computation, the exposed part and its share of the step. Each input\n"
         "trace (step, rank) is reported on its own.";
}

std::string OverlapText(const Trace& trace, StepWindows, const TableOptions&) {
  const analysis::OverlapStats stats = analysis::ComputeOverlap(trace);
  std::string out = "communication " + FormatDuration(stats.comm_ns) + ", hidden " + FormatDuration(stats.hidden_ns) +
                    " (" + FormatPercent(stats.hidden_share) + "), exposed " + FormatDuration(stats.exposed_ns) +
                    " (" + FormatPercent(stats.exposed_share_of_step) + " of the step)\n\n";
  TextTable table({-50, 6, 12, 12, 12, 12, 7});
  table.Row({"device", "comms", "comm", "compute", "hidden", "exposed", "hidden"});
  for (const auto& d : stats.devices) {
    table.Row({Truncate(d.device, 50), IntText(d.comm_slices), FormatDuration(d.comm_ns), FormatDuration(d.compute_ns),
               FormatDuration(d.hidden_ns), FormatDuration(d.exposed_ns), FormatPercent(d.hidden_share)});
  }
  return out + table.str();
}

Json OverlapJson(const Trace& trace, StepWindows, size_t, bool) {
  const analysis::OverlapStats stats = analysis::ComputeOverlap(trace);
  auto doc = Document("overlap", trace);
  // null when the trace does not record it
  doc["step"] = KnownInt(trace.step_info().step);
  doc["rank"] = KnownInt(trace.step_info().rank);
  doc["comm_ns"] = stats.comm_ns;
  doc["hidden_ns"] = stats.hidden_ns;
  doc["exposed_ns"] = stats.exposed_ns;
  doc["hidden_share"] = stats.hidden_share;
  doc["exposed_share_of_step"] = stats.exposed_share_of_step;
  auto devices = nlohmann::ordered_json::array();
  for (const auto& d : stats.devices) {
    devices.push_back({{"device", d.device}, {"comm_slices", d.comm_slices}, {"comm_ns", d.comm_ns},
                       {"compute_ns", d.compute_ns}, {"hidden_ns", d.hidden_ns}, {"exposed_ns", d.exposed_ns},
                       {"hidden_share", d.hidden_share}});
  }
  doc["devices"] = devices;
  return doc;
}

std::string PathText(const Trace& trace, const analysis::CriticalPath& path, const TableOptions& options) {
  const size_t top = options.top;
  std::string out = "path   " + IntText(static_cast<int64_t>(path.elements.size())) + " slices, " +
                    FormatDuration(path.length_ns) + " (busy " + FormatDuration(path.busy_ns) + ", waiting " +
                    FormatDuration(path.wait_ns) + ")\nbound  by " +
                    std::string(analysis::PathBoundName(path.bound_by)) + "\n\n";
  TextTable bounds({-20, 12, 7});
  bounds.Row({"bound by", "time", "share"});
  for (int b = 0; b < analysis::kPathBounds; ++b) {
    const int64_t ns = path.bound_ns[b];
    if (ns == 0) continue;
    bounds.Row({std::string(analysis::PathBoundName(static_cast<analysis::PathBound>(b))), FormatDuration(ns),
                FormatPercent(path.length_ns > 0 ? static_cast<double>(ns) / static_cast<double>(path.length_ns) : 0)});
  }
  out += bounds.str() + "\nBy op type\n";
  TextTable shares({-40, 7, 12, 7});
  shares.Row({"op type", "count", "time", "share"});
  for (size_t i = 0; i < path.by_op_type.size() && i < top; ++i) {
    const auto& s = path.by_op_type[i];
    shares.Row({ElideMiddle(s.op_type, 40), IntText(s.count), FormatDuration(s.total_ns), FormatPercent(s.share)});
  }
  out += shares.str();
  // The links that hold the path longest, shown in path order.
  std::vector<size_t> order(path.elements.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return path.elements[a].held_ns + path.elements[a].wait_ns > path.elements[b].held_ns + path.elements[b].wait_ns;
  });
  if (order.size() > top) order.resize(top);
  std::sort(order.begin(), order.end());
  out += "\nPath (" + std::to_string(order.size()) + " of " + std::to_string(path.elements.size()) +
         " links, the longest, in order)\n";
  std::vector<std::string> shown;
  for (size_t i : order) shown.push_back(path.elements[i].name);
  NameCells names(options.full_names, shown);
  TextTable links({12, 11, 11, 10, -9, -40, -30});
  links.Row({"start", "duration", "on path", "wait", "edge", "slice", "lane"});
  const int64_t base = trace.span_begin_ns();
  for (size_t i : order) {
    const auto& e = path.elements[i];
    links.Row({"+" + FormatDuration(e.start_ns - base), FormatDuration(e.dur_ns), FormatDuration(e.held_ns),
               FormatDuration(e.wait_ns), e.edge.empty() ? "start" : e.edge,
               names(e.name, 40), ElideMiddle(e.lane, 30)});
  }
  return out + links.str();
}

// `brief`: without `path`, every node (140 MB of JSON for 40 steps of 15,000 kernels).
Json PathJson(const Trace& trace, const analysis::CriticalPath& path, bool brief) {
  Json doc;
  doc["length_ns"] = path.length_ns;
  doc["busy_ns"] = path.busy_ns;
  doc["wait_ns"] = path.wait_ns;
  doc["bound_by"] = std::string(analysis::PathBoundName(path.bound_by));
  Json bounds = Json::object();
  for (int b = 0; b < analysis::kPathBounds; ++b) {
    bounds[std::string(analysis::PathBoundName(static_cast<analysis::PathBound>(b)))] = path.bound_ns[b];
  }
  doc["bound_ns"] = bounds;
  auto shares = nlohmann::ordered_json::array();
  for (const auto& s : path.by_op_type) {
    shares.push_back({{"op_type", s.op_type}, {"count", s.count}, {"total_ns", s.total_ns}, {"share", s.share}});
  }
  doc["by_op_type"] = shares;
  if (brief) return doc;
  const int64_t base = trace.span_begin_ns();
  auto elements = nlohmann::ordered_json::array();
  for (const auto& e : path.elements) {
    elements.push_back({{"name", e.name}, {"op_type", e.op_type}, {"kind", e.kind}, {"lane", e.lane},
                        {"start_ns", e.start_ns - base}, {"dur_ns", e.dur_ns}, {"held_ns", e.held_ns},
                        {"wait_ns", e.wait_ns}, {"edge", e.edge}});
  }
  doc["path"] = elements;
  return doc;
}

// ---- critical-path: each input rendered where it is read, joined where the digests meet ------

// An input's own report, rendered window by window (the pieces CriticalPathFromDigests joins).
analysis::RenderedReport RenderCriticalPath(const Trace& trace, bool json, const TableOptions& options, bool brief) {
  analysis::RenderedReport report;
  const auto links = analysis::CountLaunchLinks({analysis::GpuInput{&trace, {}}});
  if (json) {
    auto doc = Document("critical-path", trace);
    if (links.work > 0) doc["launch_links"] = LaunchLinksJson(links);
    report.head = doc.dump();
  } else {
    report.head = Header(trace);
    report.lead = LaunchLinksText(links);
  }
  const Trace* one = &trace;
  const auto steps = analysis::NumberedStepWindows({one, 1}, std::nullopt, analysis::StepWindowing::kEveryStep);
  for (const StepWindow& w : steps.front()) report.steps.push_back(w.step);
  const auto windows =
      analysis::NumberedStepWindows({one, 1}, std::nullopt, analysis::StepWindowing::kWholeUnlessSeveral).front();
  analysis::VisitStepCriticalPaths(trace, windows, [&](const StepWindow& w, const analysis::CriticalPath& path) {
    analysis::RenderedWindow rendered{.step = w.step, .marker = w.marker, .whole = w.whole, .body = ""};
    if (!json) {
      rendered.body = PathText(trace, path, options);
    } else if (w.whole) {
      rendered.body = PathJson(trace, path, brief).dump();
    } else {
      Json step = {{"step", w.step}, {"marker", w.marker}, {"begin_ns", w.begin_ns - trace.span_begin_ns()},
                   {"end_ns", w.end_ns - trace.span_begin_ns()}};
      step.update(PathJson(trace, path, brief));
      rendered.body = step.dump();
    }
    report.windows.push_back(std::move(rendered));
  });
  return report;
}

// One input's report from its rendered windows (those --step selected).
std::string CriticalPathText(const analysis::RenderedReport& report, std::span<const size_t> windows) {
  std::string out = report.lead;
  for (size_t k : windows) {
    const analysis::RenderedWindow& w = report.windows[k];
    // A step trace's windows (marker "trace") are named by the trace's header.
    if (w.marker != "trace") out += (out.empty() ? "" : "\n") + std::string("== ") + w.marker + "\n";
    out += w.body;
  }
  return out;
}

Json CriticalPathJson(const analysis::RenderedReport& report, std::span<const size_t> windows) {
  Json doc = Json::parse(report.head);
  if (windows.size() == 1 && report.windows[windows.front()].whole) {
    doc.update(Json::parse(report.windows[windows.front()].body));
    return doc;
  }
  auto steps = Json::array();
  for (size_t k : windows) steps.push_back(Json::parse(report.windows[k].body));
  doc["steps"] = steps;
  return doc;
}

TableOptions TableOptionsOf(const ParsedArgs& args) {
  const auto top = PositiveFlag(args, "top", kDefaultTop);
  return {.top = top.ok() ? *top : kDefaultTop, .full_names = args.Has("full-names")};
}

// The flags critical-path checks before it reads anything.
Status CheckCriticalPathFlags(const ParsedArgs& args) {
  RETURN_IF_ERROR(PositiveFlag(args, "top", kDefaultTop).status());
  RETURN_IF_ERROR(StepRange(args).status());
  RETURN_IF_ERROR(RankSet(args).status());
  return AlignFlag(args).status();
}

}  // namespace

analysis::InputDigest CriticalPathDigest(const Trace& trace, size_t input, size_t inputs, const ParsedArgs& args,
                                         bool brief) {
  const auto ranks = RankSet(args);
  const int32_t rank = trace.step_info().rank >= 0 ? trace.step_info().rank : static_cast<int32_t>(input);
  if (ranks.ok() && *ranks && (*ranks)->count(rank) == 0) {
    analysis::InputDigest outside;
    outside.input = input;
    outside.clock.rank = trace.step_info().rank;
    return outside;
  }
  // One input is one rank: no path across ranks to walk.
  analysis::InputDigest digest = analysis::DigestInput(trace, input, {.clock = true, .rank_paths = inputs > 1});
  digest.report = RenderCriticalPath(trace, args.Has("json"), TableOptionsOf(args), brief);
  return digest;
}

Status CriticalPathFromDigests(const ParsedArgs& args, std::span<const analysis::InputDigest> inputs, bool scoped,
                               CommandOutput& out) {
  RETURN_IF_ERROR(CheckCriticalPathFlags(args));
  ASSIGN_OR_RETURN(const auto range, StepRange(args));
  ASSIGN_OR_RETURN(const analysis::AlignMethod method, AlignFlag(args));
  ASSIGN_OR_RETURN(const std::vector<const analysis::InputDigest*> kept,
                   DigestsOfRanks(args, inputs, [](const analysis::InputDigest& d) { return d.clock.rank; }, scoped));
  // Each input's windows numbered by the one rule over the inputs kept, and selected by --step.
  std::vector<std::vector<int64_t>> recorded;
  for (const analysis::InputDigest* input : kept) recorded.push_back(input->report.steps);
  const std::vector<std::vector<int64_t>> numbers = analysis::NumberRecordedSteps(recorded);
  std::vector<std::pair<size_t, std::vector<size_t>>> selected;  // kept input, its windows
  for (size_t i = 0; i < kept.size(); ++i) {
    const analysis::RenderedReport& report = kept[i]->report;
    std::vector<size_t> windows;
    for (size_t k = 0; k < report.windows.size(); ++k) {
      // A trace of one step or none is one window, numbered as its step or as it records it.
      const int64_t number = report.windows[k].whole
                                 ? (numbers[i].empty() ? kept[i]->clock.step : numbers[i].front())
                                 : numbers[i][k];
      if (!range || (number >= range->first && number <= range->second)) windows.push_back(k);
    }
    if (!windows.empty()) selected.emplace_back(i, std::move(windows));
  }
  if (selected.empty()) return InvalidInput(range ? analysis::NoStepInRangeMessage(*range) : "no traces given");
  // Across ranks: the kept inputs' digests, their collectives numbered by their place among them.
  std::vector<analysis::ClockDigest> clocks;
  std::vector<analysis::RankPathDigest> paths;
  std::vector<std::string> sources;
  for (size_t i = 0; i < kept.size(); ++i) {
    clocks.push_back(kept[i]->clock);
    for (auto& [key, instances] : clocks.back().collectives) {
      for (analysis::CollectiveInstance& instance : instances) instance.input = i;
    }
    paths.push_back(kept[i]->rank_paths);
    sources.push_back(kept[i]->clock.source);
  }
  const analysis::CrossRankPaths across = analysis::CombineCrossRankPaths(clocks, paths, method, range);
  const TableOptions options = TableOptionsOf(args);
  if (args.Has("json")) {
    Json doc;
    doc["schema"] = "stepscope.critical-path/1";
    auto traces = Json::array();
    for (const auto& [i, windows] : selected) traces.push_back(CriticalPathJson(kept[i]->report, windows));
    doc["traces"] = std::move(traces);
    PrintCrossRankPaths(across, sources, options, &doc, nullptr, out.err);
    out.doc = std::move(doc);
    return Status::Ok();
  }
  for (size_t s = 0; s < selected.size(); ++s) {
    const analysis::RenderedReport& report = kept[selected[s].first]->report;
    if (s > 0) out.text << "\n";
    out.text << report.head << CriticalPathText(report, selected[s].second);
  }
  std::string text;
  PrintCrossRankPaths(across, sources, options, nullptr, &text, out.err);
  out.text << text;
  return Status::Ok();
}

namespace {

// critical-path read one trace at a time, each kept only as its digest.
Status RunCriticalPath(const ParsedArgs& args, std::ostream& out, std::ostream& err) {
  RETURN_IF_ERROR(CheckCriticalPathFlags(args));
  ASSIGN_OR_RETURN(const std::vector<std::string> paths, trace::ResolveTracePaths(args.positional));
  std::vector<analysis::InputDigest> inputs;
  RETURN_IF_ERROR(trace::ForEachTrace(paths, [&](Trace trace) {
    inputs.push_back(CriticalPathDigest(trace, inputs.size(), paths.size(), args, /*brief=*/false));
    return Status::Ok();
  }));
  return AnalyseAndPrint(
      [&](const LoadedInputs&, const ParsedArgs&, CommandOutput& output) {
        return CriticalPathFromDigests(args, inputs, /*scoped=*/false, output);
      },
      {}, args, out, err);
}

// On traces already read (--rank's): `report` and the Python module.
Status AnalyseCriticalPath(const LoadedInputs& loaded, const ParsedArgs& args, CommandOutput& out) {
  RETURN_IF_ERROR(CheckCriticalPathFlags(args));
  std::vector<analysis::InputDigest> inputs;
  for (const Trace& trace : loaded.traces) {
    inputs.push_back(analysis::DigestInput(trace, inputs.size(), {.clock = true, .rank_paths = loaded.traces.size() > 1}));
    inputs.back().report = RenderCriticalPath(trace, args.Has("json"), TableOptionsOf(args), out.brief);
  }
  return CriticalPathFromDigests(args, inputs, /*scoped=*/true, out);
}

}  // namespace

CommandSpec OverlapCommand() {
  return WholeTraceReportCommand(
      "overlap",
      OverlapDescription(),
      {.text = OverlapText, .json = OverlapJson});
}

CommandSpec CriticalPathCommand() {
  CommandSpec spec = StepReportCommand(
      "critical-path",
      "What bounds each step, as HTA asks it: a graph over the start and end of every op, runtime\n"
      "call, kernel and copy (annotations are not work): thread order and nesting on the host,\n"
      "stream order and launch edges on the GPU, dataflow, and synchronising calls waiting for\n"
      "the GPU work they wait on. Walking back from the end of the last work, each link is the\n"
      "predecessor that became ready last. Prints what bound the path (cpu, gpu_compute,\n"
      "gpu_communication, gpu_memory, launch_delay, kernel_gap, sync), its time per op type and\n"
      "the longest links (--top) in path order. One path per ProfilerStep#N span of a trace,\n"
      "else one for the whole trace; each input trace (step, rank) is reported on its own.\n"
      "Over several ranks, then the path of each step across them: the ranks' graphs joined at\n"
      "their matched collectives on aligned clocks (--align; a collective ends on every rank after\n"
      "the last rank arrived), walking back through whichever rank held it, with the waits\n"
      "\"waiting for rank R (its op X)\" that joined the ranks (JSON: \"across_ranks\").",
      // Its flags and synopsis; it reads and reports through the digests (rank_digests.h), as
      // spread over MPI processes.
      {});
  spec.flags.push_back(AlignFlagSpec());
  spec.run = RunCriticalPath;
  spec.analyse = AnalyseCriticalPath;
  return spec;
}

}  // namespace stepscope::cli
