// `stepscope critical-path` over several ranks through RunCli: two PyTorch-format ranks written
// here with a known cross-rank path (rank 1 computes 2 ms longer before a gloo all-reduce that
// rank 0 waits in), its text and its JSON key "across_ranks", recounted by hand; one rank's
// output has neither; a bad --align exits 2.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "base/file_io.h"
#include "run_stepscope.h"
#include "test_util.h"

namespace stepscope::cli {
namespace {

// Rank r (µs from the step's start at 0): "compute" [100, 100 + compute_us) on the main thread,
// then c10d::allreduce_ (enqueue, 20 µs) 10 µs after it; gloo's all-reduce on its own thread from
// 15 µs after the compute until 3,315 (the late rank arrives at 3,115, then 200 µs of transfer);
// then "optimizer" [3,320, 3,820).
std::string Rank(int rank, int64_t compute_us) {
  const int64_t end = 100 + compute_us;
  auto op = [](const std::string& name, int tid, int64_t ts, int64_t dur, const std::string& cat,
               const std::string& args = "") {
    return R"({"ph": "X", "cat": ")" + cat + R"(", "name": ")" + name + R"(", "pid": 1, "tid": )" + std::to_string(tid) +
           R"(, "ts": )" + std::to_string(ts) + R"(, "dur": )" + std::to_string(dur) + args + "}";
  };
  const std::string events =
      op("ProfilerStep#1", 1, 0, 10000, "user_annotation") + ",\n" + op("compute", 1, 100, compute_us, "cpu_op") +
      ",\n" + op("c10d::allreduce_", 1, end + 10, 20, "cpu_op") + ",\n" +
      op("gloo:all_reduce", 2, end + 15, 3315 - (end + 15), "user_annotation",
         R"(, "args": {"Input Dims": [[1000]]})") +
      ",\n" + op("optimizer", 1, 3320, 500, "cpu_op");
  return R"({"distributedInfo": {"backend": "gloo", "rank": )" + std::to_string(rank) +
         R"(, "world_size": 2}, "traceEvents": [)" + "\n" + events + "\n]}\n";
}

std::string TwoRanks() {
  const std::string dir = (testing::ScratchDir("rank_path_cli") / "ranks").string();
  std::filesystem::create_directories(dir);
  EXPECT_TRUE(WriteFileAtomically(dir + "/rank0.json", Rank(0, 1000)).ok());
  EXPECT_TRUE(WriteFileAtomically(dir + "/rank1.json", Rank(1, 3000)).ok());
  return dir;
}

TEST(CriticalPathAcrossRanksTest, JsonFollowsTheLateRank) {
  const std::string dir = TwoRanks();
  const CliResult r = RunStepscope({"critical-path", dir, "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  ASSERT_EQ(doc["traces"].size(), 2u);  // each rank's own path, as before
  const auto& across = doc["across_ranks"];
  EXPECT_EQ(across["method"], "collectives");
  EXPECT_EQ(across["ranks"], 2);
  ASSERT_EQ(across["steps"].size(), 1u);
  const auto& step = across["steps"][0];
  EXPECT_EQ(step["step"], 1);
  // From rank 1's compute start (100 µs) to rank 0's optimizer end (3,820 µs).
  EXPECT_EQ(step["begin_ns"], 100'000);
  EXPECT_EQ(step["end_ns"], 3'820'000);
  EXPECT_EQ(step["length_ns"], 3'720'000);
  ASSERT_EQ(step["segments"].size(), 2u);
  EXPECT_EQ(step["segments"][0]["rank"], 1);  // compute [100, 3,100)
  EXPECT_EQ(step["segments"][0]["length_ns"], 3'000'000);
  EXPECT_EQ(step["segments"][1]["rank"], 0);  // optimizer [3,320, 3,820)
  EXPECT_EQ(step["segments"][1]["length_ns"], 500'000);
  ASSERT_EQ(step["waits"].size(), 1u);
  const auto& wait = step["waits"][0];
  EXPECT_EQ(wait["rank"], 0);
  EXPECT_EQ(wait["waited_for"], 1);
  EXPECT_EQ(wait["collective"], "gloo:all_reduce[[1000]]");
  EXPECT_EQ(wait["arrival_ns"], 3'115'000);
  EXPECT_EQ(wait["wait_ns"], 2'000'000);     // 3,115 - 1,115
  EXPECT_EQ(wait["transfer_ns"], 200'000);   // 3,315 - 3,115
  // 3,720 = 3,000 (rank 1) + 500 (rank 0) + 200 (transfer) + 20 (3,100 -> 3,115, 3,315 -> 3,320).
  EXPECT_EQ(step["transfer_ns"], 200'000);
  EXPECT_EQ(step["gap_ns"], 20'000);
  EXPECT_EQ(step["bound_ns"]["cpu"], 3'500'000);
  const auto& held = step["waiting_for"];
  EXPECT_EQ(held["rank"], 1);
  EXPECT_EQ(held["op"], "compute");
  EXPECT_EQ(held["late_ns"], 2'000'000);
}

TEST(CriticalPathAcrossRanksTest, TextSaysWhomTheStepWaitedFor) {
  const CliResult r = RunStepscope({"critical-path", TwoRanks()});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("== across 2 ranks, clocks aligned by collectives"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("path   3.720 ms through rank(s) 1 -> 0"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("waiting for rank 1 (its op compute) 2.000 ms at gloo:all_reduce[[1000]]"), std::string::npos)
      << r.out;
}

TEST(CriticalPathAcrossRanksTest, OneRankAndBadFlag) {
  const std::string dir = TwoRanks();
  CliResult r = RunStepscope({"critical-path", dir + "/rank0.json", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_FALSE(nlohmann::json::parse(r.out).contains("across_ranks"));
  r = RunStepscope({"critical-path", dir + "/rank0.json"});
  EXPECT_EQ(r.out.find("across"), std::string::npos) << r.out;
  r = RunStepscope({"critical-path", dir, "--align", "nearest"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--align nearest: expected collectives, barrier, clock or auto"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace stepscope::cli
