// `align`, `stragglers`, `critical-path`, `steps` and `gpu` spread over processes (profiler/cli/distributed.h)
// print exactly what one process prints: 64 generated ranks (tests/analysis/kineto_generator.h, the last rank's
// kernels slower) split over 1, 2 and 4 processes, text and --json, byte for byte; an unreadable
// input fails the same way with the file named. The steps are run here one process after the
// other (no MPI needed); with MPI built in, the same comparison runs the real `stepscope` under
// `mpirun -np 2` and `-np 4`.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <sys/wait.h>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "analysis/kineto_generator.h"
#include "base/file_io.h"
#include "profiler/analysis/distributed_digest.h"
#include "profiler/cli/cli.h"
#include "profiler/cli/command.h"
#include "profiler/cli/commands/commands.h"
#include "profiler/cli/commands/rank_digests.h"
#include "profiler/cli/distributed.h"
#include "profiler/cli/distributed_gather.h"
#include "profiler/formats/inputs.h"
#include "test_util.h"

namespace stepscope::cli {
namespace {

constexpr int kRanks = 64;

// The ranks' directory, written once: ProfilerStep#N windows of 20 iterations, ~48 KB a rank.
const std::string& RanksDir() {
  static const std::string dir = [] {
    const auto path = testing::ScratchDir("distributed_ranks");
    for (int rank = 0; rank < kRanks; ++rank) {
      const analysis::testing::KinetoJsonOptions options{
          .rank = rank, .world_size = kRanks, .iterations_per_step = 20,
          .slow_kernel_ns = rank == kRanks - 1 ? 2000 : 0};
      const auto generated = analysis::testing::GenerateKinetoJson(48 << 10, options);
      const auto file = path / ("rank" + std::to_string(rank) + ".json");
      EXPECT_TRUE(WriteFileAtomically(file.string(), generated.json).ok());
    }
    return path.string();
  }();
  return dir;
}

struct Outcome {
  int code = 0;
  std::string out, err;
};

Outcome OneProcess(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  const int code = RunCli(args, out, err);
  return {code, out.str(), err.str()};
}

// The distributed steps, each process in turn: plan, digests, process 0's combination.
Outcome Spread(const std::vector<std::string>& args, int processes) {
  std::ostringstream out, err;
  int code = 0;
  const auto plan = PlanDistributed(args, processes, out, err, code);
  if (plan) {
    std::vector<std::string> shares;
    for (int p = 0; p < processes; ++p) shares.push_back(DigestShare(*plan, p));
    code = CombineShares(*plan, shares, out, err);
  }
  return {code, out.str(), err.str()};
}

void ExpectSameAsOneProcess(const std::vector<std::string>& args) {
  const Outcome one = OneProcess(args);
  for (int processes : {1, 2, 4}) {
    const Outcome spread = Spread(args, processes);
    EXPECT_EQ(spread.code, one.code) << args[0] << " over " << processes;
    EXPECT_EQ(spread.out, one.out) << args[0] << " over " << processes;
    EXPECT_EQ(spread.err, one.err) << args[0] << " over " << processes;
  }
}

TEST(DistributedCliTest, AlignOverProcessesPrintsWhatOneProcessPrints) {
  const Outcome one = OneProcess({"align", RanksDir()});
  ASSERT_EQ(one.code, 0) << one.err;
  EXPECT_NE(one.out.find("64 ranks, clocks aligned by collectives"), std::string::npos) << one.out;
  ExpectSameAsOneProcess({"align", RanksDir()});
  ExpectSameAsOneProcess({"align", RanksDir(), "--json"});
}

TEST(DistributedCliTest, StragglersOverProcessesPrintWhatOneProcessPrints) {
  // On the generator's shared clock the last rank, its kernels slower, finishes last in each of the
  // 3 steps of all 64 ranks.
  const Outcome one = OneProcess({"stragglers", RanksDir(), "--align", "clock"});
  ASSERT_EQ(one.code, 0) << one.err;
  EXPECT_NE(one.out.find("64 ranks, 3 steps compared"), std::string::npos) << one.out;
  EXPECT_NE(one.out.find("  rank 63         3          3 "), std::string::npos) << one.out;
  ExpectSameAsOneProcess({"stragglers", RanksDir(), "--align", "clock", "--json"});
  ExpectSameAsOneProcess({"stragglers", RanksDir()});
  ExpectSameAsOneProcess({"stragglers", RanksDir(), "--json"});
  ExpectSameAsOneProcess({"stragglers", RanksDir(), "--rank", "3-9", "--steps", "1-2"});
  ExpectSameAsOneProcess({"stragglers", RanksDir(), "--rank", "99"});  // no such rank: the same error
}

TEST(DistributedCliTest, CriticalPathOverProcessesPrintsWhatOneProcessPrints) {
  // Each rank's own paths, then each step's path across the 64 ranks: host-bound on rank 0 (the
  // generated ranks keep one clock and one pace: no rank waits for another).
  const Outcome one = OneProcess({"critical-path", RanksDir()});
  ASSERT_EQ(one.code, 0) << one.err;
  EXPECT_NE(one.out.find("== across 64 ranks, clocks aligned by collectives"), std::string::npos) << one.out;
  EXPECT_NE(one.out.find("== step 1 across ranks\npath   807.1 us through rank(s) 0\nbound  by cpu\n"),
            std::string::npos) << one.out;
  ExpectSameAsOneProcess({"critical-path", RanksDir()});
  ExpectSameAsOneProcess({"critical-path", RanksDir(), "--json"});
  ExpectSameAsOneProcess({"critical-path", RanksDir(), "--steps", "1-2", "--top", "3"});
  ExpectSameAsOneProcess({"critical-path", RanksDir(), "--rank", "3-9", "--json", "--align", "clock"});
  ExpectSameAsOneProcess({"critical-path", RanksDir(), "--rank", "99"});    // no such rank: the same error
  ExpectSameAsOneProcess({"critical-path", RanksDir(), "--step", "7"});     // no such step: the same error
  ExpectSameAsOneProcess({"critical-path", RanksDir(), "--align", "near"});  // a bad flag: the same error
}

TEST(DistributedCliTest, CriticalPathAcrossRealRanksJoinsThemAsOneProcessDoes) {
  // Three ranks of a real gloo job (tests/data/analysis/gloo_ranks): each step's path changes rank
  // at the all-reduces, so the walk leaves a rank's chained pieces at a collective. Over
  // 4 processes one reads nothing.
  const std::string dir = testing::DataPath("analysis/gloo_ranks");
  const Outcome one = OneProcess({"critical-path", dir});
  ASSERT_EQ(one.code, 0) << one.err;
  EXPECT_NE(one.out.find("Where the path changes rank"), std::string::npos) << one.out;
  ExpectSameAsOneProcess({"critical-path", dir});
  ExpectSameAsOneProcess({"critical-path", dir, "--json", "--steps", "3-5"});
}

TEST(DistributedCliTest, AnUnreadableInputFailsAsInOneProcessNamingIt) {
  const auto dir = testing::ScratchDir("distributed_bad");
  for (int rank = 0; rank < 6; ++rank) {
    std::filesystem::copy_file(std::filesystem::path(RanksDir()) / ("rank" + std::to_string(rank) + ".json"),
                               dir / ("rank" + std::to_string(rank) + ".json"),
                               std::filesystem::copy_options::overwrite_existing);
  }
  std::ofstream(dir / "rank3.json") << "{\"traceEvents\": [ {\"ph\": ";  // cut short
  const Outcome one = OneProcess({"stragglers", dir.string()});
  EXPECT_EQ(one.code, 2);
  EXPECT_NE(one.err.find("rank3.json"), std::string::npos) << one.err;
  ExpectSameAsOneProcess({"stragglers", dir.string()});
  ExpectSameAsOneProcess({"align", dir.string()});
  ExpectSameAsOneProcess({"critical-path", dir.string(), "--json"});
}

TEST(DistributedCliTest, OtherCommandsAndUsageErrorsSayWhatToDo) {
  const Outcome summary = Spread({"summary", RanksDir()}, 2);
  EXPECT_EQ(summary.code, 2);
  EXPECT_NE(summary.err.find("cannot run spread over 2 MPI processes"), std::string::npos) << summary.err;
  ExpectSameAsOneProcess({"align"});             // no input: the usage error
  ExpectSameAsOneProcess({"align", "--help"});
  ExpectSameAsOneProcess({"align", "/nonexistent/ranks"});
}

TEST(DistributedCliTest, SplitsInputsByBytesBalanced) {
  const std::vector<uint64_t> sizes = {10, 70, 20, 30, 40, 30};
  const auto shares = SplitBySize(sizes, 2);
  ASSERT_EQ(shares.size(), 2u);
  // 70 (1) -> p0; 40 (4) -> p1; 30 (3) -> p1 (70); 30 (5) -> p0 on the tie (100); 20 (2) -> p1
  // (90); 10 (0) -> p1 (100).
  EXPECT_EQ(shares[0], (std::vector<size_t>{1, 5}));
  EXPECT_EQ(shares[1], (std::vector<size_t>{0, 2, 3, 4}));
  EXPECT_EQ(SplitBySize(sizes, 8).size(), 8u);
}

TEST(DistributedCliTest, DigestsSurviveTheirBytes) {
  auto traces = trace::ReadTraces({RanksDir() + "/rank1.json", RanksDir() + "/rank63.json"});
  ASSERT_TRUE(traces.ok()) << traces.status().message();
  const analysis::DigestKinds all{.clock = true, .stragglers = true, .rank_paths = true};
  std::vector<analysis::InputDigest> digests = {analysis::DigestInput((*traces)[0], 1, all),
                                                analysis::DigestInput((*traces)[1], 63, all)};
  digests[1].report = {.head = "head", .lead = "lead",
                       .windows = {{.step = 4, .marker = "ProfilerStep#4", .whole = false, .body = "body"}},
                       .steps = {4}};
  digests.push_back({.input = 7, .read = InvalidInput("x.json: cut short")});
  const std::string bytes = analysis::SerializeDigests(digests);
  auto back = analysis::ParseDigests(bytes, "test");
  ASSERT_TRUE(back.ok()) << back.status().message();
  ASSERT_EQ(back->size(), 3u);
  EXPECT_FALSE(digests[0].clock.collectives.empty());
  EXPECT_FALSE(digests[0].stragglers.windows.empty());
  // Every step's entries: one per arrival at its 4 all-reduces and one at the end of its work,
  // each to a piece.
  ASSERT_EQ(digests[0].rank_paths.steps.size(), 3u);
  const analysis::RankStepDigest& step = digests[0].rank_paths.steps[1];
  EXPECT_EQ(step.entry_by.size(), 5u);
  ASSERT_EQ(step.entry_piece.size(), 5u);
  for (int64_t piece : step.entry_piece) EXPECT_TRUE(piece >= 0 && piece < static_cast<int64_t>(step.pieces.size()));
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ((*back)[i].input, digests[i].input);
    EXPECT_EQ((*back)[i].read.code(), digests[i].read.code());
    EXPECT_EQ((*back)[i].read.message(), digests[i].read.message());
    EXPECT_TRUE((*back)[i].clock == digests[i].clock);
    EXPECT_TRUE((*back)[i].stragglers == digests[i].stragglers);
    EXPECT_TRUE((*back)[i].rank_paths == digests[i].rank_paths);
    EXPECT_TRUE((*back)[i].report == digests[i].report);
  }
  EXPECT_FALSE(analysis::ParseDigests(bytes.substr(0, bytes.size() - 3), "test").ok());
  // A piece that points past its step's pieces is refused, not followed.
  std::vector<analysis::InputDigest> broken = {digests[0]};
  analysis::RankPathPiece& piece = broken[0].rank_paths.steps[1].pieces.front();
  piece.stopped = true;
  piece.next = 1'000'000;
  const auto refused = analysis::ParseDigests(analysis::SerializeDigests(broken), "test");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("pieces point outside"), std::string::npos);
  EXPECT_FALSE(analysis::ParseDigests("not digests", "test").ok());
}

