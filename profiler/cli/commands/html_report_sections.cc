// The sections of `stepscope report` (html_report_sections.h): tables and charts from the JSON
// documents the commands print, every figure bound to its value in them.
#include "profiler/cli/commands/html_report_sections.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <map>
#include <set>

#include "base/units.h"
#include "profiler/cli/report_format.h"
#include "profiler/report/svg_charts.h"

namespace stepscope::cli {
namespace {

using report::Cell;
using report::Escape;
using report::Paragraph;
using report::Table;

const Json kNull;

// The value at `pointer` in `doc`, null when there is none.
const Json& At(const Json& doc, const std::string& pointer) {
  const Json::json_pointer p(pointer);
  return doc.contains(p) ? doc.at(p) : kNull;
}

// A member of an object by reference (null, which iterates as empty, when absent): a table's rows
// are read in place, never from a copy.
const Json& Member(const Json& doc, const char* key) {
  return doc.is_object() && doc.contains(key) ? doc[key] : kNull;
}

double Number(const Json& v) { return v.is_number() ? v.get<double>() : 0; }

// Figure cells: the value at `pointer` of command `cmd`'s document, formatted for reading.
Cell Fig(const Json& doc, const std::string& pointer, std::string (*format)(const Json&), size_t cmd = 0) {
  const Json& v = At(doc, pointer);
  if (!v.is_number()) return report::Text(v.is_null() ? "-" : v.is_string() ? v.get<std::string>() : v.dump());
  return report::Figure(format(v), pointer, v.dump(), cmd);
}
std::string AsDuration(const Json& v) { return FormatDuration(v.get<double>()); }
std::string AsBytes(const Json& v) { return FormatBytes(v.get<int64_t>()); }
std::string AsPercent(const Json& v) { return FormatPercent(v.get<double>()); }
std::string AsCount(const Json& v) {
  if (!v.is_number()) return "-";
  return v.is_number_integer() ? IntText(v.get<int64_t>()) : FormatFixed(v.get<double>(), 2);
}
// The string at `pointer`, "" when there is none.
std::string TextAt(const Json& doc, const std::string& pointer) {
  const Json& v = At(doc, pointer);
  return v.is_string() ? v.get<std::string>() : "";
}
std::string AsFixed3(const Json& v) { return FormatFixed(v.get<double>(), 3); }
std::string AsFixed1(const Json& v) { return FormatFixed(v.get<double>(), 1); }
std::string AsFlops(const Json& v) { return FormatSi(v.get<double>(), "FLOP"); }
std::string AsFlopRate(const Json& v) { return FormatSi(v.get<double>(), "FLOP/s"); }
std::string AsByteRate(const Json& v) { return FormatSi(v.get<double>(), "B/s"); }

Cell Dur(const Json& doc, const std::string& p, size_t cmd = 0) { return Fig(doc, p, AsDuration, cmd); }
Cell Byt(const Json& doc, const std::string& p, size_t cmd = 0) { return Fig(doc, p, AsBytes, cmd); }
Cell Pct(const Json& doc, const std::string& p, size_t cmd = 0) { return Fig(doc, p, AsPercent, cmd); }
Cell Cnt(const Json& doc, const std::string& p, size_t cmd = 0) { return Fig(doc, p, AsCount, cmd); }
Cell Str(const Json& doc, const std::string& p) {
  const Json& v = At(doc, p);
  return report::Text(v.is_string() ? v.get<std::string>() : v.is_null() ? "-" : v.dump());
}

std::string Idx(const std::string& base, size_t i) { return base + "/" + std::to_string(i); }

// A command that failed: what it said, in place of its numbers.
std::string Failed(const CommandRun& run) {
  std::string text = run.err.empty() ? "exit code " + std::to_string(run.code) : run.err;
  return Paragraph(text, "note");
}

std::string H3(const std::string& text) { return "<h3>" + Escape(text) + "</h3>\n"; }

}  // namespace

std::string RunBody(const std::vector<CommandRun>& summaries) {
  std::vector<std::vector<Cell>> rows;
  std::string notes;
  for (size_t c = 0; c < summaries.size(); ++c) {
    const CommandRun& run = summaries[c];
    if (run.doc.is_null()) {
      notes += Failed(run);
      continue;
    }
    // A directory or a glob gives an array of documents, one per trace.
    const bool many = run.doc.is_array();
    const size_t n = many ? run.doc.size() : 1;
    for (size_t i = 0; i < n; ++i) {
      const std::string p = many ? "/" + std::to_string(i) : "";
      const Json& d = many ? run.doc[i] : run.doc;
      const Json& world = At(d, "/step/world_size");
      rows.push_back({Str(run.doc, p + "/source"), Str(run.doc, p + "/format"), Cnt(run.doc, p + "/step/step", c),
                      Cnt(run.doc, p + "/step/rank", c),
                      world.is_null() ? report::Text("-") : Cnt(run.doc, p + "/step/world_size", c),
                      Str(run.doc, p + "/step/host"), Str(run.doc, p + "/step/producer"),
                      Dur(run.doc, p + "/span_ns", c), Cnt(run.doc, p + "/nodes", c),
                      report::Text(std::to_string(Member(d, "devices").size()))});
    }
  }
  // Inputs cut short and read up to the cut (--allow-truncated): said first, as the CLI does.
  std::string cuts;
  for (const CommandRun& run : summaries) {
    for (const Json& cut : Member(run.doc, "truncated")) {
      cuts += Paragraph("Truncated input: " + cut.value("file", "") + " ends early (" + cut.value("reason", "") +
                            "); analysed up to its cut, the " + AsCount(At(cut, "/events_kept")) + " whole events before it.",
                        "bad");
    }
  }
  return cuts + Table({"file", "format", "step", "rank", "world", "host", "producer", "span", "slices", "lanes"}, rows) +
         notes;
}

std::string StepsBody(const CommandRun& steps, const CommandRun& breakdown, size_t top) {
  std::string out;
  if (steps.doc.is_null()) {
    out += Failed(steps);
  } else {
    const Json& d = steps.doc;
    out += Table({"steps", "median", "MAD", "mean", "CV", "p95/p50", "min", "max", "outliers"},
                 {{Cnt(d, "/duration/steps"), Dur(d, "/duration/median_ns"), Dur(d, "/duration/mad_ns"),
                   Dur(d, "/duration/mean_ns"), Fig(d, "/duration/cv", AsFixed3), Fig(d, "/duration/p95_over_p50", AsFixed3),
                   Dur(d, "/duration/min_ns"), Dur(d, "/duration/max_ns"),
                   report::Text(std::to_string(Member(d, "outliers").size()))}});
    std::vector<report::Bar> bars;
    std::vector<std::vector<Cell>> rows;
    const Json& list = Member(d, "steps");
    for (size_t i = 0; i < list.size() && i < 4 * top; ++i) {
      const std::string p = Idx("/steps", i);
      bars.push_back({"step " + AsCount(At(list[i], "/step")), Number(At(list[i], "/duration_ns")),
                      FormatDuration(Number(At(list[i], "/duration_ns"))) + (list[i].value("outlier", false) ? " outlier" : "")});
      rows.push_back({Cnt(d, p + "/step"), Str(d, p + "/marker"), Dur(d, p + "/duration_ns"), Fig(d, p + "/z", AsFixed3),
                      report::Text(list[i].value("outlier", false) ? "outlier" : ""), Str(d, p + "/source")});
    }
    if (list.size() > 1) out += report::BarChart(bars);
    out += Table({"step", "marker", "duration", "robust z", "", "source"}, rows);
    if (list.size() > rows.size()) out += Paragraph(std::to_string(list.size() - rows.size()) + " more steps", "note");
  }
  out += H3("Where the step goes");
  if (breakdown.doc.is_null()) return out + Failed(breakdown);
  const Json& b = breakdown.doc;
  const char* parts[] = {"input", "compute", "communication", "idle"};
  std::vector<report::Bar> stack;
  std::vector<Cell> row;
  for (const char* part : parts) {
    const std::string p = std::string("/parts/") + part + "_ns";
    stack.push_back({part, Number(At(b, p)), FormatDuration(Number(At(b, p)))});
    row.push_back(Dur(b, p, 1));
  }
  row.push_back(Dur(b, "/total_ns", 1));
  row.push_back(Dur(b, "/gpu_busy_ns", 1));
  out += report::StackedBar(stack);
  out += Table({"input", "compute", "communication", "idle", "total", "GPU busy"}, {row});
  for (const Json& r : Member(b, "recommendations")) out += Paragraph(r.value("text", ""), "warn");
  return out;
}

std::string GpuBody(const CommandRun& gpu, const CommandRun& idle, size_t top) {
  std::string out;
  if (gpu.doc.is_null()) {
    out += Failed(gpu);
  } else {
    std::vector<std::vector<Cell>> rows;
    const Json& d = gpu.doc;
    const Json& list = Member(d, "gpus");
    for (size_t i = 0; i < list.size(); ++i) {
      const std::string p = Idx("/gpus", i);
      rows.push_back({Cnt(d, p + "/rank"), Str(d, p + "/device"), Dur(d, p + "/span_ns"), Dur(d, p + "/busy_ns"),
                      Dur(d, p + "/idle_ns"), Dur(d, p + "/compute_ns"), Dur(d, p + "/communication_ns"),
                      Dur(d, p + "/memory_ns"), Dur(d, p + "/compute_communication_overlap_ns")});
    }
    if (rows.empty()) out += Paragraph("No GPU work in these traces.", "note");
    else out += Table({"rank", "GPU", "span", "busy", "idle", "compute", "communication", "memory", "overlap"}, rows);
  }
  if (idle.doc.is_null()) return out + H3("Why the GPUs are idle") + Failed(idle);
  const Json& d = idle.doc;
  if (Member(d, "gpus").empty()) return out;  // no GPU work: no idle time to explain
  out += H3("Why the GPUs are idle");
  std::vector<std::vector<Cell>> causes;
  std::vector<report::Bar> bars;
  for (const auto& [cause, stats] : Member(d, "totals").items()) {
    const std::string p = "/totals/" + cause;
    causes.push_back({report::Text(cause), Cnt(d, p + "/count", 1), Dur(d, p + "/total_ns", 1),
                      Dur(d, p + "/p50_ns", 1), Dur(d, p + "/p95_ns", 1), Dur(d, p + "/max_ns", 1)});
    bars.push_back({cause, Number(At(stats, "/total_ns")), FormatDuration(Number(At(stats, "/total_ns")))});
  }
  if (!bars.empty()) out += report::BarChart(bars);
  out += Table({"cause", "gaps", "total", "p50", "p95", "max"}, causes);
  std::vector<std::vector<Cell>> gaps;
  const Json& list = Member(d, "largest_gaps");
  for (size_t i = 0; i < list.size() && i < top; ++i) {
    const std::string p = Idx("/largest_gaps", i);
    gaps.push_back({Cnt(d, p + "/rank", 1), Str(d, p + "/device"), Str(d, p + "/stream"), Dur(d, p + "/begin_ns", 1),
                    Dur(d, p + "/length_ns", 1), Str(d, p + "/cause"), Str(d, p + "/after"), Str(d, p + "/before")});
  }
  if (!gaps.empty()) out += H3("Largest gaps") + Table({"rank", "GPU", "stream", "at", "length", "cause", "after", "before"}, gaps);
  return out;
}

std::string OpsBody(const CommandRun& ops, const CommandRun& kernels, size_t top) {
  std::string out;
  if (ops.doc.is_null()) {
    out += Failed(ops);
  } else {
    const Json& d = ops.doc;
    std::vector<std::vector<Cell>> rows;
    std::vector<report::Bar> bars;
    const Json& list = Member(d, "by_op_type");
    for (size_t i = 0; i < list.size() && i < top; ++i) {
      const std::string p = Idx("/by_op_type", i);
      bars.push_back({list[i].value("name", ""), Number(At(list[i], "/total_ns")),
                      FormatDuration(Number(At(list[i], "/total_ns"))) + " (" + FormatPercent(Number(At(list[i], "/share"))) + ")"});
      rows.push_back({Str(d, p + "/name"), Str(d, p + "/where"), Cnt(d, p + "/count"), Dur(d, p + "/total_ns"),
                      Dur(d, p + "/self_ns"), Dur(d, p + "/mean_ns"), Dur(d, p + "/p95_ns"), Pct(d, p + "/share")});
    }
    out += H3("Top op types (of " + std::to_string(list.size()) + ")") + report::BarChart(bars) +
           Table({"op type", "where", "count", "total", "self", "mean", "p95", "share"}, rows);
  }
  if (kernels.doc.is_null()) return out + Failed(kernels);
  const Json& d = kernels.doc;
  const Json& list = Member(d, "kernels");
  if (list.empty()) return out + Paragraph("No GPU kernels in these traces.", "note");
  std::vector<std::vector<Cell>> rows;
  for (size_t i = 0; i < list.size() && i < top; ++i) {
    const std::string p = Idx("/kernels", i);
    rows.push_back({Str(d, p + "/name"), Str(d, p + "/op_type"), Cnt(d, p + "/launches", 1), Dur(d, p + "/total_ns", 1),
                    Dur(d, p + "/mean_ns", 1), Pct(d, p + "/share", 1)});
  }
  return out + H3("Top kernels (of " + std::to_string(list.size()) + ", " + AsCount(At(d, "/launches")) + " launches)") +
         Table({"kernel", "op type", "launches", "total", "mean", "share"}, rows);
}

std::string MemoryBody(const CommandRun& memory, size_t top) {
  if (memory.doc.is_null()) return Failed(memory);
  const Json& d = memory.doc;
  const Json& list = Member(d, "allocators");
  if (list.empty()) return Paragraph("No allocator records, memory events or tensor outputs in these traces.", "note");
  std::string out;
  const int64_t span = At(d, "/span_ns").is_number() ? At(d, "/span_ns").get<int64_t>() : 0;
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string p = Idx("/allocators", i);
    out += H3(list[i].value("allocator", "") + " (" + list[i].value("device", "") + ")");
    out += Table({"peak", "at", "live tensors", "requested", "fragmentation", "unattributed", "temporary"},
                 {{Byt(d, p + "/peak_bytes"), Dur(d, p + "/peak_at_ns"), Cnt(d, p + "/live_tensors"),
                   Byt(d, p + "/live_requested_bytes"), Pct(d, p + "/fragmentation"), Byt(d, p + "/unattributed_bytes"),
                   Byt(d, p + "/temp_bytes")}});
    std::vector<std::pair<int64_t, int64_t>> curve;
    for (const Json& point : Member(list[i], "curve")) {
      if (point.is_array() && point.size() == 2) curve.emplace_back(point[0].get<int64_t>(), point[1].get<int64_t>());
    }
    out += report::MemoryCurve(curve, span);
    std::vector<std::vector<Cell>> rows;
    const Json& live = Member(list[i], "largest_live_tensors");
    for (size_t t = 0; t < live.size() && t < top; ++t) {
      const std::string q = Idx(p + "/largest_live_tensors", t);
      rows.push_back({Byt(d, q + "/bytes"), Str(d, q + "/name"), Str(d, q + "/producer_op"),
                      live[t].value("allocated_in_step", false) ? Dur(d, q + "/alloc_ns") : report::Text("before step"),
                      live[t].contains("free_ns") ? Dur(d, q + "/free_ns") : report::Text("end")});
    }
    if (!rows.empty()) out += Table({"bytes", "tensor live at the peak", "producer op", "from", "until"}, rows);
  }
  return out;
}

