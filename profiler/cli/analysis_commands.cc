// The analysis subcommands: summary, ops, kernels, memory, memcpy, streams, overlap,
// critical-path, diff, merge. summary reads one trace file; the others take a trace file, several
// files or a directory of per-rank traces (merged into one timeline, see analysis/merge.h;
// overlap and critical-path report each step on its own). Each prints tables for people or, with
// --json, one stable document for machines. The analyses return data only; this file formats
// them, with the helpers of report_format.h.
#include <limits>
#include <nlohmann/json.hpp>

#include "base/file_io.h"
#include "profiler/analysis/breakdowns.h"
#include "profiler/analysis/diff.h"
#include "profiler/analysis/memory_report.h"
#include "profiler/analysis/merge.h"
#include "profiler/analysis/op_stats.h"
#include "profiler/analysis/step_analyses.h"
#include "profiler/analysis/steps.h"
#include "profiler/analysis/summary.h"
#include "profiler/cli/command.h"
#include "profiler/cli/compare_commands.h"
#include "profiler/cli/gpu_commands.h"
#include "profiler/cli/report_format.h"
#include "profiler/cli/scope_flags.h"
#include "profiler/formats/inputs.h"
#include "profiler/formats/reader.h"
#include "profiler/formats/writer.h"

namespace stepscope::cli {
namespace {

using Json = nlohmann::ordered_json;
using trace::Trace;



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


// Commands that analyse one trace (a directory or several files are merged first).
class SingleTraceCommand : public Command {
 public:
  std::string synopsis() const override { return "TRACE|DIR... [--json] [--top N]"; }
  std::vector<FlagSpec> flags() const override {
    return {{"json", "", "write the result as JSON"},
            {"top", "N", "rows per table in text output (default 15)"}};
  }
  size_t min_positional() const override { return 1; }
  size_t max_positional() const override { return std::numeric_limits<size_t>::max(); }

  Status Run(const ParsedArgs& args, std::ostream& out, std::ostream&) const override {
    ASSIGN_OR_RETURN(const size_t top, PositiveFlag(args, "top", kDefaultTop));
    ASSIGN_OR_RETURN(std::vector<Trace> traces, trace::ReadTraces(args.positional));
    Trace trace = analysis::OneTrace(std::move(traces));
    if (args.Has("json")) {
      EmitJson(out, ToJson(trace, top));
    } else {
      out << Header(trace) << Text(trace, top);
    }
    return Status::Ok();
  }

 protected:
  virtual std::string Text(const Trace& trace, size_t top) const = 0;
  virtual Json ToJson(const Trace& trace, size_t top) const = 0;
};

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

class SummaryCommand : public Command {
 public:
  std::string name() const override { return "summary"; }
  std::string synopsis() const override { return "IN [--json] [--top N]"; }
  std::string description() const override {
    return "Summarizes one trace: devices and node counts, step span, busy time and utilisation\n"
           "per device, the top op types by total time, memcpy count, bytes and achieved\n"
           "bandwidth per kind, allocator peaks (curves from allocation records, through every\n"
           "allocator_bytes_in_use sample, never below a node's peak_bytes) with the tensors\n"
           "live at the peak, and what the import repaired or skipped. --json writes the same as\n"
           "a stable document (keys in docs/summary-json.md).";
  }
  std::vector<FlagSpec> flags() const override {
    return {{"json", "", "write the summary as JSON"},
            {"top", "N", "how many op types to list in text output (default 15)"}};
  }
  size_t min_positional() const override { return 1; }
  size_t max_positional() const override { return 1; }

  Status Run(const ParsedArgs& args, std::ostream& out, std::ostream&) const override {
    ASSIGN_OR_RETURN(const size_t top, PositiveFlag(args, "top", kDefaultTop));
    ASSIGN_OR_RETURN(Trace trace, trace::ReadTrace(args.positional[0]));
    const analysis::Summary summary = analysis::Summarize(trace);
    if (args.Has("json")) {
      EmitJson(out, SummaryJson(summary));
    } else {
      out << SummaryText(summary, top);
    }
    return Status::Ok();
  }
};

// ---- ops -------------------------------------------------------------------------------------

Json OpRowsJson(const std::vector<analysis::OpStatsRow>& rows) {
  Json list = Json::array();
  for (const auto& r : rows) {
    list.push_back({{"name", r.name}, {"op_type", r.op_type}, {"where", r.where}, {"kind", r.kind},
                    {"count", r.count}, {"total_ns", r.total_ns}, {"self_ns", r.self_ns},
                    {"min_ns", r.min_ns}, {"max_ns", r.max_ns}, {"mean_ns", r.mean_ns},
                    {"p50_ns", r.p50_ns}, {"p95_ns", r.p95_ns}, {"share", r.share}});
  }
  return list;
}

std::string OpRowsText(const std::vector<analysis::OpStatsRow>& rows, size_t top, const char* title,
                       const char* first_column) {
  std::string out = std::string("\n") + title + " (top " + std::to_string(std::min(top, rows.size())) + " of " +
                    std::to_string(rows.size()) + ")\n";
  TextTable table({-40, -6, 7, 12, 12, 11, 11, 11, 7});
  table.Row({first_column, "where", "count", "total", "self", "mean", "p50", "p95", "share"});
  for (size_t i = 0; i < rows.size() && i < top; ++i) {
    const auto& r = rows[i];
    table.Row({Truncate(r.name, 40), r.where, IntText(r.count), FormatDuration(r.total_ns), FormatDuration(r.self_ns),
               FormatDuration(r.mean_ns), FormatDuration(r.p50_ns), FormatDuration(r.p95_ns),
               FormatPercent(r.share)});
  }
  return out + table.str();
}

class OpsCommand : public SingleTraceCommand {
 public:
  std::string name() const override { return "ops"; }
  std::string description() const override {
    return "Time per op type and per node: count, total and self time (self excludes nested\n"
           "calls), mean, p50/p95, share of the step; host (executor and CPU ops) and device (GPU\n"
           "lanes) apart. TensorFlow's /stream:all and /memcpy repeats are not counted twice.\n"
           "Host busy: the time at least one host thread runs an op (nested ops and threads at once\n"
           "counted once, never more than the span); device busy the same over the GPU lanes; the\n"
           "summed times add up every slice, each nesting level again.";
  }

