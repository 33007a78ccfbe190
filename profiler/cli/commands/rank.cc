// The commands across ranks: `stragglers` (per step, which rank finished its work last, by how
// much and why, analysis/stragglers.h: inputs loaded one trace per file, clocks aligned as `merge`
// aligns them) and `merge` (per-rank and per-step traces into one timeline, analysis/merge.h,
// written in any output of the writer table).
#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "profiler/analysis/merge.h"
#include "profiler/analysis/stragglers.h"
#include "profiler/cli/commands/commands.h"
#include "profiler/cli/commands/rank_digests.h"
#include "profiler/cli/commands/report.h"
#include "profiler/cli/report_format.h"
#include "profiler/cli/scope_flags.h"
#include "profiler/formats/inputs.h"
#include "profiler/formats/writer.h"

namespace stepscope::cli {
namespace {

using trace::Trace;
using analysis::StragglerCategory;

constexpr int kCategories = analysis::kStragglerCategories;

std::string CategoryName(int c) { return std::string(analysis::StragglerCategoryName(static_cast<StragglerCategory>(c))); }
std::string Rank(int32_t rank) { return "rank " + std::to_string(rank); }

// The straggler's excess in the category named as its reason (0 for "none").
int64_t ReasonExcess(const analysis::StepStragglers& s) {
  for (int c = 0; c < kCategories; ++c) {
    if (CategoryName(c) == s.reason) return s.excess_ns[c];
  }
  return 0;
}

Json ReportJson(const analysis::StragglerReport& report) {
  Json doc = {{"schema", "stepscope.stragglers/1"}};
  Json inputs = Json::array();
  for (const auto& in : report.inputs) {
    inputs.push_back({{"source", in.source}, {"rank", in.rank}, {"rank_known", in.rank_known},
                      {"alignment", in.alignment}, {"offset_ns", in.offset_ns}});
  }
  doc["inputs"] = inputs;
  doc["alignment"] = analysis::AlignMethodName(report.alignment.method);
  Json steps = Json::array();
  for (const auto& s : report.steps) {
    Json excess = Json::object();
    for (int c = 0; c < kCategories; ++c) excess[CategoryName(c)] = s.excess_ns[c];
    Json ranks = Json::array();
    for (const auto& r : s.ranks) {
      ranks.push_back({{"rank", r.rank}, {"source", report.inputs[r.input].source},
                       {"work_on", r.gpu ? "gpu" : "host"}, {"work", r.work}, {"begin_ns", r.begin_ns},
                       {"end_ns", r.end_ns}, {"lateness_ns", r.lateness_ns}, {"busy_ns", r.busy_ns},
                       {"compute_ns", r.compute_ns()}, {"communication_ns", r.communication_ns()},
                       {"memory_ns", r.memory_ns()}, {"input_ns", r.input_ns()},
                       {"collective_wait_ns", r.collective_wait_ns}});
    }
    steps.push_back({{"step", s.step}, {"ranks", static_cast<int64_t>(s.ranks.size())},
                     {"straggler", s.straggler}, {"lateness_ns", s.lateness_ns},
                     {"lateness_vs_median_ns", s.lateness_vs_median_ns}, {"reason", s.reason},
                     {"excess_ns", excess}, {"waited_for", s.waited_for}, {"others_waited_ns", s.others_waited_ns},
                     {"per_rank", ranks}});
  }
  doc["steps"] = steps;
  Json ranks = Json::array();
  for (const auto& r : report.ranks) {
    ranks.push_back({{"rank", r.rank}, {"steps", r.steps}, {"straggler_steps", r.straggler_steps},
                     {"lateness_total_ns", r.lateness_total_ns}, {"lateness_max_ns", r.lateness_max_ns}});
  }
  doc["by_rank"] = ranks;
  doc["single_rank_steps"] = report.single_rank_steps;
  return doc;
}

std::string ReportText(const analysis::StragglerReport& report, size_t top) {
  std::string out;
  std::map<std::string, int> clocks;
  for (const auto& in : report.inputs) ++clocks[in.alignment];
  auto count = [](size_t n, const std::string& what) { return std::to_string(n) + " " + what + (n == 1 ? "" : "s"); };
  out += count(report.ranks.size(), "rank") + ", " + count(report.steps.size(), "step") + " compared (" +
         count(report.inputs.size(), "input") + "; " + AlignmentLine(report.alignment) + ":";
  bool first = true;
  for (const auto& [how, n] : clocks) {
    out += (first ? " " : ", ") + std::to_string(n) + " " + how;
    first = false;
  }
  out += ")\n";
  if (!report.single_rank_steps.empty()) {
    out += std::to_string(report.single_rank_steps.size()) + " steps with one rank only, not compared\n";
  }

  // The `top` steps with the largest lateness, in step order.
  std::vector<size_t> order(report.steps.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return report.steps[a].lateness_ns > report.steps[b].lateness_ns; });
  if (order.size() > top) order.resize(top);
  const size_t worst = order.empty() ? 0 : order.front();
  std::sort(order.begin(), order.end());