std::string CriticalPathBody(const CommandRun& path, size_t top) {
  if (path.doc.is_null()) return Failed(path);
  const Json& d = path.doc;
  const Json& steps = Member(d, "traces");
  if (steps.empty()) return Paragraph("No step to follow.", "note");
  // How many steps each kind bound, then one row per step (the first `top` x 4), then the op types
  // on the path of the first step.
  std::map<std::string, size_t> tally;
  for (const Json& step : steps) ++tally[step.value("bound_by", "?")];
  std::string verdict;
  for (const auto& [kind, count] : tally) {
    verdict += (verdict.empty() ? "" : ", ") + kind + " in " + std::to_string(count) + " of " + std::to_string(steps.size());
  }
  std::string out = Paragraph("Bound by " + verdict + (steps.size() == 1 ? " step." : " steps."));
  std::vector<std::string> header = {"source", "length", "busy", "wait", "bound by"};
  for (const auto& [kind, ns] : Member(steps[0], "bound_ns").items()) header.push_back(kind);
  std::vector<std::vector<Cell>> rows;
  for (size_t i = 0; i < steps.size() && i < 4 * top; ++i) {
    const std::string p = Idx("/traces", i);
    std::vector<Cell> row = {Str(d, p + "/source"), Dur(d, p + "/length_ns"), Dur(d, p + "/busy_ns"),
                             Dur(d, p + "/wait_ns"), Str(d, p + "/bound_by")};
    for (size_t k = 5; k < header.size(); ++k) row.push_back(Dur(d, p + "/bound_ns/" + header[k]));
    rows.push_back(std::move(row));
  }
  std::vector<report::Bar> bars;
  for (const auto& [kind, ns] : Member(steps[0], "bound_ns").items()) bars.push_back({kind, Number(ns), FormatDuration(Number(ns))});
  if (steps.size() == 1) out += report::BarChart(bars);
  out += Table(header, rows);
  if (steps.size() > rows.size()) out += Paragraph(std::to_string(steps.size() - rows.size()) + " more steps", "note");
  std::vector<std::vector<Cell>> ops;
  const Json& list = Member(steps[0], "by_op_type");
  for (size_t k = 0; k < list.size() && k < top; ++k) {
    const std::string q = Idx("/traces/0/by_op_type", k);
    ops.push_back({Str(d, q + "/op_type"), Cnt(d, q + "/count"), Dur(d, q + "/total_ns"), Pct(d, q + "/share")});
  }
  if (!ops.empty()) out += H3("On the path of the first step") + Table({"op type", "count", "time", "share"}, ops);
  return out;
}