 protected:
  std::string Text(const Trace& trace, size_t top) const override {
    const analysis::OpStats stats = analysis::ComputeOpStats(trace);
    // Busy (a union: never more than the span) first; the durations summed count each nesting
    // level and each thread running at once again.
    std::string out = "slices " + IntText(stats.slices) + "  host busy " + FormatDuration(stats.host_busy_ns) +
                      "  device busy " + FormatDuration(stats.device_busy_ns) + "  (summed: host " +
                      FormatDuration(stats.host_total_ns) + ", device " + FormatDuration(stats.device_total_ns) + ")\n";
    out += OpRowsText(stats.by_op_type, top, "Op types by total time", "op type");
    out += OpRowsText(stats.by_node, top, "Nodes by total time", "node");
    if (!stats.annotations.empty()) {
      out += OpRowsText(stats.annotations, top, "Annotations, steps and sync markers (not ops, in no total)",
                        "annotation");
    }
    return out;
  }
  Json ToJson(const Trace& trace, size_t) const override {
    const analysis::OpStats stats = analysis::ComputeOpStats(trace);
    auto doc = Document("ops", trace);
    doc["slices"] = stats.slices;
    doc["host_total_ns"] = stats.host_total_ns;
    doc["device_total_ns"] = stats.device_total_ns;
    doc["host_busy_ns"] = stats.host_busy_ns;
    doc["device_busy_ns"] = stats.device_busy_ns;
    doc["by_op_type"] = OpRowsJson(stats.by_op_type);
    doc["by_node"] = OpRowsJson(stats.by_node);
    doc["annotations"] = OpRowsJson(stats.annotations);
    return doc;
  }
};

// ---- kernels ---------------------------------------------------------------------------------

class KernelsCommand : public SingleTraceCommand {
 public:
  std::string name() const override { return "kernels"; }
  std::string description() const override {
    return "GPU kernel breakdown: time, launches, mean, share of all kernel time, launch grid,\n"
           "block and registers per thread (from stepscope's kernel records, TensorFlow 2 labels or\n"
           "the PyTorch profiler's kernel args; 'varied' when launches differ), NCCL kernels marked;\n"
           "then kernel time per stream.";
  }

