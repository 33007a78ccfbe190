// Busy and idle figures never exceed their span: a host thread's nested ops and threads running at
// once count once in the busy time of a window (ComputeOpStats), and a GPU's idle time by cause is
// the time none of its streams runs work (ComputeIdle's per-GPU figures), not its streams' gaps
// summed. On traces whose answer is known by construction, and on the real AlexNet (PyTorch,
// nested CPU ops, two streams) and H100 ResNet-50 (TensorFlow lanes with /stream:all repeats)
// traces against a recount of their slices.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <utility>
#include <vector>

#include "profiler/analysis/gpu_analyses.h"
#include "profiler/analysis/op_stats.h"
#include "profiler/formats/reader.h"
#include "test_util.h"
#include "trace_fixtures.h"

namespace stepscope::analysis {
namespace {

using testing::TraceMaker;
using trace::FlowKind;
using trace::SliceKind;
using trace::TrackKind;

// Host: thread 1 (nesting) A [0,100) holding B [10,40) and C [50,60); thread 2 a step annotation
// [0,160) holding D [80,150). GPU: stream 7 K [0,30), stream 9 K [10,50), and a /stream:all
// repeat [200,300) of nothing counted (a duplicate).
trace::Trace NestedAndOverlapping() {
  TraceMaker m;
  const uint32_t host = m.Host("host");
  const uint32_t cpu = m.Device("CPU:0", host);
  const uint32_t gpu = m.Device("GPU:0", host);
  const uint32_t t1 = m.Lane("thread 1", cpu, TrackKind::kOpLane, /*concurrent=*/false);
  const uint32_t t2 = m.Lane("thread 2", cpu, TrackKind::kOpLane, /*concurrent=*/false);
  const uint32_t s7 = m.Lane("stream:7", gpu, TrackKind::kGpuStream);
  const uint32_t s9 = m.Lane("stream:9", gpu, TrackKind::kGpuStream);
  const uint32_t all = m.Lane("stream:all", gpu, TrackKind::kGpuAllStreams);
  m.Slice(t1, 0, 100, "A");
  m.Slice(t1, 10, 40, "B");
  m.Slice(t1, 50, 60, "C");
  m.Slice(t2, 0, 160, "ProfilerStep#1", "", SliceKind::kAnnotation);
  m.Slice(t2, 80, 150, "D");
  m.Slice(s7, 0, 30, "K", "", SliceKind::kKernel);
  m.Slice(s9, 10, 50, "K", "", SliceKind::kKernel);
  m.Slice(all, 200, 300, "K", "", SliceKind::kKernel, trace::kSliceDuplicate);
  return std::move(m).Build();
}

TEST(BusyWithinSpanTest, HostBusyIsTheUnionOfNestedLevelsAndThreads) {
  const trace::Trace trace = NestedAndOverlapping();
  const OpStats whole = ComputeOpStats(trace);
  // The ops' time summed: A 100 + B 30 + C 10 + D 70; busy: [0,100) u [80,150) = 150 (the
  // annotation's 160 is not work).
  EXPECT_EQ(whole.host_total_ns, 210);
  EXPECT_EQ(whole.host_busy_ns, 150);
  // Kernels [0,30) u [10,50); the repeat counts nowhere.
  EXPECT_EQ(whole.device_total_ns, 70);
  EXPECT_EQ(whole.device_busy_ns, 50);
  // A window cuts the union: [20,90] holds host [20,90) and device [20,50).
  OpStatsOptions options;
  options.begin_ns = 20;
  options.end_ns = 90;
  const OpStats window = ComputeOpStats(trace, options);
  EXPECT_EQ(window.window_ns, 70);
  EXPECT_EQ(window.host_busy_ns, 70);
  EXPECT_EQ(window.device_busy_ns, 30);
  EXPECT_GT(window.host_total_ns, window.window_ns);  // 70 (A) + 20 (B) + 10 (C) + 10 (D)
  // The same through SliceWindows (steps of a trace), and for the selected tracks only.
  const SliceWindows windows(trace);
  options.windows = &windows;
  const OpStats indexed = ComputeOpStats(trace, options);
  EXPECT_EQ(indexed.host_busy_ns, 70);
  EXPECT_EQ(indexed.device_busy_ns, 30);
  OpStatsOptions thread2;
  for (uint32_t t = 0; t < trace.tracks().size(); ++t) {
    if (trace.str(trace.tracks()[t].name) == "thread 2") thread2.tracks.push_back(t);
  }
  ASSERT_EQ(thread2.tracks.size(), 1u);
  EXPECT_EQ(ComputeOpStats(trace, thread2).host_busy_ns, 70);
}

// GPU 0, two streams, kernels launched from one thread:
//  stream 7: a [0,100), b [300,400) (call [270,280): ends after the GPU went idle at 150)
//  stream 9: c [50,150), d [350,500) (no launch), e [700,800) (call [390,400): queued)
// Each stream's gaps: 7 [100,300) host 200; 9 [150,350) other 200, [500,700) kernel 200: 600 in
// all. The GPU (no stream busy): [150,300) ended by b, host wait 150, and [500,700) ended by e,
// kernel wait 200: 350 = span 800 - busy 450.
trace::Trace TwoStreams() {
  TraceMaker m;
  const uint32_t host = m.Host("host");
  const uint32_t thread = m.Lane("thread 1", host, TrackKind::kOpLane, false);
  const uint32_t gpu = m.Device("GPU 0", host);
  const uint32_t s7 = m.Lane("stream 7", gpu, TrackKind::kGpuStream);
  const uint32_t s9 = m.Lane("stream 9", gpu, TrackKind::kGpuStream);
  const uint32_t lb = m.Slice(thread, 270, 280, "cudaLaunchKernel", "", SliceKind::kRuntime);
  const uint32_t le = m.Slice(thread, 390, 400, "cudaLaunchKernel", "", SliceKind::kRuntime);
  m.Slice(s7, 0, 100, "a", "", SliceKind::kKernel);
  const uint32_t b = m.Slice(s7, 300, 400, "b", "", SliceKind::kKernel);
  m.Slice(s9, 50, 150, "c", "", SliceKind::kKernel);
  m.Slice(s9, 350, 500, "d", "", SliceKind::kKernel);
  const uint32_t e = m.Slice(s9, 700, 800, "e", "", SliceKind::kKernel);
  m.Flow(lb, b, FlowKind::kLaunch);
  m.Flow(le, e, FlowKind::kLaunch);
  return std::move(m).Build();
}

TEST(BusyWithinSpanTest, GpuIdleIsTheGapsOfTheUnionOfItsStreams) {
  const trace::Trace trace = TwoStreams();
  const std::vector<GpuInput> inputs = {{&trace, {}}};
  const IdleReport idle = ComputeIdle(inputs);
  constexpr int kHost = static_cast<int>(IdleCause::kHostWait), kKernel = static_cast<int>(IdleCause::kKernelWait),
                kOther = static_cast<int>(IdleCause::kOther);
  ASSERT_EQ(idle.streams.size(), 2u);
  EXPECT_EQ(idle.streams[0].by_cause[kHost].total_ns, 200);
  EXPECT_EQ(idle.streams[1].by_cause[kOther].total_ns, 200);
  EXPECT_EQ(idle.streams[1].by_cause[kKernel].total_ns, 200);
  ASSERT_EQ(idle.gpus.size(), 1u);
  const GpuIdle& g = idle.gpus[0];
  EXPECT_EQ(g.device, "GPU 0");
  EXPECT_EQ(g.work, 5);
  EXPECT_EQ(g.all.count, 2);
  EXPECT_EQ(g.all.total_ns, 350);
  EXPECT_EQ(g.by_cause[kHost].total_ns, 150);
  EXPECT_EQ(g.by_cause[kHost].count, 1);
  EXPECT_EQ(g.by_cause[kKernel].total_ns, 200);
  EXPECT_EQ(g.by_cause[kOther].total_ns, 0);
  const auto breakdown = ComputeGpuBreakdown(inputs);
  ASSERT_EQ(breakdown.size(), 1u);
  EXPECT_EQ(breakdown[0].time.span_ns, 800);
  EXPECT_EQ(g.all.total_ns, breakdown[0].time.idle_ns);
  // HTA's rule: b's call started at 270, after the GPU went idle (host wait); e's at 390, before
  // (a 200 ns gap under the 1000 ns delay: kernel wait).
  IdleOptions hta;
  hta.rule = IdleRule::kHta;
  hta.consecutive_kernel_delay_ns = 1000;
  const IdleReport h = ComputeIdle(inputs, hta);
  ASSERT_EQ(h.gpus.size(), 1u);
  EXPECT_EQ(h.gpus[0].by_cause[kHost].total_ns, 150);
  EXPECT_EQ(h.gpus[0].by_cause[kKernel].total_ns, 200);
  // Two inputs of one GPU (two steps) add up, each within its own span.
  const IdleReport twice = ComputeIdle({{&trace, {}}, {&trace, {}}});
  ASSERT_EQ(twice.gpus.size(), 1u);
  EXPECT_EQ(twice.gpus[0].all.total_ns, 700);
}

// The union of a list of [start, end) intervals, recounted here without the analyses' helpers.
int64_t UnionLength(std::vector<std::pair<int64_t, int64_t>> intervals) {
  std::sort(intervals.begin(), intervals.end());
  int64_t total = 0, start = 0, end = INT64_MIN;
  for (const auto& [a, b] : intervals) {
    if (a > end) {
      if (end != INT64_MIN) total += end - start;
      start = a;
      end = b;
    } else {
      end = std::max(end, b);
    }
  }
  return end == INT64_MIN ? total : total + end - start;
}

class RealTraceBusyTest : public ::testing::TestWithParam<std::string> {};

// Host and device busy over the whole trace and over its middle half are the union of the
// counted slices, recounted, and within the window; each GPU's idle by cause adds up to its
// span - busy. The AlexNet figures summed instead: host time 182.3 s over nesting levels and
// threads in a 43.5 s trace, GPU host wait 24.9 s over two streams on a 12.9 s span.
TEST_P(RealTraceBusyTest, BusyAndWaitsWithinTheSpan) {
  auto read = trace::ReadTrace(GetParam());
  ASSERT_TRUE(read.ok()) << read.status().message();
  const trace::Trace& trace = *read;
  const int64_t begin = trace.span_begin_ns(), end = trace.span_end_ns();
  for (const auto& [from, to] : {std::pair{begin, end}, std::pair{begin + (end - begin) / 4, end - (end - begin) / 4}}) {
    OpStatsOptions options;
    options.begin_ns = from;
    options.end_ns = to;
    const OpStats stats = ComputeOpStats(trace, options);
    std::vector<std::pair<int64_t, int64_t>> host, device;
    for (const trace::Slice& s : trace.slices()) {
      if (s.duplicate() || trace::IsAnnotationOrSync(s.kind)) continue;
      const int64_t a = std::max(s.start_ns, from), b = std::min(s.end_ns(), to);
      if (b <= a) continue;
      (WhereOfTrack(trace, s.track)[0] == 'd' ? device : host).emplace_back(a, b);
    }
    EXPECT_EQ(stats.host_busy_ns, UnionLength(host));
    EXPECT_EQ(stats.device_busy_ns, UnionLength(device));
    EXPECT_LE(stats.host_busy_ns, stats.window_ns);
    EXPECT_LE(stats.device_busy_ns, stats.window_ns);
    EXPECT_GT(stats.host_busy_ns, 0);
  }
  const std::vector<GpuInput> inputs = {{&trace, {}}};
  const IdleReport idle = ComputeIdle(inputs);
  const auto gpus = ComputeGpuBreakdown(inputs);
  ASSERT_EQ(idle.gpus.size(), gpus.size());
  ASSERT_FALSE(gpus.empty());
  for (size_t i = 0; i < gpus.size(); ++i) {
    const GpuIdle& g = idle.gpus[i];
    EXPECT_EQ(g.device, gpus[i].device);
    EXPECT_EQ(g.all.total_ns, gpus[i].time.idle_ns);
    EXPECT_EQ(g.by_cause[0].total_ns + g.by_cause[1].total_ns + g.by_cause[2].total_ns, g.all.total_ns);
    for (const IntervalStats& cause : g.by_cause) EXPECT_LE(cause.total_ns, gpus[i].time.span_ns);
  }
}

INSTANTIATE_TEST_SUITE_P(Samples, RealTraceBusyTest,
                         ::testing::Values(stepscope::testing::DataPath("pytorch_kineto_alexnet_train.json.gz"),
                                           stepscope::testing::SamplePath("h100_resnet50_b32_step3.pb.gz")));

}  // namespace
}  // namespace stepscope::analysis
