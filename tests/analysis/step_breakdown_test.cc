// Step breakdown (step_breakdown.h): the parts add up to each step, each part equals a recount by
// a sweep over every boundary of the step's work, and a step slowed by a stretched input op is
// marked slow and input-bound.
#include "profiler/analysis/step_breakdown.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <map>

#include "base/file_io.h"
#include "profiler/analysis/gpu_work.h"
#include "profiler/analysis/merge.h"
#include "profiler/analysis/step_analyses.h"
#include "profiler/analysis/stragglers.h"
#include "profiler/trace/slice_details.h"
#include "profiler/formats/inputs.h"
#include "profiler/formats/reader.h"
#include "stepscope/tf/run_metadata.pb.h"
#include "test_util.h"
#include "trace_fixtures.h"

namespace stepscope::analysis {
namespace {

using trace::Slice;
using trace::SliceKind;
using trace::Trace;

constexpr int kInput = static_cast<int>(StepPart::kInput), kCompute = static_cast<int>(StepPart::kCompute),
              kComm = static_cast<int>(StepPart::kCommunication), kIdle = static_cast<int>(StepPart::kIdle);

// The recount: every slice of work as an interval with its class (the documented rule, written
// out again), then a sweep over all boundaries in the window giving each elementary piece to the
// first class that covers it: device compute, communication, input, host work; else idle.
std::array<int64_t, kStepParts> Recount(const Trace& trace, int64_t begin, int64_t end) {
  enum { kDevice, kCommunication, kInputWork, kHost, kClasses };
  std::vector<std::pair<int64_t, int>> events[kClasses];  // (time, +1 / -1)
  for (const Slice& s : trace.slices()) {
    if (s.duplicate() || s.kind == SliceKind::kSync || s.kind == SliceKind::kPythonFrame) continue;
    const bool gpu = trace::IsGpuLane(trace.tracks()[s.track].kind);
    if (gpu && !trace::IsDeviceWork(s.kind)) continue;
    const std::string_view name = trace.str(trace.slice_name(s)), op = trace.str(trace.slice_op_type(s));
    int c = kHost;
    if (s.kind == SliceKind::kAnnotation) {
      if (gpu || !IsInputOp(name, op)) continue;
      c = kInputWork;
    } else if (IsCommunication(trace, s) || (s.kind == SliceKind::kOp && IsCollectiveOpType(op)) ||
               (s.kind == SliceKind::kMemcpy && trace::ParseCopyName(name).kind == "PtoP")) {
      c = kCommunication;
    } else if (gpu) {
      c = kDevice;
    } else if (IsInputOp(name, op)) {
      c = kInputWork;
    }
    const int64_t from = std::max(s.start_ns, begin), to = std::min(s.end_ns(), end);
    if (from >= to) continue;
    events[c].push_back({from, +1});
    events[c].push_back({to, -1});
  }
  std::vector<int64_t> cuts = {begin, end};
  for (const auto& list : events) {
    for (const auto& e : list) cuts.push_back(e.first);
  }
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  // Coverage count of each class on each piece [cuts[i], cuts[i + 1]).
  std::vector<std::array<int, kClasses>> depth(cuts.size(), std::array<int, kClasses>{});
  for (int c = 0; c < kClasses; ++c) {
    std::vector<int> delta(cuts.size() + 1, 0);
    for (const auto& [t, d] : events[c]) delta[std::lower_bound(cuts.begin(), cuts.end(), t) - cuts.begin()] += d;
    int running = 0;
    for (size_t i = 0; i < cuts.size(); ++i) depth[i][c] = running += delta[i];
  }
  std::array<int64_t, kStepParts> parts{};
  for (size_t i = 0; i + 1 < cuts.size(); ++i) {
    const int64_t length = cuts[i + 1] - cuts[i];
    const auto& d = depth[i];
    const int part = d[kDevice] > 0 ? kCompute : d[kCommunication] > 0 ? kComm : d[kInputWork] > 0 ? kInput
                     : d[kHost] > 0 ? kCompute : kIdle;
    parts[static_cast<size_t>(part)] += length;
  }
  return parts;
}

void ExpectSplitsAddUpAndMatchRecount(const Trace& trace, const StepBreakdown& report) {
  int64_t total = 0;
  for (const StepSplit& s : report.steps) {
    SCOPED_TRACE("step " + std::to_string(s.number));
    int64_t sum = 0;
    for (int p = 0; p < kStepParts; ++p) {
      EXPECT_GE(s.part_ns[p], 0);
      sum += s.part_ns[p];
    }
    EXPECT_EQ(sum, s.duration_ns);
    const auto recount = Recount(trace, s.begin_ns, s.end_ns);
    for (int p = 0; p < kStepParts; ++p) {
      EXPECT_EQ(s.part_ns[p], recount[static_cast<size_t>(p)]) << StepPartName(static_cast<StepPart>(p));
    }
    total += s.duration_ns;
  }
  EXPECT_EQ(report.total_ns, total);
}

TEST(StepBreakdownTest, EachInstantGoesToTheFirstPartThatRunsInIt) {
  testing::TraceMaker m;
  const uint32_t host = m.Host("host");
  const uint32_t cpu = m.Device("CPU:0", host), gpu = m.Device("GPU:0", host);
  const uint32_t thread = m.Lane("thread", cpu, trace::TrackKind::kOpLane, false);
  const uint32_t stream = m.Lane("stream 7", gpu, trace::TrackKind::kGpuStream, false);
  m.Slice(thread, 0, 300, "IteratorGetNext");   // input 0-100 alone, then under the kernel
  m.Slice(stream, 100, 200, "gemm", "gemm", SliceKind::kKernel);
  m.Slice(thread, 400, 600, "AllReduce");       // communication 400-600 (collective op type)
  m.Slice(thread, 600, 700, "MatMul");          // host compute
  m.Slice(stream, 800, 1000, "ncclAllReduceKernel", "", SliceKind::kKernel);  // communication
  const Trace trace = std::move(m).Build();
  const StepBreakdown report = ComputeStepBreakdown(trace);
  ASSERT_EQ(report.steps.size(), 1u);
  const StepSplit& s = report.steps.front();
  EXPECT_EQ(s.duration_ns, 1000);
  EXPECT_EQ(s.part_ns[kCompute], 100 + 100);   // the kernel, the MatMul
  EXPECT_EQ(s.part_ns[kInput], 100 + 100);     // IteratorGetNext without the kernel under it
  EXPECT_EQ(s.part_ns[kComm], 200 + 200);
  EXPECT_EQ(s.part_ns[kIdle], 100 + 100);     // 300-400 and 700-800
  EXPECT_TRUE(s.gpu);
  EXPECT_EQ(s.gpu_busy_ns, 300);
  ASSERT_FALSE(s.recommendations.empty());
  EXPECT_EQ(s.recommendations.front().advice, Advice::kLaunchBound);  // GPU idle 70 %, 20 % of it input
  EXPECT_EQ(RecommendationText({Advice::kInputBound, 0.31}),
            "input-bound: 31 % of the step waits for data (prefetch, more loader workers)");
}

TEST(StepBreakdownTest, KinetoAlexnetPartsAddUpAndMatchARecount) {
  auto trace = trace::ReadTrace(stepscope::testing::DataPath("pytorch_kineto_alexnet_train.json.gz"));
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  const StepBreakdown report = ComputeStepBreakdown(*trace);
  ASSERT_EQ(report.steps.size(), 1u);
  EXPECT_TRUE(report.gpu);
  EXPECT_EQ(report.steps.front().duration_ns, trace->span_end_ns() - trace->span_begin_ns());
  EXPECT_GT(report.steps.front().part_ns[kCompute], 0);
  ExpectSplitsAddUpAndMatchRecount(*trace, report);
  // The GPU figure is the union of the GPU work the `gpu` command counts.
  const auto gpus = ComputeGpuBreakdown(*trace);
  int64_t busy = 0;
  for (const auto& g : gpus) busy += g.time.busy_ns;
  EXPECT_EQ(report.gpu_busy_ns, busy);
}

TEST(StepBreakdownTest, TrainerRunStepsAddUpAndMatchARecount) {
  auto traces = trace::ReadTraces({stepscope::testing::DataPath("trainer/lstm_run_steps")});
  ASSERT_TRUE(traces.ok()) << traces.status().message();
  const Trace merged = OneTrace(std::move(*traces));
  const StepBreakdown report = ComputeStepBreakdown(merged);
  ASSERT_EQ(report.steps.size(), 4u);
  EXPECT_EQ(report.steps.front().step, 7);
  EXPECT_FALSE(report.gpu);
  for (const StepSplit& s : report.steps) {
    EXPECT_GT(s.part_ns[kInput], 0) << "TrainInput ops run in every step";
    EXPECT_GT(s.part_ns[kCompute], s.duration_ns / 2);
  }
  ExpectSplitsAddUpAndMatchRecount(merged, report);
}

TEST(StepBreakdownTest, GpuStepTraceMatchesARecount) {
  auto trace = trace::ReadTrace(stepscope::testing::DataPath("ptb_lstm_tf1_gpu_step.pbtxt"));
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  const StepBreakdown report = ComputeStepBreakdown(*trace);
  ASSERT_EQ(report.steps.size(), 1u);
  EXPECT_TRUE(report.gpu);
  ExpectSplitsAddUpAndMatchRecount(*trace, report);
}

// Shifts every time of a node by `ns` (both the micro and the nano fields the trainer writes).
void ShiftNode(tf::NodeExecStats& node, int64_t ns) {
  node.set_all_start_micros(node.all_start_micros() + ns / 1000);
  if (node.all_start_nanos() != 0) node.set_all_start_nanos(node.all_start_nanos() + ns);
}
void StretchNode(tf::NodeExecStats& node, int64_t ns) {
  node.set_op_end_rel_micros(node.op_end_rel_micros() + ns / 1000);
  node.set_all_end_rel_micros(node.all_end_rel_micros() + ns / 1000);
  if (node.op_end_rel_nanos() != 0) node.set_op_end_rel_nanos(node.op_end_rel_nanos() + ns);
  if (node.all_end_rel_nanos() != 0) node.set_all_end_rel_nanos(node.all_end_rel_nanos() + ns);
}

TEST(StepBreakdownTest, AStepWithAStretchedInputOpIsSlowAndInputBound) {
  // Six steps of one run from one real step trace, 10 s apart; in step 3 the input op
  // tower_0/TrainInput/split is stretched by 400 ms and everything after its start moved on.
  auto bytes = ReadFile(stepscope::testing::DataPath("trainer/lstm_run_steps/lstm_small_step7.pb.gz"));
  ASSERT_TRUE(bytes.ok());
  // ReadFile may already have unzipped it.
  auto plain = IsGzip(*bytes) ? Gunzip(*bytes, "step7") : StatusOr<std::string>(*bytes);
  ASSERT_TRUE(plain.ok());
  tf::RunMetadata original;
  ASSERT_TRUE(original.ParseFromString(*plain));
  constexpr int64_t kStretch = 400'000'000, kSlowStep = 3;
  const auto dir = stepscope::testing::ScratchDir("slowed_step");
  for (int64_t k = 0; k < 6; ++k) {
    tf::RunMetadata copy = original;
    copy.mutable_stepscope_session()->set_step(k);
    int64_t input_start = -1;
    for (auto& dev : *copy.mutable_step_stats()->mutable_dev_stats()) {
      for (auto& node : *dev.mutable_node_stats()) {
        if (k == kSlowStep && input_start < 0 && node.node_name().find("TrainInput/split") != std::string::npos) {
          input_start = node.all_start_nanos() != 0 ? node.all_start_nanos() : node.all_start_micros() * 1000;
          StretchNode(node, kStretch);
        }
      }
    }
    ASSERT_EQ(input_start >= 0, k == kSlowStep);
    for (auto& dev : *copy.mutable_step_stats()->mutable_dev_stats()) {
      for (auto& node : *dev.mutable_node_stats()) {
        const int64_t start = node.all_start_nanos() != 0 ? node.all_start_nanos() : node.all_start_micros() * 1000;
        if (input_start >= 0 && start > input_start) ShiftNode(node, kStretch);
        ShiftNode(node, k * 10'000'000'000);
      }
    }
    ASSERT_TRUE(WriteFileAtomically((dir / ("lstm_small_step" + std::to_string(k) + ".pb")).string(),
                                    copy.SerializeAsString())
                    .ok());
  }
  auto traces = trace::ReadTraces({dir.string()});
  ASSERT_TRUE(traces.ok()) << traces.status().message();
  const Trace merged = OneTrace(std::move(*traces));
  const StepBreakdown report = ComputeStepBreakdown(merged);
  ASSERT_EQ(report.steps.size(), 6u);
  ExpectSplitsAddUpAndMatchRecount(merged, report);
  const StepSplit& normal = report.steps[0];
  for (const StepSplit& s : report.steps) {
    SCOPED_TRACE("step " + std::to_string(s.step));
    EXPECT_EQ(s.slow, s.step == kSlowStep);
    if (s.step != kSlowStep) continue;
    EXPECT_EQ(s.duration_ns - normal.duration_ns, kStretch);
    EXPECT_GE(s.part_ns[kInput] - normal.part_ns[kInput], kStretch * 9 / 10);
    ASSERT_FALSE(s.recommendations.empty());
    EXPECT_EQ(s.recommendations.front().advice, Advice::kInputBound);
    EXPECT_NEAR(s.recommendations.front().share, static_cast<double>(s.part_ns[kInput]) / s.duration_ns, 1e-12);
  }
  for (const StepSplit& s : report.steps) {
    if (s.step != kSlowStep) {
      ASSERT_FALSE(s.recommendations.empty());
      EXPECT_NE(s.recommendations.front().advice, Advice::kInputBound);
    }
  }
}

}  // namespace
}  // namespace stepscope::analysis