 protected:
  std::string Text(const Trace& trace, size_t top) const override {
    const analysis::KernelStats stats = analysis::ComputeKernelStats(trace);
    std::string out = "kernels " + IntText(stats.launches) + " launches, " + FormatDuration(stats.total_ns) + "\n";
    if (stats.launches == 0) return out + "  (no GPU kernels in this trace)\n";
    out += "\nKernels by total time (top " + std::to_string(std::min(top, stats.kernels.size())) + " of " +
           std::to_string(stats.kernels.size()) + ")\n";
    TextTable table({-48, 8, 12, 11, 7, -12, -12, 5});
    table.Row({"kernel", "launches", "total", "mean", "share", "grid", "block", "regs"});
    for (size_t i = 0; i < stats.kernels.size() && i < top; ++i) {
      const auto& k = stats.kernels[i];
      table.Row({Truncate(k.name, 48) + (k.communication ? " [nccl]" : ""), IntText(k.launches),
                 FormatDuration(k.total_ns), FormatDuration(k.mean_ns), FormatPercent(k.share),
                 k.grid.empty() ? "-" : k.grid, k.block.empty() ? "-" : k.block,
                 k.registers.empty() ? "-" : k.registers});
    }
    out += table.str() + "\nPer stream\n";
    TextTable streams({-60, 8, 12, 7});
    streams.Row({"stream", "launches", "total", "share"});
    for (const auto& s : stats.streams) {
      streams.Row({s.stream, IntText(s.launches), FormatDuration(s.total_ns), FormatPercent(s.share)});
    }
    return out + streams.str();
  }
  Json ToJson(const Trace& trace, size_t) const override {
    const analysis::KernelStats stats = analysis::ComputeKernelStats(trace);
    auto doc = Document("kernels", trace);
    doc["launches"] = stats.launches;
    doc["total_ns"] = stats.total_ns;
    auto kernels = nlohmann::ordered_json::array();
    for (const auto& k : stats.kernels) {
      kernels.push_back({{"name", k.name}, {"op_type", k.op_type}, {"launches", k.launches},
                         {"total_ns", k.total_ns}, {"min_ns", k.min_ns}, {"max_ns", k.max_ns},
                         {"mean_ns", k.mean_ns}, {"share", k.share}, {"grid", k.grid}, {"block", k.block},
                         {"registers_per_thread", k.registers}, {"communication", k.communication}});
    }
    doc["kernels"] = kernels;
    auto streams = nlohmann::ordered_json::array();
    for (const auto& s : stats.streams) {
      streams.push_back({{"stream", s.stream}, {"launches", s.launches}, {"total_ns", s.total_ns}, {"share", s.share}});
    }
    doc["streams"] = streams;
    return doc;
  }
};

// ---- memory ----------------------------------------------------------------------------------

class MemoryCommand : public SingleTraceCommand {
 public:
  std::string name() const override { return "memory"; }
  std::string description() const override {
    return "Per allocator: where the bytes-in-use curve comes from, its peak and when, the tensors\n"
           "live at the peak (size, producing op, lifetime), fragmentation over them (allocated vs\n"
           "requested bytes), bytes no live tensor accounts for, and the temporary and persistent\n"
           "memory the device's ops reported. TensorFlow curves follow the allocation records,\n"
           "pass through every allocator_bytes_in_use sample and never drop below a running\n"
           "node's peak_bytes (the sources used are listed); PyTorch's from its [memory] events;\n"
           "without any of them from the outputs, as TensorFlow's timeline does.";
  }

 protected:
  std::string Text(const Trace& trace, size_t top) const override {
    const auto reports = analysis::ComputeMemoryReport(trace, top);
    if (reports.empty()) return "\n(no allocator records, memory events or tensor outputs in this trace)\n";
    std::string out;
    const int64_t base = trace.span_begin_ns();
    for (const auto& r : reports) {
      const auto& t = r.timeline;
      out += "\n" + t.allocator + "  (" + (t.device.empty() ? "no device" : t.device) + ")\n";
      out += "  curve       " + IntText(static_cast<int64_t>(t.curve.size())) + " points from " +
             analysis::DescribeCurveSources(t.origin) + "\n";
      out += "  peak        " + FormatBytes(t.peak_bytes) + " at +" + FormatDuration(t.peak_ns - base) + "\n";
      std::string recorded;
      if (r.max_allocator_bytes_in_use > 0) {
        recorded = "allocator_bytes_in_use up to " + FormatBytes(r.max_allocator_bytes_in_use);
      }
      if (r.max_op_peak_bytes > 0) {
        recorded += (recorded.empty() ? "" : ", ") + std::string("one op's peak_bytes up to ") +
                    FormatBytes(r.max_op_peak_bytes);
      }
      if (!recorded.empty()) out += "  recorded    " + recorded + "\n";
      if (r.live_tensors > 0) {
        out += "  live        " + IntText(r.live_tensors) + " tensors, " + FormatBytes(r.live_requested_bytes) +
               " requested\n";
        if (r.live_allocated_bytes > 0) {
          out += "  fragmentation " + FormatPercent(r.fragmentation) + " (" + FormatBytes(r.live_allocated_bytes) +
                 " allocated for " + FormatBytes(r.live_requested_with_allocated) + " requested)\n";
        }
        out += "  unattributed " + FormatBytes(r.unattributed_bytes) + " of the peak\n";
      }
      if (r.temp_bytes > 0 || r.persistent_bytes > 0) {
        out += "  device ops  temporary " + FormatBytes(r.temp_bytes) + ", persistent " +
               FormatBytes(r.persistent_bytes) + "\n";
      }
      if (!r.live_at_peak.empty()) {
        TextTable table({12, 12, -40, -16, 12, 12});
        table.Row({"bytes", "allocated", "tensor", "producer op", "from", "until"});
        for (const auto& tensor : r.live_at_peak) {
          table.Row({FormatBytes(tensor.bytes), tensor.allocated_bytes > 0 ? FormatBytes(tensor.allocated_bytes) : "-",
                     Truncate(tensor.name, 40), Truncate(tensor.producer_op, 16),
                     tensor.allocated_in_step ? "+" + FormatDuration(tensor.alloc_ns - base) : "before step",
                     tensor.free_ns < 0 ? "end" : "+" + FormatDuration(tensor.free_ns - base)});
        }
        out += table.str();
      }
    }
    return out;
  }
  Json ToJson(const Trace& trace, size_t top) const override {
    const auto reports = analysis::ComputeMemoryReport(trace, top);
    auto doc = Document("memory", trace);
    const int64_t base = trace.span_begin_ns();
    auto allocators = nlohmann::ordered_json::array();
    for (const auto& r : reports) {
      const auto& t = r.timeline;
      auto curve = nlohmann::ordered_json::array();
      for (const auto& p : t.curve) curve.push_back({p.time_ns - base, p.bytes});
      auto live = nlohmann::ordered_json::array();
      for (const auto& tensor : r.live_at_peak) {
        nlohmann::ordered_json entry = {{"name", tensor.name},
                                        {"bytes", tensor.bytes},
                                        {"allocated_bytes", tensor.allocated_bytes},
                                        {"producer_op", tensor.producer_op},
                                        {"allocated_in_step", tensor.allocated_in_step},
                                        {"alloc_ns", tensor.alloc_ns - base}};
        if (tensor.free_ns >= 0) entry["free_ns"] = tensor.free_ns - base;  // absent: still live at the end
        live.push_back(std::move(entry));
      }
      allocators.push_back({{"allocator", t.allocator}, {"device", t.device}, {"origin", t.origin},
                            {"sources", t.sources},
                            {"max_allocator_bytes_in_use", r.max_allocator_bytes_in_use},
                            {"max_op_peak_bytes", r.max_op_peak_bytes},
                            {"derived_from_outputs", t.derived_from_outputs}, {"peak_bytes", t.peak_bytes},
                            {"peak_at_ns", t.peak_ns - base}, {"live_tensors", r.live_tensors},
                            {"live_requested_bytes", r.live_requested_bytes},
                            {"live_allocated_bytes", r.live_allocated_bytes}, {"fragmentation", r.fragmentation},
                            {"unattributed_bytes", r.unattributed_bytes}, {"temp_bytes", r.temp_bytes},
                            {"persistent_bytes", r.persistent_bytes}, {"largest_live_tensors", live},
                            {"curve", curve}});
    }
    doc["allocators"] = allocators;
    return doc;
  }
};

// ---- memcpy ----------------------------------------------------------------------------------

class MemcpyCommand : public SingleTraceCommand {
 public:
  std::string name() const override { return "memcpy"; }
  std::string description() const override {
    return "Copies per kind (HtoD, DtoH, DtoD, ...) and memory kinds (Pageable, Pinned, Device):\n"
           "count, bytes, time, achieved bandwidth (GB/s, over the copies that record bytes) and\n"
           "share of the step.";
  }