  out += "\nPer step: the rank that finished last (" + std::to_string(order.size()) + " of " +
         std::to_string(report.steps.size()) + ", the latest)\n";
  TextTable steps({8, 6, -9, 12, 12, -14, 12, -24});
  steps.Row({"step", "ranks", "straggler", "lateness", "vs median", "reason", "its excess", "others waited for"});
  for (size_t i : order) {
    const auto& s = report.steps[i];
    const int64_t excess = ReasonExcess(s);
    steps.Row({std::to_string(s.step), std::to_string(s.ranks.size()), Rank(s.straggler), FormatDuration(s.lateness_ns),
               FormatDuration(s.lateness_vs_median_ns), s.reason,
               s.reason == "none" ? "-" : FormatSignedDuration(excess, /*plus_sign=*/true),
               s.waited_for < 0 ? "-" : Rank(s.waited_for) + " (" + FormatDuration(s.others_waited_ns) + ")"});
  }
  out += steps.str();

  out += "\nPer rank\n";
  TextTable ranks({-9, 7, 10, 16, 14});
  ranks.Row({"rank", "steps", "last in", "lateness total", "lateness max"});
  for (const auto& r : report.ranks) {
    ranks.Row({Rank(r.rank), std::to_string(r.steps), std::to_string(r.straggler_steps),
               FormatDuration(r.lateness_total_ns), FormatDuration(r.lateness_max_ns)});
  }
  out += ranks.str();

