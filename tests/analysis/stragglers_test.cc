// stragglers (analysis/stragglers.h) on per-rank traces whose straggler, lateness and reason are
// known by construction: our step traces (one file per rank and step, host work only) and
// PyTorch-style traces (one per rank, ProfilerStep#N windows, kernels linked to their launches).
#include <gtest/gtest.h>

#include <limits>

#include "profiler/analysis/merge.h"
#include "profiler/analysis/steps.h"
#include "profiler/analysis/stragglers.h"
#include "trace_fixtures.h"

namespace stepscope::analysis {
namespace {

using testing::TraceMaker;
using trace::FlowKind;
using trace::SliceKind;
using trace::TrackKind;

constexpr int64_t kUs = 1000, kMs = 1000 * 1000;
constexpr int64_t kEpoch = 1'700'000'000'000'000'000;  // absolute ns, as real traces have
constexpr int kCompute = static_cast<int>(StragglerCategory::kCompute);
constexpr int kCommunication = static_cast<int>(StragglerCategory::kCommunication);
constexpr int kMemory = static_cast<int>(StragglerCategory::kMemory);
constexpr int kInput = static_cast<int>(StragglerCategory::kInput);

// One step trace of one rank, as stepscope-train writes it on CPU: input split, compute, the
// all-reduce (a collective), then apply; times from `t0`.
trace::Trace StepTrace(int32_t rank, int64_t step, int64_t t0, int64_t input, int64_t compute,
                       int64_t allreduce = 1 * kMs, const std::string& host = "host-a", int64_t clock_sync = 0,
                       int64_t apply = 100 * kUs) {
  TraceMaker m;
  const uint32_t h = m.Host(host);
  const uint32_t cpu = m.Device("/job:worker/replica:0/task:" + std::to_string(rank) + "/device:CPU:0", h);
  const uint32_t ops = m.Lane("ops", cpu, TrackKind::kOpLane);
  m.Slice(ops, t0 - 50 * kUs, t0 + 100 * kMs, "step annotation", "", SliceKind::kAnnotation);  // never work
  m.Slice(ops, t0, t0 + input, "tower_0/TrainInput/split", "Slice", SliceKind::kMemcpy);
  m.Slice(ops, t0 + input, t0 + input + compute, "tower_0/MatMul", "MatMul");
  m.Slice(ops, t0 + input + compute, t0 + input + compute + allreduce, "AllReduce", "MpiAllReduce",
          SliceKind::kCollective);
  m.Slice(ops, t0 + input + compute + allreduce, t0 + input + compute + allreduce + apply, "ApplyGradient", "ApplySGD");
  m.builder().step_info().rank = rank;
  m.builder().step_info().step = step;
  m.builder().step_info().world_size = 4;
  m.builder().step_info().host = host;
  m.builder().step_info().clock_sync_ns = clock_sync;
  m.builder().SetSource(trace::SourceFormat::kSynthetic, "rank" + std::to_string(rank) + "_step" + std::to_string(step));
  return std::move(m).Build();
}

const StepStragglers& StepOf(const StragglerReport& r, int64_t step) {
  for (const auto& s : r.steps) {
    if (s.step == step) return s;
  }
  ADD_FAILURE() << "no step " << step;
  static StepStragglers none;
  return none;
}

// 4 ranks, steps 1-4: rank 2 computes 5 ms longer in step 3, rank 1 reads its input 3 ms longer
// in step 4. The ranks do not wait for each other here (each all-reduce takes 1 ms), so the extra
// time shows as lateness.
TEST(StragglersTest, OurStepTracesKnownByConstruction) {
  std::vector<trace::Trace> traces;
  for (int64_t step = 1; step <= 4; ++step) {
    for (int32_t rank = 0; rank < 4; ++rank) {
      const int64_t input = step == 4 && rank == 1 ? 3 * kMs + 200 * kUs : 200 * kUs;
      const int64_t compute = step == 3 && rank == 2 ? 9 * kMs : 4 * kMs;
      traces.push_back(StepTrace(rank, step, kEpoch + step * 100 * kMs, input, compute));
    }
  }
  const auto report = ComputeStragglers(traces);
  ASSERT_TRUE(report.ok()) << report.status().message();
  ASSERT_EQ(report->steps.size(), 4u);
  EXPECT_TRUE(report->single_rank_steps.empty());

  const StepStragglers& even = StepOf(*report, 1);
  EXPECT_EQ(even.ranks.size(), 4u);
  EXPECT_EQ(even.straggler, 0);  // all end together: the lowest rank
  EXPECT_EQ(even.lateness_ns, 0);
  EXPECT_EQ(even.reason, "none");

  const StepStragglers& s3 = StepOf(*report, 3);
  EXPECT_EQ(s3.straggler, 2);
  EXPECT_EQ(s3.lateness_ns, 5 * kMs);
  EXPECT_EQ(s3.lateness_vs_median_ns, 5 * kMs);
  EXPECT_EQ(s3.reason, "compute");
  EXPECT_EQ(s3.excess_ns[kCompute], 5 * kMs);
  EXPECT_EQ(s3.excess_ns[kInput], 0);
  EXPECT_EQ(s3.excess_ns[kCommunication], 0);
  const RankStep& r2 = s3.ranks[2];
  EXPECT_EQ(r2.rank, 2);
  EXPECT_FALSE(r2.gpu);
  EXPECT_EQ(r2.work, 4);  // the annotation is not work
  EXPECT_EQ(r2.begin_ns, 0);
  EXPECT_EQ(r2.end_ns, 200 * kUs + 9 * kMs + 1 * kMs + 100 * kUs);
  EXPECT_EQ(r2.lateness_ns, 5 * kMs);
  EXPECT_EQ(r2.input_ns(), 200 * kUs);  // TrainInput/split: input, not a copy
  EXPECT_EQ(r2.memory_ns(), 0);
  EXPECT_EQ(r2.compute_ns(), 9 * kMs + 100 * kUs);
  EXPECT_EQ(r2.communication_ns(), 1 * kMs);
  EXPECT_EQ(r2.busy_ns, 200 * kUs + 9 * kMs + 1 * kMs + 100 * kUs);
  EXPECT_EQ(s3.ranks[0].lateness_ns, 0);

  const StepStragglers& s4 = StepOf(*report, 4);
  EXPECT_EQ(s4.straggler, 1);
  EXPECT_EQ(s4.lateness_ns, 3 * kMs);
  EXPECT_EQ(s4.reason, "input");
  EXPECT_EQ(s4.excess_ns[kInput], 3 * kMs);
  EXPECT_EQ(s4.excess_ns[kCompute], 0);

  ASSERT_EQ(report->ranks.size(), 4u);
  EXPECT_EQ(report->ranks[2].straggler_steps, 1);
  EXPECT_EQ(report->ranks[2].lateness_max_ns, 5 * kMs);
  EXPECT_EQ(report->ranks[1].straggler_steps, 1);
  EXPECT_EQ(report->ranks[0].straggler_steps, 2);  // steps 1 and 2: ties
  EXPECT_EQ(report->ranks[3].steps, 4);

  // --steps 3-3
  StragglerOptions only3;
  only3.steps = std::pair<int64_t, int64_t>{3, 3};
  const auto scoped = ComputeStragglers(traces, only3);
  ASSERT_TRUE(scoped.ok());
  ASSERT_EQ(scoped->steps.size(), 1u);
  EXPECT_EQ(scoped->steps[0].step, 3);
  EXPECT_EQ(scoped->steps[0].lateness_ns, 5 * kMs);
}

// A synchronising all-reduce: the ranks leave it together, so the early ones wait in it. Rank 1
// computes 2 ms longer: the others' collective time is 2 ms longer than its own (their collective
// wait); the rank they waited for is rank 1, though every rank ends at the same time.
TEST(StragglersTest, EarlyRanksWaitInTheCollective) {
  std::vector<trace::Trace> traces;
  for (int32_t rank = 0; rank < 3; ++rank) {
    const int64_t compute = rank == 1 ? 6 * kMs : 4 * kMs;
    // All-reduce ends at 0.2 + 6 + 1 ms for every rank.
    traces.push_back(StepTrace(rank, 7, kEpoch, 200 * kUs, compute, 7 * kMs - compute));
  }
  const auto report = ComputeStragglers(traces);
  ASSERT_TRUE(report.ok()) << report.status().message();
  ASSERT_EQ(report->steps.size(), 1u);
  const StepStragglers& s = report->steps[0];
  // They end together; rank 1's own end (its end less its wait, 0) is 2 ms after the others'.
  EXPECT_EQ(s.straggler, 1);
  EXPECT_EQ(s.lateness_ns, 2 * kMs);
  EXPECT_EQ(s.reason, "compute");
  EXPECT_EQ(s.waited_for, 1);
  EXPECT_EQ(s.others_waited_ns, 2 * kMs);
  EXPECT_EQ(s.ranks[0].collective_wait_ns, 2 * kMs);
  EXPECT_EQ(s.ranks[1].collective_wait_ns, 0);
  EXPECT_EQ(s.ranks[2].collective_wait_ns, 2 * kMs);
  EXPECT_EQ(s.ranks[0].communication_ns(), 3 * kMs);
}

// Two ranks, rank 1 late by 7 ms into a synchronising all-reduce: rank 0 waits 7 ms in it, both
// leave it at the same instant and end together. The straggler is rank 1, whom rank 0 waited
// for: rank 0's collective wait is 7 ms, rank 1's none.
TEST(StragglersTest, TheLateRankIsWaitedForNotTheOneWaiting) {
  constexpr int64_t kLate = 7 * kMs;
  std::vector<trace::Trace> traces;
  for (int32_t rank = 0; rank < 2; ++rank) {
    const int64_t compute = 4 * kMs + (rank == 1 ? kLate : 0);
    // The all-reduce ends at 0.2 + 4 + 7 + 1 ms on both ranks.
    traces.push_back(StepTrace(rank, 552, kEpoch, 200 * kUs, compute, 4 * kMs + kLate + 1 * kMs - compute));
  }
  const auto report = ComputeStragglers(traces);
  ASSERT_TRUE(report.ok()) << report.status().message();
  ASSERT_EQ(report->steps.size(), 1u);
  const StepStragglers& s = report->steps[0];
  EXPECT_EQ(s.step, 552);
  EXPECT_EQ(s.ranks[0].end_ns, s.ranks[1].end_ns);  // the collective lines their ends up
  EXPECT_EQ(s.straggler, 1);
  EXPECT_EQ(s.lateness_ns, kLate);
  EXPECT_EQ(s.reason, "compute");
  EXPECT_EQ(s.excess_ns[kCompute], kLate);
  EXPECT_EQ(s.waited_for, 1);
  EXPECT_EQ(s.others_waited_ns, kLate);
  EXPECT_EQ(s.ranks[0].collective_wait_ns, kLate);
  EXPECT_EQ(s.ranks[1].collective_wait_ns, 0);
  EXPECT_EQ(s.ranks[0].lateness_ns, 0);
  EXPECT_EQ(s.ranks[1].lateness_ns, kLate);
  EXPECT_EQ(s.excess_ns[kCommunication], 0);  // its all-reduce was short: it did not wait
  // The same with the ranks' roles swapped: rank 0 late, rank 1 waiting.
  std::vector<trace::Trace> swapped;
  for (int32_t rank = 0; rank < 2; ++rank) {
    const int64_t compute = 4 * kMs + (rank == 0 ? kLate : 0);
    swapped.push_back(StepTrace(rank, 552, kEpoch, 200 * kUs, compute, 4 * kMs + kLate + 1 * kMs - compute));
  }
  const auto other = ComputeStragglers(swapped);
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(other->steps[0].straggler, 0);
  EXPECT_EQ(other->steps[0].waited_for, 0);
  EXPECT_EQ(other->steps[0].lateness_ns, kLate);
  EXPECT_EQ(other->steps[0].ranks[1].collective_wait_ns, kLate);

  // Rank 1 waits 7 ms for rank 0 in the all-reduce, then applies its gradients 50 us longer: it
  // ends last, by 50 us, and its longer communication is its wait, not why it is late.
  std::vector<trace::Trace> after;
  for (int32_t rank = 0; rank < 2; ++rank) {
    const int64_t compute = 4 * kMs + (rank == 0 ? kLate : 0);
    after.push_back(StepTrace(rank, 553, kEpoch, 200 * kUs, compute, 4 * kMs + kLate + 1 * kMs - compute, "host-a", 0,
                              rank == 1 ? 150 * kUs : 100 * kUs));
  }
  const auto late_apply = ComputeStragglers(after);
  ASSERT_TRUE(late_apply.ok());
  const StepStragglers& a = late_apply->steps[0];
  EXPECT_EQ(a.ranks[1].end_ns - a.ranks[0].end_ns, 50 * kUs);
  EXPECT_EQ(a.straggler, 0);
  EXPECT_EQ(a.lateness_ns, kLate - 50 * kUs);
  EXPECT_EQ(a.reason, "compute");
  EXPECT_EQ(a.excess_ns[kCommunication], 0);
  EXPECT_EQ(a.waited_for, 0);
  EXPECT_EQ(a.others_waited_ns, kLate);

  // Both reach the all-reduce together; rank 1's runs 3 ms longer (a slower link or a busier
  // core) and it ends 3 ms later: slow in communication, not waiting, and nobody waited for it.
  std::vector<trace::Trace> slow;
  for (int32_t rank = 0; rank < 2; ++rank) {
    slow.push_back(StepTrace(rank, 554, kEpoch, 200 * kUs, 4 * kMs, rank == 1 ? 4 * kMs : 1 * kMs));
  }
  const auto slow_comm = ComputeStragglers(slow);
  ASSERT_TRUE(slow_comm.ok());
  const StepStragglers& c = slow_comm->steps[0];
  EXPECT_EQ(c.straggler, 1);
  EXPECT_EQ(c.lateness_ns, 3 * kMs);
  EXPECT_EQ(c.reason, "communication");
  EXPECT_EQ(c.excess_ns[kCommunication], 3 * kMs);
  EXPECT_EQ(c.ranks[0].collective_wait_ns, 0);
  EXPECT_EQ(c.ranks[1].collective_wait_ns, 0);
  EXPECT_EQ(c.waited_for, -1);
}

// Clocks of another host: rank 1's clock runs 1 s ahead; its clock sync record says so.
TEST(StragglersTest, AlignsClocksOfOtherHosts) {
  std::vector<trace::Trace> traces;
  traces.push_back(StepTrace(0, 5, kEpoch, 200 * kUs, 4 * kMs, 1 * kMs, "host-a", kEpoch - 10 * kMs));
  // Rank 1 computes 2 ms longer; its clock reads 1 s more.
  traces.push_back(StepTrace(1, 5, kEpoch + 1000 * kMs, 200 * kUs, 6 * kMs, 1 * kMs, "host-b",
                             kEpoch - 10 * kMs + 1000 * kMs));
  const auto report = ComputeStragglers(traces, {.align = AlignMethod::kBarrier});
  ASSERT_TRUE(report.ok()) << report.status().message();
  ASSERT_EQ(report->steps.size(), 1u);
  EXPECT_EQ(report->inputs[1].alignment, "clock_sync");
  EXPECT_EQ(report->inputs[1].offset_ns, -1000 * kMs);
  EXPECT_EQ(report->steps[0].straggler, 1);
  EXPECT_EQ(report->steps[0].lateness_ns, 2 * kMs);
  EXPECT_EQ(report->steps[0].ranks[1].begin_ns, 0);
  // The step's origin is on rank 0's clock (the reference): the start of both ranks' input op;
  // in the merge of the same inputs the step starts at origin - the merged trace's epoch.
  EXPECT_EQ(report->steps[0].origin_ns, kEpoch);
  const MergeResult merged = MergeTraces(std::move(traces), AlignMethod::kBarrier);
  int64_t first_work = std::numeric_limits<int64_t>::max();
  for (const trace::Slice& s : merged.trace.slices()) {
    if (!trace::IsAnnotationOrSync(s.kind)) first_work = std::min(first_work, s.start_ns);
  }
  EXPECT_EQ(report->steps[0].origin_ns - merged.trace.epoch_ns(), first_work);
  // Each input's process track in the merge is the one its slices hang under.
  ASSERT_EQ(merged.report.inputs.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    const trace::Track& process = merged.trace.tracks()[merged.report.inputs[i].process_track];
    EXPECT_EQ(merged.trace.str(process.name), merged.report.inputs[i].process);
    EXPECT_EQ(process.parent, -1);
  }
}

TEST(StragglersTest, SameRankAndStepTwiceIsAnError) {
  std::vector<trace::Trace> traces;
  traces.push_back(StepTrace(0, 1, kEpoch, 200 * kUs, 4 * kMs));
  traces.push_back(StepTrace(0, 1, kEpoch, 200 * kUs, 4 * kMs));
  const auto report = ComputeStragglers(traces);
  ASSERT_FALSE(report.ok());
  EXPECT_NE(report.status().message().find("rank 0 step 1 is in both rank0_step1 and rank0_step1"), std::string::npos)
      << report.status().message();
}

// A PyTorch-style trace of one rank: ProfilerStep#1..4 windows of 20 ms on the host thread; per
// step a gemm kernel after `input` (launched 0.5 ms before it), then an NCCL all-reduce kernel.
trace::Trace KinetoRank(int32_t rank) {
  TraceMaker m;
  const uint32_t host = m.Host("python3");
  const uint32_t thread = m.Lane("thread 1", host, TrackKind::kOpLane, false);
  const uint32_t gpu = m.Device("GPU 0", host);
  const uint32_t stream = m.Lane("stream 7", gpu, TrackKind::kGpuStream);
  const uint32_t nccl = m.Lane("stream 20", gpu, TrackKind::kGpuStream);
  for (int64_t step = 1; step <= 4; ++step) {
    const int64_t t = kEpoch + (step - 1) * 20 * kMs;
    m.Slice(thread, t, t + 20 * kMs, "ProfilerStep#" + std::to_string(step), "", SliceKind::kAnnotation);
    const int64_t input = step == 4 && rank == 1 ? 4 * kMs : 1 * kMs;
    const int64_t compute = step == 3 && rank == 2 ? 9 * kMs : 4 * kMs;
    const uint32_t l1 = m.Slice(thread, t + input - 500 * kUs, t + input - 490 * kUs, "cudaLaunchKernel", "",
                                SliceKind::kRuntime);
    const uint32_t l2 = m.Slice(thread, t + input - 400 * kUs, t + input - 390 * kUs, "cudaLaunchKernel", "",
                                SliceKind::kRuntime);
    const uint32_t k1 = m.Slice(stream, t + input, t + input + compute, "sm80_gemm", "", SliceKind::kKernel);
    const uint32_t k2 = m.Slice(nccl, t + input + compute, t + input + compute + 1 * kMs,
                                "ncclKernel_AllReduce_RING_LL_Sum_float", "", SliceKind::kKernel);
    m.Slice(stream, t + input, t + input + compute, "gpu annotation", "", SliceKind::kAnnotation);  // not work
    m.Flow(l1, k1, FlowKind::kLaunch);
    m.Flow(l2, k2, FlowKind::kLaunch);
    if (step == 2 && rank == 3) {
      // Launched at 19 ms, inside step 2's window; runs after it ended: still step 2's work.
      const uint32_t l3 = m.Slice(thread, t + 19 * kMs, t + 19 * kMs + 10 * kUs, "cudaMemcpyAsync", "",
                                  SliceKind::kRuntime);
      const uint32_t c = m.Slice(stream, t + 20 * kMs + 500 * kUs, t + 22 * kMs, "Memcpy DtoH", "", SliceKind::kMemcpy);
      m.Flow(l3, c, FlowKind::kLaunch);
    }
  }
  m.builder().step_info().rank = rank;
  m.builder().step_info().world_size = 4;
  m.builder().SetSource(trace::SourceFormat::kChromeJson, "rank" + std::to_string(rank) + ".json");
  return std::move(m).Build();
}

TEST(StragglersTest, PyTorchRanksKnownByConstruction) {
  std::vector<trace::Trace> traces;
  for (int32_t rank = 3; rank >= 0; --rank) traces.push_back(KinetoRank(rank));  // any input order
  const auto report = ComputeStragglers(traces, {.align = AlignMethod::kClock});
  ASSERT_TRUE(report.ok()) << report.status().message();
  ASSERT_EQ(report->steps.size(), 4u);

  const StepStragglers& s1 = StepOf(*report, 1);
  EXPECT_EQ(s1.lateness_ns, 0);
  ASSERT_EQ(s1.ranks.size(), 4u);
  for (const RankStep& r : s1.ranks) {
    EXPECT_TRUE(r.gpu);
    EXPECT_EQ(r.work, 2);
    EXPECT_EQ(r.input_ns(), 1 * kMs);  // window start to the first kernel
    EXPECT_EQ(r.compute_ns(), 4 * kMs);
    EXPECT_EQ(r.communication_ns(), 1 * kMs);
    EXPECT_EQ(r.begin_ns, 0);  // the first kernel, 1 ms into the window
    EXPECT_EQ(r.end_ns, 5 * kMs);
  }

  // The copy rank 3 launched in step 2 ends at 22 ms of that step's window.
  const StepStragglers& s2 = StepOf(*report, 2);
  EXPECT_EQ(s2.straggler, 3);
  EXPECT_EQ(s2.lateness_ns, 16 * kMs);
  EXPECT_EQ(s2.reason, "memory");
  EXPECT_EQ(s2.excess_ns[kMemory], 1500 * kUs);

  const StepStragglers& s3 = StepOf(*report, 3);
  EXPECT_EQ(s3.straggler, 2);
  EXPECT_EQ(s3.lateness_ns, 5 * kMs);
  EXPECT_EQ(s3.reason, "compute");
  EXPECT_EQ(s3.excess_ns[kCompute], 5 * kMs);
  // Step 3's rank 3 did not get step 2's copy.
  EXPECT_EQ(s3.ranks[3].memory_ns(), 0);

  const StepStragglers& s4 = StepOf(*report, 4);
  EXPECT_EQ(s4.straggler, 1);
  EXPECT_EQ(s4.lateness_ns, 3 * kMs);
  EXPECT_EQ(s4.reason, "input");
  EXPECT_EQ(s4.excess_ns[kInput], 3 * kMs);
  EXPECT_EQ(s4.ranks[1].input_ns(), 4 * kMs);
}

TEST(StragglersTest, OneRankHasNothingToCompare) {
  std::vector<trace::Trace> traces;
  traces.push_back(KinetoRank(0));
  const auto report = ComputeStragglers(traces);
  ASSERT_TRUE(report.ok());
  EXPECT_TRUE(report->steps.empty());
  EXPECT_EQ(report->single_rank_steps, (std::vector<int64_t>{1, 2, 3, 4}));
}

// One run's step traces (`--profile_every 1`: one file per step, one rank) merged into one trace,
// as `merge` and the viewer open a directory: the merged trace has the run's steps, consecutive
// and numbered as the files are, not one step of the whole merge.
TEST(MergeSteps, OneRanksStepFilesStayItsNumberedSteps) {
  std::vector<trace::Trace> traces;
  std::vector<std::pair<int64_t, int64_t>> spans;  // each input's span, absolute
  for (int64_t step = 551; step <= 558; ++step) {
    traces.push_back(StepTrace(0, step, kEpoch + (step - 551) * 100 * kMs, 200 * kUs, 4 * kMs + step * kUs));
    const trace::Trace& t = traces.back();
    spans.emplace_back(t.epoch_ns() + t.span_begin_ns(), t.epoch_ns() + t.span_end_ns());
  }
  const MergeResult merged = MergeTraces(std::move(traces));
  EXPECT_TRUE(merged.report.stragglers.empty());  // one rank: nothing to compare
  const std::vector<Step> steps = StepsOfTrace(merged.trace);
  ASSERT_EQ(steps.size(), 8u);
  for (size_t i = 0; i < steps.size(); ++i) {
    EXPECT_EQ(steps[i].step, 551 + static_cast<int64_t>(i));
    EXPECT_EQ(steps[i].marker, "trace");
    EXPECT_EQ(merged.trace.epoch_ns() + steps[i].begin_ns, spans[i].first);
    EXPECT_EQ(steps[i].duration_ns, spans[i].second - spans[i].first);
    // Its totals are its own step's: the MatMul of that step only.
    int64_t matmul = 0;
    for (const StepOpTotal& t : steps[i].op_types) {
      if (t.name == "MatMul") matmul = t.total_ns;
    }
    EXPECT_EQ(matmul, 4 * kMs + (551 + static_cast<int64_t>(i)) * kUs);
  }

  // Two ranks of each of two steps: one step per number, over both ranks' windows.
  std::vector<trace::Trace> ranks;
  for (int64_t step = 1; step <= 2; ++step) {
    for (int32_t rank = 0; rank < 2; ++rank) {
      ranks.push_back(StepTrace(rank, step, kEpoch + step * 100 * kMs, 200 * kUs, rank == 1 ? 6 * kMs : 4 * kMs));
    }
  }
  const MergeResult both = MergeTraces(std::move(ranks));
  const std::vector<Step> merged_steps = StepsOfTrace(both.trace, /*with_totals=*/false);
  ASSERT_EQ(merged_steps.size(), 2u);
  EXPECT_EQ(merged_steps[0].step, 1);
  EXPECT_EQ(merged_steps[0].marker, "ranks merged");
  EXPECT_EQ(merged_steps[1].step, 2);
}

// merge numbers the steps it compares as `stragglers` does: PyTorch traces have no step number,
// their ProfilerStep#N windows do.
TEST(MergeSteps, StragglersPerProfilerStepNotPerInput) {
  std::vector<trace::Trace> traces;
  for (int32_t rank = 0; rank < 4; ++rank) traces.push_back(KinetoRank(rank));
  const auto expected = ComputeStragglers(traces, {.align = AlignMethod::kClock});
  ASSERT_TRUE(expected.ok());
  const MergeResult merged = MergeTraces(std::move(traces), AlignMethod::kClock);
  ASSERT_EQ(merged.report.stragglers.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    const StepStraggler& s = merged.report.stragglers[i];
    EXPECT_EQ(s.step, static_cast<int64_t>(i) + 1);
    EXPECT_EQ(s.ranks, 4u);
    EXPECT_EQ(merged.report.inputs[s.input].rank, expected->steps[i].straggler);
    EXPECT_EQ(s.lag_ns, expected->steps[i].lateness_ns);
  }
  EXPECT_EQ(merged.report.inputs[merged.report.stragglers[2].input].rank, 2);  // computes 5 ms longer in step 3
  EXPECT_EQ(merged.report.stragglers[2].lag_ns, 5 * kMs);
  for (const MergedInput& input : merged.report.inputs) EXPECT_EQ(input.step, -1);  // not recorded
}

}  // namespace
}  // namespace stepscope::analysis
