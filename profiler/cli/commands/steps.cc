// The reports on each input (a step, a rank) on its own: `overlap` (communication hidden behind
// computation, per device) and `critical-path` (what bounds each step, one path per step window:
// analysis::VisitStepCriticalPaths). Declared with StepReportCommand (report.h): --step/--steps
// select steps by the one numbering rule of analysis/step_windows.h, --rank the ranks.
#include <algorithm>
#include <numeric>
#include <string>

#include "profiler/analysis/gpu_analyses.h"
#include "profiler/analysis/step_analyses.h"
#include "profiler/cli/commands/commands.h"
#include "profiler/cli/commands/report.h"
#include "profiler/cli/report_format.h"

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

std::string CriticalPathText(const Trace& trace, StepWindows windows, const TableOptions& options) {
  std::string out = LaunchLinksText(analysis::CountLaunchLinks({analysis::GpuInput{&trace, {}}}));
  analysis::VisitStepCriticalPaths(trace, windows, [&](const StepWindow& w, const analysis::CriticalPath& path) {
    // A step trace's windows (marker "trace") are named by the trace's header.
    if (w.marker != "trace") out += (out.empty() ? "" : "\n") + std::string("== ") + w.marker + "\n";
    out += PathText(trace, path, options);
  });
  return out;
}

Json CriticalPathJson(const Trace& trace, StepWindows windows, size_t, bool brief) {
  auto doc = Document("critical-path", trace);
  if (const auto links = analysis::CountLaunchLinks({analysis::GpuInput{&trace, {}}}); links.work > 0) {
    doc["launch_links"] = LaunchLinksJson(links);
  }
  if (windows.size() == 1 && windows.front().whole) {
    analysis::VisitStepCriticalPaths(trace, windows, [&](const StepWindow&, const analysis::CriticalPath& path) {
      doc.update(PathJson(trace, path, brief));
    });
    return doc;
  }
  auto steps = nlohmann::ordered_json::array();
  analysis::VisitStepCriticalPaths(trace, windows, [&](const StepWindow& w, const analysis::CriticalPath& path) {
    Json step = {{"step", w.step}, {"marker", w.marker}, {"begin_ns", w.begin_ns - trace.span_begin_ns()},
                 {"end_ns", w.end_ns - trace.span_begin_ns()}};
    step.update(PathJson(trace, path, brief));
    steps.push_back(step);
  });
  doc["steps"] = steps;
  return doc;
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
      {.text = CriticalPathText, .json = CriticalPathJson, .together = CriticalPathAcrossRanks});
  spec.flags.push_back(AlignFlagSpec());
  return spec;
}

}  // namespace stepscope::cli