  if (!report.steps.empty()) {
    const auto& s = report.steps[worst];
    out += "\nStep " + std::to_string(s.step) + " (the largest lateness): " + Rank(s.straggler) + " finished " +
           FormatDuration(s.lateness_ns) + " after the first";
    out += s.reason == "none" ? ", exceeding the other ranks' median in no category\n"
                              : "; its " + s.reason + " exceeds the other ranks' median by " +
                                    FormatDuration(ReasonExcess(s)) + "\n";
    TextTable detail({-9, -5, 12, 12, 12, 12, 12, 12, 12});
    detail.Row({"rank", "work", "end", "lateness", "compute", "comm", "memory", "input", "coll wait"});
    for (const auto& r : s.ranks) {
      detail.Row({Rank(r.rank), r.gpu ? "gpu" : "host", "+" + FormatDuration(r.end_ns), FormatDuration(r.lateness_ns),
                  FormatDuration(r.compute_ns()), FormatDuration(r.communication_ns()), FormatDuration(r.memory_ns()),
                  FormatDuration(r.input_ns()), FormatDuration(r.collective_wait_ns)});
    }
    out += detail.str();
  }
  return out;
}

struct StragglerFlags {
  size_t top = 10;
  analysis::StragglerOptions options;
};

StatusOr<StragglerFlags> ParseStragglerFlags(const ParsedArgs& args) {
  StragglerFlags flags;
  ASSIGN_OR_RETURN(flags.top, PositiveFlag(args, "top", 10));
  ASSIGN_OR_RETURN(flags.options.steps, StepRange(args));
  ASSIGN_OR_RETURN(flags.options.align, AlignFlag(args));
  return flags;
}

Status PrintStragglers(const ParsedArgs& args, const StragglerFlags& flags, const analysis::StragglerReport& report,
                       std::ostream& out, std::ostream& err) {
  const analysis::StragglerOptions& options = flags.options;
  if (report.steps.empty()) {
    if (options.steps && report.single_rank_steps.empty()) {
      return InvalidInput("no step " + std::to_string(options.steps->first) +
                          (options.steps->second != options.steps->first ? "-" + std::to_string(options.steps->second) : "") +
                          " in the traces given (see `stepscope steps`)");
    }
    std::string sources;
    for (const auto& in : report.inputs) sources += (sources.empty() ? "" : ", ") + in.source;
    return InvalidInput("no step has work from two ranks or more to compare (" + std::to_string(report.inputs.size()) +
                        " input(s): " + sources + "); give every rank's trace of a step, e.g. the run's --profile_dir");
  }
  PrintAlignmentNotes("stragglers", report.alignment, err);
  int64_t unaligned = 0;
  for (const auto& in : report.inputs) unaligned += in.alignment == "unaligned" ? 1 : 0;
  if (unaligned > 0) {
    err << "stepscope stragglers: warning: " << unaligned
        << " trace(s) from another host without a clock sync record are not aligned; their lateness is on "
           "their own clock\n";
  }
  if (args.Has("json")) {
    out << ReportJson(report).dump(2) << "\n";
  } else {
    out << ReportText(report, flags.top);
  }
  return Status::Ok();
}

Status RunStragglers(const ParsedArgs& args, std::ostream& out, std::ostream& err) {
  // The flags first, as LoadScopedTraces checks them before reading; then one trace at a time,
  // kept only as its digest (a 1,024-rank run: 637 -> 95 MB), compared as spread over processes.
  RETURN_IF_ERROR(ParseStragglerFlags(args).status());
  RETURN_IF_ERROR(RankSet(args).status());
  std::vector<analysis::InputDigest> inputs;
  RETURN_IF_ERROR(trace::ForEachTrace(args.positional, [&](Trace trace) {
    inputs.push_back(analysis::DigestInput(trace, inputs.size()));
    return Status::Ok();
  }));
  return StragglersFromDigests(args, inputs, out, err);
}

// ---- merge -----------------------------------------------------------------------------------

Status RunMerge(const ParsedArgs& args, std::ostream& out, std::ostream& err) {
  const std::optional<std::string> output = args.Get("output");
  // The output format, checked before any input is read (as convert checks it).
  std::optional<trace::OutputFormat> format;
  if (auto name = args.Get("format")) {
    if (!output) return InvalidInput("--format " + *name + ": needs -o OUT");
    format = trace::ParseOutputFormat(*name);
    if (!format) {
      return InvalidInput("--format " + *name + ": unknown format (use " + trace::OutputFormatList() + ")");
    }
  } else if (output) {
    format = trace::OutputFormatFromPath(*output);
    if (!format) {
      return InvalidInput(*output + ": cannot tell the output format from the extension; use " +
                          trace::OutputExtensionList() + ", or pass --format");
    }
  }
  ASSIGN_OR_RETURN(const analysis::AlignMethod align, AlignFlag(args));
  ASSIGN_OR_RETURN(std::vector<Trace> traces, trace::ReadTraces(args.positional));
  analysis::MergeResult merged = analysis::MergeTraces(std::move(traces), align);
  if (merged.report.inputs.size() > 1) PrintAlignmentNotes("merge", merged.report.alignment, err);
  if (output) {
    std::vector<std::string> left_out;
    RETURN_IF_ERROR(trace::WriteTrace(merged.trace, *output, *format, {}, &left_out));
    for (const std::string& line : left_out) err << "stepscope merge: note: " << line << "\n";
  }
  const analysis::MergeReport& report = merged.report;
  if (args.Has("json")) {
    nlohmann::ordered_json doc;
    doc["schema"] = "stepscope.merge/1";
    doc["output"] = output.value_or("");
    doc["span_ns"] = merged.trace.span_end_ns() - merged.trace.span_begin_ns();
    auto inputs = nlohmann::ordered_json::array();
    for (const auto& in : report.inputs) {
      // What an input does not record is null.
      inputs.push_back({{"source", in.source}, {"process", in.process},
                        {"rank", KnownInt(in.rank)},
                        {"step", KnownInt(in.step)},
                        {"host", in.host.empty() ? Json(nullptr) : Json(in.host)}, {"alignment", in.alignment}, {"offset_ns", in.offset_ns},
                        {"begin_ns", in.begin_ns}, {"end_ns", in.end_ns}, {"last_device", in.last_device},
                        {"last_device_lag_ns", in.last_device_lag_ns}});
    }
    doc["inputs"] = inputs;
    auto stragglers = nlohmann::ordered_json::array();
    for (const auto& s : report.stragglers) {
      const int32_t rank = report.inputs[s.input].rank;
      stragglers.push_back({{"step", s.step}, {"ranks", s.ranks}, {"process", report.inputs[s.input].process},
                            {"rank", KnownInt(rank)}, {"lag_ns", s.lag_ns},
                            {"lag_vs_median_ns", s.lag_vs_median_ns}});
    }
    doc["stragglers"] = stragglers;
    doc["alignment"] = analysis::AlignMethodName(report.alignment.method);
    doc["unaligned"] = report.unaligned;
    EmitJson(out, doc);
    return Status::Ok();
  }
  out << "merged " << report.inputs.size() << " traces, span "
      << FormatDuration(merged.trace.span_end_ns() - merged.trace.span_begin_ns());
  if (report.inputs.size() > 1) out << ", " << AlignmentLine(report.alignment);
  out << "\n\n";
  TextTable table({-32, -11, 12, 12, 12, -30, 10});
  table.Row({"process", "clock", "offset", "start", "end", "last device", "its lead"});
  for (const auto& in : report.inputs) {
    table.Row({Truncate(in.process, 32), in.alignment, FormatDuration(in.offset_ns), "+" + FormatDuration(in.begin_ns),
               "+" + FormatDuration(in.end_ns), Truncate(in.last_device, 30), FormatDuration(in.last_device_lag_ns)});
  }
  out << table.str();
  if (report.unaligned > 0) {
    out << "\nwarning: " << report.unaligned
        << " trace(s) from another host carry no clock sync record; their clocks are not aligned\n";
  }
  if (!report.stragglers_error.empty()) out << "\nno stragglers: " << report.stragglers_error << "\n";
  if (!report.stragglers.empty()) out << "\nStragglers (the rank that finished last per step)\n";
  for (const auto& s : report.stragglers) {
    out << "  step " << s.step << ": " << report.inputs[s.input].process << " finished "
        << FormatDuration(s.lag_ns) << " after the first of " << s.ranks << " ranks ("
        << FormatDuration(s.lag_vs_median_ns) << " after the median)\n";
  }
  if (output) out << "\nwrote " << *output << "\n";
  return Status::Ok();
}

}  // namespace

