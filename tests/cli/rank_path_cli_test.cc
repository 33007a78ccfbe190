// `stepscope critical-path` over several ranks through RunCli: two PyTorch-format ranks written
// here with a known cross-rank path (rank 1 computes 2 ms longer before a gloo all-reduce that
// rank 0 waits in) and two GPU ranks joined at an NCCL kernel, each path recounted by hand: its
// text and its JSON key "across_ranks"; one rank's output has neither; a bad --align exits 2.
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

// A GPU step of rank r (µs): three kernels on one stream, launched from the host at 800, 820 and
// 840 (10 µs calls): a gemm [1,000, 1,000 + compute_us), the NCCL all-reduce from the gemm's end
// until 4,500 (the late rank arrives at 4,000, then 500 µs of transfer), a second gemm [4,500, 4,800).
std::string GpuRank(int rank, int64_t compute_us) {
  nlohmann::json events = nlohmann::json::array();
  events.push_back({{"ph", "X"}, {"cat", "user_annotation"}, {"name", "ProfilerStep#1"}, {"pid", 100}, {"tid", 100},
                    {"ts", 0}, {"dur", 10000}});
  const struct {
    const char* name;
    int64_t ts, dur;
  } kernels[] = {{"sm80_gemm_a", 1000, compute_us},
                 {"ncclKernel_AllReduce_RING_LL_Sum_float", 1000 + compute_us, 4500 - (1000 + compute_us)},
                 {"sm80_gemm_b", 4500, 300}};
  for (int k = 0; k < 3; ++k) {
    const int correlation = k + 1, launch = 800 + k * 20;
    events.push_back({{"ph", "X"}, {"cat", "cuda_runtime"}, {"name", "cudaLaunchKernel"}, {"pid", 100}, {"tid", 100},
                      {"ts", launch}, {"dur", 10}, {"args", {{"correlation", correlation}}}});
    events.push_back({{"ph", "s"}, {"id", correlation}, {"pid", 100}, {"tid", 100}, {"ts", launch}, {"cat", "ac2g"},
                      {"name", "ac2g"}});
    nlohmann::json args = {{"device", 0}, {"stream", 7}, {"correlation", correlation}};
    if (k == 1) args["Collective name"] = "allreduce", args["Process Group Name"] = "0";
    events.push_back({{"ph", "X"}, {"cat", "kernel"}, {"name", kernels[k].name}, {"pid", 0}, {"tid", 7},
                      {"ts", kernels[k].ts}, {"dur", kernels[k].dur}, {"args", args}});
    events.push_back({{"ph", "f"}, {"id", correlation}, {"pid", 0}, {"tid", 7}, {"ts", kernels[k].ts}, {"cat", "ac2g"},
                      {"name", "ac2g"}, {"bp", "e"}});
  }
  events.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", 0}, {"tid", 0}, {"args", {{"name", "GPU 0"}}}});
  return nlohmann::json{{"distributedInfo", {{"backend", "nccl"}, {"rank", rank}, {"world_size", 2}}},
                        {"traceEvents", events}}
      .dump();
}

TEST(CriticalPathAcrossRanksTest, GpuPathRunsThroughTheLateRanksKernel) {
  const std::string dir = (testing::ScratchDir("rank_path_gpu") / "ranks").string();
  std::filesystem::create_directories(dir);
  ASSERT_TRUE(WriteFileAtomically(dir + "/rank0.json", GpuRank(0, 1000)).ok());
  ASSERT_TRUE(WriteFileAtomically(dir + "/rank1.json", GpuRank(1, 3000)).ok());
  const CliResult r = RunStepscope({"critical-path", dir, "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  const auto& step = doc["across_ranks"]["steps"][0];
  // Rank 1's launch (800) to rank 0's second gemm's end (4,800): rank 1's launch call (10), its
  // launch delay (190) and gemm (3,000), the all-reduce's transfer (500), rank 0's gemm (300).
  EXPECT_EQ(step["length_ns"], 4'000'000);
  EXPECT_EQ(step["bound_by"], "gpu_compute");
  EXPECT_EQ(step["bound_ns"]["gpu_compute"], 3'300'000);
  EXPECT_EQ(step["bound_ns"]["launch_delay"], 190'000);
  EXPECT_EQ(step["bound_ns"]["cpu"], 10'000);
  EXPECT_EQ(step["transfer_ns"], 500'000);
  EXPECT_EQ(step["gap_ns"], 0);
  ASSERT_EQ(step["waits"].size(), 1u);
  EXPECT_EQ(step["waits"][0]["collective"], "nccl:allreduce");
  EXPECT_EQ(step["waits"][0]["wait_ns"], 2'000'000);
  EXPECT_EQ(step["waiting_for"]["rank"], 1);
  EXPECT_EQ(step["waiting_for"]["op"], "sm80_gemm_a");
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
