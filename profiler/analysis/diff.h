// Differences between two traces (two runs, two configs, two steps): per op type and per node,
// count and time deltas, sorted by impact (absolute time delta). Rows present on one side only
// are kept and marked, so runs of different configurations compare too.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "profiler/trace/trace.h"

namespace stepscope::analysis {

struct DiffRow {
  std::string name, op_type, where;  // where: "host" or "device"
  int64_t count_a = 0, count_b = 0, total_a = 0, total_b = 0;
  int64_t delta_ns = 0, delta_count = 0;  // b - a
  double ratio = 0;     // total_b / total_a (0 when a has none)
  std::string presence; // "both", "only_a", "only_b"
};

struct TraceDiff {
  std::vector<DiffRow> by_op_type, by_node;  // by |delta_ns| descending, then name
  int64_t span_a = 0, span_b = 0;
  int64_t total_a = 0, total_b = 0;          // summed op time
};

TraceDiff DiffTraces(const trace::Trace& a, const trace::Trace& b);

}  // namespace stepscope::analysis