std::string StragglersBody(const CommandRun& stragglers, size_t top) {
  if (stragglers.doc.is_null()) return Failed(stragglers);
  const Json& d = stragglers.doc;
  std::vector<std::vector<Cell>> rows;
  const Json& list = Member(d, "steps");
  for (size_t i = 0; i < list.size() && i < top; ++i) {
    const std::string p = Idx("/steps", i);
    rows.push_back({Cnt(d, p + "/step"), Cnt(d, p + "/ranks"), Cnt(d, p + "/straggler"), Dur(d, p + "/lateness_ns"),
                    Dur(d, p + "/lateness_vs_median_ns"), Str(d, p + "/reason"), Dur(d, p + "/others_waited_ns")});
  }
  return Table({"step", "ranks", "straggler", "late by", "vs median", "reason", "others waited"}, rows);
}

std::string DiffBody(const CommandRun& diff, size_t top) {
  if (diff.doc.is_null()) return Failed(diff);
  const Json& d = diff.doc;
  std::string out;
  if (d.value("schema", "") == "stepscope.diff/1") {
    out += Paragraph("One step on each side: deltas only, no confidence can be given.", "note");
    out += Table({"span A", "span B", "op time A", "op time B"},
                 {{Dur(d, "/span_a_ns"), Dur(d, "/span_b_ns"), Dur(d, "/total_a_ns"), Dur(d, "/total_b_ns")}});
    std::vector<std::vector<Cell>> rows;
    const Json& list = Member(d, "by_op_type");
    for (size_t i = 0; i < list.size() && i < top; ++i) {
      const std::string p = Idx("/by_op_type", i);
      rows.push_back({Str(d, p + "/name"), Str(d, p + "/presence"), Cnt(d, p + "/count_a"), Cnt(d, p + "/count_b"),
                      Dur(d, p + "/total_a_ns"), Dur(d, p + "/total_b_ns"), Dur(d, p + "/delta_ns")});
    }
    return out + Table({"op type", "presence", "count A", "count B", "A", "B", "delta"}, rows);
  }
  const Json& gate = Member(d, "gate");
  if (At(gate, "/enabled") == true) {
    const bool failed = At(gate, "/failed") == true;
    const std::string gate_text = std::string("Regression gate (") + FormatFixed(Number(At(gate, "/pct")), 1) + "%, " +
                                  FormatFixed(Number(At(gate, "/min_ms")), 3) + " ms): ";
    if (!d.value("confident", false)) {
      // diff passes a gate it cannot apply; the page says which it is.
      out += Paragraph(gate_text + "cannot fail with this few steps (nothing can be shown with confidence)", "warn");
    } else {
      out += Paragraph(gate_text + (failed ? "FAILED" : "passed"), failed ? "bad" : "ok");
    }
  } else {
    out += Paragraph("No regression gate asked (--fail-on-regression PCT[,MIN_MS]).", "note");
  }
  out += Paragraph(std::string(d.value("confident", false) ? "Enough steps for a change to be shown with confidence"
                                                            : "Too few steps for any change to be shown with confidence") +
                       " (steps: " + AsCount(At(d, "/a/steps")) + " in A, " + AsCount(At(d, "/b/steps")) + " in B; " +
                       TextAt(d, "/method/test") + ", q by " + TextAt(d, "/method/correction") + ").",
                   d.value("confident", false) ? "" : "warn");
  auto row = [&](const std::string& p) -> std::vector<Cell> {
    return {Str(d, p + "/name"), Str(d, p + "/verdict"), Dur(d, p + "/median_a_ns"), Dur(d, p + "/median_b_ns"),
            Dur(d, p + "/delta_ns"), Pct(d, p + "/change"), Dur(d, p + "/ci_low_ns"), Dur(d, p + "/ci_high_ns"),
            Fig(d, p + "/q", AsFixed3)};
  };
  const std::vector<std::string> header = {"", "verdict", "median A", "median B", "delta", "change", "CI low", "CI high", "q"};
  out += Table(header, {row("/step")});
  for (const char* table : {"by_op_type", "by_kernel"}) {
    std::vector<std::vector<Cell>> rows;
    const Json& list = d.value(table, Json::array());
    for (size_t i = 0; i < list.size() && i < top; ++i) rows.push_back(row(Idx(std::string("/") + table, i)));
    if (!rows.empty()) out += H3(table == std::string("by_op_type") ? "Op types" : "Kernels") + Table(header, rows);
  }
  std::vector<std::vector<Cell>> hits;
  const Json& list = Member(gate, "regressions");
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string p = Idx("/gate/regressions", i);
    hits.push_back({Str(d, p + "/table"), Str(d, p + "/name"), Pct(d, p + "/change"), Dur(d, p + "/delta_ns"),
                    Fig(d, p + "/q", AsFixed3)});
  }
  if (!hits.empty()) out += H3("Regressions over the gate") + Table({"table", "name", "change", "delta", "q"}, hits);
  return out;
}

