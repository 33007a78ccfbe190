// The GPU commands: `gpu` (time breakdown per GPU and stream), `idle` (why each stream sat
// idle), `launches` (runtime call cost, launch delay, per op type), `annotations` (GPU time per
// user annotation) and `kernel-patterns` (frequent kernel sequences). Each input (a trace file,
// several, or a directory) is analysed on its own and the rows of one rank, device and stream add
// up; --step/--steps keep the GPU work that starts in those steps' windows (analysis/step_windows.h),
// --rank the traces of those ranks.
#include <algorithm>
#include <optional>
#include <set>
#include <string>

#include "profiler/analysis/gpu_analyses.h"
#include "profiler/analysis/step_windows.h"
#include "profiler/analysis/steps.h"
#include "profiler/cli/commands/commands.h"
#include "profiler/cli/commands/rank_digests.h"
#include "profiler/cli/commands/report.h"
#include "profiler/cli/report_format.h"
#include "profiler/cli/scope_flags.h"
#include "profiler/formats/inputs.h"

namespace stepscope::cli {
namespace {

using trace::Trace;

std::string D(double ns) { return FormatDuration(ns); }
int64_t R(double ns) { return static_cast<int64_t>(ns < 0 ? ns - 0.5 : ns + 0.5); }
std::string RankDevice(int32_t rank, const std::string& device) {
  return (rank >= 0 ? "rank " + std::to_string(rank) + " " : std::string()) + device;
}

struct Loaded {
  std::vector<analysis::GpuInput> inputs;  // pointing into the LoadedInputs
};

// The traces read, each in --step's windows.
StatusOr<Loaded> Load(const LoadedInputs& traces, const ParsedArgs& args) {
  ASSIGN_OR_RETURN(auto range, StepRange(args));
  Loaded loaded;
  if (!range) {
    for (const Trace& trace : traces.traces) loaded.inputs.push_back({&trace, {}});
    return loaded;
  }
  const auto windows = analysis::NumberedStepWindows(traces.traces, range, analysis::StepWindowing::kEveryStep);
  for (size_t i = 0; i < traces.traces.size(); ++i) {
    if (windows[i].empty()) continue;
    analysis::GpuInput input{&traces.traces[i], {}};
    for (const analysis::StepWindow& w : windows[i]) input.windows.emplace_back(w.begin_ns, w.end_ns);
    loaded.inputs.push_back(std::move(input));
  }
  if (loaded.inputs.empty()) return InvalidInput(analysis::NoStepInRangeMessage(*range));
  return loaded;
}

std::vector<FlagSpec> CommonFlags() {
  return {{"json", "", "write the result as JSON"},
          {"top", "N", "rows per list in text output (default 10)"},
          StepFlag("only GPU work that starts"), StepsFlag("only GPU work that starts"), RankFlag(), FullNamesFlag()};
}

// ---- gpu -------------------------------------------------------------------------------------

Json TimeJson(const analysis::GpuTime& t) {
  return {{"span_ns", t.span_ns}, {"busy_ns", t.busy_ns}, {"idle_ns", t.idle_ns}, {"compute_ns", t.compute_ns},
          {"communication_ns", t.communication_ns}, {"memory_ns", t.memory_ns},
          {"compute_communication_overlap_ns", t.compute_communication_overlap_ns}};
}

std::vector<FlagSpec> GpuFlags() {
  auto flags = CommonFlags();
  flags.erase(flags.begin() + 1);  // no lists to cut
  return flags;
}

// The windows of an input's steps (`steps`: the number each records, -1: none) that `range`
// selects, its unnumbered steps numbered from `numbered_from` (-1: not known: every unnumbered
// step taken), by the rule of analysis/step_windows.h.
std::vector<size_t> GpuStepWindowsTaken(const std::vector<int64_t>& steps, int64_t numbered_from,
                                        const analysis::StepRange& range) {
  std::vector<size_t> taken;
  for (size_t k = 0; k < steps.size(); ++k) {
    const int64_t number = steps[k] >= 0 ? steps[k] : numbered_from >= 0 ? numbered_from + static_cast<int64_t>(k) : -1;
    if (number < 0 || (number >= range->first && number <= range->second)) taken.push_back(k);
  }
  return taken;
}

// The flags gpu checks before it reads anything.
Status CheckGpuFlags(const ParsedArgs& args) {
  RETURN_IF_ERROR(StepRange(args).status());
  return RankSet(args).status();
}

Status PrintGpu(const std::vector<analysis::GpuBreakdown>& rows, const ParsedArgs& args, CommandOutput& output) {
  std::ostream& out = output.text;
  if (args.Has("json")) {
    Json gpus = Json::array();
    for (const auto& g : rows) {
      Json row = {{"rank", KnownInt(g.rank)}, {"device", g.device}};
      row.update(TimeJson(g.time));
      Json streams = Json::array();
      for (const auto& s : g.streams) {
        Json stream = {{"stream", s.stream}, {"slices", s.time.slices}};
        stream.update(TimeJson(s.time));
        streams.push_back(stream);
      }
      row["streams"] = streams;
      gpus.push_back(row);
    }
    output.doc = Json{{"schema", "stepscope.gpu/1"}, {"gpus", gpus}};
    return Status::Ok();
  }
  if (rows.empty()) {
    out << "no GPU work in the traces given\n";
    return Status::Ok();
  }
  TextTable table({-28, 8, 12, 12, 12, 7, 12, 12, 12, 12});
  table.Row({"gpu / stream", "work", "span", "busy", "idle", "util", "compute", "comm", "memory", "overlap"});
  auto cells = [](const std::string& name, const analysis::GpuTime& t) {
    const double util = t.span_ns > 0 ? static_cast<double>(t.busy_ns) / static_cast<double>(t.span_ns) : 0;
    return std::vector<std::string>{name, IntText(t.slices), FormatDuration(t.span_ns), FormatDuration(t.busy_ns),
                                    FormatDuration(t.idle_ns), FormatPercent(util), FormatDuration(t.compute_ns),
                                    FormatDuration(t.communication_ns), FormatDuration(t.memory_ns),
                                    FormatDuration(t.compute_communication_overlap_ns)};
  };
  for (const auto& g : rows) {
    table.Row(cells(RankDevice(g.rank, g.device), g.time));
    for (const auto& s : g.streams) table.Row(cells("  " + s.stream, s.time));
  }
  out << table.str();
  return Status::Ok();
}

// gpu read one trace at a time, each kept only as its digest (as spread over MPI processes).
Status RunGpuOneByOne(const ParsedArgs& args, std::ostream& out, std::ostream& err) {
  RETURN_IF_ERROR(CheckGpuFlags(args));
  ASSIGN_OR_RETURN(const auto ranks, RankSet(args));
  ASSIGN_OR_RETURN(const std::vector<std::string> paths, trace::ResolveTracePaths(args.positional));
  std::vector<analysis::InputDigest> inputs;
  int64_t numbered_from = 0;  // the place of the next kept input's first step
  RETURN_IF_ERROR(trace::ForEachTrace(paths, [&](Trace trace) {
    inputs.push_back(GpuDigestOfInput(trace, inputs.size(), args, numbered_from));
    const int32_t rank = trace.step_info().rank >= 0 ? trace.step_info().rank : static_cast<int32_t>(inputs.size() - 1);
    if (!ranks || ranks->count(rank) > 0) numbered_from += static_cast<int64_t>(inputs.back().gpu.steps.size());
    return Status::Ok();
  }));
  return AnalyseAndPrint(
      [&](const LoadedInputs&, const ParsedArgs&, CommandOutput& output) {
        return GpuFromDigests(args, inputs, /*scoped=*/false, output);
      },
      {}, args, out, err);
}

// On traces already read (--rank's): `report` and the Python module.
Status AnalyseGpu(const LoadedInputs& loaded, const ParsedArgs& args, CommandOutput& out) {
  RETURN_IF_ERROR(CheckGpuFlags(args));
  // The traces are --rank's already: each is digested whole (a rank unknown is not numbered by
  // its place among these).
  ParsedArgs every_rank = args;
  every_rank.values.erase("rank");
  std::vector<analysis::InputDigest> inputs;
  int64_t numbered_from = 0;
  for (const Trace& trace : loaded.traces) {
    inputs.push_back(GpuDigestOfInput(trace, inputs.size(), every_rank, numbered_from));
    numbered_from += static_cast<int64_t>(inputs.back().gpu.steps.size());
  }
  return GpuFromDigests(args, inputs, /*scoped=*/true, out);
}

// ---- idle ------------------------------------------------------------------------------------

Json StatsJson(const analysis::IntervalStats& s) {
  return {{"count", s.count}, {"total_ns", s.total_ns}, {"p50_ns", R(s.p50_ns)}, {"p95_ns", R(s.p95_ns)},
          {"max_ns", s.max_ns}};
}

std::vector<FlagSpec> IdleFlags() {
  auto flags = CommonFlags();
  flags.push_back({"rule", "RULE", "launch-end (default) or hta"});
  flags.push_back({"kernel-delay", "NS", "hta rule: gaps under this are kernel_wait (default 30000)"});
  return flags;
}

Status RunIdle(const LoadedInputs& traces, const ParsedArgs& args, CommandOutput& output) {
  std::ostream& out = output.text;
  ASSIGN_OR_RETURN(const size_t top, PositiveFlag(args, "top", 10));
  analysis::IdleOptions options;
  options.largest = top;
  const std::string rule = args.GetOr("rule", "launch-end");
  if (rule == "hta") {
    options.rule = analysis::IdleRule::kHta;
  } else if (rule != "launch-end") {
    return InvalidInput("--rule " + rule + ": use launch-end or hta");
  }
  if (args.Has("kernel-delay")) {
    if (options.rule != analysis::IdleRule::kHta) return InvalidInput("--kernel-delay applies to --rule hta only");
    ASSIGN_OR_RETURN(const size_t delay, PositiveFlag(args, "kernel-delay", 30000));
    options.consecutive_kernel_delay_ns = static_cast<int64_t>(delay);
  }
  ASSIGN_OR_RETURN(Loaded loaded, Load(traces, args));
  const analysis::IdleReport report = analysis::ComputeIdle(loaded.inputs, options);
  const int kCauses = 3;
  auto cause_name = [](int c) { return std::string(analysis::IdleCauseName(static_cast<analysis::IdleCause>(c))); };
  if (args.Has("json")) {
    Json doc = {{"schema", "stepscope.idle/1"}, {"rule", rule}};
    if (options.rule == analysis::IdleRule::kHta) doc["consecutive_kernel_delay_ns"] = options.consecutive_kernel_delay_ns;
    Json totals = Json::object();
    for (int c = 0; c < kCauses; ++c) totals[cause_name(c)] = StatsJson(report.by_cause[c]);
    doc["totals"] = totals;
    Json streams = Json::array();
    for (const auto& s : report.streams) {
      Json causes = Json::object();
      for (int c = 0; c < kCauses; ++c) causes[cause_name(c)] = StatsJson(s.by_cause[c]);
      streams.push_back({{"rank", KnownInt(s.rank)}, {"device", s.device}, {"stream", s.stream}, {"work", s.work},
                         {"idle", StatsJson(s.all)}, {"causes", causes}});
    }
    doc["streams"] = streams;
    Json gpus = Json::array();
    for (const auto& g : report.gpus) {
      Json causes = Json::object();
      for (int c = 0; c < kCauses; ++c) causes[cause_name(c)] = StatsJson(g.by_cause[c]);
      gpus.push_back({{"rank", KnownInt(g.rank)}, {"device", g.device}, {"work", g.work}, {"idle", StatsJson(g.all)},
                      {"causes", causes}});
    }
    doc["gpus"] = gpus;
    Json gaps = Json::array();
    for (const auto& g : report.largest) {
      gaps.push_back({{"rank", KnownInt(g.rank)}, {"device", g.device}, {"stream", g.stream}, {"begin_ns", g.begin_ns},
                      {"length_ns", g.length()}, {"cause", std::string(analysis::IdleCauseName(g.cause))},
                      {"after", g.before}, {"before", g.after}, {"launch", g.launch},
                      {"launch_end_ns", g.launch_end_ns}, {"host_op", g.host_op}});
    }
    doc["largest_gaps"] = gaps;
    doc["launch_links"] = LaunchLinksJson(report.links);
    output.doc = std::move(doc);
    return Status::Ok();
  }
  out << "rule " << rule;
  if (options.rule == analysis::IdleRule::kHta) out << " (kernel_wait under " << options.consecutive_kernel_delay_ns << " ns)";
  out << "\n" << LaunchLinksText(report.links) << "\n";
  TextTable table({-32, -12, 7, 12, 12, 12, 12});
  table.Row({"gpu / stream", "cause", "gaps", "total", "p50", "p95", "max"});
  auto row = [&](const std::string& where, const std::string& cause, const analysis::IntervalStats& s) {
    table.Row({where, cause, IntText(s.count), FormatDuration(s.total_ns), D(s.p50_ns), D(s.p95_ns), FormatDuration(s.max_ns)});
  };
  for (const auto& s : report.streams) {
    row(RankDevice(s.rank, s.device) + " " + s.stream, "all", s.all);
    for (int c = 0; c < kCauses; ++c) {
      if (s.by_cause[c].count > 0) row("", cause_name(c), s.by_cause[c]);
    }
  }
  for (int c = 0; c < kCauses; ++c) row(c == 0 ? "all streams (summed)" : "", cause_name(c), report.by_cause[c]);
  // A GPU is idle while none of its streams runs work: never more than its span, unlike the
  // streams' gaps summed (streams wait at the same time).
  for (const auto& g : report.gpus) {
    row(RankDevice(g.rank, g.device) + " (no stream busy)", "all", g.all);
    for (int c = 0; c < kCauses; ++c) {
      if (g.by_cause[c].count > 0) row("", cause_name(c), g.by_cause[c]);
    }
  }
  out << table.str() << "\nLargest gaps\n";
  std::vector<std::string> after;
  for (const auto& g : report.largest) after.push_back(g.after);
  NameCells names(args.Has("full-names"), after);
  for (const auto& g : report.largest) {
    out << "  " << FormatDuration(g.length()) << "  " << RankDevice(g.rank, g.device) << " " << g.stream << "  "
        << analysis::IdleCauseName(g.cause) << "  before " << names(g.after, 40);
    if (!g.launch.empty()) {
      out << "  launched by " << g.launch
          << (g.host_op.empty() || g.host_op == g.launch ? "" : " in " + ElideMiddle(g.host_op, 40))
          << " (call ended " << FormatDuration(g.launch_end_ns - g.begin_ns) << " after the stream went idle)";
    }
    out << "\n";
  }
  return Status::Ok();
}

// ---- launches --------------------------------------------------------------------------------

Json DurationsJson(const analysis::DurationStats& s) {
  return {{"count", s.count}, {"min_ns", s.min_ns}, {"mean_ns", R(s.mean_ns)}, {"p50_ns", R(s.p50_ns)},
          {"p95_ns", R(s.p95_ns)}, {"max_ns", s.max_ns}};
}

Json LaunchJson(const analysis::Launch& l) {
  return {{"rank", KnownInt(l.rank)}, {"device", l.device}, {"stream", l.stream}, {"runtime", l.runtime},
          {"kernel", l.kernel}, {"kind", l.kind}, {"host_op", l.host_op}, {"correlation", l.correlation},
          {"runtime_start_ns", l.runtime_start_ns}, {"cpu_ns", l.cpu_ns}, {"gpu_start_ns", l.gpu_start_ns},
          {"gpu_ns", l.gpu_ns}, {"delay_ns", l.delay_ns}};
}

std::vector<FlagSpec> LaunchesFlags() {
  auto flags = CommonFlags();
  flags.push_back({"runtime-cutoff-us", "U", "runtime calls longer than this are outliers (default 50)"});
  flags.push_back({"delay-cutoff-us", "U", "launch delays longer than this are outliers (default 100)"});
  flags.push_back({"all", "", "JSON: list every launch"});
  return flags;
}

Status RunLaunches(const LoadedInputs& traces, const ParsedArgs& args, CommandOutput& output) {
  std::ostream& out = output.text;
  ASSIGN_OR_RETURN(const size_t top, PositiveFlag(args, "top", 10));
  analysis::LaunchOptions options;
  options.outliers = top;
  ASSIGN_OR_RETURN(const size_t runtime_us, PositiveFlag(args, "runtime-cutoff-us", 50));
  ASSIGN_OR_RETURN(const size_t delay_us, PositiveFlag(args, "delay-cutoff-us", 100));
  options.runtime_cutoff_ns = static_cast<int64_t>(runtime_us) * 1000;
  options.delay_cutoff_ns = static_cast<int64_t>(delay_us) * 1000;
  options.keep_all = args.Has("all") && args.Has("json");
  ASSIGN_OR_RETURN(Loaded loaded, Load(traces, args));
  const analysis::LaunchReport r = analysis::ComputeLaunches(loaded.inputs, options);
  if (args.Has("json")) {
    Json doc = {{"schema", "stepscope.launches/1"}, {"work", r.work}, {"unlinked", r.unlinked},
                {"launches", r.linked}, {"launch_links", LaunchLinksJson({r.work, r.linked})},
                {"cpu", DurationsJson(r.cpu)}, {"gpu", DurationsJson(r.gpu)}, {"delay", DurationsJson(r.delay)}};
    Json lr = Json::array(), ld = Json::array();
    for (const auto& l : r.long_runtime) lr.push_back(LaunchJson(l));
    for (const auto& l : r.long_delay) ld.push_back(LaunchJson(l));
    doc["long_runtime"] = {{"cutoff_ns", r.runtime_cutoff_ns}, {"count", r.long_runtime_count}, {"largest", lr}};
    doc["long_delay"] = {{"cutoff_ns", r.delay_cutoff_ns}, {"count", r.long_delay_count}, {"largest", ld}};
    Json ops = Json::array();
    for (const auto& o : r.by_op) {
      Json kernels = Json::array();
      for (const auto& k : o.kernels) {
        kernels.push_back({{"kernel", k.kernel}, {"count", k.count}, {"delay", DurationsJson(k.delay)}});
      }
      ops.push_back({{"op", o.op}, {"launches", o.launches}, {"delay", DurationsJson(o.delay)},
                     {"op_to_launch", DurationsJson(o.op_to_launch)}, {"kernels", kernels}});
    }
    doc["by_op"] = ops;
    if (args.Has("all")) {
      Json all = Json::array();
      for (const auto& l : r.launches) all.push_back(LaunchJson(l));
      doc["all"] = all;
    }
    output.doc = std::move(doc);
    return Status::Ok();
  }
  out << r.linked << " launches linked of " << r.work << " pieces of GPU work (" << r.unlinked
      << " without a known launch, " << FormatPercent(analysis::LaunchLinks{r.work, r.linked}.fraction())
      << " linked)\n\n";
  TextTable stats({-22, 7, 12, 12, 12, 12, 12});
  stats.Row({"", "count", "min", "mean", "p50", "p95", "max"});
  auto srow = [&](const std::string& what, const analysis::DurationStats& s) {
    stats.Row({what, IntText(s.count), FormatDuration(s.min_ns), D(s.mean_ns), D(s.p50_ns), D(s.p95_ns), FormatDuration(s.max_ns)});
  };
  srow("runtime call (CPU)", r.cpu);
  srow("GPU work", r.gpu);
  srow("launch delay", r.delay);
  out << stats.str();
  std::vector<std::string> kernels;
  for (const auto* launches : {&r.long_runtime, &r.long_delay}) {
    for (const auto& l : *launches) kernels.push_back(l.kernel);
  }
  for (size_t i = 0; i < r.by_op.size() && i < top; ++i) {
    for (const auto& k : r.by_op[i].kernels) kernels.push_back(k.kernel);
  }
  NameCells names(args.Has("full-names"), kernels);
  auto list = [&](const std::string& title, const std::vector<analysis::Launch>& launches, bool by_delay) {
    out << "\n" << title << "\n";
    for (const auto& l : launches) {
      out << "  " << Align(FormatDuration(by_delay ? l.delay_ns : l.cpu_ns), 12) << "  " << l.runtime << " -> "
          << names(l.kernel, 50)
          // An op that launched the work itself (RunMetadata) is not repeated as its own host.
          << (l.host_op.empty() || l.host_op == l.runtime ? "" : "  in " + ElideMiddle(l.host_op, 30)) << "\n";
    }
  };
  list("Long runtime calls (over " + FormatDuration(r.runtime_cutoff_ns) + "): " + IntText(r.long_runtime_count),
       r.long_runtime, false);
  list("Long launch delays (over " + FormatDuration(r.delay_cutoff_ns) + "): " + IntText(r.long_delay_count), r.long_delay,
       true);
  out << "\nPer op type (the host op enclosing the runtime call)\n";
  TextTable ops({-40, 8, 12, 12, 12});
  ops.Row({"op / kernel", "launches", "delay p50", "delay mean", "delay max"});
  for (size_t i = 0; i < r.by_op.size() && i < top; ++i) {
    const auto& o = r.by_op[i];
    ops.Row({ElideMiddle(o.op, 40), IntText(o.launches), D(o.delay.p50_ns), D(o.delay.mean_ns), FormatDuration(o.delay.max_ns)});
    for (const auto& k : o.kernels) {
      ops.Row({"  " + names(k.kernel, 38), IntText(k.count), D(k.delay.p50_ns), D(k.delay.mean_ns),
               FormatDuration(k.delay.max_ns)});
    }
  }
  out << ops.str();
  return Status::Ok();
}

// ---- annotations -----------------------------------------------------------------------------

std::vector<FlagSpec> AnnotationsFlags() {
  auto flags = CommonFlags();
  flags.erase(flags.begin() + 1);
  flags.push_back({"depth", "N", "text output: rows down to this nesting depth (default all)"});
  return flags;
}

Status RunAnnotations(const LoadedInputs& traces, const ParsedArgs& args, CommandOutput& output) {
  std::ostream& out = output.text;
  ASSIGN_OR_RETURN(const size_t depth, PositiveFlag(args, "depth", std::numeric_limits<size_t>::max()));
  ASSIGN_OR_RETURN(Loaded loaded, Load(traces, args));
  const analysis::AnnotationReport r = analysis::ComputeAnnotationTime(loaded.inputs);
  if (args.Has("json")) {
    Json rows = Json::array();
    for (const auto& a : r.rows) {
      rows.push_back({{"path", a.path}, {"name_scope", a.name_scope}, {"instances", a.instances},
                      {"cpu_ns", a.cpu_ns}, {"work", a.work}, {"gpu_ns", a.gpu_ns},
                      {"gpu_busy_ns", a.gpu_busy_ns}, {"self_work", a.self_work},
                      {"self_gpu_ns", a.self_gpu_ns}});
    }
    output.doc = Json{{"schema", "stepscope.annotations/1"}, {"work", r.work}, {"gpu_ns", r.gpu_ns},
                {"unannotated_work", r.unannotated_work}, {"unannotated_gpu_ns", r.unannotated_gpu_ns},
                {"unlinked_work", r.unlinked_work}, {"unlinked_gpu_ns", r.unlinked_gpu_ns},
                {"gpu_annotation_work", r.gpu_annotation_work}, {"other_thread_work", r.other_thread_work},
                {"launch_links", LaunchLinksJson(r.links)}, {"annotations", rows}};
    return Status::Ok();
  }
  out << r.work << " pieces of GPU work, " << FormatDuration(r.gpu_ns) << "; outside every annotation "
      << r.unannotated_work << " (" << FormatDuration(r.unannotated_gpu_ns) << "), not attributed (no annotation on "
      << "its stream, launch unknown) " << r.unlinked_work << " (" << FormatDuration(r.unlinked_gpu_ns) << ")\n";
  if (r.gpu_annotation_work > 0 || r.other_thread_work > 0) {
    out << "attributed by the annotations on GPU streams " << r.gpu_annotation_work << ", by another thread's annotation "
        << r.other_thread_work << "\n";
  }
  out << LaunchLinksText(r.links) << "\n";
  if (r.rows.empty()) {
    out << "no annotations or name scopes launched GPU work\n";
    return Status::Ok();
  }
  TextTable table({-64, 6, 12, 7, 12, 7, 12, 12});
  table.Row({"annotation", "count", "cpu", "work", "gpu", "share", "busy", "self gpu"});
  for (const auto& a : r.rows) {
    if (a.path.size() > depth) continue;
    const double share = r.gpu_ns > 0 ? static_cast<double>(a.gpu_ns) / static_cast<double>(r.gpu_ns) : 0;
    table.Row({std::string(2 * (a.path.size() - 1), ' ') + ElideMiddle(a.path.back(), 64 - 2 * (a.path.size() - 1)),
               IntText(a.instances), FormatDuration(a.cpu_ns), IntText(a.work), FormatDuration(a.gpu_ns), FormatPercent(share),
               FormatDuration(a.gpu_busy_ns), FormatDuration(a.self_gpu_ns)});
  }
  out << table.str();
  return Status::Ok();
}

// ---- kernel-patterns -------------------------------------------------------------------------

std::vector<FlagSpec> KernelPatternsFlags() {
  auto flags = CommonFlags();
  flags.push_back({"length", "K", "kernels per sequence (default 3)"});
  flags.push_back({"min-count", "N", "sequences seen fewer times are left out (default 2)"});
  flags.push_back({"by", "ORDER", "count (default) or time"});
  return flags;
}

Status RunKernelPatterns(const LoadedInputs& traces, const ParsedArgs& args, CommandOutput& output) {
  std::ostream& out = output.text;
  analysis::KernelPatternOptions options;
  ASSIGN_OR_RETURN(options.top, PositiveFlag(args, "top", 10));
  ASSIGN_OR_RETURN(options.length, PositiveFlag(args, "length", 3));
  ASSIGN_OR_RETURN(const size_t min_count, PositiveFlag(args, "min-count", 2));
  options.min_count = static_cast<int64_t>(min_count);
  const std::string by = args.GetOr("by", "count");
  if (by != "count" && by != "time") return InvalidInput("--by " + by + ": use count or time");
  options.by_time = by == "time";
  ASSIGN_OR_RETURN(Loaded loaded, Load(traces, args));
  const analysis::KernelPatternReport r = analysis::ComputeKernelPatterns(loaded.inputs, options);
  if (args.Has("json")) {
    Json patterns = Json::array();
    for (const auto& p : r.patterns) {
      patterns.push_back({{"kernels", p.kernels}, {"count", p.count}, {"gpu_ns", p.gpu_ns},
                          {"span_ns", p.span_ns}, {"gap_ns", p.gap_ns}, {"host_op", p.host_op}});
    }
    output.doc = Json{{"schema", "stepscope.kernel_patterns/1"}, {"length", r.length}, {"kernels", r.kernels},
                {"distinct_patterns", r.distinct_patterns}, {"launch_links", LaunchLinksJson(r.links)},
                {"patterns", patterns}};
    return Status::Ok();
  }
  out << r.kernels << " kernels; " << r.distinct_patterns << " sequences of " << r.length << " seen at least "
      << options.min_count << " times\n" << LaunchLinksText(r.links);
  std::vector<std::string> kernels;
  for (const auto& p : r.patterns) kernels.insert(kernels.end(), p.kernels.begin(), p.kernels.end());
  NameCells names(args.Has("full-names"), kernels);
  int n = 0;
  for (const auto& p : r.patterns) {
    out << "\n#" << ++n << "  " << p.count << " times, gpu " << FormatDuration(p.gpu_ns) << ", span "
        << FormatDuration(p.span_ns) << ", idle inside " << FormatDuration(p.gap_ns)
        << (p.host_op.empty() ? "" : ", launched in " + ElideMiddle(p.host_op, 40)) << "\n";
    for (const auto& k : p.kernels) out << "    " << names(k, 100) << "\n";
  }
  return Status::Ok();
}

}  // namespace

std::string LaunchLinksText(const analysis::LaunchLinks& links) {
  if (links.work == 0) return "";
  std::string text = "launch links: " + IntText(links.linked) + " of " + IntText(links.work) +
                     " pieces of GPU work linked to the call that launched them (" + FormatPercent(links.fraction()) + ")";
  if (links.linked < links.work) text += "; " + IntText(links.work - links.linked) + " without a known launch";
  return text + "\n";
}

Json LaunchLinksJson(const analysis::LaunchLinks& links) {
  return {{"work", links.work}, {"linked", links.linked}, {"fraction", links.fraction()}};
}

analysis::InputDigest GpuDigestOfInput(const Trace& trace, size_t input, const ParsedArgs& args,
                                       std::optional<int64_t> numbered_from) {
  analysis::InputDigest digest;
  digest.input = input;
  digest.gpu.source = trace.source_path();
  digest.gpu.rank = trace.step_info().rank;
  const auto ranks = RankSet(args);
  const int32_t rank = trace.step_info().rank >= 0 ? trace.step_info().rank : static_cast<int32_t>(input);
  if (ranks.ok() && *ranks && (*ranks)->count(rank) == 0) return digest;
  const auto range = StepRange(args);
  if (!range.ok() || !*range) {
    digest.gpu.rows = analysis::GpuBreakdownOfInput({&trace, {}});
    return digest;
  }
  // Numbered and selected as NumberedStepWindows does (kEveryStep), where the place of the
  // input's first step is known; else its unnumbered steps are taken, for process 0 to check.
  const std::vector<analysis::Step> steps = analysis::StepsOfTrace(trace, /*with_totals=*/false);
  for (const analysis::Step& step : steps) digest.gpu.steps.push_back(step.step);
  digest.gpu.numbered_from = numbered_from.value_or(-1);
  const std::vector<size_t> taken = GpuStepWindowsTaken(digest.gpu.steps, digest.gpu.numbered_from, *range);
  if (taken.empty()) return digest;
  analysis::GpuInput windows{&trace, {}};
  for (size_t k : taken) windows.windows.emplace_back(steps[k].begin_ns, steps[k].end_ns);
  digest.gpu.rows = analysis::GpuBreakdownOfInput(windows);
  return digest;
}

Status GpuFromDigests(const ParsedArgs& args, std::span<const analysis::InputDigest> inputs, bool scoped,
                      CommandOutput& out) {
  RETURN_IF_ERROR(CheckGpuFlags(args));
  ASSIGN_OR_RETURN(const auto range, StepRange(args));
  ASSIGN_OR_RETURN(const std::vector<const analysis::InputDigest*> kept,
                   DigestsOfRanks(args, inputs, [](const analysis::InputDigest& d) { return d.gpu.rank; }, scoped));
  std::vector<std::vector<analysis::GpuBreakdown>> rows;
  if (!range) {
    for (const analysis::InputDigest* input : kept) rows.push_back(input->gpu.rows);
    return PrintGpu(analysis::CombineGpuBreakdowns(rows), args, out);
  }
  // Each kept input's steps numbered over the inputs kept; its rows count when --step selects a
  // window of it, and hold those windows when it took what is selected.
  int64_t numbered_from = 0;
  for (const analysis::InputDigest* input : kept) {
    const std::vector<size_t> selected = GpuStepWindowsTaken(input->gpu.steps, numbered_from, range);
    numbered_from += static_cast<int64_t>(input->gpu.steps.size());
    if (selected.empty()) continue;
    if (selected != GpuStepWindowsTaken(input->gpu.steps, input->gpu.numbered_from, range)) {
      return InvalidInput(input->gpu.source + ": some of its steps record no number and others do; numbered by their place among all "
                          "the inputs' steps, they cannot be selected where the inputs are read apart: run `gpu " +
                          "--step` as one process");
    }
    rows.push_back(input->gpu.rows);
  }
  if (rows.empty()) return InvalidInput(analysis::NoStepInRangeMessage(*range));
  return PrintGpu(analysis::CombineGpuBreakdowns(rows), args, out);
}

CommandSpec GpuCommand() {
  return {.name = "gpu",
          .synopsis = "TRACE|DIR... [--json] [--step N | --steps A-B] [--rank R]",
          .description =
              "Time breakdown per GPU (rank and device) and stream: span from the first to the last GPU\n"
              "work (kernels, copies, memsets; never annotations or sync markers), busy (their union),\n"
              "idle = span - busy, compute (non-communication kernels), communication (NCCL kernels,\n"
              "collectives, fusion-buffer copies), memory (other copies and memsets), each a union, and\n"
              "compute/communication overlap. Inputs of one rank add up.",
          .flags = GpuFlags(),
          .run = RunGpuOneByOne,
          .analyse = AnalyseGpu};
}

CommandSpec IdleCommand() {
  return {.name = "idle",
          .synopsis = "TRACE|DIR... [--json] [--top N] [--rule launch-end|hta] [--kernel-delay NS] [--step N | --steps A-B] [--rank R]",
          .description =
              "Why each GPU stream sat idle: every gap between consecutive GPU work on a stream, by the\n"
              "launch of the work after it (its runtime call, linked by correlation id or flow). launch-end\n"
              "(default): host_wait when the call ended after the previous work ended, kernel_wait when\n"
              "it ended before (queued behind work: launch overhead, driver), other when no launch is\n"
              "known. hta: HTA's rule (host_wait when the call started after the previous work ended,\n"
              "kernel_wait for other gaps under --kernel-delay, default 30000 ns: HTA's 30 in Kineto's\n"
              "microseconds, other for the rest).\n"
              "Totals and interval statistics (count, p50, p95, max) per stream and cause; per GPU, the\n"
              "time none of its streams ran work (the gaps of their union, each by the work after it:\n"
              "at most the GPU's span, where the streams' gaps summed count waits at once several\n"
              "times); and the largest gaps with the runtime call and the host op enclosing it.",
          .flags = IdleFlags(),
          .run = LoadThen(RunIdle),
          .analyse = RunIdle};
}

CommandSpec LaunchesCommand() {
  return {.name = "launches",
          .synopsis = "TRACE|DIR... [--json] [--top N] [--runtime-cutoff-us U] [--delay-cutoff-us U] [--step N | --steps A-B] [--rank R] [--all]",
          .description =
              "Per launch (GPU work linked to its runtime call by correlation id or flow): the call's CPU time,\n"
              "the work's GPU time and the launch delay (work start - call end, not clipped). Statistics\n"
              "of each; outliers: calls longer than --runtime-cutoff-us (default 50) and delays longer\n"
              "than --delay-cutoff-us (default 100), HTA's fixed cut-offs; per op type (the host op\n"
              "enclosing the call) the kernels it launched, their count and delays. --all lists every\n"
              "launch in the JSON.",
          .flags = LaunchesFlags(),
          .run = LoadThen(RunLaunches),
          .analyse = RunLaunches};
}

CommandSpec AnnotationsCommand() {
  return {.name = "annotations",
          .synopsis = "TRACE|DIR... [--json] [--depth N] [--step N | --steps A-B] [--rank R]",
          .description =
              "GPU time per user annotation (record_function, `## name ##` spans, profiler ranges),\n"
              "nested: each piece of GPU work counts for the annotations around the host call that\n"
              "launched it. gpu: its time summed; busy: its union per GPU; self: work launched with the\n"
              "row the innermost annotation; cpu: the annotation spans' host time. Where the trace\n"
              "draws annotations on GPU streams (PyTorch's gpu_user_annotation), the work counts for\n"
              "those around it; work launched on a thread without an annotation of its own counts for\n"
              "the annotation another thread of the process had open at the call (the autograd thread).\n"
              "Traces without annotations (TensorFlow's) use the name scopes of the launching op.\n"
              "ProfilerStep#N and the profiler's own span are left out: choose steps with --step.",
          .flags = AnnotationsFlags(),
          .run = LoadThen(RunAnnotations),
          .analyse = RunAnnotations};
}

CommandSpec KernelPatternsCommand() {
  return {.name = "kernel-patterns",
          .synopsis = "TRACE|DIR... [--json] [--top N] [--length K] [--min-count N] [--by count|time] [--step N | --steps A-B] [--rank R]",
          .description =
              "The most frequent sequences of K consecutive kernels on a stream (copies, memsets and\n"
              "collectives skipped over; occurrences never overlap) with their total GPU time, the span\n"
              "they cover and the stream's idle time inside them, and the op that launched their first\n"
              "kernel most often: candidates for fusion.",
          .flags = KernelPatternsFlags(),
          .run = LoadThen(RunKernelPatterns),
          .analyse = RunKernelPatterns};
}

}  // namespace stepscope::cli
