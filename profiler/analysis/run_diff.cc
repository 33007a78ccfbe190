// Two runs compared step by step (run_diff.h): per-step totals, bootstrap intervals.
#include "profiler/analysis/run_diff.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace stepscope::analysis {

namespace {

using Extract = const std::vector<StepOpTotal>& (*)(const Step&);

uint64_t Fnv1a(const std::string& text) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

std::vector<double> AsDouble(const std::vector<int64_t>& values) {
  return std::vector<double>(values.begin(), values.end());
}

// The p-value over runs: Welch's t on the runs' medians. Timing noise between runs is a factor (a
// run on a busier machine has every op slower by a share; an op that shares its core in some runs
// takes twice as long in them) and a verdict is on a relative change, so the medians are compared
// on a log scale, unless one is 0 (an op absent from most steps of a run): then as they are.
double RunTestP(std::vector<double> a, std::vector<double> b) {
  auto positive = [](const std::vector<double>& v) { return std::all_of(v.begin(), v.end(), [](double x) { return x > 0; }); };
  if (positive(a) && positive(b)) {
    for (std::vector<double>* side : {&a, &b}) {
      for (double& v : *side) v = std::log(v);
    }
  }
  return WelchTTest(a, b).p;
}

void Compare(RunDiffRow& row, const std::vector<size_t>& runs_a, const std::vector<size_t>& runs_b, bool per_run,
             const RunDiffOptions& options) {
  const std::vector<double> a = AsDouble(row.a), b = AsDouble(row.b);
  row.spread_a = Describe(a);
  row.spread_b = Describe(b);
  row.median_a = row.spread_a.median;
  row.median_b = row.spread_b.median;
  row.delta_ns = row.median_b - row.median_a;
  row.change = row.median_a != 0 ? row.delta_ns / row.median_a : 0;
  if (per_run) {
    row.p = RunTestP(GroupMedians(a, runs_a), GroupMedians(b, runs_b));
  } else {
    const MannWhitney test = MannWhitneyU(a, b);
    row.p = test.p;
    row.exact = test.exact;
  }
  BootstrapOptions bootstrap = options.bootstrap;
  bootstrap.seed ^= Fnv1a(row.where + "\t" + row.name);  // each row its own stream, whatever the order
  const BootstrapInterval interval = BootstrapMedianDeltaGrouped(a, runs_a, b, runs_b, bootstrap);
  row.ci_low_ns = interval.low;
  row.ci_high_ns = interval.high;
}

// The verdict of a row present on both sides, from its p-value (q for table rows: corrected for
// the rows compared with it) and its interval; run_diff.h says what each verdict means.
std::string Verdict(const RunDiffRow& r, double p, const RunDiffOptions& options) {
  const double scale = std::fabs(r.median_a);
  if (p < options.alpha && (r.ci_low_ns > 0 || r.ci_high_ns < 0) && r.delta_ns != 0 &&
      std::fabs(r.delta_ns) >= options.min_change * scale) {
    return r.delta_ns > 0 ? "regressed" : "improved";
  }
  const double margin = options.tolerance * scale;
  if (r.ci_low_ns >= -margin && r.ci_high_ns <= margin) return "unchanged";
  return "inconclusive";
}

// The run of each step, numbered in order of appearance.
std::vector<size_t> RunIds(const std::vector<Step>& steps) {
  std::vector<std::string> seen;
  std::vector<size_t> ids;
  for (const Step& s : steps) {
    size_t id = 0;
    while (id < seen.size() && seen[id] != s.run) ++id;
    if (id == seen.size()) seen.push_back(s.run);
    ids.push_back(id);
  }
  return ids;
}

size_t CountRuns(const std::vector<size_t>& ids) {
  return ids.empty() ? 0 : *std::max_element(ids.begin(), ids.end()) + 1;
}

std::vector<RunDiffRow> Table(const std::vector<Step>& a, const std::vector<Step>& b, Extract extract,
                              bool per_run, const RunDiffOptions& options) {
  const std::vector<size_t> runs_a = RunIds(a), runs_b = RunIds(b);
  std::map<std::pair<std::string, std::string>, RunDiffRow> rows;
  std::map<std::pair<std::string, std::string>, std::vector<char>> ran_a, ran_b;
  auto collect = [&](const std::vector<Step>& steps, bool side_b) {
    for (size_t i = 0; i < steps.size(); ++i) {
      for (const StepOpTotal& t : extract(steps[i])) {
        RunDiffRow& row = rows[{t.name, t.where}];
        if (row.name.empty()) {
          row.name = t.name;
          row.op_type = t.op_type;
          row.where = t.where;
        }
        std::vector<int64_t>& values = side_b ? row.b : row.a;
        values.resize(steps.size(), 0);
        values[i] += t.total_ns;
        // A step ran it when it has slices of it, even zero-length ones.
        std::vector<char>& ran = side_b ? ran_b[{t.name, t.where}] : ran_a[{t.name, t.where}];
        ran.resize(steps.size(), 0);
        if (t.count > 0) ran[i] = 1;
      }
    }
  };
  collect(a, false);
  collect(b, true);
  std::vector<RunDiffRow> out;
  out.reserve(rows.size());
  for (auto& [key, row] : rows) {
    row.a.resize(a.size(), 0);
    row.b.resize(b.size(), 0);
    for (char ran : ran_a[key]) row.present_a += ran;
    for (char ran : ran_b[key]) row.present_b += ran;
    Compare(row, runs_a, runs_b, per_run, options);
    out.push_back(std::move(row));
  }
  std::vector<double> p;
  p.reserve(out.size());
  for (const RunDiffRow& r : out) p.push_back(r.p);
  const std::vector<double> q = BenjaminiHochberg(p);
  for (size_t i = 0; i < out.size(); ++i) {
    RunDiffRow& r = out[i];
    r.q = q[i];
    if (r.present_a == 0) {
      r.verdict = "new";
    } else if (r.present_b == 0) {
      r.verdict = "gone";
    } else {
      r.verdict = Verdict(r, r.q, options);
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const RunDiffRow& x, const RunDiffRow& y) {
    const double ax = std::fabs(x.delta_ns), ay = std::fabs(y.delta_ns);
    if (ax != ay) return ax > ay;
    return std::fabs(x.median_a + x.median_b) > std::fabs(y.median_a + y.median_b);
  });
  return out;
}

std::vector<std::string> Sources(const std::vector<Step>& steps) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const Step& s : steps) {
    if (seen.insert(s.source).second) out.push_back(s.source);
  }
  return out;
}

}  // namespace