// The gather in rounds (distributed_gather.h), run here as MPI would: each round's buffer filled
// from every process's bytes at its displacement, then placed. Every process's bytes arrive
// whole and in order, every round holds at most the round's bytes and all but the last are full.
std::vector<std::string> GatherInRounds(const std::vector<std::string>& sent, uint64_t round_bytes, int& rounds) {
  std::vector<uint64_t> sizes;
  uint64_t total = 0;
  for (const std::string& bytes : sent) sizes.push_back(bytes.size()), total += bytes.size();
  std::vector<std::string> shares(sent.size());
  GatherRounds plan(sizes, round_bytes);
  GatherRound round;
  uint64_t moved = 0;
  rounds = 0;
  while (plan.Next(round)) {
    ++rounds;
    EXPECT_LE(static_cast<uint64_t>(round.total), round_bytes);
    if (moved + round_bytes <= total) {
      EXPECT_EQ(static_cast<uint64_t>(round.total), round_bytes);  // full
    }
    std::string received(static_cast<size_t>(round.total), '?');
    for (size_t p = 0; p < sent.size(); ++p) {
      received.replace(static_cast<size_t>(round.displacements[p]), static_cast<size_t>(round.counts[p]),
                       sent[p].substr(round.sent_from[p], static_cast<size_t>(round.counts[p])));
    }
    GatherRounds::Place(round, received, shares);
    moved += static_cast<uint64_t>(round.total);
  }
  EXPECT_EQ(moved, total);
  return shares;
}