 protected:
  std::string Text(const Trace& trace, size_t top) const override {
    const analysis::MemcpyBreakdown stats = analysis::ComputeMemcpyStats(trace);
    std::string out = "copies " + IntText(stats.count) + ", " + FormatBytes(stats.bytes) + ", " +
                      FormatDuration(stats.total_ns) + "\n";
    if (stats.count == 0) return out;
    if (stats.without_bytes > 0) out += "(" + IntText(stats.without_bytes) + " copies record no byte count)\n";
    TextTable table({-8, -24, 7, 12, 12, 9, 7});
    table.Row({"kind", "memory", "count", "bytes", "time", "GB/s", "step"});
    bool rated = false, timed = false;
    for (const auto& r : stats.rows) {
      rated = rated || r.rated > 0;
      timed = timed || r.bandwidth_from == "durations" || r.bandwidth_from == "mixed";
    }
    for (size_t i = 0; i < stats.rows.size() && i < top; ++i) {
      const auto& r = stats.rows[i];
      const bool starred = rated && (r.bandwidth_from == "durations" || r.bandwidth_from == "mixed");
      table.Row({r.kind, r.memory.empty() ? "-" : r.memory, IntText(r.count), FormatBytes(r.bytes),
                 FormatDuration(r.total_ns), FormatFixed(r.bandwidth_gbps, 2) + (starred ? "*" : ""),
                 FormatPercent(r.step_share)});
    }
    out += "\n" + table.str();
    if (rated) {
      out += std::string("\nGB/s from the profiler's per-copy bandwidth (exact device time)") +
             (timed ? "; *: wholly or partly from recorded durations\n" : "\n");
    } else if (timed) {
      out += "\nGB/s from recorded durations\n";
    }
    return out;
  }
  Json ToJson(const Trace& trace, size_t) const override {
    const analysis::MemcpyBreakdown stats = analysis::ComputeMemcpyStats(trace);
    auto doc = Document("memcpy", trace);
    doc["count"] = stats.count;
    doc["bytes"] = stats.bytes;
    doc["total_ns"] = stats.total_ns;
    doc["without_bytes"] = stats.without_bytes;
    auto rows = nlohmann::ordered_json::array();
    for (const auto& r : stats.rows) {
      rows.push_back({{"kind", r.kind}, {"memory", r.memory}, {"count", r.count}, {"bytes", r.bytes},
                      {"total_ns", r.total_ns}, {"bandwidth_gbps", r.bandwidth_gbps},
                      {"bandwidth_from", r.bandwidth_from}, {"step_share", r.step_share}});
    }
    doc["kinds"] = rows;
    return doc;
  }
};

// ---- streams ---------------------------------------------------------------------------------

class StreamsCommand : public SingleTraceCommand {
 public:
  std::string name() const override { return "streams"; }
  std::string description() const override {
    return "Per device lane and GPU stream: busy time (union of its slices), utilisation of the\n"
           "step, and the largest idle gaps with where they are (the slices either side).";
  }

