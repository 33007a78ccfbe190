// `stepscope stragglers` on a real run: `mpirun -np 3 stepscope-train --devices cpu:1 --profile`
// writes one step trace per rank and profiled step. The command must find every step and rank,
// and its ends and lateness must equal a recount from the raw slices of the files (each rank's
// last non-annotation slice, less its collective wait, recounted from its collectives' times;
// the ranks share a host, so no clock is shifted), and merge's straggler report.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "profiler/formats/inputs.h"
#include "profiler/analysis/merge.h"
#include "profiler/formats/reader.h"
#include "tests/cli/run_stepscope.h"
#include "tests/test_util.h"

namespace stepscope {
namespace {

int RunCommand(const std::string& command) {
  const int status = std::system((command + " > /dev/null 2>&1").c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

struct Recount {
  int64_t begin = INT64_MAX, end = INT64_MIN;  // absolute ns
  int64_t work = 0;
  // Its collectives (the ALLREDUCE records and the sparse gradients' AllGather): first start, last end.
  int64_t comm_begin = INT64_MAX, comm_end = INT64_MIN;
};

TEST(StragglersRunTest, ThreeRanksMatchARecountOfTheRawSlices) {
  const std::string dir = testing::ScratchDir("stragglers_run").string();
  const std::string traces = dir + "/traces";
  std::filesystem::remove_all(traces);
  ASSERT_EQ(RunCommand(std::string(STEPSCOPE_MPIEXEC) + " --oversubscribe --allow-run-as-root -np 3 " +
                       STEPSCOPE_TRAIN_BINARY +
                       " --model lstm --config small --batch_size 4 --steps 5 --warmup_steps 1 --seed 5"
                       " --devices cpu:1 --profile --profile_steps 2-4 --profile_dir " + traces),
            0);

  // The recount: every file's work, by step and rank.
  std::map<int64_t, std::map<int32_t, Recount>> recount;
  size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(traces)) {
    auto trace = trace::ReadTrace(entry.path().string());
    ASSERT_TRUE(trace.ok()) << trace.status().message();
    ++files;
    Recount& r = recount[trace->step_info().step][trace->step_info().rank];
    for (const trace::Slice& s : trace->slices()) {
      if (s.duplicate() || trace::IsAnnotationOrSync(s.kind)) continue;
      r.begin = std::min(r.begin, trace->epoch_ns() + s.start_ns);
      r.end = std::max(r.end, trace->epoch_ns() + s.end_ns());
      ++r.work;
      const std::string_view op = trace->str(trace->slice_op_type(s));
      if (s.kind == trace::SliceKind::kCollective || op == "AllGather") {
        r.comm_begin = std::min(r.comm_begin, trace->epoch_ns() + s.start_ns);
        r.comm_end = std::max(r.comm_end, trace->epoch_ns() + s.end_ns());
      }
    }
  }
  ASSERT_EQ(files, 9u);
  ASSERT_EQ(recount.size(), 3u);

  const cli::CliResult result = cli::RunStepscope({"stragglers", traces, "--json"});
  ASSERT_EQ(result.code, 0) << result.err;
  const auto doc = nlohmann::json::parse(result.out);
  EXPECT_EQ(doc["schema"], "stepscope.stragglers/1");
  EXPECT_EQ(doc["inputs"].size(), 9u);
  EXPECT_TRUE(doc["single_rank_steps"].empty());
  ASSERT_EQ(doc["steps"].size(), 3u);
  for (const auto& step : doc["steps"]) {
    const int64_t number = step["step"];
    ASSERT_EQ(recount.count(number), 1u) << number;
    const auto& ranks = recount[number];
    ASSERT_EQ(step["per_rank"].size(), 3u);
    // Each rank's collective wait: its communication beyond the least of any rank, at most the
    // time from its arrival at the collectives to the last rank's (recounted); its own end is its
    // recounted end less that wait.
    std::map<int32_t, int64_t> wait;
    int64_t least_comm = INT64_MAX, last_arrival = INT64_MIN;
    for (const auto& row : step["per_rank"]) least_comm = std::min(least_comm, row["communication_ns"].get<int64_t>());
    for (const auto& [rank, r] : ranks) last_arrival = std::max(last_arrival, r.comm_begin);
    for (const auto& row : step["per_rank"]) {
      const int32_t rank = row["rank"];
      const Recount& r = ranks.at(rank);
      const int64_t until_all_arrived = std::min(last_arrival, r.comm_end) - r.comm_begin;
      wait[rank] = std::max<int64_t>(0, std::min(row["communication_ns"].get<int64_t>() - least_comm, until_all_arrived));
      EXPECT_EQ(row["collective_wait_ns"], wait[rank]) << "step " << number << " rank " << rank;
    }
    int64_t first_begin = INT64_MAX, first_end = INT64_MAX, last_end = INT64_MIN;
    int32_t last = -1;
    std::vector<int64_t> ends;
    for (const auto& [rank, r] : ranks) {
      const int64_t own_end = r.end - wait[rank];
      first_begin = std::min(first_begin, r.begin);
      first_end = std::min(first_end, own_end);
      if (own_end > last_end) {
        last_end = own_end;
        last = rank;
      }
      ends.push_back(own_end);
    }
    std::sort(ends.begin(), ends.end());
    EXPECT_EQ(step["straggler"], last) << "step " << number;
    EXPECT_EQ(step["lateness_ns"], last_end - first_end) << "step " << number;
    EXPECT_EQ(step["lateness_vs_median_ns"], last_end - ends[1]) << "step " << number;
    for (const auto& row : step["per_rank"]) {
      const int32_t rank = row["rank"];
      ASSERT_EQ(ranks.count(rank), 1u);
      const Recount& r = ranks.at(rank);
      EXPECT_EQ(row["work_on"], "host");  // a CPU run: its /memcpy lanes are the host's copies
      EXPECT_EQ(row["work"], r.work) << "step " << number << " rank " << rank;
      EXPECT_EQ(row["begin_ns"], r.begin - first_begin);
      EXPECT_EQ(row["end_ns"], r.end - first_begin);
      EXPECT_EQ(row["lateness_ns"], r.end - wait[rank] - first_end);
      // Every rank computed, all-reduced and split its input; no category exceeds the busy time.
      const int64_t busy = row["busy_ns"];
      for (const char* key : {"compute_ns", "communication_ns", "input_ns"}) {
        EXPECT_GT(row[key].get<int64_t>(), 0) << key << " step " << number << " rank " << rank;
        EXPECT_LE(row[key].get<int64_t>(), busy) << key;
      }
      EXPECT_LE(busy, r.end - r.begin);
    }
  }

  // merge reports the same straggler and lateness.
  auto loaded = trace::ReadTraces({traces});
  ASSERT_TRUE(loaded.ok());
  const analysis::MergeResult merged = analysis::MergeTraces(std::move(*loaded));
  ASSERT_EQ(merged.report.stragglers.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    const auto& m = merged.report.stragglers[i];
    EXPECT_EQ(doc["steps"][i]["step"], m.step);
    EXPECT_EQ(doc["steps"][i]["straggler"], merged.report.inputs[m.input].rank);
    EXPECT_EQ(doc["steps"][i]["lateness_ns"], m.lag_ns);
    EXPECT_EQ(doc["steps"][i]["lateness_vs_median_ns"], m.lag_vs_median_ns);
  }
}

}  // namespace
}  // namespace stepscope