TEST(DistributedCliTest, GatherInRoundsDeliversEveryProcessBytesInOrder) {
  // The real digests of the 64 ranks over 4 processes, and odd sizes: empty processes, one byte.
  std::ostringstream out, err;
  int code = 0;
  const auto plan = PlanDistributed({"align", RanksDir()}, 4, out, err, code);
  ASSERT_TRUE(plan.has_value()) << err.str();
  std::vector<std::string> digests;
  for (int p = 0; p < 4; ++p) digests.push_back(DigestShare(*plan, p));
  const uint64_t total = digests[0].size() + digests[1].size() + digests[2].size() + digests[3].size();
  ASSERT_GT(total, 10 * 4093u);  // 44.7 KB: rounds of 4,093 bytes split processes' bytes anywhere
  const std::vector<std::vector<std::string>> cases = {
      digests, {"", "abc", "", "defghij", "k"}, {"", ""}, {std::string(10'000, 'x') + "y"}};
  for (const auto& sent : cases) {
    for (const uint64_t round_bytes : {uint64_t{1}, uint64_t{7}, uint64_t{4093}, kDefaultGatherRoundBytes}) {
      uint64_t bytes = 0;
      for (const std::string& s : sent) bytes += s.size();
      if (round_bytes == 1 && bytes > 20'000) continue;  // a round per byte: slow, nothing new
      int rounds = 0;
      EXPECT_EQ(GatherInRounds(sent, round_bytes, rounds), sent) << "rounds of " << round_bytes;
      EXPECT_EQ(static_cast<uint64_t>(rounds), (bytes + round_bytes - 1) / round_bytes) << "rounds of " << round_bytes;
    }
  }
}

TEST(DistributedCliTest, GatherRoundBytesComeFromTheEnvironmentOrTheDefault) {
  EXPECT_EQ(ParseGatherRoundBytes(nullptr), kDefaultGatherRoundBytes);
  EXPECT_EQ(ParseGatherRoundBytes(""), kDefaultGatherRoundBytes);
  EXPECT_EQ(ParseGatherRoundBytes("4093"), 4093u);
  EXPECT_EQ(ParseGatherRoundBytes("2147483647"), kMaxGatherRoundBytes);
  for (const char* bad : {"0", "-5", "2147483648", "1k", " 12", "12 ", "lots"}) {
    EXPECT_EQ(ParseGatherRoundBytes(bad), std::nullopt) << bad;
  }
}

// ---- steps and gpu spread over processes ------------------------------------------------------

TEST(DistributedCliTest, StepsOverProcessesPrintWhatOneProcessPrints) {
  // 3 ProfilerStep windows on each of the 64 ranks: 192 steps; rank 63's kernels are slower.
  const Outcome one = OneProcess({"steps", RanksDir()});
  ASSERT_EQ(one.code, 0) << one.err;
  EXPECT_NE(one.out.find("steps      192\n"), std::string::npos) << one.out;
  ExpectSameAsOneProcess({"steps", RanksDir()});
  ExpectSameAsOneProcess({"steps", RanksDir(), "--json"});
  ExpectSameAsOneProcess({"steps", RanksDir(), "--top", "2"});
  ExpectSameAsOneProcess({"steps", RanksDir(), "--top", "0"});  // a bad flag: the same error
  // Real ranks of a gloo job, and real traces with GPU kernels and steps without a number (the
  // input's place), given as files.
  ExpectSameAsOneProcess({"steps", testing::DataPath("analysis/gloo_ranks"), "--json"});
  ExpectSameAsOneProcess({"steps", testing::DataPath("pytorch_kineto_alexnet_train.json.gz"),
                          testing::SamplePath("h100_resnet50_b32_step3.pb.gz"),
                          testing::DataPath("analysis/kineto_small.json"),
                          testing::SamplePath("h100_lstm_small_step3.pb.gz")});
}

TEST(DistributedCliTest, StepsOfRanksMergedPerStepAreReadAgainWhereMerged) {
  // stepscope-train's per-rank step traces (tests/data/analysis/ranks): one process merges each
  // step's ranks from their traces, which no process holds together when they are read apart:
  // process 0 reads them again where the step is merged.
  const std::string dir = testing::DataPath("analysis/ranks");
  const Outcome one = OneProcess({"steps", dir});
  ASSERT_EQ(one.code, 0) << one.err;
  EXPECT_NE(one.out.find("ranks merged"), std::string::npos) << one.out;
  ExpectSameAsOneProcess({"steps", dir});
  ExpectSameAsOneProcess({"steps", dir, "--json"});
  // Given only as their steps, with nothing to read them again by, the merge says so.
  analysis::StepCollector collector;
  ASSERT_TRUE(trace::ForEachTrace({dir}, [&](trace::Trace trace) {
                return collector.Add(analysis::StepsOfInput(trace));
              }).ok());
  const auto steps = std::move(collector).Finish();
  ASSERT_FALSE(steps.ok());
  EXPECT_NE(steps.status().message().find("rank0.pbtxt: step "), std::string::npos) << steps.status().message();
  EXPECT_NE(steps.status().message().find("given only as its steps"), std::string::npos) << steps.status().message();
}

TEST(DistributedCliTest, GpuOverProcessesPrintsWhatOneProcessPrints) {
  const Outcome one = OneProcess({"gpu", RanksDir()});
  ASSERT_EQ(one.code, 0) << one.err;
  EXPECT_NE(one.out.find("rank 63 "), std::string::npos) << one.out;
  ExpectSameAsOneProcess({"gpu", RanksDir()});
  ExpectSameAsOneProcess({"gpu", RanksDir(), "--json"});
  ExpectSameAsOneProcess({"gpu", RanksDir(), "--step", "2"});
  ExpectSameAsOneProcess({"gpu", RanksDir(), "--steps", "1-2", "--rank", "3-9,63", "--json"});
  ExpectSameAsOneProcess({"gpu", RanksDir(), "--rank", "99"});  // no such rank: the same error
  ExpectSameAsOneProcess({"gpu", RanksDir(), "--step", "7"});   // no such step: the same error
  ExpectSameAsOneProcess({"gpu", RanksDir(), "--steps", "3-1"});  // a bad flag: the same error
  ExpectSameAsOneProcess({"gpu", testing::DataPath("analysis/gloo_ranks"), "--json", "--steps", "3-5"});
  // Real GPU traces: kernels on several streams; a trace without a step number counts as its
  // place among the inputs' steps, which process 0 numbers (--step 1: AlexNet, the second input;
  // --step 2: the PTB step; --step 3: the two H100 step traces); the PTB step records no rank
  // either, and --rank 2 keeps it by its place.
  const std::vector<std::string> gpu_traces = {testing::SamplePath("h100_resnet50_b32_step3.pb.gz"),
                                               testing::DataPath("pytorch_kineto_alexnet_train.json.gz"),
                                               testing::DataPath("ptb_lstm_tf1_gpu_step.pbtxt"),
                                               testing::SamplePath("h100_lstm_small_step3.pb.gz"),
                                               testing::DataPath("efficiency/h100_mm_step.json")};
  const Outcome kernels = OneProcess([&] {
    std::vector<std::string> args = {"gpu"};
    args.insert(args.end(), gpu_traces.begin(), gpu_traces.end());
    return args;
  }());
  ASSERT_EQ(kernels.code, 0) << kernels.err;
  EXPECT_NE(kernels.out.find("stream"), std::string::npos) << kernels.out;
  for (const std::vector<std::string>& flags :
       {std::vector<std::string>{}, {"--json"}, {"--step", "1"}, {"--step", "2"}, {"--step", "3"},
        {"--steps", "0-2", "--json"}, {"--rank", "0"}, {"--rank", "2"}, {"--rank", "2-3", "--step", "0"},
        {"--rank", "3", "--step", "7"}, {"--rank", "1"}}) {
    std::vector<std::string> args = {"gpu"};
    args.insert(args.end(), gpu_traces.begin(), gpu_traces.end());
    args.insert(args.end(), flags.begin(), flags.end());
    ExpectSameAsOneProcess(args);
  }
}

TEST(DistributedCliTest, StepsAndGpuFailOnAnUnreadableInputAsInOneProcess) {
  const auto dir = testing::ScratchDir("distributed_bad_steps");
  for (int rank = 0; rank < 6; ++rank) {
    std::filesystem::copy_file(std::filesystem::path(RanksDir()) / ("rank" + std::to_string(rank) + ".json"),
                               dir / ("rank" + std::to_string(rank) + ".json"),
                               std::filesystem::copy_options::overwrite_existing);
  }
  std::ofstream(dir / "rank4.json") << "{\"traceEvents\": [ {\"ph\": ";  // cut short
  const Outcome one = OneProcess({"gpu", dir.string()});
  EXPECT_EQ(one.code, 2);
  EXPECT_NE(one.err.find("rank4.json"), std::string::npos) << one.err;
  ExpectSameAsOneProcess({"steps", dir.string()});
  ExpectSameAsOneProcess({"steps", dir.string(), "--json"});
  ExpectSameAsOneProcess({"gpu", dir.string()});
  ExpectSameAsOneProcess({"gpu", dir.string(), "--json", "--step", "1"});
  // Inputs that cannot be listed (a directory without traces) and a bad flag: the flag's error,
  // as one process checks it first.
  const auto empty = testing::ScratchDir("distributed_no_traces");
  ExpectSameAsOneProcess({"steps", empty.string(), "--top", "0"});
  ExpectSameAsOneProcess({"gpu", empty.string(), "--steps", "3-1"});
  ExpectSameAsOneProcess({"critical-path", empty.string(), "--align", "near"});
  ExpectSameAsOneProcess({"gpu", empty.string()});
}

TEST(DistributedCliTest, StepAndGpuDigestsSurviveTheirBytes) {
  auto traces = trace::ReadTraces({RanksDir() + "/rank5.json"});
  ASSERT_TRUE(traces.ok()) << traces.status().message();
  analysis::InputDigest digest;
  digest.input = 5;
  digest.steps = analysis::StepsOfInput(traces->front());
  digest.gpu = {.source = "rank5.json", .rank = 5, .steps = {1, 2, 3}, .numbered_from = -1,
                .rows = analysis::GpuBreakdownOfInput({&traces->front(), {}})};
  ASSERT_EQ(digest.steps.steps.size(), 3u);
  ASSERT_FALSE(digest.steps.steps[0].kernels.empty());
  ASSERT_FALSE(digest.gpu.rows.empty());
  const std::vector<analysis::InputDigest> sent = {digest};
  const std::string bytes = analysis::SerializeDigests(sent);
  auto back = analysis::ParseDigests(bytes, "test");
  ASSERT_TRUE(back.ok()) << back.status().message();
  ASSERT_EQ(back->size(), 1u);
  // Written back as sent: every field crossed.
  EXPECT_EQ(analysis::SerializeDigests(*back), bytes);
  EXPECT_EQ((*back)[0].steps.steps[2].kernels.size(), digest.steps.steps[2].kernels.size());
  EXPECT_EQ((*back)[0].gpu.rows[0].streams.size(), digest.gpu.rows[0].streams.size());
  EXPECT_EQ((*back)[0].gpu.rows[0].time.busy_ns, digest.gpu.rows[0].time.busy_ns);
  EXPECT_FALSE(analysis::ParseDigests(bytes.substr(0, bytes.size() - 1), "test").ok());
  // Small beside the 48 KB trace: per step its totals by op type, node and kernel (2,630 bytes
  // for its 3 steps), per device and stream a row (155 bytes).
  std::vector<analysis::InputDigest> steps_only = {digest}, gpu_only = {digest};
  steps_only[0].gpu = {};
  gpu_only[0].steps = {};
  EXPECT_LT(analysis::SerializeDigests(steps_only).size(), 4096u);
  EXPECT_LT(analysis::SerializeDigests(gpu_only).size(), 512u);
}

TEST(DistributedCliTest, GpuOnTracesAlreadyScopedByRankKeepsEachOfThem) {
  // `report` runs gpu on the traces --rank kept: the PTB step (TensorFlow) records no rank, so
  // --rank 2 keeps it by its place among all three inputs, not by its place (0) among those kept.
  const std::vector<std::string> inputs = {testing::SamplePath("h100_resnet50_b32_step3.pb.gz"),
                                           testing::DataPath("efficiency/h100_mm_step.json"),
                                           testing::DataPath("ptb_lstm_tf1_gpu_step.pbtxt")};
  std::vector<std::string> args = {"gpu"};
  args.insert(args.end(), inputs.begin(), inputs.end());
  args.insert(args.end(), {"--rank", "2"});
  const Outcome one = OneProcess(args);
  ASSERT_EQ(one.code, 0) << one.err;
  EXPECT_NE(one.out.find("\n  GPU:0 "), std::string::npos) << one.out;
  auto kept = trace::ReadTraces({inputs[2]});
  ASSERT_TRUE(kept.ok()) << kept.status().message();
  const auto commands = AllCommands();
  const auto gpu = std::find_if(commands.begin(), commands.end(), [](const CommandSpec& c) { return c.name == "gpu"; });
  ASSERT_NE(gpu, commands.end());
  auto parsed = ParseFlags({inputs[2], "--rank", "2"}, gpu->all_flags());
  ASSERT_TRUE(parsed.ok());
  std::ostringstream text, err;
  CommandOutput output{.text = text, .err = err};
  ASSERT_TRUE(gpu->analyse({.traces = *kept}, *parsed, output).ok()) << err.str();
  EXPECT_EQ(text.str(), one.out);
}

TEST(DistributedCliTest, GpuRefusesSpreadAStepNumberedOnlyByItsPlaceBesideNumberedOnes) {
  // A trace whose first step records no number and whose second is step 5: with --step 5, where
  // it was read apart its first step's number (its place among every input's steps) was not known,
  // so its digest took both windows; process 0 numbers the first 0 and refuses, naming the file.
  analysis::InputDigest mixed;
  mixed.gpu = {.source = "mixed.json", .rank = 0, .steps = {-1, 5}, .numbered_from = -1, .rows = {}};
  ParsedArgs args;
  args.positional = {"mixed.json"};
  args.values["step"] = "5";
  std::ostringstream text, err;
  CommandOutput output{.text = text, .err = err};
  const Status refused = GpuFromDigests(args, {&mixed, 1}, /*scoped=*/false, output);
  EXPECT_EQ(refused.code(), StatusCode::kInvalidInput);
  EXPECT_NE(refused.message().find("mixed.json: some of its steps record no number"), std::string::npos)
      << refused.message();
  // Numbered where it was read (one process): its second window alone, as selected.
  mixed.gpu.numbered_from = 0;
  EXPECT_TRUE(GpuFromDigests(args, {&mixed, 1}, /*scoped=*/false, output).ok());
}

// ---- efficiency and diff spread over processes ------------------------------------------------

// `count` generated ranks in their own directory, written once per name: with the shapes the op
// cost model costs (efficiency's FLOPs), every kernel `slow_kernel_ns` slower.
std::string GeneratedRanksDir(const std::string& name, int count, int64_t slow_kernel_ns) {
  const auto path = testing::ScratchDir(name);
  for (int rank = 0; rank < count; ++rank) {
    const auto file = path / ("rank" + std::to_string(rank) + ".json");
    if (std::filesystem::exists(file)) continue;
    const analysis::testing::KinetoJsonOptions options{
        .rank = rank, .world_size = count, .iterations_per_step = 20, .slow_kernel_ns = slow_kernel_ns, .shapes = true};
    EXPECT_TRUE(WriteFileAtomically(file.string(), analysis::testing::GenerateKinetoJson(48 << 10, options).json).ok());
  }
  return path.string();
}

const std::string& ShapedRanksDir() {
  static const std::string dir = GeneratedRanksDir("distributed_shaped_ranks", kRanks, 0);
  return dir;
}

TEST(DistributedCliTest, EfficiencyOverProcessesPrintsWhatOneProcessPrints) {
  // Per rank per step, rank rows, the "all" row and the op and kernel tables of 64 ranks.
  const Outcome one = OneProcess({"efficiency", ShapedRanksDir()});
  ASSERT_EQ(one.code, 0) << one.err;
  EXPECT_NE(one.out.find("\n    r63      2 "), std::string::npos) << one.out;  // 2 steps a rank
  EXPECT_NE(one.out.find("\n    all    128 "), std::string::npos) << one.out;
  EXPECT_NE(one.out.find("Op types by time"), std::string::npos) << one.out;
  EXPECT_NE(one.out.find("aten::mm"), std::string::npos) << one.out;
  ExpectSameAsOneProcess({"efficiency", ShapedRanksDir()});
  ExpectSameAsOneProcess({"efficiency", ShapedRanksDir(), "--json"});
  ExpectSameAsOneProcess({"efficiency", ShapedRanksDir(), "--top", "3", "--device", "h100-sxm", "--precision", "bf16"});
  ExpectSameAsOneProcess({"efficiency", ShapedRanksDir(), "--rank", "3-9", "--steps", "1-2", "--json", "--peak", "100"});
  ExpectSameAsOneProcess({"efficiency", RanksDir()});                             // no shapes: time only
  ExpectSameAsOneProcess({"efficiency", ShapedRanksDir(), "--step", "7"});        // no such step: the same error
  ExpectSameAsOneProcess({"efficiency", ShapedRanksDir(), "--peak", "0"});        // a bad flag: the same error
  ExpectSameAsOneProcess({"efficiency", ShapedRanksDir(), "--device", "abacus"});  // an unknown device
  ExpectSameAsOneProcess({"efficiency", testing::DataPath("analysis/gloo_ranks")});
  ExpectSameAsOneProcess({"efficiency", testing::DataPath("analysis/gloo_ranks"), "--json"});
}

// Side A: the first 32 of the 64 ranks; side B: 32 ranks of the same job whose kernels are 5 us
// slower.
std::vector<std::string> DiffArgs(std::vector<std::string> flags) {
  std::vector<std::string> args = {"diff"};
  for (int rank = 0; rank < 32; ++rank) args.push_back(ShapedRanksDir() + "/rank" + std::to_string(rank) + ".json");
  args.push_back("--vs");
  static const std::string slower = GeneratedRanksDir("distributed_slower_ranks", 32, 5000);
  args.push_back(slower);
  for (std::string& flag : flags) args.push_back(std::move(flag));
  return args;
}

TEST(DistributedCliTest, DiffOverProcessesPrintsWhatOneProcessPrints) {
  const Outcome one = OneProcess(DiffArgs({}));
  ASSERT_EQ(one.code, 0) << one.err;
  EXPECT_NE(one.out.find(" steps of 32 runs from 32 traces"), std::string::npos) << one.out;
  EXPECT_NE(one.out.find("regressed"), std::string::npos) << one.out;
  ExpectSameAsOneProcess(DiffArgs({}));
  ExpectSameAsOneProcess(DiffArgs({"--json", "--resamples", "300"}));
  ExpectSameAsOneProcess(DiffArgs({"--top", "4", "--seed", "9", "--resamples", "300"}));
  ExpectSameAsOneProcess(DiffArgs({"--resamples", "0"}));  // a bad flag: the same error
  // The gate: regressed kernels fail it with exit 3, text and --json alike.
  const Outcome gate = OneProcess(DiffArgs({"--fail-on-regression", "10,0.001", "--resamples", "300"}));
  EXPECT_EQ(gate.code, 3) << gate.err;
  EXPECT_NE(gate.out.find("FAILED"), std::string::npos) << gate.out;
  ExpectSameAsOneProcess(DiffArgs({"--fail-on-regression", "10,0.001", "--resamples", "300"}));
  ExpectSameAsOneProcess(DiffArgs({"--fail-on-regression", "10,0.001", "--resamples", "300", "--json"}));
  ExpectSameAsOneProcess(DiffArgs({"--fail-on-regression", "1000", "--resamples", "300"}));  // passes: exit 0
  // A B, one side against itself, the real gloo ranks, and sides that are not there.
  const std::string gloo = testing::DataPath("analysis/gloo_ranks");
  ExpectSameAsOneProcess({"diff", gloo, gloo, "--resamples", "300"});
  ExpectSameAsOneProcess({"diff", gloo, "--vs", gloo + "/rank1.json.gz", gloo + "/rank2.json.gz", "--json"});
  ExpectSameAsOneProcess({"diff", gloo + "/rank0.json.gz", gloo + "/rank1.json.gz", "--json"});
  // Step traces of two ranks (tests/data/analysis/ranks): they wait for their step's other rank
  // and are merged per step where the sides meet; one step a side: the aggregate diff.
  const std::string ranks = testing::DataPath("analysis/ranks");
  ExpectSameAsOneProcess({"diff", ranks, "--vs", ranks, "--json"});
  ExpectSameAsOneProcess({"diff", ranks + "/rank0.pbtxt", ranks + "/rank1.pbtxt"});
  ExpectSameAsOneProcess({"diff", gloo, "/nonexistent/ranks"});
  ExpectSameAsOneProcess({"diff", "--vs", gloo});
  ExpectSameAsOneProcess({"diff", gloo});
}

TEST(DistributedCliTest, EfficiencyAndDiffFailOnAnUnreadableInputAsOneProcessNamingIt) {
  const auto dir = testing::ScratchDir("distributed_bad_shaped");
  for (int rank = 0; rank < 6; ++rank) {
    std::filesystem::copy_file(std::filesystem::path(ShapedRanksDir()) / ("rank" + std::to_string(rank) + ".json"),
                               dir / ("rank" + std::to_string(rank) + ".json"),
                               std::filesystem::copy_options::overwrite_existing);
  }
  std::ofstream(dir / "rank3.json") << "{\"traceEvents\": [ {\"ph\": ";  // cut short
  const Outcome one = OneProcess({"efficiency", dir.string()});
  EXPECT_EQ(one.code, 2);
  EXPECT_NE(one.err.find("rank3.json"), std::string::npos) << one.err;
  ExpectSameAsOneProcess({"efficiency", dir.string()});
  ExpectSameAsOneProcess({"efficiency", dir.string(), "--json"});
  ExpectSameAsOneProcess({"diff", ShapedRanksDir(), "--vs", dir.string()});
  ExpectSameAsOneProcess({"diff", dir.string(), "--vs", ShapedRanksDir(), "--json"});
}

TEST(DistributedCliTest, EfficiencyAndDiffDigestsSurviveTheirBytes) {
  // Written, read and written again: the same bytes (every field of the parts travels).
  std::ostringstream out, err;
  int code = 0;
  for (const auto& args : {std::vector<std::string>{"efficiency", ShapedRanksDir()}, DiffArgs({})}) {
    const auto plan = PlanDistributed(args, 2, out, err, code);
    ASSERT_TRUE(plan.has_value()) << err.str();
    const std::string bytes = DigestShare(*plan, 1);
    auto back = analysis::ParseDigests(bytes, "test");
    ASSERT_TRUE(back.ok()) << back.status().message();
    ASSERT_FALSE(back->empty());
    if (args[0] == "efficiency") {
      ASSERT_TRUE(back->front().efficiency.has_value());
      EXPECT_FALSE(back->front().efficiency->ops.empty());
      EXPECT_FALSE(back->front().efficiency->kernels.empty());
      EXPECT_EQ(back->front().efficiency->steps.size(), 2u);
    } else {
      EXPECT_EQ(plan->sides.size(), plan->inputs.size());
      EXPECT_EQ(std::count(plan->sides.begin(), plan->sides.end(), 1u), 32);
      EXPECT_FALSE(back->front().steps.steps.empty());
      EXPECT_FALSE(back->front().steps.steps.front().kernels.empty());
    }
    EXPECT_EQ(analysis::SerializeDigests(*back), bytes);
    EXPECT_FALSE(analysis::ParseDigests(bytes.substr(0, bytes.size() - 1), "test").ok());
    // Small whatever the trace: sums per step, op type, kernel and collective row, not per op.
    const size_t per_input = bytes.size() / back->size();
    std::cout << args[0] << ": " << per_input << " bytes of digest per input\n";
    EXPECT_LT(per_input, 16u << 10) << args[0];
    // An input on neither side is refused, not left out.
    std::vector<analysis::InputDigest> sideless = {back->front()};
    sideless.front().side = 2;
    EXPECT_FALSE(analysis::ParseDigests(analysis::SerializeDigests(sideless), "test").ok());
  }
}

#if defined(STEPSCOPE_MPIEXEC)
// The real thing: `mpirun -np N stepscope ...`, its stdout and exit code against one process's.
Outcome Command(const std::string& command) {
  const auto dir = testing::ScratchDir("distributed_run");
  const std::string out = (dir / "out").string(), err = (dir / "err").string();
  const int status = std::system((command + " > " + out + " 2> " + err).c_str());
  auto text = [](const std::string& path) {
    auto read = ReadFile(path);
    return read.ok() ? *read : std::string();
  };
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, text(out), text(err)};
}

TEST(DistributedMpiTest, MpirunPrintsWhatOneProcessPrints) {
  for (const std::string& args : {"align " + RanksDir(), "align --json " + RanksDir(), "stragglers " + RanksDir(),
                                 "stragglers --json " + RanksDir(), "critical-path " + RanksDir(),
                                 "critical-path --json --steps 1-2 " + RanksDir()}) {
    const Outcome one = Command(std::string(STEPSCOPE_BINARY) + " " + args);
    ASSERT_EQ(one.code, 0) << one.err;
    for (int processes : {2, 4}) {
      const Outcome spread = Command(std::string(STEPSCOPE_MPIEXEC) + " --oversubscribe --allow-run-as-root -np " +
                                 std::to_string(processes) + " " + STEPSCOPE_BINARY + " " + args);
      EXPECT_EQ(spread.code, 0) << spread.err;
      EXPECT_EQ(spread.out, one.out) << args << " over " << processes;
    }
  }
  // An error reaches process 0 and is printed once, with the same exit code.
  const Outcome one = Command(std::string(STEPSCOPE_BINARY) + " stragglers --rank 99 " + RanksDir());
  const Outcome spread = Command(std::string(STEPSCOPE_MPIEXEC) + " --oversubscribe --allow-run-as-root -np 2 " +
                             STEPSCOPE_BINARY + " stragglers --rank 99 " + RanksDir());
  EXPECT_EQ(one.code, 2);
  EXPECT_EQ(spread.code, 2);
  EXPECT_EQ(spread.err.find("no trace of that rank"), one.err.find("no trace of that rank")) << spread.err;
  EXPECT_EQ(spread.err.find("no trace of that rank", spread.err.find("no trace of that rank") + 1), std::string::npos);
}

// The digests gathered in rounds of 4,093 bytes (11 rounds for the 64 ranks' 44.7 KB, each
// process's bytes split anywhere) give what one process prints; a round size that is not one
// fails with exit 2.
TEST(DistributedMpiTest, MpirunGathersInSmallRoundsAsOneProcessPrints) {
  for (const std::string& args : {"align --json " + RanksDir(), "stragglers " + RanksDir()}) {
    const Outcome one = Command(std::string(STEPSCOPE_BINARY) + " " + args);
    ASSERT_EQ(one.code, 0) << one.err;
    const Outcome spread = Command(std::string(kGatherRoundBytesVariable) + "=4093 " + STEPSCOPE_MPIEXEC +
                                   " --oversubscribe --allow-run-as-root -np 3 " + STEPSCOPE_BINARY + " " + args);
    EXPECT_EQ(spread.code, 0) << spread.err;
    EXPECT_EQ(spread.out, one.out) << args;
  }
  const Outcome bad = Command(std::string(kGatherRoundBytesVariable) + "=0 " + STEPSCOPE_MPIEXEC +
                              " --oversubscribe --allow-run-as-root -np 2 " + STEPSCOPE_BINARY + " align " +
                              RanksDir());
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find(std::string(kGatherRoundBytesVariable) + "=0 is not a byte count"), std::string::npos)
      << bad.err;
}

// steps and gpu under `mpirun -np 2`, on the generated and the real gloo ranks and real GPU
// traces, with --step and --rank, and an error printed once with one process's exit code.
TEST(DistributedMpiTest, MpirunStepsAndGpuPrintWhatOneProcessPrints) {
  const std::string gloo = testing::DataPath("analysis/gloo_ranks");
  const std::string gpu_traces = testing::SamplePath("h100_resnet50_b32_step3.pb.gz") + " " +
                                 testing::DataPath("pytorch_kineto_alexnet_train.json.gz") + " " +
                                 testing::SamplePath("h100_lstm_small_step3.pb.gz");
  for (const std::string& args :
       {"steps " + RanksDir(), "steps --json " + RanksDir(), "steps --json " + gloo, "steps " + gpu_traces,
        "gpu " + RanksDir(), "gpu --json --steps 1-2 --rank 3-9 " + RanksDir(), "gpu --json " + gloo,
        "gpu " + gpu_traces, "gpu --json --step 1 " + gpu_traces}) {
    const Outcome one = Command(std::string(STEPSCOPE_BINARY) + " " + args);
    ASSERT_EQ(one.code, 0) << args << ": " << one.err;
    const Outcome spread = Command(std::string(STEPSCOPE_MPIEXEC) + " --oversubscribe --allow-run-as-root -np 2 " +
                                   STEPSCOPE_BINARY + " " + args);
    EXPECT_EQ(spread.code, 0) << args << ": " << spread.err;
    EXPECT_EQ(spread.out, one.out) << args;
  }
  const Outcome one = Command(std::string(STEPSCOPE_BINARY) + " gpu --step 7 " + RanksDir());
  const Outcome spread = Command(std::string(STEPSCOPE_MPIEXEC) + " --oversubscribe --allow-run-as-root -np 2 " +
                                 STEPSCOPE_BINARY + " gpu --step 7 " + RanksDir());
  EXPECT_EQ(one.code, 2);
  EXPECT_EQ(spread.code, 2);
  EXPECT_TRUE(spread.err.starts_with(one.err)) << spread.err;  // then mpirun's own note on the exit code
  EXPECT_EQ(spread.err.find(one.err, 1), std::string::npos) << spread.err;
}

// efficiency and diff under `mpirun -np 2`: stdout, stderr's errors and exit codes (the gate's 3,
// an unreadable input's 2) as one process's.
TEST(DistributedMpiTest, MpirunEfficiencyAndDiffPrintWhatOneProcessPrints) {
  const auto bad = testing::ScratchDir("distributed_mpi_bad");
  std::filesystem::copy_file(std::filesystem::path(ShapedRanksDir()) / "rank0.json", bad / "rank0.json",
                             std::filesystem::copy_options::overwrite_existing);
  std::ofstream(bad / "rank1.json") << "{\"traceEvents\": [ {\"ph\": ";  // cut short
  auto joined = [](const std::vector<std::string>& args) {
    std::string line;
    for (size_t i = 1; i < args.size(); ++i) line += " " + args[i];
    return line;
  };
  const std::string gloo = testing::DataPath("analysis/gloo_ranks");
  for (const std::string& args :
       {"efficiency " + ShapedRanksDir(), "efficiency --json " + ShapedRanksDir(), "efficiency " + gloo,
        "efficiency " + bad.string(), "diff" + joined(DiffArgs({"--resamples", "300"})),
        "diff" + joined(DiffArgs({"--json", "--resamples", "300"})),
        "diff" + joined(DiffArgs({"--fail-on-regression", "10,0.001", "--resamples", "300"})),
        "diff " + gloo + " --vs " + bad.string()}) {
    const Outcome one = Command(std::string(STEPSCOPE_BINARY) + " " + args);
    const Outcome spread = Command(std::string(STEPSCOPE_MPIEXEC) + " --oversubscribe --allow-run-as-root -np 2 " +
                                   STEPSCOPE_BINARY + " " + args);
    EXPECT_EQ(spread.code, one.code) << args << "\n" << spread.err;
    EXPECT_EQ(spread.out, one.out) << args;
    if (one.code != 0) {
      EXPECT_NE(spread.err.find(one.err), std::string::npos) << args << "\n" << spread.err;
    }
  }
}
#endif

}  // namespace
}  // namespace stepscope::cli
