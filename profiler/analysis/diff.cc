// Two traces compared per op type and per node (diff.h): counts and time deltas, sorted by impact.
#include "profiler/analysis/diff.h"

#include <algorithm>
#include <cstdlib>
#include <map>

#include "profiler/analysis/op_stats.h"

namespace stepscope::analysis {

namespace {

std::vector<DiffRow> Join(const std::vector<OpStatsRow>& a, const std::vector<OpStatsRow>& b) {
  std::map<std::pair<std::string, std::string>, DiffRow> rows;
  for (const OpStatsRow& r : a) {
    DiffRow& row = rows[{r.name, r.where}];
    row.name = r.name;
    row.op_type = r.op_type;
    row.where = r.where;
    row.count_a = r.count;
    row.total_a = r.total_ns;
  }
  for (const OpStatsRow& r : b) {
    DiffRow& row = rows[{r.name, r.where}];
    row.name = r.name;
    if (row.op_type.empty()) row.op_type = r.op_type;
    row.where = r.where;
    row.count_b = r.count;
    row.total_b = r.total_ns;
  }
  std::vector<DiffRow> out;
  out.reserve(rows.size());
  for (auto& [key, row] : rows) {
    row.delta_ns = row.total_b - row.total_a;
    row.delta_count = row.count_b - row.count_a;
    row.ratio = row.total_a > 0 ? static_cast<double>(row.total_b) / static_cast<double>(row.total_a) : 0;
    row.presence = row.count_a == 0 ? "only_b" : row.count_b == 0 ? "only_a" : "both";
    out.push_back(std::move(row));
  }
  std::stable_sort(out.begin(), out.end(), [](const DiffRow& x, const DiffRow& y) {
    const int64_t ax = std::llabs(x.delta_ns), ay = std::llabs(y.delta_ns);
    if (ax != ay) return ax > ay;
    return std::llabs(x.delta_count) > std::llabs(y.delta_count);
  });
  return out;
}

}  // namespace

TraceDiff DiffTraces(const trace::Trace& a, const trace::Trace& b) {
  const OpStats stats_a = ComputeOpStats(a);
  const OpStats stats_b = ComputeOpStats(b);
  TraceDiff diff;
  diff.by_op_type = Join(stats_a.by_op_type, stats_b.by_op_type);
  diff.by_node = Join(stats_a.by_node, stats_b.by_node);
  diff.span_a = a.span_end_ns() - a.span_begin_ns();
  diff.span_b = b.span_end_ns() - b.span_begin_ns();
  diff.total_a = stats_a.host_total_ns + stats_a.device_total_ns;
  diff.total_b = stats_b.host_total_ns + stats_b.device_total_ns;
  return diff;
}

}  // namespace stepscope::analysis