std::string ImportBody(const std::vector<CommandRun>& summaries, const std::vector<const CommandRun*>& all) {
  std::vector<std::vector<Cell>> rows;
  for (size_t c = 0; c < summaries.size(); ++c) {
    const Json& doc = summaries[c].doc;
    const bool many = doc.is_array();
    for (size_t i = 0; i < (many ? doc.size() : doc.is_null() ? 0 : 1); ++i) {
      const std::string p = many ? "/" + std::to_string(i) : "";
      const Json& d = many ? doc[i] : doc;
      for (const auto& [name, count] : Member(d, "import").items()) {
        rows.push_back({report::Text(d.value("source", "")), report::Text(name), Cnt(doc, p + "/import/" + name, c)});
      }
    }
  }
  std::string out = rows.empty() ? Paragraph("Nothing repaired or skipped on import.", "ok")
                                 : Table({"file", "repaired or skipped", "count"}, rows);
  // Each line once: several commands say the same of the same input (a truncation, a note).
  std::string notes;
  std::set<std::string> seen;
  for (const CommandRun* run : all) {
    if (run->code != 0) continue;
    size_t begin = 0;
    while (begin < run->err.size()) {
      size_t end = run->err.find('\n', begin);
      if (end == std::string::npos) end = run->err.size();
      const std::string line = run->err.substr(begin, end - begin);
      if (!line.empty() && seen.insert(line).second) notes += Paragraph(line, "warn");
      begin = end + 1;
    }
  }
  if (!notes.empty()) out += H3("What the commands noted") + notes;
  return out;
}