RunDiff DiffRuns(const std::vector<Step>& a, const std::vector<Step>& b, const RunDiffOptions& options) {
  RunDiff diff;
  diff.options = options;
  diff.steps_a = a.size();
  diff.steps_b = b.size();
  diff.sources_a = Sources(a);
  diff.sources_b = Sources(b);
  diff.runs_a = CountRuns(RunIds(a));
  diff.runs_b = CountRuns(RunIds(b));
  diff.per_run = diff.runs_a >= kMinRunsForRunTest && diff.runs_b >= kMinRunsForRunTest;
  diff.min_p = diff.per_run ? 0 : MannWhitneyMinP(a.size(), b.size());
  diff.confident = diff.min_p < options.alpha;

  diff.step.name = "step";
  diff.step.where = "host";
  for (const Step& s : a) diff.step.a.push_back(s.duration_ns);
  for (const Step& s : b) diff.step.b.push_back(s.duration_ns);
  diff.step.present_a = static_cast<int64_t>(a.size());
  diff.step.present_b = static_cast<int64_t>(b.size());
  Compare(diff.step, RunIds(a), RunIds(b), diff.per_run, options);
  diff.step.q = diff.step.p;  // one row: nothing to correct for
  diff.step.verdict = Verdict(diff.step, diff.step.p, options);

  diff.by_op_type = Table(a, b, [](const Step& s) -> const std::vector<StepOpTotal>& { return s.op_types; },
                       diff.per_run, options);
  diff.by_node = Table(a, b, [](const Step& s) -> const std::vector<StepOpTotal>& { return s.nodes; },
                       diff.per_run, options);
  diff.by_kernel = Table(a, b, [](const Step& s) -> const std::vector<StepOpTotal>& { return s.kernels; },
                       diff.per_run, options);
  return diff;
}

std::vector<GateHit> RegressionGate(const RunDiff& diff, double min_change_pct, double min_delta_ns) {
  std::vector<GateHit> hits;
  auto scan = [&](const std::vector<RunDiffRow>& rows, const char* table) {
    for (const RunDiffRow& r : rows) {
      if (r.verdict != "regressed") continue;
      if (100.0 * r.change <= min_change_pct) continue;
      if (r.delta_ns < min_delta_ns) continue;
      hits.push_back({table, &r});
    }
  };
  scan(diff.by_op_type, "op type");
  scan(diff.by_node, "node");
  scan(diff.by_kernel, "kernel");
  return hits;
}

}  // namespace stepscope::analysis
