// `stepscope align`: how the ranks' clocks meet (analysis/clock_align.h), per rank the offset
// added to its clock, its drift and the residual after alignment; and the --align flag that
// `merge`, `stragglers` and the viewer share.
#include <string>

#include "profiler/analysis/clock_align.h"
#include "profiler/cli/commands/commands.h"
#include "profiler/cli/commands/rank_digests.h"
#include "profiler/cli/commands/report.h"
#include "profiler/cli/report_format.h"
#include "profiler/formats/inputs.h"

namespace stepscope::cli {

StatusOr<analysis::AlignMethod> AlignFlag(const ParsedArgs& args) {
  const std::optional<std::string> name = args.Get("align");
  if (!name) return analysis::AlignMethod::kAuto;
  const std::optional<analysis::AlignMethod> method = analysis::ParseAlignMethod(*name);
  if (!method) return InvalidInput("--align " + *name + ": expected collectives, barrier, clock or auto");
  return *method;
}

FlagSpec AlignFlagSpec() {
  return {"align", "METHOD",
          "how ranks' clocks are aligned: collectives (matched collective ends), barrier (the trainer's clock "
          "sync point), clock (as recorded), auto (default: the best available)"};
}

void PrintAlignmentNotes(const std::string& command, const analysis::AlignmentReport& report, std::ostream& err) {
  for (const std::string& note : report.notes) err << "stepscope " << command << ": note: " << note << "\n";
}

std::string AlignmentLine(const analysis::AlignmentReport& report) {
  return "clocks aligned by " + std::string(analysis::AlignMethodName(report.method));
}

namespace {

std::string Ppm(double ppm) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3f", ppm);
  return text;
}

Status PrintAlignment(const ParsedArgs& args, const analysis::AlignmentReport& report, std::ostream& out,
                      std::ostream& err) {
  if (report.ranks.size() < 2) {
    return InvalidInput("align needs the traces of two ranks or more (" + std::to_string(report.ranks.size()) +
                        " rank found); give every rank's trace, e.g. the run's --profile_dir");
  }
  PrintAlignmentNotes("align", report, err);
  const bool measured = report.method == analysis::AlignMethod::kCollectives;
  if (args.Has("json")) {
    Json doc = {{"schema", "stepscope.align/1"}, {"method", analysis::AlignMethodName(report.method)}};
    doc["notes"] = report.notes;
    Json ranks = Json::array();
    for (const analysis::RankClock& r : report.ranks) {
      ranks.push_back({{"rank", r.rank}, {"host", r.host.empty() ? Json(nullptr) : Json(r.host)},
                       {"offset_ns", r.offset_ns}, {"drift_ppm", r.drift_ppm}, {"anchor_ns", r.anchor_ns},
                       {"residual_ns", measured ? Json(r.residual_ns) : Json(nullptr)},
                       {"matched_collectives", r.matched_collectives}, {"outliers", r.outliers},
                       {"inputs", static_cast<int64_t>(r.inputs.size())}});
    }
    doc["ranks"] = ranks;
    EmitJson(out, doc);
    return Status::Ok();
  }
  out << report.ranks.size() << " ranks, " << AlignmentLine(report) << "\n\n";
  TextTable table({-8, -16, 14, 12, 12, 9, 9});
  table.Row({"rank", "host", "offset", "drift ppm", "residual", "matched", "outliers"});
  for (const analysis::RankClock& r : report.ranks) {
    table.Row({std::to_string(r.rank), r.host.empty() ? "-" : Truncate(r.host, 16), FormatSignedDuration(r.offset_ns),
               Ppm(r.drift_ppm),
               measured ? FormatDuration(r.residual_ns) : "-", std::to_string(r.matched_collectives),
               std::to_string(r.outliers)});
  }
  out << table.str();
  if (measured) {
    out << "\noffset: added to the rank's clock at its first matched collective's end; drift: ppm of its\n"
           "clock's time after that; residual: RMS distance of its collectives' ends to the other ranks'\n"
           "after alignment.\n";
  }
  return Status::Ok();
}

Status RunAlign(const ParsedArgs& args, std::ostream& out, std::ostream& err) {
  ASSIGN_OR_RETURN(const analysis::AlignMethod method, AlignFlag(args));
  ASSIGN_OR_RETURN(const std::vector<trace::Trace> traces, trace::ReadTraces(args.positional));
  return PrintAlignment(args, analysis::AlignRanks(traces, method), out, err);
}

}  // namespace

Status AlignFromDigests(const ParsedArgs& args, std::span<const analysis::InputDigest> inputs, std::ostream& out,
                        std::ostream& err) {
  ASSIGN_OR_RETURN(const analysis::AlignMethod method, AlignFlag(args));
  std::vector<analysis::ClockDigest> clocks;
  for (const analysis::InputDigest& input : inputs) {
    RETURN_IF_ERROR(input.read);  // the first input that could not be read, as ReadTraces fails
    clocks.push_back(input.clock);
  }
  return PrintAlignment(args, analysis::AlignDigests(clocks, method), out, err);
}

CommandSpec AlignCommand() {
  return {.name = "align",
          .synopsis = "TRACE|DIR... [--json] [--align collectives|barrier|clock|auto]",
          .description =
              "How the ranks' clocks meet: per rank the offset added to its clock, its drift and the\n"
              "residual after alignment. collectives: each collective matched across the ranks of its\n"
              "group (NCCL kernels and gloo collectives by process group, name, step and order; the\n"
              "trainer's all-reduce and gather records), and each rank's offset and drift solved so\n"
              "that matched ends coincide (robust least squares); barrier: the trainer's clock sync\n"
              "point; clock: as recorded. Default: the best available (one host: its clock). Where\n"
              "collectives cannot be matched, falls back to the barrier with a note on stderr.",
          .flags = {{"json", "", "write the result as JSON (schema stepscope.align/1)"}, AlignFlagSpec()},
          .run = RunAlign};
}

}  // namespace stepscope::cli