std::string EfficiencyBody(const CommandRun& efficiency, size_t top) {
  if (efficiency.doc.is_null()) return Failed(efficiency);
  const Json& d = efficiency.doc;
  std::string out = Table({"device", "peak", "memory bandwidth", "precision", "where the peak comes from"},
                          {{Str(d, "/peak/device"), Fig(d, "/peak/flops_per_s", AsFlopRate),
                            Fig(d, "/peak/bytes_per_s", AsByteRate), Str(d, "/peak/precision"), Str(d, "/peak/source")}});
  if (!TextAt(d, "/peak/precision_source").empty()) out += Paragraph("Precision: " + TextAt(d, "/peak/precision_source"), "note");
  for (const Json& note : Member(d, "notes")) out += Paragraph(note.is_string() ? note.get<std::string>() : note.dump(), "warn");
  out += Table({"steps", "time", "model FLOPs", "every FLOP", "model FLOP/s", "MFU", "HFU", "ops costed"},
               {{Cnt(d, "/total/steps"), Dur(d, "/total/duration_ns"), Fig(d, "/total/model_flops", AsFlops),
                 Fig(d, "/total/flops", AsFlops), Fig(d, "/total/model_flops_per_s", AsFlopRate), Pct(d, "/total/mfu"),
                 Pct(d, "/total/hfu"), report::Text(AsCount(At(d, "/ops_costed")) + " of " + AsCount(At(d, "/ops_seen")))}});
  std::vector<std::vector<Cell>> steps;
  const Json& list = Member(d, "steps");
  for (size_t i = 0; i < list.size() && i < 4 * top; ++i) {
    const std::string p = Idx("/steps", i);
    steps.push_back({Cnt(d, p + "/rank"), Cnt(d, p + "/step"), Str(d, p + "/marker"), Dur(d, p + "/duration_ns"),
                     Fig(d, p + "/model_flops", AsFlops), Pct(d, p + "/mfu"), Pct(d, p + "/hfu")});
  }
  if (!steps.empty()) out += H3("MFU per step") + Table({"rank", "step", "marker", "duration", "model FLOPs", "MFU", "HFU"}, steps);
  if (list.size() > steps.size()) out += Paragraph(std::to_string(list.size() - steps.size()) + " more steps", "note");
  // The ops by time, longest first, whatever order the document keeps them in.
  const Json& ops = Member(d, "ops");
  std::vector<size_t> order(ops.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return Number(At(ops[a], "/time_ns")) > Number(At(ops[b], "/time_ns"));
  });
  std::vector<std::vector<Cell>> rows;
  for (size_t k = 0; k < order.size() && k < top; ++k) {
    const std::string p = Idx("/ops", order[k]);
    rows.push_back({Str(d, p + "/op_type"), Cnt(d, p + "/count"), Dur(d, p + "/time_ns"), Fig(d, p + "/flops", AsFlops),
                    Byt(d, p + "/bytes"), Fig(d, p + "/flops_per_s", AsFlopRate), Fig(d, p + "/bytes_per_s", AsByteRate),
                    Fig(d, p + "/intensity", AsFixed1), Str(d, p + "/bound"), Pct(d, p + "/share_of_peak")});
  }
  if (!rows.empty()) {
    out += H3("Top ops by time (of " + std::to_string(ops.size()) + ")") +
           Table({"op type", "count", "time", "FLOPs", "bytes", "FLOP/s", "B/s", "FLOP/B", "bound", "of the roof"}, rows);
  }
  std::vector<std::vector<Cell>> unknown;
  const Json& missing = Member(d, "unknown_ops");
  for (size_t i = 0; i < missing.size() && i < top; ++i) {
    const std::string p = Idx("/unknown_ops", i);
    unknown.push_back({Str(d, p + "/op_type"), Cnt(d, p + "/count"), Dur(d, p + "/time_ns"), Str(d, p + "/reason")});
  }
  if (!unknown.empty()) {
    out += H3("Ops without a cost (" + std::to_string(missing.size()) + " op types)") +
           Table({"op type", "count", "time", "why"}, unknown);
  }
  return out;
}

