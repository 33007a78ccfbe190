// The reports on where one trace's time and memory go: `ops` (per op type and node), `kernels`
// (GPU kernels and streams), `memory` (per allocator: curve, peak, live tensors), `memcpy` (copies
// per kind) and `streams` (busy time and idle gaps per lane). Each takes a trace, several files or
// a directory (merged into one timeline, analysis/merge.h); each command is its text and its JSON
// side by side, declared with TraceReportCommand (report.h).
#include <algorithm>
#include <string>

#include "profiler/analysis/breakdowns.h"
#include "profiler/analysis/memory_report.h"
#include "profiler/analysis/op_stats.h"
#include "profiler/cli/commands/commands.h"
#include "profiler/cli/commands/report.h"
#include "profiler/cli/report_format.h"

namespace stepscope::cli {
namespace {

using trace::Trace;

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

std::string OpRowsText(const std::vector<analysis::OpStatsRow>& rows, const TableOptions& options, const char* title,
                       const char* first_column) {
  const size_t top = options.top;
  std::vector<std::string> shown;
  for (size_t i = 0; i < rows.size() && i < top; ++i) shown.push_back(rows[i].name);
  NameCells names(options.full_names, shown);
  std::string out = std::string("\n") + title + " (top " + std::to_string(std::min(top, rows.size())) + " of " +
                    std::to_string(rows.size()) + ")\n";
  TextTable table({-40, -6, 7, 12, 12, 11, 11, 11, 7});
  table.Row({first_column, "where", "count", "total", "self", "mean", "p50", "p95", "share"});
  for (size_t i = 0; i < rows.size() && i < top; ++i) {
    const auto& r = rows[i];
    table.Row({names(r.name, 40), r.where, IntText(r.count), FormatDuration(r.total_ns), FormatDuration(r.self_ns),
               FormatDuration(r.mean_ns), FormatDuration(r.p50_ns), FormatDuration(r.p95_ns),
               FormatPercent(r.share)});
  }
  return out + table.str();
}

std::string OpsText(const Trace& trace, const TableOptions& options) {
  const analysis::OpStats stats = analysis::ComputeOpStats(trace);
  // Busy (a union: never more than the span) first; the durations summed count each nesting
  // level and each thread running at once again.
  std::string out = "slices " + IntText(stats.slices) + "  host busy " + FormatDuration(stats.host_busy_ns) +
                    "  device busy " + FormatDuration(stats.device_busy_ns) + "  (summed: host " +
                    FormatDuration(stats.host_total_ns) + ", device " + FormatDuration(stats.device_total_ns) + ")\n";
  out += OpRowsText(stats.by_op_type, options, "Op types by total time", "op type");
  out += OpRowsText(stats.by_node, options, "Nodes by total time", "node");
  if (!stats.annotations.empty()) {
    out += OpRowsText(stats.annotations, options, "Annotations, steps and sync markers (not ops, in no total)",
                      "annotation");
  }
  return out;
}

Json OpsJson(const Trace& trace, size_t) {
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

// ---- kernels ---------------------------------------------------------------------------------

std::string KernelsText(const Trace& trace, const TableOptions& options) {
  const size_t top = options.top;
  const analysis::KernelStats stats = analysis::ComputeKernelStats(trace);
  std::string out = "kernels " + IntText(stats.launches) + " launches, " + FormatDuration(stats.total_ns) + "\n";
  if (stats.launches == 0) return out + "  (no GPU kernels in this trace)\n";
  out += "\nKernels by total time (top " + std::to_string(std::min(top, stats.kernels.size())) + " of " +
         std::to_string(stats.kernels.size()) + ")\n";
  TextTable table({-48, 8, 12, 11, 7, -12, -12, 5});
  table.Row({"kernel", "launches", "total", "mean", "share", "grid", "block", "regs"});
  std::vector<std::string> shown;
  for (size_t i = 0; i < stats.kernels.size() && i < top; ++i) shown.push_back(stats.kernels[i].name);
  NameCells names(options.full_names, shown);
  for (size_t i = 0; i < stats.kernels.size() && i < top; ++i) {
    const auto& k = stats.kernels[i];
    table.Row({names(k.name, k.communication ? 41 : 48) + (k.communication ? " [nccl]" : ""), IntText(k.launches),
               FormatDuration(k.total_ns), FormatDuration(k.mean_ns), FormatPercent(k.share),
               k.grid.empty() ? "-" : k.grid, k.block.empty() ? "-" : k.block,
               k.registers.empty() ? "-" : k.registers});
  }
  out += table.str() + "\nPer stream\n";
  TextTable streams({-60, 8, 12, 7});
  streams.Row({"stream", "launches", "total", "share"});
  for (const auto& s : stats.streams) {
    streams.Row({ElideMiddle(s.stream, 60), IntText(s.launches), FormatDuration(s.total_ns), FormatPercent(s.share)});
  }
  return out + streams.str();
}

Json KernelsJson(const Trace& trace, size_t) {
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

// ---- memory ----------------------------------------------------------------------------------

std::string MemoryText(const Trace& trace, const TableOptions& options) {
  const size_t top = options.top;
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

Json MemoryJson(const Trace& trace, size_t top) {
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

// ---- memcpy ----------------------------------------------------------------------------------

std::string MemcpyText(const Trace& trace, const TableOptions& options) {
  const size_t top = options.top;
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

Json MemcpyJson(const Trace& trace, size_t) {
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

// ---- streams ---------------------------------------------------------------------------------

std::string StreamsText(const Trace& trace, const TableOptions& options) {
  const size_t top = options.top;
  const analysis::StreamStats stats = analysis::ComputeStreamStats(trace, 3);
  std::string out;
  const int64_t base = stats.span_begin_ns;
  TextTable table({-44, -18, 8, 12, 7, 12});
  table.Row({"device", "lane", "slices", "busy", "util", "idle"});
  for (const auto& s : stats.streams) {
    // Annotation and sync rows show where they lie; they are not busy time.
    const bool work = s.content == "work";
    table.Row({ElideMiddle(s.device, 44), Truncate(work ? s.stream : s.stream + " (" + s.content + ")", 18), IntText(s.slices),
               FormatDuration(s.busy_ns), work ? FormatPercent(s.utilisation) : "-",
               work ? FormatDuration(s.idle_ns) : "-"});
  }
  out += "\n" + table.str() + "\nLargest idle gaps\n";
  std::vector<std::string> neighbours;  // the slices around the gaps: kernels, copies, ops
  for (const auto& s : stats.streams) {
    for (const auto& gap : s.largest_gaps) neighbours.insert(neighbours.end(), {gap.before, gap.after});
  }
  NameCells names(options.full_names, neighbours);
  size_t shown = 0;
  for (const auto& s : stats.streams) {
    if (s.content != "work") continue;
    for (const auto& gap : s.largest_gaps) {
      if (shown++ >= top) break;
      out += "  " + ElideMiddle(s.device, 44) + " " + s.stream + "  " + FormatDuration(gap.length()) + " at +" +
             FormatDuration(gap.begin_ns - base) + "  after " + (gap.before.empty() ? "(start)" : names(gap.before, 40)) +
             ", before " + (gap.after.empty() ? "(end)" : names(gap.after, 40)) + "\n";
    }
  }
  return out;
}

Json StreamsJson(const Trace& trace, size_t top) {
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

}  // namespace

CommandSpec OpsCommand() {
  return TraceReportCommand(
      "ops",
      "Time per op type and per node: count, total and self time (self excludes nested\n"
      "calls), mean, p50/p95, share of the step; host (executor and CPU ops) and device (GPU\n"
      "lanes) apart. TensorFlow's /stream:all and /memcpy repeats are not counted twice.\n"
      "Host busy: the time at least one host thread runs an op (nested ops and threads at once\n"
      "counted once, never more than the span); device busy the same over the GPU lanes; the\n"
      "summed times add up every slice, each nesting level again.",
      {.text = OpsText, .json = OpsJson});
}

CommandSpec KernelsCommand() {
  return TraceReportCommand(
      "kernels",
      "GPU kernel breakdown: time, launches, mean, share of all kernel time, launch grid,\n"
      "block and registers per thread (from stepscope's kernel records, TensorFlow 2 labels or\n"
      "the PyTorch profiler's kernel args; 'varied' when launches differ), NCCL kernels marked;\n"
      "then kernel time per stream.",
      {.text = KernelsText, .json = KernelsJson});
}

CommandSpec MemoryCommand() {
  return TraceReportCommand(
      "memory",
      "Per allocator: where the bytes-in-use curve comes from, its peak and when, the tensors\n"
      "live at the peak (size, producing op, lifetime), fragmentation over them (allocated vs\n"
      "requested bytes), bytes no live tensor accounts for, and the temporary and persistent\n"
      "memory the device's ops reported. TensorFlow curves follow the allocation records,\n"
      "pass through every allocator_bytes_in_use sample and never drop below a running\n"
      "node's peak_bytes (the sources used are listed); PyTorch's from its [memory] events;\n"
      "without any of them from the outputs, as TensorFlow's timeline does.",
      {.text = MemoryText, .json = MemoryJson});
}

CommandSpec MemcpyCommand() {
  return TraceReportCommand(
      "memcpy",
      "Copies per kind (HtoD, DtoH, DtoD, ...) and memory kinds (Pageable, Pinned, Device):\n"
      "count, bytes, time, achieved bandwidth (GB/s, over the copies that record bytes) and\n"
      "share of the step.",
      {.text = MemcpyText, .json = MemcpyJson});
}

CommandSpec StreamsCommand() {
  return TraceReportCommand(
      "streams",
      "Per device lane and GPU stream: busy time (union of its slices), utilisation of the\n"
      "step, and the largest idle gaps with where they are (the slices either side).",
      {.text = StreamsText, .json = StreamsJson});
}

}  // namespace stepscope::cli
