// The data behind the comparison of two runs (comparison.h): both sides loaded and diffed, a
// step opened as a document of its own, each slice's tint from its op's change.
#include "viewer/compare/comparison.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "profiler/analysis/merge.h"
#include "profiler/analysis/op_stats.h"
#include "profiler/formats/inputs.h"
#include "profiler/formats/reader.h"

namespace stepscope::viewer {
namespace {

// The steps of the traces `paths` name (files, globs, directories), read one at a time.
StatusOr<std::vector<analysis::Step>> StepsOf(const std::vector<std::string>& paths) {
  analysis::StepCollector collector;
  RETURN_IF_ERROR(trace::ForEachTrace(paths, [&](trace::Trace trace) { return collector.Add(std::move(trace)); }));
  return std::move(collector).Finish();
}

// The key of a slice in one table: nothing when the slice is no op of the diff or belongs to
// another table (kernels are only in the kernel table, everything else only in the others).
std::optional<std::pair<std::string, std::string>> KeyOf(const trace::Trace& trace, uint32_t index, DiffTable table) {
  const trace::Slice& s = trace.slices()[index];
  if (s.duplicate() || trace::IsAnnotationOrSync(s.kind)) return std::nullopt;
  const bool kernel = s.kind == trace::SliceKind::kKernel;
  if ((table == DiffTable::kKernel) != kernel) return std::nullopt;
  std::string where = analysis::WhereOfTrack(trace, s.track);
  const std::string_view name = trace.str(trace.slice_name(s));
  switch (table) {
    case DiffTable::kKernel: return std::make_pair(analysis::NormalizeKernelName(name), std::move(where));
    case DiffTable::kNode: return std::make_pair(std::string(name), std::move(where));
    case DiffTable::kOpType: return std::make_pair(std::string(trace.str(trace.slice_op_type(s))), std::move(where));
  }
  return std::nullopt;
}

uint32_t Mix(uint32_t from, uint32_t to, double t) {
  t = std::clamp(t, 0.0, 1.0);
  uint32_t out = 0;
  for (int shift : {16, 8, 0}) {
    const double a = (from >> shift) & 0xff, b = (to >> shift) & 0xff;
    out |= static_cast<uint32_t>(std::lround(a + (b - a) * t)) << shift;
  }
  return out;
}

}  // namespace

StatusOr<std::shared_ptr<const Comparison>> LoadComparison(const std::vector<std::string>& paths_a,
                                                           const std::vector<std::string>& paths_b,
                                                           const analysis::RunDiffOptions& options) {
  if (paths_a.empty()) return InvalidInput("nothing to compare: side A is empty");
  if (paths_b.empty()) return InvalidInput("nothing to compare with: side B (after --vs) is empty");
  auto comparison = std::make_shared<Comparison>();
  comparison->paths_a = paths_a;
  comparison->paths_b = paths_b;
  auto a = StepsOf(paths_a);
  if (!a.ok()) return Status(a.status().code(), "side A: " + a.status().message());
  auto b = StepsOf(paths_b);
  if (!b.ok()) return Status(b.status().code(), "side B: " + b.status().message());
  comparison->steps_a = std::move(a).value();
  comparison->steps_b = std::move(b).value();
  comparison->diff = analysis::DiffRuns(comparison->steps_a, comparison->steps_b, options);
  return std::shared_ptr<const Comparison>(std::move(comparison));
}

StatusOr<StepDocument> OpenStepDocument(const analysis::Step& step) {
  // A merged step's source lists its ranks' files.
  std::vector<std::string> files;
  for (size_t begin = 0; begin <= step.source.size();) {
    size_t end = step.source.find(", ", begin);
    if (end == std::string::npos) end = step.source.size();
    files.push_back(step.source.substr(begin, end - begin));
    begin = end + 2;
  }
  StepDocument out;
  if (files.size() == 1) {
    ASSIGN_OR_RETURN(out.document, OpenDocument(files.front()));
  } else {
    ASSIGN_OR_RETURN(std::vector<trace::Trace> traces, trace::ReadTraces(files));
    analysis::MergeResult merged = analysis::MergeTraces(std::move(traces), analysis::AlignMethod::kBarrier);
    ASSIGN_OR_RETURN(out.document, MakeDocument(std::move(merged.trace), step.source));
  }
  // The window in this document's time: the same step found again (same marker and number).
  out.begin_ns = step.begin_ns;
  out.end_ns = step.end_ns;
  for (const analysis::Step& found : analysis::StepsOfTrace(out.document->trace(), /*with_totals=*/false)) {
    if (found.marker == "trace" || found.marker == step.marker) {
      if (found.marker != "trace" && found.step != step.step) continue;
      out.begin_ns = found.begin_ns;
      out.end_ns = found.end_ns;
      break;
    }
  }
  return out;
}

const std::vector<analysis::RunDiffRow>& RowsOf(const analysis::RunDiff& diff, DiffTable table) {
  switch (table) {
    case DiffTable::kOpType: return diff.by_op_type;
    case DiffTable::kNode: return diff.by_node;
    case DiffTable::kKernel: return diff.by_kernel;
  }
  return diff.by_op_type;
}

const char* DiffTableName(DiffTable table) {
  switch (table) {
    case DiffTable::kOpType: return "op type";
    case DiffTable::kNode: return "node";
    case DiffTable::kKernel: return "kernel";
  }
  return "";
}

uint32_t VerdictColor(const analysis::RunDiffRow& row) {
  // The change from the smallest a verdict needs (2%) to a doubling spans pale to full.
  const double strength = std::log1p(std::fabs(row.change) * 10) / std::log1p(10.0);
  if (row.verdict == "regressed") return Mix(0xf2b8b5, 0xc62828, strength);
  if (row.verdict == "improved") return Mix(0xb9e4bd, 0x2e7d32, strength);
  if (row.verdict == "new") return 0x3f7fd6;
  if (row.verdict == "gone") return 0xef8f1c;
  if (row.verdict == "inconclusive") return 0xe4e4e4;  // paler: no answer either way
  return 0xbdbdbd;  // unchanged
}

DiffRowFinder::DiffRowFinder(const analysis::RunDiff& diff, TintLevel level) : diff_(&diff), level_(level) {
  auto index = [](const std::vector<analysis::RunDiffRow>& rows, std::map<Key, size_t>& into) {
    for (size_t i = 0; i < rows.size(); ++i) into.emplace(Key{rows[i].name, rows[i].where}, i);
  };
  index(diff.by_op_type, op_types_);
  index(diff.by_node, nodes_);
  index(diff.by_kernel, kernels_);
}

std::optional<DiffRowFinder::Match> DiffRowFinder::Find(const trace::Trace& trace, uint32_t slice) const {
  const bool kernel = trace.slices()[slice].kind == trace::SliceKind::kKernel;
  const DiffTable table = kernel ? DiffTable::kKernel : level_ == TintLevel::kNode ? DiffTable::kNode : DiffTable::kOpType;
  const auto key = KeyOf(trace, slice, table);
  if (!key) return std::nullopt;
  const std::map<Key, size_t>& rows = table == DiffTable::kKernel ? kernels_ : table == DiffTable::kNode ? nodes_ : op_types_;
  const auto it = rows.find(*key);
  if (it == rows.end()) return std::nullopt;
  return Match{table, it->second};
}

std::vector<uint32_t> SliceTints(const TraceDocument& document, const analysis::RunDiff& diff, TintLevel level) {
  const trace::Trace& trace = document.trace();
  const DiffRowFinder finder(diff, level);
  std::vector<uint32_t> colors(trace.slices().size(), kNotComparedColor);
  // Names repeat (every step runs the same ops): look each (label: name and op type, kind, track)
  // up once.
  std::map<std::tuple<trace::LabelId, trace::SliceKind, uint32_t>, uint32_t> seen;
  for (uint32_t i = 0; i < colors.size(); ++i) {
    const trace::Slice& s = trace.slices()[i];
    if (s.duplicate()) continue;
    const auto key = std::make_tuple(s.label, s.kind, static_cast<uint32_t>(s.track));
    auto it = seen.find(key);
    if (it == seen.end()) {
      const auto match = finder.Find(trace, i);
      it = seen.emplace(key, match ? VerdictColor(RowsOf(diff, match->table)[match->row]) : kNotComparedColor).first;
    }
    colors[i] = it->second;
  }
  return colors;
}

std::vector<uint32_t> SlicesOfRow(const trace::Trace& trace, const analysis::RunDiff& diff, DiffTable table,
                                  size_t row, int64_t begin_ns, int64_t end_ns) {
  const std::vector<analysis::RunDiffRow>& rows = RowsOf(diff, table);
  std::vector<uint32_t> out;
  if (row >= rows.size()) return out;
  const std::pair<std::string, std::string> wanted{rows[row].name, rows[row].where};
  for (uint32_t i = 0; i < trace.slices().size(); ++i) {
    const trace::Slice& s = trace.slices()[i];
    if (s.end_ns() <= begin_ns || s.start_ns >= end_ns) continue;
    const auto key = KeyOf(trace, i, table);
    if (key && *key == wanted) out.push_back(i);
  }
  std::stable_sort(out.begin(), out.end(),
                   [&](uint32_t x, uint32_t y) { return trace.slices()[x].dur_ns > trace.slices()[y].dur_ns; });
  return out;
}

}  // namespace stepscope::viewer
