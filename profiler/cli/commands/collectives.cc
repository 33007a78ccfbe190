// `stepscope collectives`: algorithm and bus bandwidth per collective, its exposed time, and the
// link peak it is compared with (analysis/collective_bandwidth.h); the rows' JSON is also the
// `collectives` part of `stepscope efficiency`.
#include "profiler/cli/commands/collectives.h"

#include <cmath>
#include <cstdlib>

#include "profiler/cli/commands/commands.h"
#include "profiler/cli/commands/report.h"
#include "profiler/cli/report_format.h"
#include "profiler/cli/scope_flags.h"

namespace stepscope::cli {

namespace {

nlohmann::ordered_json Optional(const std::optional<double>& value) {
  return value ? nlohmann::ordered_json(*value) : nlohmann::ordered_json(nullptr);
}

// Decimal units, as link speeds and nccl-tests' GB/s are.
std::string Rate(const std::optional<double>& bytes_per_s) {
  if (!bytes_per_s) return "-";
  const double rate = *bytes_per_s;
  if (rate >= 1e9) return FormatFixed(rate / 1e9, 2) + " GB/s";
  if (rate >= 1e6) return FormatFixed(rate / 1e6, 2) + " MB/s";
  return FormatFixed(rate / 1e3, 2) + " kB/s";
}

Status RunCollectives(const LoadedInputs& inputs, const ParsedArgs& args, CommandOutput& output) {
  std::ostream& out = output.text;
  ASSIGN_OR_RETURN(const size_t top, PositiveFlag(args, "top", kDefaultTop));
  analysis::CollectiveOptions options;
  ASSIGN_OR_RETURN(options.link_peak_bytes_per_s, LinkPeakFlag(args));
  options.device_name = args.Get("device").value_or("");
  const std::span<const trace::Trace> traces = inputs.traces;
  const analysis::CollectiveBandwidth result = analysis::ComputeCollectiveBandwidth(traces, options);
  if (args.Has("json")) {
    nlohmann::ordered_json doc = {{"schema", "stepscope.collectives/1"}};
    auto sources = nlohmann::ordered_json::array();
    for (const trace::Trace& trace : traces) sources.push_back(trace.source_path());
    doc["sources"] = sources;
    doc["link_peak"] = LinkPeakJson(result.link);
    doc["totals"] = {{"calls", result.totals.calls},         {"sized_calls", result.totals.sized_calls},
                     {"bytes", result.totals.bytes},         {"time_ns", result.totals.time_ns},
                     {"exposed_ns", result.totals.exposed_ns}};
    doc["collectives"] = CollectiveRowsJson(result);
    doc["notes"] = result.notes;
    output.doc = std::move(doc);
  } else {
    for (const trace::Trace& trace : traces) out << Header(trace);
    out << "\n" << CollectivesText(result, top);
  }
  return Status::Ok();
}

}  // namespace

nlohmann::ordered_json CollectiveRowsJson(const analysis::CollectiveBandwidth& result) {
  auto rows = nlohmann::ordered_json::array();
  for (const analysis::CollectiveRow& row : result.rows) {
    rows.push_back({{"rank", KnownInt(row.rank)},
                    {"device", row.device},
                    {"name", row.name},
                    {"source", row.source},
                    {"algorithm", row.algorithm.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(row.algorithm)},
                    {"dtype", row.dtype.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(row.dtype)},
                    {"group_size", row.group_size > 0 ? nlohmann::ordered_json(row.group_size) : nlohmann::ordered_json(nullptr)},
                    {"count", row.count},
                    {"bytes", KnownInt(row.bytes)},
                    {"total_bytes", KnownInt(row.total_bytes)},
                    {"time_ns", row.time_ns},
                    {"exposed_ns", row.exposed_ns},
                    {"algbw_bytes_per_s", Optional(row.algbw_bytes_per_s)},
                    {"busbw_bytes_per_s", Optional(row.busbw_bytes_per_s)},
                    {"busbw_share_of_peak", Optional(row.busbw_share_of_peak)}});
  }
  return rows;
}

nlohmann::ordered_json LinkPeakJson(const analysis::LinkPeak& link) {
  return {{"bytes_per_s", Optional(link.bytes_per_s)}, {"source", link.source}};
}

std::string CollectivesText(const analysis::CollectiveBandwidth& result, size_t top) {
  const analysis::CollectiveTotals& t = result.totals;
  std::string out = "collectives " + IntText(t.calls) + " (" + IntText(t.sized_calls) + " with a size), " +
                    FormatBytes(t.bytes) + " in " + FormatDuration(t.time_ns) + ", exposed " +
                    FormatDuration(t.exposed_ns) + "\nlink peak   " +
                    (result.link.bytes_per_s ? Rate(result.link.bytes_per_s) + " (" + result.link.source + ")"
                                             : result.link.source) +
                    "\n\n";
  TextTable table({4, -24, -14, -10, -8, 3, 10, 6, 11, 11, 12, 12, 6});
  table.Row({"rank", "device", "collective", "algorithm", "dtype", "n", "size", "count", "time", "exposed", "algbw",
             "busbw", "peak"});
  size_t shown = 0;
  for (const analysis::CollectiveRow& row : result.rows) {
    if (shown++ == top) break;
    table.Row({IntText(row.rank), ElideMiddle(row.device, 24), Truncate(row.name, 14),
               Truncate(row.algorithm.empty() ? "-" : row.algorithm, 10),
               Truncate(row.dtype.empty() ? "-" : row.dtype, 8),
               row.group_size > 0 ? IntText(row.group_size) : "-", row.bytes >= 0 ? FormatBytes(row.bytes) : "?",
               IntText(row.count), FormatDuration(row.time_ns), FormatDuration(row.exposed_ns),
               Rate(row.algbw_bytes_per_s), Rate(row.busbw_bytes_per_s),
               row.busbw_share_of_peak ? FormatPercent(*row.busbw_share_of_peak) : "-"});
  }
  out += table.str();
  if (result.rows.size() > top) out += "  ... " + IntText(static_cast<int64_t>(result.rows.size() - top)) + " more rows (--top)\n";
  for (const std::string& note : result.notes) out += "note: " + note + "\n";
  return out;
}

StatusOr<std::optional<double>> LinkPeakFlag(const ParsedArgs& args) {
  const std::optional<std::string> text = args.Get("link-peak");
  if (!text) return std::optional<double>();
  char* end = nullptr;
  const double gbps = std::strtod(text->c_str(), &end);
  if (end == text->c_str() || *end != '\0' || !std::isfinite(gbps) || gbps <= 0) {
    return InvalidInput("--link-peak " + *text + ": expected a positive number of GB/s (e.g. 450 for one H100's NVLink)");
  }
  return std::optional<double>(gbps * 1e9);
}

FlagSpec LinkPeakFlagSpec() {
  return {"link-peak", "GBPS", "the link's peak in GB/s a direction, to compare bus bandwidths with"};
}

CommandSpec CollectivesCommand() {
  return {.name = "collectives",
          .synopsis = "TRACE|DIR... [--json] [--top N] [--link-peak GBPS | --device NAME] [--rank R]",
          .description =
              "Bandwidth per collective, as nccl-tests reports it: for each rank, collective, dtype, group\n"
              "size n and message size, the calls, their time, the part no compute hid (exposed), the\n"
              "algorithm bandwidth (size / time) and the bus bandwidth (algbw x 2(n-1)/n for all-reduce,\n"
              "(n-1)/n for all-gather, reduce-scatter and all-to-all, 1 for broadcast, reduce and\n"
              "send/recv), against the link's peak: --link-peak, else the NVLink of --device (A100, H100,\n"
              "H200 SXM, B200: half the datasheet's total, one direction). Sources: stepscope-train's\n"
              "collective records (all-reduce, fusion, MPI), NCCL kernels of PyTorch traces (sized by their\n"
              "collective args), gloo spans of CPU PyTorch traces (sized by their inputs). A collective\n"
              "whose size is not recorded keeps its time, its bandwidth unknown. Each file is one rank.",
          .flags = {{"json", "", "write the result as JSON"},
                    {"top", "N", "rows listed in text output (default 15)"},
                    LinkPeakFlagSpec(),
                    {"device", "NAME", "the GPU whose NVLink peak to compare with (\"NVIDIA H100 80GB HBM3\")"},
                    RankFlag()},
          .run = LoadThen(RunCollectives),
          .analyse = RunCollectives};
}

}  // namespace stepscope::cli
