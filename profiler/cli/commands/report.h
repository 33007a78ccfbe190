// What the report commands share: the header and JSON document every trace report starts with,
// and the two shapes most commands take, so a command is its text and its JSON side by side:
//  - TraceReportCommand: one trace (several files or a directory merged first);
//  - StepReportCommand: each input on its own, in its step windows (analysis/step_windows.h).
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <span>
#include <string>

#include "profiler/analysis/gpu_analyses.h"
#include "profiler/analysis/step_windows.h"
#include "profiler/cli/command.h"
#include "profiler/trace/trace.h"

namespace stepscope::cli {

using Json = nlohmann::ordered_json;

// "trace  PATH (FORMAT)\nspan   DURATION\n": the first lines of a trace report's text.
std::string Header(const trace::Trace& trace);
// A JSON report's first keys: schema "stepscope.<schema>/1", source, span_ns.
Json Document(const std::string& schema, const trace::Trace& trace);

// What a report's text tables take from the command line: --top and --full-names.
struct TableOptions {
  size_t top = kDefaultTop;
  bool full_names = false;  // kernel names whole instead of short (KernelNameCells)
};

// A report on one trace: its text (after Header) and its JSON document (which always holds full
// names); `top` is --top.
struct TraceReport {
  std::function<std::string(const trace::Trace& trace, const TableOptions& options)> text;
  std::function<Json(const trace::Trace& trace, size_t top)> json;
};
// `stepscope NAME TRACE|DIR... [--json] [--top N]`: the inputs merged into one trace.
CommandSpec TraceReportCommand(std::string name, std::string description, TraceReport report);

// A report on one input in some of its step windows (the whole trace for a command that is not
// per step).
using StepWindows = std::span<const analysis::StepWindow>;
struct StepReport {
  std::function<std::string(const trace::Trace& trace, StepWindows windows, const TableOptions& options)> text;
  // `brief`: CommandOutput::brief (leave out the lists of every element).
  std::function<Json(const trace::Trace& trace, StepWindows windows, size_t top, bool brief)> json;
};
// `stepscope NAME TRACE|DIR... [--json] [--top N] [--step N | --steps A-B] [--rank R]`: each input
// on its own (a step, a rank), in its step windows (NumberedStepWindows, kWholeUnlessSeveral);
// JSON: {"schema": "stepscope.NAME/1", "traces": [one document per input]}.
CommandSpec StepReportCommand(std::string name, std::string description, StepReport report);
// The same for a report on whole traces, scoped by --rank only.
CommandSpec WholeTraceReportCommand(std::string name, std::string description, StepReport report);

// How much GPU work an analysis could link to its launch (analysis::LaunchLinks), for the commands
// that follow launches: one line of text ("" when there is no GPU work), and the JSON object
// written as "launch_links".
// --full-names: kernel names in text tables printed whole.
FlagSpec FullNamesFlag();

std::string LaunchLinksText(const analysis::LaunchLinks& links);
Json LaunchLinksJson(const analysis::LaunchLinks& links);

}  // namespace stepscope::cli