 protected:
  std::string Text(const Trace& trace, size_t top) const override {
    const analysis::StreamStats stats = analysis::ComputeStreamStats(trace, 3);
    std::string out;
    const int64_t base = stats.span_begin_ns;
    TextTable table({-44, -18, 8, 12, 7, 12});
    table.Row({"device", "lane", "slices", "busy", "util", "idle"});
    for (const auto& s : stats.streams) {
      // Annotation and sync rows show where they lie; they are not busy time.
      const bool work = s.content == "work";
      table.Row({Truncate(s.device, 44), Truncate(work ? s.stream : s.stream + " (" + s.content + ")", 18), IntText(s.slices),
                 FormatDuration(s.busy_ns), work ? FormatPercent(s.utilisation) : "-",
                 work ? FormatDuration(s.idle_ns) : "-"});
    }
    out += "\n" + table.str() + "\nLargest idle gaps\n";
    size_t shown = 0;
    for (const auto& s : stats.streams) {
      if (s.content != "work") continue;
      for (const auto& gap : s.largest_gaps) {
        if (shown++ >= top) break;
        out += "  " + Truncate(s.device + " " + s.stream, 50) + "  " + FormatDuration(gap.length()) + " at +" +
               FormatDuration(gap.begin_ns - base) + "  after " + (gap.before.empty() ? "(start)" : Truncate(gap.before, 40)) +
               ", before " + (gap.after.empty() ? "(end)" : Truncate(gap.after, 40)) + "\n";
      }
    }
    return out;
  }
  Json ToJson(const Trace& trace, size_t top) const override {
    const analysis::StreamStats stats = analysis::ComputeStreamStats(trace, top);
    auto doc = Document("streams", trace);
    const int64_t base = stats.span_begin_ns;
    auto streams = nlohmann::ordered_json::array();
    for (const auto& s : stats.streams) {
      auto gaps = nlohmann::ordered_json::array();
      for (const auto& g : s.largest_gaps) {
        gaps.push_back({{"begin_ns", g.begin_ns - base}, {"length_ns", g.length()}, {"after", g.before},
                        {"before", g.after}});
      }
      streams.push_back({{"device", s.device}, {"lane", s.stream}, {"kind", s.kind}, {"content", s.content},
                         {"slices", s.slices},
                         {"busy_ns", s.busy_ns}, {"idle_ns", s.idle_ns}, {"utilisation", s.utilisation},
                         {"first_ns", s.first_ns - base}, {"last_ns", s.last_ns - base}, {"largest_gaps", gaps}});
    }
    doc["streams"] = streams;
    return doc;
  }
};

// ---- per-step commands: overlap, critical-path -------------------------------------------------

// Commands that report each input trace (a step, a rank) on its own; --rank keeps the traces of
// those ranks, --step/--steps the steps of those numbers (a step trace's, or ProfilerStep#N
// windows inside a trace: what Windows() gives).
class PerStepCommand : public SingleTraceCommand {
 public:
  std::string synopsis() const override { return "TRACE|DIR... [--json] [--top N] [--step N | --steps A-B] [--rank R]"; }
  std::vector<FlagSpec> flags() const override {
    auto flags = SingleTraceCommand::flags();
    flags.push_back(StepFlag("only what happens"));
    flags.push_back(StepsFlag("only what happens"));
    flags.push_back(RankFlag());
    return flags;
  }
  Status Run(const ParsedArgs& args, std::ostream& out, std::ostream&) const override {
    ASSIGN_OR_RETURN(const size_t top, PositiveFlag(args, "top", kDefaultTop));
    ASSIGN_OR_RETURN(const auto range, StepRange(args));
    ASSIGN_OR_RETURN(std::vector<Trace> traces, LoadScopedTraces(args));
    // Per trace, its windows in the range.
    std::vector<std::pair<const Trace*, std::vector<StepWindow>>> scoped;
    for (const Trace& trace : traces) {
      std::vector<StepWindow> windows = Windows(trace);
      if (range) {
        std::erase_if(windows, [&](const StepWindow& w) { return w.step < range->first || w.step > range->second; });
      }
      if (!windows.empty()) scoped.emplace_back(&trace, std::move(windows));
    }
    if (scoped.empty()) {
      return InvalidInput("no step " + std::to_string(range->first) +
                          (range->second != range->first ? "-" + std::to_string(range->second) : "") +
                          " in the traces given (see `stepscope steps`)");
    }
    if (args.Has("json")) {
      nlohmann::ordered_json doc;
      doc["schema"] = "stepscope." + name() + "/1";
      auto steps = nlohmann::ordered_json::array();
      for (const auto& [trace, windows] : scoped) steps.push_back(ToJson(*trace, windows, top));
      doc["traces"] = steps;
      EmitJson(out, doc);
    } else {
      for (size_t i = 0; i < scoped.size(); ++i) {
        if (i > 0) out << "\n";
        out << Header(*scoped[i].first) << Text(*scoped[i].first, scoped[i].second, top);
      }
    }
    return Status::Ok();
  }