Status StragglersFromDigests(const ParsedArgs& args, std::span<const analysis::InputDigest> inputs,
                             std::ostream& out, std::ostream& err) {
  ASSIGN_OR_RETURN(const StragglerFlags flags, ParseStragglerFlags(args));
  ASSIGN_OR_RETURN(const std::vector<const analysis::InputDigest*> of_ranks,
                   DigestsOfRanks(args, inputs, [](const analysis::InputDigest& d) { return d.clock.rank; }));
  std::vector<analysis::ClockDigest> clocks;
  std::vector<analysis::StragglerDigest> kept;
  for (const analysis::InputDigest* input : of_ranks) {
    clocks.push_back(input->clock);
    kept.push_back(input->stragglers);
  }
  ASSIGN_OR_RETURN(const analysis::StragglerReport report,
                   analysis::CombineStragglers(kept, analysis::AlignDigests(clocks, flags.options.align), flags.options));
  return PrintStragglers(args, flags, report, out, err);
}

CommandSpec StragglersCommand() {
  return {.name = "stragglers",
          .synopsis = "TRACE|DIR... [--json] [--step N | --steps A-B] [--rank R] [--top N]",
          .description =
              "Across ranks, per step: the rank that finished its work last (the straggler), by how much\n"
              "and why. A synchronising collective makes the ranks end together, the early ones waiting\n"
              "in it: each rank's collective wait is its communication beyond the least of any rank, and\n"
              "its own end is its end less that wait, so the straggler is the rank the others waited for\n"
              "(lateness: its own end - the earliest, and - the median). Per rank its compute,\n"
              "communication (collectives, NCCL kernels), memory (copies, memsets) and input (GPU: time\n"
              "from the step's start to its first GPU work; host: TrainInput, IteratorGetNext,\n"
              "DataLoader ops), each a union. reason: the category where the straggler\n"
              "exceeds the other ranks' median most. A rank's work is its GPU work when it has any in the\n"
              "step, else its host work; annotations and sync markers never count. Inputs: per-rank traces\n"
              "(step traces with a rank, PyTorch traces with distributedInfo.rank and ProfilerStep#N);\n"
              "clocks are aligned as `merge` aligns them (--align). --top: steps listed (default 10).",
          .flags =
              {{"json", "", "write the result as JSON"},
              {"top", "N", "steps listed in text output, the latest (default 10)"},
              {"step", "N", "only step N (ProfilerStep#N, or a step trace's number)"},
              {"steps", "A-B", "only steps A to B"},
              {"rank", "R", "compare only ranks R (R,S,... or A-B; at least two)"},
              AlignFlagSpec()},
          .run = RunStragglers};
}

CommandSpec MergeCommand() {
  return {.name = "merge",
          .synopsis = "DIR|TRACES... [-o OUT] [--format " + trace::OutputFormatChoices() + "] [--json]",
          .description =
              "Merges per-rank (and per-step) traces into one timeline: one process per input (rank,\n"
              "host, step), clocks aligned by --align (default: one host's shared clock, else the ends of\n"
              "collectives matched across ranks, else the barrier timestamp each rank records,\n"
              "TraceSession.clock_sync_nanos; see `stepscope align`), and reports stragglers:\n"
              "per step the rank that finished last and by how much, and per rank the device (tower)\n"
              "that finished last. With -o, writes the merged trace in any output of 'stepscope\n"
              "formats', told from --format or OUT's extension as convert tells it: .json, .json.gz ->\n"
              "chrome; .pftrace, .perfetto-trace (.gz) -> perfetto-proto (a process track per input);\n"
              ".pb -> pb; .pbtxt -> pbtxt (one RunMetadata holding every input's devices).",
          .flags =
              {{"output", "OUT", "write the merged trace here (.json[.gz], .pftrace[.gz], .pb, .pbtxt)", 'o'},
              {"format", "FORMAT", "the output's format when OUT's extension does not tell it (as convert)"},
              {"json", "", "write the merge report as JSON"},
              AlignFlagSpec()},
          .run = RunMerge};
}

}  // namespace stepscope::cli
