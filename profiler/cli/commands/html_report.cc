// `report`: one self-contained HTML file for a pull request or a CI run. Each section is the JSON
// document of a `stepscope` command on the same inputs, drawn as tables and inline SVG; the page
// names each command, so every number can be reproduced, and keeps each figure's JSON value beside
// it. The inputs are read once: each command's `analyse` (command.h) runs on the traces read, as
// its `run` would after reading them. The step thumbnail is drawn here from the traces.
#include <algorithm>
#include <optional>
#include <span>
#include <sstream>

#include "base/file_io.h"
#include "base/units.h"
#include "profiler/analysis/merge.h"
#include "profiler/analysis/step_windows.h"
#include "profiler/cli/cli.h"
#include "profiler/cli/commands/commands.h"
#include "profiler/cli/commands/html_report_sections.h"
#include "profiler/formats/inputs.h"
#include "profiler/report/timeline_thumbnail.h"
#include "profiler/trace/truncation.h"

namespace stepscope::cli {
namespace {

using report::Section;
using trace::Trace;
using Cuts = std::vector<trace::Truncation>;

// Every key `key` at any depth of `doc` removed.
void DropKey(Json& doc, const std::string& key) {
  if (doc.is_object()) {
    doc.erase(key);
    for (auto& [name, value] : doc.items()) DropKey(value, key);
  } else if (doc.is_array()) {
    for (Json& value : doc) DropKey(value, key);
  }
}

// `stepscope ARGS --json` on the traces read (ARGS' inputs are those `inputs` were read from),
// keeping its document, exit code and stderr as RunCli gives them: the command's notes, each cut
// of --allow-truncated, then its failure. The critical path's every node (`path`, the bulk of its
// document: 140 MB for 40 steps of 15,000 kernels) is not shown, and not made (brief).
CommandRun Analyse(std::vector<std::string> args, const LoadedInputs& inputs, const Cuts& cuts) {
  args.push_back("--json");
  CommandRun run;
  const auto commands = AllCommands();
  const auto command = std::find_if(commands.begin(), commands.end(),
                                    [&](const CommandSpec& c) { return c.name == args.front() && c.analyse; });
  std::ostringstream text, err;
  Status status;
  if (command == commands.end()) {
    status = Internal("no analysis named " + args.front());
  } else {
    auto parsed = ParseFlags({args.begin() + 1, args.end()}, command->all_flags());
    if (!parsed.ok()) {
      status = parsed.status();
    } else {
      CommandOutput output{.text = text, .err = err, .brief = true};
      status = command->analyse(inputs, *parsed, output);
      if (output.doc) run.doc = std::move(*output.doc);
    }
  }
  for (const trace::Truncation& cut : cuts) err << trace::TruncationLine(cut) << "\n";
  run.code = status.ok() ? 0 : ExitCodeFor(status);
  if (!status.ok()) err << "stepscope " << args.front() << ": " << status.message() << "\n";
  run.args = std::move(args);
  run.err = err.str();
  while (!run.err.empty() && run.err.back() == '\n') run.err.pop_back();
  if (run.code != 0 && run.code != 3) run.doc = nullptr;
  if (run.doc.is_null()) return run;
  AddTruncationNotice(run.doc, cuts);
  if (run.args.front() == "critical-path") DropKey(run.doc, "path");
  return run;
}

// Runs `stepscope ARGS --json` here, keeping its document, exit code and stderr: for the commands
// that have no `analyse`, which read their inputs again.
CommandRun RunJson(std::vector<std::string> args) {
  args.push_back("--json");
  std::ostringstream out, err;
  CommandRun run;
  run.code = RunCli(args, out, err);
  run.args = std::move(args);
  run.err = err.str();
  while (!run.err.empty() && run.err.back() == '\n') run.err.pop_back();
  // The critical path's every node (`path`, the bulk of its document: 140 MB for 40 steps of 15,000
  // kernels) is not shown; it is left out as it is parsed.
  const bool drop_path = run.args.front() == "critical-path";
  const Json::parser_callback_t keep = [drop_path](int, Json::parse_event_t event, Json& parsed) {
    return !(drop_path && event == Json::parse_event_t::key && parsed == "path");
  };
  if (run.code == 0 || run.code == 3) run.doc = Json::parse(out.str(), keep, /*allow_exceptions=*/false);
  if (run.doc.is_discarded()) run.doc = nullptr;
  return run;
}

// `stepscope NAME INPUTS...` plus the reading flags the report was given.
std::vector<std::string> Args(const std::string& name, const std::vector<std::string>& inputs, const ParsedArgs& args) {
  std::vector<std::string> out = {name};
  out.insert(out.end(), inputs.begin(), inputs.end());
  if (args.Has("allow-truncated")) out.push_back("--allow-truncated");
  return out;
}

// `args` plus those of `flags` the report was given, as given: the device's peaks for `efficiency`
// and `collectives`, which a trace that names no device needs.
std::vector<std::string> WithFlags(std::vector<std::string> out, const ParsedArgs& args,
                                   std::initializer_list<const char*> flags) {
  for (const char* flag : flags) {
    if (const auto value = args.Get(flag)) out.insert(out.end(), {std::string("--") + flag, *value});
  }
  return out;
}

// The thumbnail of the step of median duration among side A's steps (a representative one, not
// an outlier), with the slowest slices in it named.
std::string ThumbnailBody(std::span<const Trace> traces) {
  const auto windows = analysis::NumberedStepWindows(traces, std::nullopt, analysis::StepWindowing::kEveryStep);
  struct Choice {
    size_t trace;
    analysis::StepWindow window;
    int64_t begin, end;
  };
  std::vector<Choice> steps;
  for (size_t t = 0; t < traces.size(); ++t) {
    for (const auto& w : windows[t]) {
      const int64_t begin = w.whole ? traces[t].span_begin_ns() : w.begin_ns;
      const int64_t end = w.whole ? traces[t].span_end_ns() : w.end_ns;
      steps.push_back({t, w, begin, end});
    }
  }
  if (steps.empty()) return std::string("<p class=\"note\">No step in these traces.</p>\n");
  std::nth_element(steps.begin(), steps.begin() + static_cast<std::ptrdiff_t>(steps.size() / 2), steps.end(),
                   [](const Choice& a, const Choice& b) { return a.end - a.begin < b.end - b.begin; });
  const Choice& c = steps[steps.size() / 2];
  const trace::Trace& trace = traces[c.trace];
  std::string svg = report::TimelineThumbnail(trace, c.begin, c.end);
  if (svg.empty()) return std::string("<p class=\"note\">Nothing happens in the step.</p>\n");
  return report::Paragraph("Step " + std::to_string(c.window.number) + " (" + c.window.marker + ", " +
                           FormatDuration(c.end - c.begin) +
                           (steps.size() == 1 ? ", the only step" : ", the median of " + std::to_string(steps.size()) + " steps") +
                           ") of " + trace.source_path() + "; the slowest slices outlined and named.",
                           "note") +
         svg;
}

// `diff A --vs B` on A's traces read and B's read here; by RunJson, which reads both sides again,
// under --allow-truncated (its notice lists every read) or for one step per side of several
// traces (the aggregate diff merges each side, which takes the traces).
CommandRun DiffRun(std::vector<std::string> diff_args, std::span<const Trace> a, const std::vector<std::string>& b,
                   const ParsedArgs& args) {
  if (!args.Has("allow-truncated")) {
    const auto traces_b = trace::ReadTraces(b);
    if (traces_b.ok()) {
      CommandRun run = Analyse(diff_args, {.traces = a, .vs = *traces_b}, {});
      if (run.code != 1) return run;
    }
  }
  return RunJson(std::move(diff_args));
}

// Side A's traces, read once: each input given in turn, with what --allow-truncated cut in it.
struct ReadRun {
  std::vector<Trace> traces;
  std::vector<std::pair<size_t, size_t>> of_input;  // per input given: its first trace, how many
  std::vector<Cuts> cuts;                           // per input given
  Cuts all_cuts;
};

StatusOr<ReadRun> ReadOnce(const std::vector<std::string>& inputs) {
  ReadRun run;
  trace::AllowTruncatedScope* const outer = trace::AllowTruncatedScope::Current();
  for (const std::string& input : inputs) {
    // Under --allow-truncated (RunCli's scope), an inner scope keeps this input's cuts apart.
    std::optional<trace::AllowTruncatedScope> scope;
    if (outer != nullptr) scope.emplace();
    auto traces = trace::ReadTraces({input});
    Cuts cuts = scope ? scope->truncations() : Cuts();
    scope.reset();
    if (!traces.ok()) return traces.status();
    run.of_input.emplace_back(run.traces.size(), traces->size());
    for (Trace& trace : *traces) run.traces.push_back(std::move(trace));
    for (const trace::Truncation& cut : cuts) {
      outer->Add(cut);
      run.all_cuts.push_back(cut);
    }
    run.cuts.push_back(std::move(cuts));
  }
  return run;
}

Status RunReport(const ParsedArgs& args, std::ostream& out, std::ostream&) {
  const auto output = args.Get("output");
  if (!output) return InvalidInput("-o/--output FILE is required: where to write the report");
  ASSIGN_OR_RETURN(const size_t top, PositiveFlag(args, "top", 10));
  std::vector<std::string> a = args.positional, b;
  if (args.Has("vs")) {
    const size_t split = args.positional_before.at("vs");
    a.assign(args.positional.begin(), args.positional.begin() + static_cast<std::ptrdiff_t>(split));
    b.assign(args.positional.begin() + static_cast<std::ptrdiff_t>(split), args.positional.end());
    if (a.empty()) return InvalidInput("give the traces of the run before --vs");
    if (b.empty()) return InvalidInput("give the traces to compare with after --vs");
  }
  if (a.empty()) return InvalidInput("no traces given");
  if (b.empty() && args.Has("fail-on-regression")) {
    return InvalidInput("--fail-on-regression needs a run to compare with: A... --vs B...");
  }

  // The run's identity first: an input that cannot be read fails the report, with its message.
  ASSIGN_OR_RETURN(ReadRun read, ReadOnce(a));
  std::vector<CommandRun> summaries;
  for (size_t i = 0; i < a.size(); ++i) {
    const auto [first, count] = read.of_input[i];
    summaries.push_back(
        Analyse(Args("summary", {a[i]}, args), {.traces = std::span<const Trace>(read.traces).subspan(first, count)},
                read.cuts[i]));
  }
  const LoadedInputs each{.traces = read.traces};
  const CommandRun steps = Analyse(Args("steps", a, args), each, read.all_cuts);
  const CommandRun gpu = Analyse(Args("gpu", a, args), each, read.all_cuts);
  const CommandRun idle = Analyse(Args("idle", a, args), each, read.all_cuts);
  const CommandRun path = Analyse(Args("critical-path", a, args), each, read.all_cuts);
  const CommandRun efficiency =
      Analyse(WithFlags(Args("efficiency", a, args), args, {"peak", "device", "precision", "link-peak"}), each, read.all_cuts);
  const CommandRun collectives = Analyse(WithFlags(Args("collectives", a, args), args, {"link-peak", "device"}), each, read.all_cuts);
  // A peak the user gave that the command refuses (an unknown --device, --peak 0) is bad input.
  for (const CommandRun* r : {&efficiency, &collectives}) {
    if (r->code == 2 && (args.Has("peak") || args.Has("device") || args.Has("precision") || args.Has("link-peak"))) {
      const std::string prefix = "stepscope " + r->args.front() + ": ";
      return InvalidInput(r->err.rfind(prefix, 0) == 0 ? r->err.substr(prefix.size()) : r->err);
    }
  }
  const CommandRun stragglers = RunJson(Args("stragglers", a, args));
  const std::string thumbnail = ThumbnailBody(read.traces);
  CommandRun diff;
  if (!b.empty()) {
    std::vector<std::string> diff_args = Args("diff", a, args);
    diff_args.push_back("--vs");
    diff_args.insert(diff_args.end(), b.begin(), b.end());
    if (const auto gate = args.Get("fail-on-regression")) diff_args.insert(diff_args.end(), {"--fail-on-regression", *gate});
    diff = DiffRun(std::move(diff_args), read.traces, b, args);
  }
  // The commands on one trace last: the traces are merged into it, moved, never copied.
  const Trace one = analysis::OneTrace(std::move(read.traces));
  const LoadedInputs merged{.traces = {&one, 1}, .one = &one};
  const CommandRun breakdown = Analyse(Args("step-breakdown", a, args), merged, read.all_cuts);
  const CommandRun ops = Analyse(Args("ops", a, args), merged, read.all_cuts);
  const CommandRun kernels = Analyse(Args("kernels", a, args), merged, read.all_cuts);
  const CommandRun memory = Analyse(Args("memory", a, args), merged, read.all_cuts);

  std::vector<Section> sections;
  std::vector<std::vector<std::string>> summary_args;
  for (const CommandRun& s : summaries) summary_args.push_back(s.args);
  sections.push_back({"run", "Run", summary_args, RunBody(summaries)});
  sections.push_back({"steps", "Step time", {steps.args, breakdown.args}, StepsBody(steps, breakdown, top)});
  sections.push_back({"timeline", "One step", {}, thumbnail});
  sections.push_back({"gpus", "GPUs and idle time", {gpu.args, idle.args}, GpuBody(gpu, idle, top)});
  sections.push_back({"ops", "Ops and kernels", {ops.args, kernels.args}, OpsBody(ops, kernels, top)});
  sections.push_back({"memory", "Memory", {memory.args}, MemoryBody(memory, top)});
  sections.push_back({"critical-path", "Critical path", {path.args}, CriticalPathBody(path, top)});
  sections.push_back({"efficiency", "Efficiency", {efficiency.args}, EfficiencyBody(efficiency, top)});
  sections.push_back({"collectives", "Collectives", {collectives.args}, CollectivesBody(collectives, top)});
  sections.push_back({"stragglers", "Stragglers across ranks", {stragglers.args}, StragglersBody(stragglers, top)});
  if (!b.empty()) sections.push_back({"diff", "Compared with B", {diff.args}, DiffBody(diff, top)});
  std::vector<const CommandRun*> all;
  for (const CommandRun& s : summaries) all.push_back(&s);
  for (const CommandRun* run : std::initializer_list<const CommandRun*>{&steps, &breakdown, &gpu, &idle, &ops, &kernels,
                                                                     &memory, &path, &efficiency, &collectives,
                                                                     &stragglers, &diff}) {
    all.push_back(run);
  }
  sections.push_back({"import", "Import warnings", summary_args, ImportBody(summaries, all)});

  std::string subtitle = "A: " + report::CommandLine(a).substr(std::string("stepscope ").size());
  if (!b.empty()) subtitle += "   B: " + report::CommandLine(b).substr(std::string("stepscope ").size());
  const std::string html = report::Page("stepscope report", subtitle + "   (stepscope " STEPSCOPE_VERSION ")", sections);
  RETURN_IF_ERROR(WriteFileAtomically(*output, html));
  out << "wrote " << *output << " (" << FormatBytes(static_cast<int64_t>(html.size())) << ", " << sections.size()
      << " sections)\n";
  if (diff.code == 3) return CheckFailed("regression gate: " + diff.err + " (the report shows it)");
  return Status::Ok();
}

}  // namespace

CommandSpec ReportCommand() {
  return {.name = "report",
          .synopsis = "TRACE|DIR... [--vs B...] -o report.html [--top N] [--fail-on-regression PCT[,MIN_MS]] "
                      "[--device NAME] [--peak TFLOPS] [--precision P] [--link-peak GBPS]",
          .description =
              "Writes one self-contained HTML file (no script, nothing fetched: it opens from disk or a CI\n"
              "artifact, offline) for a pull request or a CI run: the run's files, ranks and steps, step\n"
              "time and jitter and where the step goes, a thumbnail of one step with its slowest slices\n"
              "named, GPU busy and idle time with the idle causes, the top ops and kernels, memory peaks\n"
              "with the tensors live at the peak and the curve, the critical path's bound-by, the\n"
              "efficiency (the device's peak, MFU per step, the top ops' FLOP/s and bound), the\n"
              "collectives' bus bandwidth, stragglers across ranks and the import's repairs; with --vs B...,\n"
              "the diff against B with its confidence and the regression gate's verdict. Each section names\n"
              "the `stepscope ... --json` commands whose numbers it shows; each figure keeps its JSON value\n"
              "(data-ptr, data-value). --device, --peak, --precision and --link-peak are handed to\n"
              "efficiency and collectives, for traces that name no device.",
          .flags = {{"output", "FILE", "where to write the report (.html)", 'o'},
                    {"vs", "", "A... --vs B...: compare the run A with the traces after it"},
                    {"top", "N", "rows per table (default 10)"},
                    {"device", "NAME", "for efficiency and collectives: the device whose peaks to use (e.g. h100-sxm)"},
                    {"peak", "TFLOPS", "for efficiency: the device's peak FLOP/s, in TFLOP/s"},
                    {"precision", "P", "for efficiency: the precision whose peak to use (fp32, tf32, bf16, ...)"},
                    {"link-peak", "GBPS", "for efficiency and collectives: the link's peak in GB/s a direction"},
                    {"fail-on-regression", "PCT[,MIN_MS]",
                     "with --vs: exit 3, after writing the report, when diff's regression gate fails"}},
          .min_positional = 1,
          .run = RunReport,
          .more_exit_codes = ", 3 a check failed: the regression gate (--fail-on-regression)"};
}

}  // namespace stepscope::cli