 protected:
  // A step of a trace: a ProfilerStep#N window, or the whole trace (numbered by its step info).
  struct StepWindow {
    int64_t step = -1;
    std::string marker;
    int64_t begin_ns = std::numeric_limits<int64_t>::min(), end_ns = std::numeric_limits<int64_t>::max();
    bool whole() const { return marker == "trace"; }
  };
  // The steps a command reports a trace in (default: the whole trace).
  virtual std::vector<StepWindow> Windows(const Trace& trace) const {
    return {{trace.step_info().step, "trace"}};
  }
  virtual std::string Text(const Trace& trace, const std::vector<StepWindow>& windows, size_t top) const = 0;
  virtual Json ToJson(const Trace& trace, const std::vector<StepWindow>& windows, size_t top) const = 0;
  std::string Text(const Trace& trace, size_t top) const final { return Text(trace, Windows(trace), top); }
  Json ToJson(const Trace& trace, size_t top) const final { return ToJson(trace, Windows(trace), top); }
};

std::string OverlapDescription() {
  return "Communication (collectives, NCCL kernels, fusion-buffer copies) against computation\n"
         "(other ops and kernels) per device, as HTA reports it: total communication time, the\n"
         "part hidden behind computation, the exposed part and its share of the step. Each input\n"
         "trace (step, rank) is reported on its own.";
}

class OverlapCommand : public PerStepCommand {
 public:
  std::string name() const override { return "overlap"; }
  std::string description() const override { return OverlapDescription(); }
  // Whole traces only (ComputeOverlap has no windows): scoped by rank, not by step.
  std::string synopsis() const override { return "TRACE|DIR... [--json] [--top N] [--rank R]"; }
  std::vector<FlagSpec> flags() const override {
    auto flags = SingleTraceCommand::flags();
    flags.push_back(RankFlag());
    return flags;
  }

