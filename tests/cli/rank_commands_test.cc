// `stepscope stragglers` through RunCli on PyTorch profiler traces written here (one file per
// rank, distributedInfo.rank, ProfilerStep#N windows, kernels linked by ac2g flows): the text and
// JSON output of a known straggler, step scoping, and bad input (exit 2, a message naming it);
// and --rank / --step scoping of every per-rank analysis on the same run.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "base/file_io.h"
#include "run_stepscope.h"
#include "test_util.h"

namespace stepscope::cli {
namespace {

// One rank's Kineto trace: steps 1-3, 10 ms apart from `base_us`; per step a gemm kernel 1 ms
// into the window (launched 200 us before) for `compute_us`, then an NCCL all-reduce of 500 us.
std::string KinetoRank(int rank, int world_size, int64_t base_us, int64_t slow_step, int64_t extra_us) {
  std::string events;
  auto add = [&](const std::string& e) { events += (events.empty() ? "" : ",\n") + e; };
  auto ts = [](int64_t us) { return std::to_string(us) + ".000"; };
  int correlation = 1;
  for (int64_t step = 1; step <= 3; ++step) {
    const int64_t t = base_us + (step - 1) * 10000;
    const int64_t compute = 3000 + (step == slow_step ? extra_us : 0);
    add(R"({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#)" + std::to_string(step) +
        R"(", "pid": 100, "tid": 100, "ts": )" + ts(t) + R"(, "dur": 10000.000})");
    const int64_t kernels[2][2] = {{t + 1000, compute}, {t + 1000 + compute, 500}};
    const char* names[2] = {"sm80_xmma_gemm_f32f32", "ncclKernel_AllReduce_RING_LL_Sum_float"};
    for (int k = 0; k < 2; ++k) {
      const std::string c = std::to_string(correlation++);
      const int64_t launch = t + 800 + k * 20;
      add(R"({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 100, "tid": 100, "ts": )" +
          ts(launch) + R"(, "dur": 10.000, "args": {"correlation": )" + c + "}}");
      add(R"({"ph": "s", "id": )" + c + R"(, "pid": 100, "tid": 100, "ts": )" + ts(launch) +
          R"(, "cat": "ac2g", "name": "ac2g"})");
      add(R"({"ph": "X", "cat": "kernel", "name": ")" + std::string(names[k]) + R"(", "pid": 0, "tid": )" +
          (k == 0 ? "7" : "20") + R"(, "ts": )" + ts(kernels[k][0]) + R"(, "dur": )" + ts(kernels[k][1]) +
          R"(, "args": {"device": 0, "stream": )" + (k == 0 ? "7" : "20") + R"(, "correlation": )" + c + "}}");
      add(R"({"ph": "f", "id": )" + c + R"(, "pid": 0, "tid": )" + (k == 0 ? "7" : "20") + R"(, "ts": )" +
          ts(kernels[k][0]) + R"(, "cat": "ac2g", "name": "ac2g", "bp": "e"})");
    }
  }
  add(R"({"ph": "M", "name": "process_name", "pid": 0, "tid": 0, "args": {"name": "GPU 0"}})");
  add(R"({"ph": "M", "name": "process_name", "pid": 100, "tid": 0, "args": {"name": "python3"}})");
  return R"({"distributedInfo": {"backend": "nccl", "rank": )" + std::to_string(rank) + R"(, "world_size": )" +
         std::to_string(world_size) + "},\n\"traceEvents\": [\n" + events + "\n]}\n";
}

// Three ranks; rank 1 computes 2 ms longer in step 2. Rank 2's clock base differs by 3 us: all
// three share a host (no host name), so nothing is shifted and its lateness shows.
std::string ThreeRanks() {
  const std::string dir = (testing::ScratchDir("stragglers_cli") / "ranks").string();
  std::filesystem::create_directories(dir);
  for (int rank = 0; rank < 3; ++rank) {
    const int64_t base = 1'700'000'000'000'000 + (rank == 2 ? 3 : 0);
    EXPECT_TRUE(WriteFileAtomically(dir + "/rank" + std::to_string(rank) + ".json",
                          KinetoRank(rank, 3, base, 2, rank == 1 ? 2000 : 0))
                    .ok());
  }
  return dir;
}

TEST(StragglersCommandTest, TextNamesTheStragglerItsLatenessAndReason) {
  const std::string dir = ThreeRanks();
  const CliResult r = RunStepscope({"stragglers", "--align", "barrier", dir});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("3 ranks, 3 steps compared (3 inputs; clocks aligned by barrier: 1 reference, 2 same host)"), std::string::npos)
      << r.out;
  // step, ranks, straggler, lateness, vs median, reason, its excess
  EXPECT_NE(r.out.find("         2      3 rank 1        2.000 ms     1.997 ms compute           +2.000 ms"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("         1      3 rank 2          3.0 us       3.0 us none"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Step 2 (the largest lateness): rank 1 finished 2.000 ms after the first; its compute exceeds "
                       "the other ranks' median by 2.000 ms"),
            std::string::npos)
      << r.out;
  const CliResult top1 = RunStepscope({"stragglers", "--align", "barrier", dir, "--top", "1"});
  ASSERT_EQ(top1.code, 0);
  EXPECT_NE(top1.out.find("(1 of 3, the latest)"), std::string::npos) << top1.out;
  EXPECT_EQ(top1.out.find("         1      3 rank 2"), std::string::npos) << top1.out;
}

TEST(StragglersCommandTest, JsonDocument) {
  const std::string dir = ThreeRanks();
  const CliResult r = RunStepscope({"stragglers", "--align", "barrier", dir, "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["schema"], "stepscope.stragglers/1");
  ASSERT_EQ(doc["inputs"].size(), 3u);
  EXPECT_EQ(doc["inputs"][2]["rank"], 2);
  EXPECT_EQ(doc["inputs"][2]["rank_known"], true);
  ASSERT_EQ(doc["steps"].size(), 3u);
  const auto& s2 = doc["steps"][1];
  EXPECT_EQ(s2["step"], 2);
  EXPECT_EQ(s2["ranks"], 3);
  EXPECT_EQ(s2["straggler"], 1);
  EXPECT_EQ(s2["lateness_ns"], 2'000'000);
  EXPECT_EQ(s2["lateness_vs_median_ns"], 2'000'000 - 3'000);  // the median: rank 2, 3 us after rank 0
  EXPECT_EQ(s2["reason"], "compute");
  EXPECT_EQ(s2["excess_ns"]["compute"], 2'000'000);
  EXPECT_EQ(s2["excess_ns"]["input"], 0);
  EXPECT_EQ(s2["waited_for"], -1);  // the all-reduce kernels here take 500 us on every rank
  ASSERT_EQ(s2["per_rank"].size(), 3u);
  const auto& r1 = s2["per_rank"][1];
  EXPECT_EQ(r1["rank"], 1);
  EXPECT_EQ(r1["work_on"], "gpu");
  EXPECT_EQ(r1["work"], 2);
  EXPECT_EQ(r1["compute_ns"], 5'000'000);
  EXPECT_EQ(r1["communication_ns"], 500'000);
  EXPECT_EQ(r1["input_ns"], 1'000'000);
  EXPECT_EQ(r1["memory_ns"], 0);
  EXPECT_EQ(r1["begin_ns"], 0);
  EXPECT_EQ(r1["end_ns"], 5'500'000);  // from the step's first work (rank 0's gemm)
  EXPECT_EQ(doc["by_rank"][1]["straggler_steps"], 1);
  EXPECT_EQ(doc["by_rank"][2]["straggler_steps"], 2);  // steps 1 and 3: 3 us late

  const auto one = nlohmann::json::parse(RunStepscope({"stragglers", "--align", "barrier", dir, "--json", "--step", "2"}).out);
  ASSERT_EQ(one["steps"].size(), 1u);
  EXPECT_EQ(one["steps"][0]["straggler"], 1);
}

TEST(StragglersCommandTest, BadInputExitsTwoWithAClearMessage) {
  const std::string dir = ThreeRanks();
  const CliResult help = RunStepscope({"--help"});
  EXPECT_NE(help.out.find("  stragglers "), std::string::npos);
  EXPECT_EQ(RunStepscope({"stragglers", "--help"}).code, 0);

  CliResult r = RunStepscope({"stragglers"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("expected 1 or more argument(s), got 0"), std::string::npos) << r.err;

  r = RunStepscope({"stragglers", "--align", "barrier", dir + "/rank0.json"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("stepscope stragglers: no step has work from two ranks or more to compare (1 input(s): " + dir +
                       "/rank0.json)"),
            std::string::npos)
      << r.err;

  r = RunStepscope({"stragglers", "--align", "barrier", dir + "/missing.json"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("missing.json"), std::string::npos) << r.err;

  const std::string broken = (testing::ScratchDir("stragglers_cli") / "broken.json").string();
  ASSERT_TRUE(WriteFileAtomically(broken, "{\"traceEvents\": [ {\"ph\": \"X\", \"ts\": oops").ok());
  r = RunStepscope({"stragglers", "--align", "barrier", dir + "/rank0.json", broken});
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.err.find("broken.json"), std::string::npos) << r.err;

  r = RunStepscope({"stragglers", "--align", "barrier", dir, "--steps", "7-9"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("no step 7-9 in the traces given"), std::string::npos) << r.err;

  r = RunStepscope({"stragglers", "--align", "barrier", dir, "--steps", "3-1"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--steps 3-1: expected A-B with A <= B"), std::string::npos) << r.err;

  r = RunStepscope({"stragglers", "--align", "barrier", dir, "--top", "0"});
  EXPECT_EQ(r.code, 2);

  // The same rank's trace twice (two runs mixed up).
  r = RunStepscope({"stragglers", "--align", "barrier", dir, dir + "/rank1.json"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("rank 1 step 1 is in both " + dir + "/rank1.json and " + dir + "/rank1.json"),
            std::string::npos)
      << r.err;
}

// --rank keeps the traces of those ranks in every analysis; --step/--steps picks steps in
// critical-path as in the GPU commands.
// `align` on three real gloo ranks of one host (tests/data/analysis/gloo_ranks): the schema, the
// method named, each rank matched; one rank or an unknown method exits 2.
TEST(AlignCommandTest, ReportsEachRanksClockAndRefusesBadInput) {
  const std::string dir = testing::DataPath("analysis/gloo_ranks");
  CliResult r = RunStepscope({"align", dir, "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["schema"], "stepscope.align/1");
  EXPECT_EQ(doc["method"], "collectives");
  ASSERT_EQ(doc["ranks"].size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    const auto& rank = doc["ranks"][i];
    EXPECT_EQ(rank["rank"], i);
    EXPECT_GE(rank["matched_collectives"].get<int64_t>(), 20);
    EXPECT_LE(std::abs(rank["offset_ns"].get<int64_t>()), rank["residual_ns"].get<int64_t>() + 1000);
  }
  r = RunStepscope({"align", dir});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("3 ranks, clocks aligned by collectives"), std::string::npos) << r.out;

  r = RunStepscope({"align", dir, "--json", "--align", "barrier"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto barrier = nlohmann::json::parse(r.out);
  EXPECT_EQ(barrier["method"], "barrier");
  EXPECT_TRUE(barrier["ranks"][1]["residual_ns"].is_null());

  r = RunStepscope({"align", dir + "/rank0.json.gz"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("align needs the traces of two ranks or more"), std::string::npos) << r.err;
  r = RunStepscope({"align", dir, "--align", "nearest"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--align nearest: expected collectives, barrier, clock or auto"), std::string::npos) << r.err;
}

TEST(ScopeFlagsTest, RankAndStepScopeEveryAnalysis) {
  const std::string dir = ThreeRanks();
  for (const char* command : {"gpu", "idle", "launches", "annotations", "kernel-patterns", "critical-path", "overlap"}) {
    const CliResult all = RunStepscope({command, dir, "--json"});
    ASSERT_EQ(all.code, 0) << command << ": " << all.err;
    const CliResult one = RunStepscope({command, dir, "--json", "--rank", "1"});
    ASSERT_EQ(one.code, 0) << command << ": " << one.err;
    EXPECT_NE(one.out, all.out) << command;
    EXPECT_EQ(one.out.find("rank0.json"), std::string::npos) << command;
    EXPECT_EQ(one.out.find("rank2.json"), std::string::npos) << command;
  }
  // gpu: one GPU per rank; ranks 0 and 2 only.
  auto gpu = nlohmann::json::parse(RunStepscope({"gpu", dir, "--json", "--rank", "0,2"}).out);
  ASSERT_EQ(gpu["gpus"].size(), 2u);
  EXPECT_EQ(gpu["gpus"][0]["rank"], 0);
  EXPECT_EQ(gpu["gpus"][1]["rank"], 2);
  // Rank 1's step 2 computes 2 ms longer: its busy time in step 2 is the gemm (5 ms) and the
  // all-reduce (500 us).
  gpu = nlohmann::json::parse(RunStepscope({"gpu", dir, "--json", "--rank", "1", "--step", "2"}).out);
  ASSERT_EQ(gpu["gpus"].size(), 1u);
  EXPECT_EQ(gpu["gpus"][0]["busy_ns"], 5'500'000);

  // critical-path: one path per ProfilerStep window, --steps keeps those windows.
  auto paths = nlohmann::json::parse(RunStepscope({"critical-path", dir, "--json", "--rank", "1-2"}).out);
  ASSERT_EQ(paths["traces"].size(), 2u);
  EXPECT_EQ(paths["traces"][0]["steps"].size(), 3u);
  paths = nlohmann::json::parse(RunStepscope({"critical-path", dir, "--json", "--rank", "1", "--steps", "2-3"}).out);
  ASSERT_EQ(paths["traces"].size(), 1u);
  ASSERT_EQ(paths["traces"][0]["steps"].size(), 2u);
  EXPECT_EQ(paths["traces"][0]["steps"][0]["marker"], "ProfilerStep#2");
  EXPECT_EQ(paths["traces"][0]["steps"][1]["marker"], "ProfilerStep#3");

  // stragglers among ranks 0 and 2 only: rank 2's clock is 3 us late, every step.
  const auto pair = nlohmann::json::parse(RunStepscope({"stragglers", "--align", "barrier", dir, "--json", "--rank", "0,2"}).out);
  ASSERT_EQ(pair["steps"].size(), 3u);
  for (const auto& step : pair["steps"]) {
    EXPECT_EQ(step["ranks"], 2);
    EXPECT_EQ(step["straggler"], 2);
    EXPECT_EQ(step["lateness_ns"], 3'000);
  }

  CliResult r = RunStepscope({"gpu", dir, "--rank", "5"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--rank 5: no trace of that rank among the 3 given (ranks: 0, 1, 2)"), std::string::npos) << r.err;
  for (const char* bad : {"x", "2-1", "-1", "1,", ""}) {
    r = RunStepscope({"idle", dir, "--rank", bad});
    EXPECT_EQ(r.code, 2) << bad;
    EXPECT_NE(r.err.find("expected R, R,S,... or A-B"), std::string::npos) << bad << ": " << r.err;
  }
  r = RunStepscope({"critical-path", dir, "--steps", "7-9"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("no step 7-9 in the traces given"), std::string::npos) << r.err;
  r = RunStepscope({"overlap", dir, "--step", "1"});
  EXPECT_EQ(r.code, 2);  // whole traces only
}

}  // namespace
}  // namespace stepscope::cli
