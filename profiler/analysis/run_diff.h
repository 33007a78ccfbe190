// Comparing two runs step by step: each side is a set of steps (analysis/steps.h); per op type,
// node and kernel, the per-step totals of each side (0 in a step without it), the change of the
// median with a seeded bootstrap confidence interval (runs resampled, then their steps: see
// BootstrapMedianDeltaGrouped), a two-sided p-value, Benjamini-Hochberg adjusted p-values over
// the rows of each table, and a verdict. The p-value tests the runs when each side has at least
// kMinRunsForRunTest of them: Welch's t-test on the logs of the runs' medians (RunTestP in
// run_diff.cc says why the logs), since the steps of one process
// share its conditions and a test that takes them for independent draws reads a slower run as a
// change (an A/A of 4 runs a side flagged up to 15% of its rows so). With fewer runs it is
// Mann-Whitney over the steps, and a difference between whole runs cannot be told from a change.
//   regressed / improved  q < alpha, the interval excludes 0, and the median moved by at least
//                         min_change of side A's median (slower / faster);
//   new / gone            in no step of A / of B;
//   unchanged             otherwise, when the whole interval lies within +-tolerance of side A's
//                         median: any change there is, is smaller than the tolerance (practical
//                         equivalence, as a two one-sided test with that margin reads it);
//   inconclusive          anything else: neither a change nor its absence is shown.
// A large change with a wide interval and q >= alpha is inconclusive, never unchanged.
// Rows are sorted by impact on the step: |median(B) - median(A)| per step, descending.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "profiler/analysis/statistics.h"
#include "profiler/analysis/steps.h"

namespace stepscope::analysis {

constexpr size_t kMinRunsForRunTest = 3;

struct RunDiffOptions {
  BootstrapOptions bootstrap;  // 2000 resamples, 95%, seed 1
  double alpha = 0.05;         // on the Benjamini-Hochberg adjusted p-value
  double min_change = 0.02;    // a verdict needs |change| >= this share of A's median
  double tolerance = 0.05;     // "unchanged" needs the interval within +-this share of A's median
};

struct RunDiffRow {
  std::string name, op_type, where;
  std::vector<int64_t> a, b;     // per-step totals, in step order
  Spread spread_a, spread_b;     // of those totals
  int64_t present_a = 0, present_b = 0;  // steps where it ran
  double median_a = 0, median_b = 0;
  double delta_ns = 0;           // median_b - median_a
  double change = 0;             // delta / median_a (0 when A's median is 0)
  double ci_low_ns = 0, ci_high_ns = 0;
  double p = 1, q = 1;           // two-sided (RunDiff::per_run says which test), and BH-adjusted
  bool exact = false;            // Mann-Whitney's p from the exact distribution
  std::string verdict;           // regressed, improved, unchanged, inconclusive, new, gone
};

struct RunDiff {
  size_t steps_a = 0, steps_b = 0;
  size_t runs_a = 0, runs_b = 0;  // distinct Step::run
  std::vector<std::string> sources_a, sources_b;  // distinct files, in step order
  RunDiffRow step;               // the step durations ("step" row, not in any table)
  std::vector<RunDiffRow> by_op_type, by_node, by_kernel;
  bool per_run = false;          // p from Welch's t on log run medians, else Mann-Whitney over steps
  double min_p = 1;              // the smallest p-value these sample sizes allow (0 per run)
  bool confident = false;        // min_p < alpha: a change can be shown at all
  RunDiffOptions options;
};

RunDiff DiffRuns(const std::vector<Step>& a, const std::vector<Step>& b, const RunDiffOptions& options = {});

// The regression gate: rows (any table) that regressed with confidence by more than
// `min_change_pct` percent and `min_delta_ns` of median per-step time.
struct GateHit {
  std::string table;
  const RunDiffRow* row = nullptr;
};
std::vector<GateHit> RegressionGate(const RunDiff& diff, double min_change_pct, double min_delta_ns);

}  // namespace stepscope::analysis