 protected:
  std::string Text(const Trace& trace, const std::vector<StepWindow>&, size_t) const override {
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
  Json ToJson(const Trace& trace, const std::vector<StepWindow>&, size_t) const override {
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
};

class CriticalPathCommand : public PerStepCommand {
 public:
  std::string name() const override { return "critical-path"; }
  std::string description() const override {
    return "What bounds each step, as HTA asks it: a graph over the start and end of every op, runtime\n"
           "call, kernel and copy (annotations are not work): thread order and nesting on the host,\n"
           "stream order and launch edges on the GPU, dataflow, and synchronising calls waiting for\n"
           "the GPU work they wait on. Walking back from the end of the last work, each link is the\n"
           "predecessor that became ready last. Prints what bound the path (cpu, gpu_compute,\n"
           "gpu_communication, gpu_memory, launch_delay, kernel_gap, sync), its time per op type and\n"
           "the longest links (--top) in path order. One path per ProfilerStep#N span of a trace,\n"
           "else one for the whole trace; each input trace (step, rank) is reported on its own.";
  }

 protected:
  // Its ProfilerStep#N spans, or the whole trace.
  std::vector<StepWindow> Windows(const Trace& trace) const override {
    std::vector<StepWindow> windows;
    const auto steps = analysis::StepsOfTrace(trace, false);
    if (steps.size() > 1) {
      for (const auto& step : steps) windows.push_back({step.step, step.marker, step.begin_ns, step.end_ns});
    } else {
      windows.push_back({trace.step_info().step, "trace"});
    }
    return windows;
  }
  std::string Text(const Trace& trace, const std::vector<StepWindow>& windows, size_t top) const override {
    std::string out = LaunchLinksText(analysis::CountLaunchLinks({analysis::GpuInput{&trace, {}}}));
    const analysis::CriticalPathFinder paths(trace);
    for (const StepWindow& w : windows) {
      if (!w.whole()) out += (out.empty() ? "" : "\n") + std::string("== ") + w.marker + "\n";
      out += PathText(trace, paths.Find(w.begin_ns, w.end_ns), top);
    }
    return out;
  }
  Json ToJson(const Trace& trace, const std::vector<StepWindow>& windows, size_t) const override {
    auto doc = Document("critical-path", trace);
    if (const auto links = analysis::CountLaunchLinks({analysis::GpuInput{&trace, {}}}); links.work > 0) {
      doc["launch_links"] = LaunchLinksJson(links);
    }
    const analysis::CriticalPathFinder paths(trace);
    if (windows.size() == 1 && windows.front().whole()) {
      doc.update(PathJson(trace, paths.Find(windows.front().begin_ns, windows.front().end_ns)));
      return doc;
    }
    auto steps = nlohmann::ordered_json::array();
    for (const StepWindow& w : windows) {
      Json step = {{"step", w.step}, {"marker", w.marker}, {"begin_ns", w.begin_ns - trace.span_begin_ns()},
                   {"end_ns", w.end_ns - trace.span_begin_ns()}};
      step.update(PathJson(trace, paths.Find(w.begin_ns, w.end_ns)));
      steps.push_back(step);
    }
    doc["steps"] = steps;
    return doc;
  }

 private:
  static std::string PathText(const Trace& trace, const analysis::CriticalPath& path, size_t top) {
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
      shares.Row({Truncate(s.op_type, 40), IntText(s.count), FormatDuration(s.total_ns), FormatPercent(s.share)});
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
    TextTable links({12, 11, 11, 10, -9, -40, -30});
    links.Row({"start", "duration", "on path", "wait", "edge", "slice", "lane"});
    const int64_t base = trace.span_begin_ns();
    for (size_t i : order) {
      const auto& e = path.elements[i];
      links.Row({"+" + FormatDuration(e.start_ns - base), FormatDuration(e.dur_ns), FormatDuration(e.held_ns),
                 FormatDuration(e.wait_ns), e.edge.empty() ? "start" : e.edge, Truncate(e.name, 40), Truncate(e.lane, 30)});
    }
    return out + links.str();
  }

  static Json PathJson(const Trace& trace, const analysis::CriticalPath& path) {
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
};

// ---- diff ------------------------------------------------------------------------------------

class DiffCommand : public Command {
 public:
  std::string name() const override { return "diff"; }
  std::string synopsis() const override {
    return "A B | A... --vs B... [--json] [--top N] [--fail-on-regression PCT[,MIN_MS]]";
  }
  std::string description() const override {
    return "Compares run A with run B. Each side is a trace, a directory, or several of them (A... --vs\n"
           "B...); every step in them counts (see `stepscope steps`). With several steps per side: per\n"
           "op type, node and kernel (names normalised), the per-step totals of each side, the change\n"
           "of the median with a bootstrap 95% confidence interval, a Mann-Whitney p-value, Benjamini-\n"
           "Hochberg q-values over each table, and a verdict (regressed, improved, unchanged, new,\n"
           "gone), sorted by impact on the step (JSON schema stepscope.diff/2). With one step per side:\n"
           "count and time deltas from A to B (stepscope.diff/1), no confidence given. Ops present on\n"
           "one side only are marked, so runs of different configurations compare too.";
  }
  std::vector<FlagSpec> flags() const override {
    std::vector<FlagSpec> flags = {{"json", "", "write the result as JSON"},
                                   {"top", "N", "rows per table in text output (default 15)"}};
    for (FlagSpec& f : DiffCompareFlags()) flags.push_back(std::move(f));
    return flags;
  }
  size_t min_positional() const override { return 0; }
  size_t max_positional() const override { return std::numeric_limits<size_t>::max(); }
  std::string more_exit_codes() const override {
    return ", 3 a check failed: regression gate (--fail-on-regression)";
  }

  Status Run(const ParsedArgs& args, std::ostream& out, std::ostream& err) const override {
    ASSIGN_OR_RETURN(const size_t top, PositiveFlag(args, "top", kDefaultTop));
    ASSIGN_OR_RETURN(const auto sides, DiffSides(args));
    bool handled = false;
    RETURN_IF_ERROR(RunStepDiff(args, sides.first, sides.second, out, err, handled));
    if (handled) return Status::Ok();
    ASSIGN_OR_RETURN(std::vector<Trace> traces_a, trace::ReadTraces(sides.first));
    ASSIGN_OR_RETURN(std::vector<Trace> traces_b, trace::ReadTraces(sides.second));
    const Trace a = analysis::OneTrace(std::move(traces_a));
    const Trace b = analysis::OneTrace(std::move(traces_b));
    const analysis::TraceDiff diff = analysis::DiffTraces(a, b);
    if (args.Has("json")) {
      nlohmann::ordered_json doc;
      doc["schema"] = "stepscope.diff/1";
      doc["a"] = a.source_path();
      doc["b"] = b.source_path();
      doc["span_a_ns"] = diff.span_a;
      doc["span_b_ns"] = diff.span_b;
      doc["total_a_ns"] = diff.total_a;
      doc["total_b_ns"] = diff.total_b;
      auto rows = [](const std::vector<analysis::DiffRow>& list) {
        auto json = nlohmann::ordered_json::array();
        for (const auto& r : list) {
          json.push_back({{"name", r.name}, {"op_type", r.op_type}, {"where", r.where}, {"presence", r.presence},
                          {"count_a", r.count_a}, {"count_b", r.count_b}, {"total_a_ns", r.total_a},
                          {"total_b_ns", r.total_b}, {"delta_ns", r.delta_ns}, {"delta_count", r.delta_count},
                          {"ratio", r.ratio}});
        }
        return json;
      };
      doc["by_op_type"] = rows(diff.by_op_type);
      doc["by_node"] = rows(diff.by_node);
      EmitJson(out, doc);
      return Status::Ok();
    }
    out << "A      " << a.source_path() << "  span " << FormatDuration(diff.span_a) << ", op time "
        << FormatDuration(diff.total_a) << "\n";
    out << "B      " << b.source_path() << "  span " << FormatDuration(diff.span_b) << ", op time "
        << FormatDuration(diff.total_b) << "\n";
    out << "delta  span " << FormatDuration(diff.span_b - diff.span_a) << ", op time "
        << FormatDuration(diff.total_b - diff.total_a) << "\n";
    auto table = [&](const std::vector<analysis::DiffRow>& list, const char* title, const char* column) {
      out << "\n" << title << " by impact (top " << std::min(top, list.size()) << " of " << list.size() << ")\n";
      TextTable t({-40, -6, 13, 12, 12, 12, 7});
      t.Row({column, "where", "count A>B", "A", "B", "delta", "B/A"});
      for (size_t i = 0; i < list.size() && i < top; ++i) {
        const auto& r = list[i];
        t.Row({Truncate(r.name, 40), r.where, IntText(r.count_a) + ">" + IntText(r.count_b), FormatDuration(r.total_a),
               FormatDuration(r.total_b), (r.delta_ns > 0 ? "+" : "") + FormatDuration(r.delta_ns),
               r.presence == "only_b" ? "new" : r.presence == "only_a" ? "gone" : FormatFixed(r.ratio, 2)});
      }
      out << t.str();
    };
    table(diff.by_op_type, "Op types", "op type");
    table(diff.by_node, "Nodes", "node");
    return Status::Ok();
  }
};

// ---- merge -----------------------------------------------------------------------------------

class MergeCommand : public Command {
 public:
  std::string name() const override { return "merge"; }
  std::string synopsis() const override {
    return "DIR|TRACES... [-o OUT] [--format " + trace::OutputFormatChoices() + "] [--json]";
  }
  std::string description() const override {
    return "Merges per-rank (and per-step) traces into one timeline: one process per input (rank,\n"
           "host, step), clocks aligned (same host: its shared clock; other hosts: the barrier\n"
           "timestamp each rank records, TraceSession.clock_sync_nanos), and reports stragglers:\n"
           "per step the rank that finished last and by how much, and per rank the device (tower)\n"
           "that finished last. With -o, writes the merged trace in any output of 'stepscope\n"
           "formats', told from --format or OUT's extension as convert tells it: .json, .json.gz ->\n"
           "chrome; .pftrace, .perfetto-trace (.gz) -> perfetto-proto (a process track per input);\n"
           ".pb -> pb; .pbtxt -> pbtxt (one RunMetadata holding every input's devices).";
  }
  std::vector<FlagSpec> flags() const override {
    return {{"output", "OUT", "write the merged trace here (.json[.gz], .pftrace[.gz], .pb, .pbtxt)", 'o'},
            {"format", "FORMAT", "the output's format when OUT's extension does not tell it (as convert)"},
            {"json", "", "write the merge report as JSON"}};
  }
  size_t min_positional() const override { return 1; }
  size_t max_positional() const override { return std::numeric_limits<size_t>::max(); }

  Status Run(const ParsedArgs& args, std::ostream& out, std::ostream& err) const override {
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
    ASSIGN_OR_RETURN(std::vector<Trace> traces, trace::ReadTraces(args.positional));
    analysis::MergeResult merged = analysis::MergeTraces(std::move(traces));
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
      doc["unaligned"] = report.unaligned;
      EmitJson(out, doc);
      return Status::Ok();
    }
    out << "merged " << report.inputs.size() << " traces, span "
        << FormatDuration(merged.trace.span_end_ns() - merged.trace.span_begin_ns()) << "\n\n";
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
};

}  // namespace

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

void AddAnalysisCommands(std::vector<std::unique_ptr<Command>>& commands) {
  commands.push_back(std::make_unique<SummaryCommand>());
  commands.push_back(std::make_unique<OpsCommand>());
  commands.push_back(std::make_unique<KernelsCommand>());
  commands.push_back(std::make_unique<MemoryCommand>());
  commands.push_back(std::make_unique<MemcpyCommand>());
  commands.push_back(std::make_unique<StreamsCommand>());
  commands.push_back(std::make_unique<OverlapCommand>());
  commands.push_back(std::make_unique<CriticalPathCommand>());
  commands.push_back(std::make_unique<DiffCommand>());
  commands.push_back(MakeStepsCommand());
  commands.push_back(std::make_unique<MergeCommand>());
}

}  // namespace stepscope::cli
