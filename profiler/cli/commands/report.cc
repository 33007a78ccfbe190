// The shapes of the report commands (report.h), the command table's help (command.h) and the flag
// helpers every command uses.
#include "profiler/cli/commands/report.h"

#include <cstdlib>
#include <utility>
#include <vector>

#include "profiler/analysis/merge.h"
#include "profiler/cli/report_format.h"
#include "profiler/cli/scope_flags.h"
#include "profiler/formats/inputs.h"

namespace stepscope::cli {

using trace::Trace;

std::vector<FlagSpec> CommandSpec::all_flags() const {
  std::vector<FlagSpec> all = flags;
  if (reads_traces) all.push_back(AllowTruncatedFlag());
  return all;
}

std::string CommandSpec::Help() const {
  return "usage: stepscope " + name + " " + synopsis + "\n\n" + description + "\n\nflags:\n" +
         FlagHelp(all_flags()) + "\nexit codes: 0 ok, 1 runtime failure, 2 usage or bad input" +
         (reads_traces ? " (a trace file cut short included)" : "") + more_exit_codes + "\n";
}

FlagSpec AllowTruncatedFlag() {
  return {"allow-truncated", "",
          "analyse a trace file cut short up to its cut instead of failing; the output starts by saying so"};
}

StatusOr<size_t> PositiveFlag(const ParsedArgs& args, const std::string& name, size_t fallback) {
  const auto text = args.Get(name);
  if (!text) return fallback;
  char* end = nullptr;
  const long value = std::strtol(text->c_str(), &end, 10);
  if (end == text->c_str() || *end != '\0' || value <= 0) {
    return InvalidInput("--" + name + " " + *text + ": expected a positive integer");
  }
  return static_cast<size_t>(value);
}

void EmitJson(std::ostream& out, const nlohmann::ordered_json& doc) { out << doc.dump(2) << "\n"; }

Status AnalyseAndPrint(const AnalyseFunction& analyse, const LoadedInputs& inputs, const ParsedArgs& args,
                       std::ostream& out, std::ostream& err) {
  CommandOutput output{.text = out, .err = err};
  const Status status = analyse(inputs, args, output);
  if (output.doc) EmitJson(out, *output.doc);
  return status;
}

std::function<Status(const ParsedArgs&, std::ostream&, std::ostream&)> LoadThen(AnalyseFunction analyse) {
  return [analyse = std::move(analyse)](const ParsedArgs& args, std::ostream& out, std::ostream& err) -> Status {
    // The flags every such command takes fail before a big trace is read (analyse checks them too).
    RETURN_IF_ERROR(PositiveFlag(args, "top", kDefaultTop).status());
    RETURN_IF_ERROR(StepRange(args).status());
    ASSIGN_OR_RETURN(const std::vector<Trace> traces, LoadScopedTraces(args));
    return AnalyseAndPrint(analyse, {.traces = traces}, args, out, err);
  };
}

std::string Header(const Trace& trace) {
  std::string out = "trace  " + trace.source_path() + " (" + std::string(trace::SourceFormatName(trace.source_format())) + ")\n";
  out += "span   " + FormatDuration(trace.span_end_ns() - trace.span_begin_ns()) + "\n";
  return out;
}

Json Document(const std::string& schema, const Trace& trace) {
  Json doc;
  doc["schema"] = "stepscope." + schema + "/1";
  doc["source"] = trace.source_path();
  doc["span_ns"] = trace.span_end_ns() - trace.span_begin_ns();
  return doc;
}

FlagSpec FullNamesFlag() {
  return {"full-names", "", "print kernel names whole (default: short, e.g. vectorized_elementwise_kernel<…>)"};
}

namespace {

std::vector<FlagSpec> TraceReportFlags() {
  return {{"json", "", "write the result as JSON"}, {"top", "N", "rows per table in text output (default 15)"},
          FullNamesFlag()};
}

// Runs a StepReport over the inputs, each in its windows: every window of its steps in --step's
// range (per_step), or the whole trace.
Status AnalyseStepReport(const std::string& name, const StepReport& report, bool per_step, const LoadedInputs& inputs,
                         const ParsedArgs& args, CommandOutput& out) {
  using analysis::StepWindow;
  ASSIGN_OR_RETURN(const size_t top, PositiveFlag(args, "top", kDefaultTop));
  ASSIGN_OR_RETURN(const auto range, StepRange(args));
  const std::span<const Trace> traces = inputs.traces;
  // Per trace, its windows in the range.
  std::vector<std::pair<const Trace*, std::vector<StepWindow>>> scoped;
  if (per_step) {
    auto windows = analysis::NumberedStepWindows(traces, range, analysis::StepWindowing::kWholeUnlessSeveral);
    for (size_t i = 0; i < traces.size(); ++i) {
      if (!windows[i].empty()) scoped.emplace_back(&traces[i], std::move(windows[i]));
    }
  } else {
    for (const Trace& trace : traces) {
      scoped.push_back({&trace, {StepWindow{.step = trace.step_info().step, .marker = "trace", .whole = true}}});
    }
  }
  if (scoped.empty()) return InvalidInput(range ? analysis::NoStepInRangeMessage(*range) : "no traces given");
  const TableOptions options{.top = top, .full_names = args.Has("full-names")};
  if (args.Has("json")) {
    Json doc;
    doc["schema"] = "stepscope." + name + "/1";
    auto steps = Json::array();
    for (const auto& [trace, windows] : scoped) steps.push_back(report.json(*trace, windows, top, out.brief));
    doc["traces"] = std::move(steps);
    out.doc = std::move(doc);
  } else {
    for (size_t i = 0; i < scoped.size(); ++i) {
      if (i > 0) out.text << "\n";
      out.text << Header(*scoped[i].first) << report.text(*scoped[i].first, scoped[i].second, options);
    }
  }
  return Status::Ok();
}

// The inputs as one trace: the one the caller merged (analysis::OneTrace, which takes the traces
// moved: a trace is never copied), or the only one.
StatusOr<const Trace*> OneOf(const LoadedInputs& inputs) {
  if (inputs.one != nullptr) return inputs.one;
  if (inputs.traces.size() == 1) return &inputs.traces.front();
  return Internal("the commands on one trace take several inputs merged (LoadedInputs::one)");
}

}  // namespace

CommandSpec TraceReportCommand(std::string name, std::string description, TraceReport report) {
  AnalyseFunction analyse = [report = std::move(report)](const LoadedInputs& inputs, const ParsedArgs& args,
                                                         CommandOutput& out) -> Status {
    ASSIGN_OR_RETURN(const size_t top, PositiveFlag(args, "top", kDefaultTop));
    ASSIGN_OR_RETURN(const Trace* one, OneOf(inputs));
    const Trace& trace = *one;
    if (args.Has("json")) {
      out.doc = report.json(trace, top);
    } else {
      out.text << Header(trace) << report.text(trace, {.top = top, .full_names = args.Has("full-names")});
    }
    return Status::Ok();
  };
  return {.name = std::move(name),
          .synopsis = "TRACE|DIR... [--json] [--top N]",
          .description = std::move(description),
          .flags = TraceReportFlags(),
          .run = [analyse](const ParsedArgs& args, std::ostream& out, std::ostream& err) -> Status {
            // Merged as read: the traces are moved into the one, never copied.
            RETURN_IF_ERROR(PositiveFlag(args, "top", kDefaultTop).status());
            ASSIGN_OR_RETURN(std::vector<Trace> traces, trace::ReadTraces(args.positional));
            const Trace one = analysis::OneTrace(std::move(traces));
            return AnalyseAndPrint(analyse, {.traces = {&one, 1}, .one = &one}, args, out, err);
          },
          .analyse = analyse};
}

CommandSpec StepReportCommand(std::string name, std::string description, StepReport report) {
  std::vector<FlagSpec> flags = TraceReportFlags();
  flags.push_back(StepFlag("only what happens"));
  flags.push_back(StepsFlag("only what happens"));
  flags.push_back(RankFlag());
  AnalyseFunction analyse = [name, report = std::move(report)](const LoadedInputs& inputs, const ParsedArgs& args,
                                                               CommandOutput& out) {
    return AnalyseStepReport(name, report, /*per_step=*/true, inputs, args, out);
  };
  return {.name = name,
          .synopsis = "TRACE|DIR... [--json] [--top N] [--step N | --steps A-B] [--rank R]",
          .description = std::move(description),
          .flags = std::move(flags),
          .run = LoadThen(analyse),
          .analyse = analyse};
}

CommandSpec WholeTraceReportCommand(std::string name, std::string description, StepReport report) {
  std::vector<FlagSpec> flags = TraceReportFlags();
  flags.push_back(RankFlag());
  AnalyseFunction analyse = [name, report = std::move(report)](const LoadedInputs& inputs, const ParsedArgs& args,
                                                               CommandOutput& out) {
    return AnalyseStepReport(name, report, /*per_step=*/false, inputs, args, out);
  };
  return {.name = name,
          .synopsis = "TRACE|DIR... [--json] [--top N] [--rank R]",
          .description = std::move(description),
          .flags = std::move(flags),
          .run = LoadThen(analyse),
          .analyse = analyse};
}

}  // namespace stepscope::cli
