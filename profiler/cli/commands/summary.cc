// `summary`: one trace at a glance (analysis/summary.h): devices, busy time, top op types, copies,
// allocator peaks and what the import repaired; text and JSON (docs/summary-json.md) side by side.
#include <algorithm>
#include <string>

#include "profiler/analysis/summary.h"
#include "profiler/cli/commands/commands.h"
#include "profiler/cli/commands/report.h"
#include "profiler/cli/report_format.h"
#include "profiler/formats/inputs.h"
#include "profiler/formats/reader.h"

namespace stepscope::cli {
namespace {

using trace::Trace;

// ---- summary ---------------------------------------------------------------------------------

// Sizes and the peak's offset come from the input and can be negative (a damaged record, a
// counter that starts before the first slice): the summary prints those as plain numbers, as
// it always has, where the other commands scale them.
std::string SummaryBytes(int64_t bytes) { return bytes < 0 ? IntText(bytes) + " B" : FormatBytes(bytes); }
std::string SummaryOffset(int64_t ns) { return ns < 0 ? IntText(ns) + " ns" : FormatDuration(ns); }

// The summary's text lines stop at 1023 bytes: longer ones (C++ kernel names from the PyTorch
// profiler run to thousands) are cut there, as the text has always been; --json has them whole.
std::string CutLongLines(const std::string& text) {
  constexpr size_t kMaxLine = 1023;
  std::string out;
  size_t begin = 0;
  while (begin < text.size()) {
    size_t end = text.find('\n', begin);
    if (end == std::string::npos) end = text.size();
    out.append(text, begin, std::min(end - begin, kMaxLine));
    if (end < text.size()) out += '\n';
    begin = end + 1;
  }
  return out;
}

std::string SummaryText(const analysis::Summary& s, size_t top) {
  std::string out = "trace      " + s.source + " (" + s.format + ")\n";
  // What the trace records of its run; what it does not record is left out, never shown as -1.
  std::string session;
  auto add = [&session](const std::string& part) { session += (session.empty() ? "" : "  ") + part; };
  if (s.step.step >= 0) add("step " + IntText(s.step.step));
  if (s.step.rank >= 0) {
    add("rank " + std::to_string(s.step.rank) + (s.step.world_size > 0 ? " of " + std::to_string(s.step.world_size) : ""));
  } else if (s.step.world_size > 0) {
    add("world size " + std::to_string(s.step.world_size));
  }
  if (!s.step.host.empty()) add("host " + s.step.host);
  if (!s.step.producer.empty()) add("producer " + s.step.producer);
  if (!session.empty()) out += "session    " + session + "\n";
  out += "span       " + FormatDuration(s.span_end_ns - s.span_begin_ns) + " (from " + IntText(s.epoch_ns + s.span_begin_ns) +
         (s.unix_clock ? " ns since the Unix epoch)\n" : " ns on the trace's own clock, not Unix time)\n");
  out += "nodes      " + IntText(s.nodes) + " on " + std::to_string(s.devices.size()) + " lanes as recorded\n";

  // TensorFlow's dev_stats entries; a JSON trace's pid/tid lanes (Kineto: GPU/stream).
  out += "\nLanes (as recorded)\n";
  TextTable devices({-60, -16, 8});
  devices.Row({"lane", "lane kind", "nodes"});
  for (const auto& d : s.devices) {
    // The note sits two spaces after the count: one from the table, one of its own.
    devices.Row({d.name, d.kind, IntText(d.nodes), d.aggregate_duplicates ? " (repeats other lanes)" : ""});
  }
  out += devices.str();

  out += "\nBusy time per device (union of its lanes; GPUs: kernels, copies and memsets, over all streams)\n";
  TextTable busy({-50, -12, 8, 12, 7});
  busy.Row({"device", "lanes", "slices", "busy", "util"});
  for (const auto& u : s.usage) {
    busy.Row({u.name, u.lanes, IntText(u.slices), FormatDuration(u.busy_ns), FormatPercent(u.utilisation)});
    for (const auto& lane : u.streams) {
      busy.Row({"  " + lane.name, "stream", IntText(lane.slices), FormatDuration(lane.busy_ns), FormatPercent(lane.utilisation)});
    }
  }
  out += busy.str();
  if (!s.annotations.empty()) {
    out += "\nAnnotations and sync markers (not busy time)\n";
    TextTable annotations({-60, -11, 8, 12});
    annotations.Row({"lane", "kind", "slices", "span"});
    for (const auto& a : s.annotations) {
      annotations.Row({a.lane, a.kind, IntText(a.slices), FormatDuration(a.span_ns)});
    }
    out += annotations.str();
  }

  out += "\nTop op types by total time (of " + std::to_string(s.op_types.size()) + ")\n";
  TextTable ops({-40, -10, 7, 12, 12});
  ops.Row({"op type", "where", "count", "total", "mean"});
  for (size_t i = 0; i < s.op_types.size() && i < top; ++i) {
    const auto& op = s.op_types[i];
    ops.Row({op.op_type, op.where, IntText(op.count), FormatDuration(op.total_ns), FormatDuration(op.mean_ns())});
  }
  out += ops.str();

  if (!s.memcpy.empty()) {
    out += "\nMemcpy\n";
    TextTable copies({-8, 7, 12, 12, 12, -15});
    copies.Row({"kind", "count", "bytes", "time", "GB/s", "GB/s from"});
    for (const auto& m : s.memcpy) {
      copies.Row({m.kind, IntText(m.count), SummaryBytes(m.bytes), FormatDuration(m.total_ns), FormatFixed(m.bandwidth_gbps(), 2),
                  m.bandwidth_from()});
    }
    out += copies.str();
  }
  if (!s.allocators.empty()) {
    out += "\nAllocator peaks\n";
    for (const auto& a : s.allocators) {
      out += "  " + Align(a.allocator, -16) + " peak " + SummaryBytes(a.peak_bytes) + " at +" +
             SummaryOffset(a.peak_ns - s.span_begin_ns) + " (" + IntText(a.samples) + " samples; curve from " +
             analysis::DescribeCurveSources(a.curve_origin) + ")\n";
      if (a.live_tensors_total > 0) {
        out += "    " + IntText(a.live_tensors_total) + " tensors live at the peak; largest:\n";
        for (const auto& t : a.live_at_peak) {
          out += "    " + Align(SummaryBytes(t.bytes), 12) + "  " + t.name + " (" + t.producer_op + ")\n";
        }
      }
    }
  }
  out += "\nImport\n";
  if (s.import_stats.empty()) out += "  nothing repaired or skipped\n";
  for (const auto& [name, count] : s.import_stats) out += "  " + Align(name, -44) + " " + IntText(count) + "\n";
  return CutLongLines(out);
}

// The stable document; its keys are documented in docs/summary-json.md.
Json SummaryJson(const analysis::Summary& s) {
  Json doc;
  doc["schema"] = "stepscope.summary/1";
  doc["source"] = s.source;
  doc["format"] = s.format;
  // Facts the trace does not record are null (the keys stay, so the document keeps its shape).
  auto known_text = [](const std::string& value) { return value.empty() ? Json(nullptr) : Json(value); };
  doc["step"] = {{"step", KnownInt(s.step.step)}, {"rank", KnownInt(s.step.rank)},
                 {"world_size", s.step.world_size > 0 ? Json(s.step.world_size) : Json(nullptr)},
                 {"host", known_text(s.step.host)}, {"producer", known_text(s.step.producer)}};
  doc["epoch_ns"] = s.epoch_ns + s.span_begin_ns;
  doc["clock"] = s.unix_clock ? "unix" : "trace";
  doc["span_ns"] = s.span_end_ns - s.span_begin_ns;
  doc["nodes"] = s.nodes;
  Json devices = Json::array();
  for (const auto& d : s.devices) {
    devices.push_back({{"name", d.name}, {"kind", d.kind}, {"nodes", d.nodes},
                       {"aggregate_duplicates", d.aggregate_duplicates}});
  }
  doc["devices"] = devices;
  Json usage = Json::array();
  for (const auto& u : s.usage) {
    Json streams = Json::array();
    for (const auto& lane : u.streams) {
      streams.push_back({{"stream", lane.name}, {"slices", lane.slices}, {"busy_ns", lane.busy_ns},
                         {"utilisation", lane.utilisation}});
    }
    usage.push_back({{"device", u.name}, {"lanes", u.lanes}, {"slices", u.slices}, {"busy_ns", u.busy_ns},
                     {"utilisation", u.utilisation}, {"streams", streams}});
  }
  doc["busy"] = usage;
  Json annotations = Json::array();
  for (const auto& a : s.annotations) {
    annotations.push_back({{"lane", a.lane}, {"kind", a.kind}, {"slices", a.slices}, {"span_ns", a.span_ns}});
  }
  doc["annotations"] = annotations;
  Json ops = Json::array();
  for (const auto& op : s.op_types) {
    ops.push_back({{"op_type", op.op_type}, {"where", op.where}, {"count", op.count},
                   {"total_ns", op.total_ns}, {"mean_ns", op.mean_ns()}});
  }
  doc["op_types"] = ops;
  Json memcpy = Json::array();
  for (const auto& m : s.memcpy) {
    memcpy.push_back({{"kind", m.kind}, {"count", m.count}, {"bytes", m.bytes},
                      {"total_ns", m.total_ns}, {"bandwidth_gbps", m.bandwidth_gbps()},
                      {"bandwidth_from", m.bandwidth_from()}});
  }
  doc["memcpy"] = memcpy;
  Json allocators = Json::array();
  for (const auto& a : s.allocators) {
    Json live = Json::array();
    for (const auto& t : a.live_at_peak) {
      live.push_back({{"name", t.name}, {"bytes", t.bytes}, {"producer_op", t.producer_op},
                      {"created_ns", t.alloc_ns - s.span_begin_ns},
                      {"released_ns", t.free_ns - s.span_begin_ns}});
    }
    allocators.push_back({{"allocator", a.allocator}, {"curve_origin", a.curve_origin},
                          {"peak_bytes", a.peak_bytes}, {"peak_at_ns", a.peak_ns - s.span_begin_ns},
                          {"samples", a.samples}, {"live_tensors_at_peak", a.live_tensors_total},
                          {"largest_live_tensors", live}});
  }
  doc["allocators"] = allocators;
  Json stats = Json::object();
  for (const auto& [name, count] : s.import_stats) stats[name] = count;
  doc["import"] = stats;
  return doc;
}

// Summarises the traces read: one document, or with several an array of them (as RunSummary).
Status AnalyseSummary(const LoadedInputs& inputs, const ParsedArgs& args, CommandOutput& out) {
  ASSIGN_OR_RETURN(const size_t top, PositiveFlag(args, "top", kDefaultTop));
  const bool json = args.Has("json");
  Json documents = Json::array();
  for (size_t i = 0; i < inputs.traces.size(); ++i) {
    const analysis::Summary summary = analysis::Summarize(inputs.traces[i]);
    if (json) {
      documents.push_back(SummaryJson(summary));
    } else {
      out.text << (i == 0 ? "" : "\n") << SummaryText(summary, top);
    }
  }
  if (json) out.doc = inputs.traces.size() == 1 ? std::move(documents.front()) : std::move(documents);
  return Status::Ok();
}

// IN goes through the input resolver, as for every command: a file or a profiler run directory
// is one trace; a directory of trace files (per rank, per step) or a glob summarises each in turn,
// one trace in memory at a time (text: one summary after another, a blank line between; JSON:
// an array of the documents).
Status RunSummary(const ParsedArgs& args, std::ostream& out, std::ostream& err) {
  ASSIGN_OR_RETURN(const size_t top, PositiveFlag(args, "top", kDefaultTop));
  ASSIGN_OR_RETURN(const std::vector<std::string> inputs, trace::ResolveTracePaths(args.positional));
  if (inputs.size() == 1) {
    ASSIGN_OR_RETURN(const Trace trace, trace::ReadTrace(inputs[0]));
    return AnalyseAndPrint(AnalyseSummary, {.traces = {&trace, 1}}, args, out, err);
  }
  const bool json = args.Has("json");
  Json documents = Json::array();
  bool first = true;
  RETURN_IF_ERROR(trace::ForEachTrace(inputs, [&](Trace trace) {
    const analysis::Summary summary = analysis::Summarize(trace);
    if (json) {
      documents.push_back(SummaryJson(summary));
    } else {
      out << (first ? "" : "\n") << SummaryText(summary, top);
    }
    first = false;
    return Status::Ok();
  }));
  if (json) EmitJson(out, documents);
  return Status::Ok();
}

}  // namespace

CommandSpec SummaryCommand() {
  return {.name = "summary",
          .synopsis = "IN [--json] [--top N]",
          .description =
              "Summarizes one trace: devices and node counts, step span, busy time and utilisation\n"
              "per device, the top op types by total time, memcpy count, bytes and achieved\n"
              "bandwidth per kind, allocator peaks (curves from allocation records, through every\n"
              "allocator_bytes_in_use sample, never below a node's peak_bytes) with the tensors\n"
              "live at the peak, and what the import repaired or skipped. --json writes the same as\n"
              "a stable document (keys in docs/summary-json.md). IN is a file, a profiler run directory\n"
              "(one trace), or a directory of trace files or a glob: each is summarized in turn (one\n"
              "after another; with --json, an array of the documents).",
          .flags =
              {{"json", "", "write the summary as JSON"},
              {"top", "N", "how many op types to list in text output (default 15)"}},
          .max_positional = 1,
          .run = RunSummary,
          .analyse = AnalyseSummary};
}

}  // namespace stepscope::cli
