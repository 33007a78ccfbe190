// `stepscope efficiency`: how much of the machine the run uses (analysis/efficiency.h): the peak
// used and why, MFU per step, per rank and across ranks, and per op type and per kernel the
// FLOPs, bytes, achieved rates and roofline bound; text and JSON (stepscope.efficiency/1).
#include <cmath>
#include <cstdio>
#include <functional>
#include <optional>
#include <set>
#include <string>

#include "base/units.h"
#include "profiler/analysis/efficiency.h"
#include "profiler/cli/commands/collectives.h"
#include "profiler/cli/commands/commands.h"
#include "profiler/cli/commands/rank_digests.h"
#include "profiler/cli/commands/report.h"
#include "profiler/cli/report_format.h"
#include "profiler/cli/scope_flags.h"
#include "profiler/formats/inputs.h"

namespace stepscope::cli {
namespace {

using analysis::EfficiencyReport;
using analysis::EfficiencyRow;

// The largest peak --peak accepts (TFLOP/s): a thousand times any device's, so a unit slip
// (FLOP/s given for TFLOP/s) is caught rather than believed.
constexpr double kMaxPeakTflops = 1e5;

std::string KnownSi(double value, const std::string& unit) { return value < 0 ? "-" : FormatSi(value, unit); }
std::string Share(const std::optional<double>& share) { return share ? FormatPercent(*share) : "-"; }

Json Known(double value) { return value < 0 ? Json(nullptr) : Json(value); }
Json Known(int64_t value) { return value < 0 ? Json(nullptr) : Json(value); }
Json Known(const std::optional<double>& value) { return value ? Json(*value) : Json(nullptr); }

std::string PeakText(const EfficiencyReport& r) {
  const auto& peak = r.peak;
  std::string out;
  if (!peak.known()) {
    out += "peak        unknown: pass --peak TFLOPS (or --device NAME); " + peak.source + "\n";
  } else {
    out += "peak        " + FormatSi(peak.flops_per_s, "FLOP/s") + " " + std::string(analysis::PrecisionName(peak.precision)) +
           (peak.bytes_per_s > 0 ? ", " + FormatSi(peak.bytes_per_s, "B/s") : ", memory bandwidth unknown") +
           (peak.device.empty() ? "" : " (" + peak.device + ")") + "\n";
    out += "  from      " + peak.source + "\n";
  }
  out += "precision   " + r.precision_why + "\n";
  return out;
}

std::string StepsText(const EfficiencyReport& r, size_t top) {
  std::string out = "\nSteps (model FLOPs: matmul, convolution, attention, recurrent cells; MFU = model FLOPs / time / peak)\n";
  TextTable table({5, 6, 12, 14, 14, 8, 8});
  table.Row({"rank", "step", "duration", "model FLOPs", "model FLOP/s", "MFU", "HFU"});
  size_t shown = 0;
  for (const auto& s : r.steps) {
    if (shown++ == top) {
      table.Row({"", "...", "", "", "", "", ""});
      break;
    }
    table.Row({s.rank_recorded ? IntText(s.rank) : "(" + IntText(s.rank) + ")", IntText(s.number), FormatDuration(s.duration_ns),
               s.flops_known ? FormatSi(static_cast<double>(s.model_flops), "FLOP") : "-",
               s.flops_known && s.duration_ns > 0 ? FormatSi(s.model_flops / (s.duration_ns * 1e-9), "FLOP/s") : "-", Share(s.mfu),
               Share(s.hfu)});
  }
  auto total_row = [&](const std::string& label, const analysis::EfficiencyTotal& t) {
    table.Row({label, IntText(t.steps), FormatDuration(t.duration_ns), t.flops_known ? FormatSi(static_cast<double>(t.model_flops), "FLOP") : "-",
               KnownSi(t.model_flops_per_s, "FLOP/s"), Share(t.mfu), Share(t.hfu)});
  };
  if (r.ranks.size() > 1) {
    for (const auto& rank : r.ranks) total_row("r" + IntText(rank.rank), rank);
  }
  total_row("all", r.total);
  out += table.str();
  if (r.ranks.size() > 1 || r.steps.size() > 1) out += "  (rank and \"all\" rows: the step column is the number of steps)\n";
  return out;
}

std::string RowsText(const std::string& title, const std::vector<EfficiencyRow>& rows, size_t top, bool kernels,
                     bool full_names) {
  std::string out = "\n" + title + " (of " + std::to_string(rows.size()) + ")\n";
  std::vector<std::string> names;
  for (size_t i = 0; i < rows.size() && i < top; ++i) names.push_back(rows[i].name);
  NameCells cells(full_names, names);
  TextTable table({kernels ? -40 : -28, 7, 11, 11, 10, 12, 11, 8, -8, 8, -14});
  table.Row({kernels ? "kernel" : "op type", "count", "time", "FLOPs", "bytes", "FLOP/s", "B/s", "FLOP/B", "bound", "of roof",
             "source"});
  for (size_t i = 0; i < rows.size() && i < top; ++i) {
    const EfficiencyRow& row = rows[i];
    const auto& a = row.achieved;
    table.Row({cells(row.name, kernels ? 40 : 28), IntText(row.count), FormatDuration(row.time_ns),
               KnownSi(static_cast<double>(row.flops), "FLOP"), row.bytes < 0 ? "-" : FormatBytes(row.bytes),
               KnownSi(a.flops_per_s, "FLOP/s"), KnownSi(a.bytes_per_s, "B/s"), a.intensity < 0 ? "-" : FormatFixed(a.intensity, 1),
               a.bound.empty() ? "-" : a.bound, a.share_of_peak < 0 ? "-" : FormatPercent(a.share_of_peak),
               row.flops_source.empty() ? "-" : row.flops_source});
  }
  return out + table.str();
}

std::string UnknownText(const EfficiencyReport& r, size_t top) {
  if (r.unknown_ops.empty()) return "\nOps without a cost: none\n";
  std::string out = "\nOps without a cost (of " + std::to_string(r.unknown_ops.size()) + " op types)\n";
  TextTable unknown({-40, 7, 12, -40});
  unknown.Row({"op type", "count", "time", "why"});
  for (size_t i = 0; i < r.unknown_ops.size() && i < top; ++i) {
    const auto& u = r.unknown_ops[i];
    unknown.Row({u.op_type, IntText(u.count), FormatDuration(u.time_ns), u.reason});
  }
  return out + unknown.str();
}

std::string EfficiencyText(const EfficiencyReport& r, const TableOptions& options) {
  std::string out;
  for (const auto& source : r.sources) out += "trace       " + source + "\n";
  out += PeakText(r);
  if (!r.has_shapes) {
    out += "shapes      none recorded: no FLOPs, time only (PyTorch: profile with record_shapes=True; with_flops=True "
           "adds its own counts)\n";
  }
  out += "ops costed  " + IntText(r.ops_costed) + " of " + IntText(r.ops_seen) + " (the rest: \"Ops without a cost\")\n";
  for (const std::string& note : r.notes) out += "note: " + note + "\n";
  out += StepsText(r, options.top);
  out += RowsText("Op types by time (time: their kernels' device time, else their own)", r.ops, options.top, false,
                  options.full_names);
  bool any_kernel_cost = false;
  for (const auto& k : r.kernels) any_kernel_cost = any_kernel_cost || k.costed > 0;
  if (!r.kernels.empty()) {
    out += RowsText(std::string("Kernels by time") +
                        (any_kernel_cost ? " (FLOPs where the kernel was its op's only one)" : " (no kernel's op has a cost)"),
                    r.kernels, options.top, true, options.full_names);
  }
  out += UnknownText(r, options.top);
  if (r.collectives.totals.calls > 0) out += "\n" + CollectivesText(r.collectives, options.top);
  return out;
}

Json RowJson(const EfficiencyRow& row, bool kernel) {
  Json j;
  j[kernel ? "kernel" : "op_type"] = row.name;
  if (kernel) j["op_type"] = row.op_type.empty() ? Json(nullptr) : Json(row.op_type);
  j["count"] = row.count;
  j["time_ns"] = row.time_ns;
  j["device_time_ns"] = row.device_time_ns;
  j["flops"] = Known(row.flops);
  j["model_flops"] = row.model_flops;
  j["bytes"] = Known(row.bytes);
  j["reported_flops"] = Known(row.reported_flops);
  j["flops_source"] = row.flops_source.empty() ? Json(nullptr) : Json(row.flops_source);
  if (kernel) j["costed"] = row.costed;
  j["cost_class"] = analysis::CostClassName(row.cost_class);
  j["precision"] = analysis::PrecisionName(row.precision);
  j["flops_per_s"] = Known(row.achieved.flops_per_s);
  j["bytes_per_s"] = Known(row.achieved.bytes_per_s);
  j["intensity"] = Known(row.achieved.intensity);
  j["bound"] = row.achieved.bound.empty() ? Json(nullptr) : Json(row.achieved.bound);
  j["share_of_peak"] = Known(row.achieved.share_of_peak);
  return j;
}

Json TotalJson(const analysis::EfficiencyTotal& t) {
  Json j;
  if (t.rank >= 0) j["rank"] = t.rank;
  j["steps"] = t.steps;
  j["duration_ns"] = t.duration_ns;
  j["model_flops"] = t.flops_known ? Json(t.model_flops) : Json(nullptr);
  j["flops"] = t.flops_known ? Json(t.flops) : Json(nullptr);
  j["model_flops_per_s"] = Known(t.model_flops_per_s);
  j["mfu"] = Known(t.mfu);
  j["hfu"] = Known(t.hfu);
  return j;
}

// The stable document; its keys are documented in docs/analysis.md ("Efficiency").
Json EfficiencyJson(const EfficiencyReport& r) {
  Json doc;
  doc["schema"] = "stepscope.efficiency/1";
  doc["sources"] = r.sources;
  const auto& peak = r.peak;
  doc["peak"] = {{"device", peak.device.empty() ? Json(nullptr) : Json(peak.device)},
                 {"flops_per_s", peak.known() ? Json(peak.flops_per_s) : Json(nullptr)},
                 {"bytes_per_s", peak.bytes_per_s > 0 ? Json(peak.bytes_per_s) : Json(nullptr)},
                 {"precision", analysis::PrecisionName(peak.precision)},
                 {"source", peak.source},
                 {"precision_source", r.precision_why}};
  doc["notes"] = r.notes;
  doc["has_shapes"] = r.has_shapes;
  doc["ops_seen"] = r.ops_seen;
  doc["ops_costed"] = r.ops_costed;
  Json steps = Json::array();
  for (const auto& s : r.steps) {
    steps.push_back({{"rank", s.rank_recorded ? Json(s.rank) : Json(nullptr)}, {"input", s.rank},
                     {"step", s.number}, {"recorded_step", KnownInt(s.step)}, {"marker", s.marker},
                     {"duration_ns", s.duration_ns}, {"model_flops", s.flops_known ? Json(s.model_flops) : Json(nullptr)},
                     {"flops", s.flops_known ? Json(s.flops) : Json(nullptr)},
                     {"mfu", Known(s.mfu)}, {"hfu", Known(s.hfu)}});
  }
  doc["steps"] = steps;
  Json ranks = Json::array();
  for (const auto& rank : r.ranks) ranks.push_back(TotalJson(rank));
  doc["ranks"] = ranks;
  doc["total"] = TotalJson(r.total);
  Json ops = Json::array();
  for (const auto& row : r.ops) ops.push_back(RowJson(row, false));
  doc["ops"] = ops;
  Json kernels = Json::array();
  for (const auto& row : r.kernels) kernels.push_back(RowJson(row, true));
  doc["kernels"] = kernels;
  Json unknown = Json::array();
  for (const auto& u : r.unknown_ops) {
    unknown.push_back({{"op_type", u.op_type}, {"count", u.count}, {"time_ns", u.time_ns}, {"reason", u.reason}});
  }
  doc["unknown_ops"] = unknown;
  doc["link_peak"] = LinkPeakJson(r.collectives.link);
  doc["collectives"] = CollectiveRowsJson(r.collectives);
  return doc;
}

StatusOr<analysis::PeakOptions> PeakFlags(const ParsedArgs& args) {
  analysis::PeakOptions options;
  if (auto text = args.Get("peak")) {
    ASSIGN_OR_RETURN(const double tflops, args.GetDouble("peak", 0));
    if (!(tflops > 0) || tflops > kMaxPeakTflops) {
      return InvalidInput("--peak " + *text + ": expected the device's peak in TFLOP/s, above 0 and at most " +
                          FormatFixed(kMaxPeakTflops, 0));
    }
    options.peak_flops_per_s = tflops * 1e12;
  }
  options.device = args.GetOr("device", "");
  if (auto text = args.Get("precision")) {
    options.precision = analysis::PeakPrecisionOfName(*text);
    if (!options.precision) return InvalidInput("--precision " + *text + ": expected fp64, fp32, tf32, bf16, fp16 or fp8");
  }
  // An unknown --device fails before any trace is read.
  if (!options.device.empty() && analysis::FindDevicePeaks(options.device) == nullptr) {
    return analysis::ChoosePeak({}, options, analysis::Precision::kFp32).status();
  }
  return options;
}

// What efficiency takes from its flags, checked before any trace is read.
struct EfficiencyFlags {
  TableOptions table;
  analysis::PeakOptions peak;
  analysis::StepRange range;
  std::optional<std::set<int32_t>> ranks;
  analysis::CollectiveOptions collectives;
};

StatusOr<EfficiencyFlags> ParseEfficiencyFlags(const ParsedArgs& args) {
  EfficiencyFlags flags;
  ASSIGN_OR_RETURN(flags.table.top, PositiveFlag(args, "top", kDefaultTop));
  flags.table.full_names = args.Has("full-names");
  ASSIGN_OR_RETURN(flags.peak, PeakFlags(args));
  ASSIGN_OR_RETURN(flags.range, StepRange(args));
  ASSIGN_OR_RETURN(flags.ranks, RankSet(args));
  ASSIGN_OR_RETURN(flags.collectives.link_peak_bytes_per_s, LinkPeakFlag(args));
  return flags;
}

using EfficiencyPart = std::optional<analysis::EfficiencyInput>;

// The part of one trace, `place` its position among the inputs (its rank when it records none);
// none when --rank leaves it out.
EfficiencyPart CostInput(const trace::Trace& trace, int32_t place, const EfficiencyFlags& flags) {
  const int32_t rank = trace.step_info().rank >= 0 ? trace.step_info().rank : place;
  if (flags.ranks && !flags.ranks->count(rank)) return std::nullopt;
  const auto windows =
      analysis::NumberedStepWindows({&trace, 1}, flags.range, analysis::StepWindowing::kWholeUnlessSeveral);
  return analysis::CostEfficiencyInput(trace, windows.front(), place, flags.peak, flags.collectives);
}

// The report of the inputs' parts handed to `add` in input order, costed here or in other
// processes alike (profiler/cli/distributed.h), and written.
Status Efficiency(const ParsedArgs& args, const EfficiencyFlags& flags,
                  const std::function<Status(const std::function<void(EfficiencyPart)>&)>& each,
                  CommandOutput& output) {
  analysis::EfficiencyBuilder builder(flags.peak, flags.collectives);
  bool any_window = false;
  RETURN_IF_ERROR(each([&](EfficiencyPart part) {
    if (!part) return;
    any_window = any_window || !part->steps.empty();  // a step per window
    builder.Add(std::move(*part));
  }));
  if (flags.range && !any_window) return InvalidInput(analysis::NoStepInRangeMessage(*flags.range));
  ASSIGN_OR_RETURN(const EfficiencyReport report, std::move(builder).Finish());
  if (args.Has("json")) {
    output.doc = EfficiencyJson(report);
  } else {
    output.text << EfficiencyText(report, flags.table);
  }
  return Status::Ok();
}

Status AnalyseEfficiency(const LoadedInputs& inputs, const ParsedArgs& args, CommandOutput& output) {
  ASSIGN_OR_RETURN(const EfficiencyFlags flags, ParseEfficiencyFlags(args));
  return Efficiency(args, flags, [&](const std::function<void(EfficiencyPart)>& add) {
    int32_t place = 0;
    for (const trace::Trace& trace : inputs.traces) add(CostInput(trace, place++, flags));
    return Status::Ok();
  }, output);
}

// The report from `each`'s parts, printed (one process and process 0 of several print alike).
Status PrintEfficiency(const ParsedArgs& args, const EfficiencyFlags& flags,
                       const std::function<Status(const std::function<void(EfficiencyPart)>&)>& each,
                       std::ostream& out, std::ostream& err) {
  CommandOutput output{.text = out, .err = err};
  RETURN_IF_ERROR(Efficiency(args, flags, each, output));
  if (output.doc) EmitJson(out, *output.doc);
  return Status::Ok();
}

// One trace in memory at a time: each is costed and dropped before the next is read.
Status RunEfficiency(const ParsedArgs& args, std::ostream& out, std::ostream& err) {
  ASSIGN_OR_RETURN(const EfficiencyFlags flags, ParseEfficiencyFlags(args));
  ASSIGN_OR_RETURN(const std::vector<std::string> inputs, trace::ResolveTracePaths(args.positional));
  return PrintEfficiency(args, flags, [&](const std::function<void(EfficiencyPart)>& add) {
    int32_t place = 0;
    return trace::ForEachTrace(inputs, [&](trace::Trace trace) {
      add(CostInput(trace, place++, flags));
      return Status::Ok();
    });
  }, out, err);
}

}  // namespace

analysis::InputDigest EfficiencyDigest(const trace::Trace& trace, size_t input, size_t /*inputs*/,
                                       const ParsedArgs& args) {
  analysis::InputDigest digest;
  digest.input = input;
  // Bad flags fail process 0 before any input's part is looked at: none is taken.
  const StatusOr<EfficiencyFlags> flags = ParseEfficiencyFlags(args);
  if (flags.ok()) digest.efficiency = CostInput(trace, static_cast<int32_t>(input), *flags);
  return digest;
}

Status EfficiencyFromDigests(const ParsedArgs& args, std::span<const analysis::InputDigest> inputs, std::ostream& out,
                             std::ostream& err) {
  ASSIGN_OR_RETURN(const EfficiencyFlags flags, ParseEfficiencyFlags(args));
  return PrintEfficiency(args, flags, [&](const std::function<void(EfficiencyPart)>& add) {
    for (const analysis::InputDigest& input : inputs) {
      RETURN_IF_ERROR(input.read);  // the first input that could not be read, as ForEachTrace fails
      add(input.efficiency);
    }
    return Status::Ok();
  }, out, err);
}

CommandSpec EfficiencyCommand() {
  return {.name = "efficiency",
          .synopsis = "TRACE|DIR... [--json] [--peak TFLOPS] [--device NAME] [--precision P] [--top N]",
          .description =
              "How much of the machine the run uses. The peak comes from the table of device peaks\n"
              "(each row citing its datasheet), picked by the device the trace records (Kineto's\n"
              "deviceProperties), --device or --peak; the report says which peak and why, and an\n"
              "unknown device gets FLOP/s but no MFU. Per step, per rank and across ranks: model\n"
              "FLOPs (matmul, convolution, attention, recurrent cells, forward and backward) and MFU\n"
              "= model FLOPs / step time / peak; HFU counts every FLOP. Per op type and per kernel:\n"
              "time (the device time of the kernels an op launched, else its own), FLOPs and bytes\n"
              "with their source, achieved FLOP/s and B/s, FLOPs per byte, compute or memory bound by\n"
              "the roofline and the share of the roof reached. Ops without a cost are listed with\n"
              "their time, never counted as zero. Per collective: algorithm and bus bandwidth against\n"
              "the link's peak, and exposed time (as `collectives`). Inputs are read one at a time;\n"
              "--json writes stepscope.efficiency/1 (docs/analysis.md).",
          .flags = {{"json", "", "write the report as JSON"},
                    {"top", "N", "rows per table in text output (default 15)"},
                    {"peak", "TFLOPS", "the device's peak FLOP/s, in TFLOP/s (overrides the table)"},
                    {"device", "NAME", "the device, by the table's id or name (e.g. h100-sxm, \"NVIDIA A100-SXM4-80GB\")"},
                    {"precision", "P", "the precision whose peak to use: fp64, fp32, tf32, bf16, fp16, fp8"},
                    StepFlag("only ops"),
                    StepsFlag("only ops"),
                    LinkPeakFlagSpec(),
                    RankFlag(),
                    FullNamesFlag()},
          .run = RunEfficiency,
          .analyse = AnalyseEfficiency};
}

}  // namespace stepscope::cli