std::string CollectivesBody(const CommandRun& collectives, size_t top) {
  if (collectives.doc.is_null()) return Failed(collectives);
  const Json& d = collectives.doc;
  if (Number(At(d, "/totals/calls")) == 0) return Paragraph("No collective in these traces.", "note");
  std::string out = Table({"calls", "with a size", "bytes", "time", "exposed", "link peak", "where the peak comes from"},
                          {{Cnt(d, "/totals/calls"), Cnt(d, "/totals/sized_calls"), Byt(d, "/totals/bytes"),
                            Dur(d, "/totals/time_ns"), Dur(d, "/totals/exposed_ns"),
                            Fig(d, "/link_peak/bytes_per_s", AsByteRate), Str(d, "/link_peak/source")}});
  std::vector<std::vector<Cell>> rows;
  const Json& list = Member(d, "collectives");
  for (size_t i = 0; i < list.size() && i < top; ++i) {
    const std::string p = Idx("/collectives", i);
    rows.push_back({Cnt(d, p + "/rank"), Str(d, p + "/device"), Str(d, p + "/name"), Str(d, p + "/algorithm"),
                    Str(d, p + "/dtype"), Cnt(d, p + "/group_size"), Byt(d, p + "/bytes"), Cnt(d, p + "/count"),
                    Dur(d, p + "/time_ns"), Dur(d, p + "/exposed_ns"), Fig(d, p + "/algbw_bytes_per_s", AsByteRate),
                    Fig(d, p + "/busbw_bytes_per_s", AsByteRate), Pct(d, p + "/busbw_share_of_peak")});
  }
  out += Table({"rank", "device", "collective", "algorithm", "dtype", "n", "size", "count", "time", "exposed", "algbw",
                "busbw", "of the link"},
               rows);
  if (list.size() > rows.size()) out += Paragraph(std::to_string(list.size() - rows.size()) + " more rows", "note");
  for (const Json& note : Member(d, "notes")) out += Paragraph(note.is_string() ? note.get<std::string>() : note.dump(), "note");
  return out;
}

}  // namespace stepscope::cli
