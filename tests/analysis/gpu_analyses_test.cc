// gpu, idle, launches, annotations and kernel patterns on traces whose answer is known by construction, and on the real AlexNet
// PyTorch trace against an exact recount of its raw events (kernel, gpu_memcpy, gpu_memset and
// their cuda_runtime calls joined by correlation, microseconds scaled to ns). HTA 0.x's
// get_idle_time_breakdown and get_cuda_kernel_launch_stats give the same counts and totals where
// the definitions agree (docs/analysis.md).
#include <gtest/gtest.h>

#include <algorithm>

#include "profiler/analysis/gpu_analyses.h"
#include "profiler/analysis/statistics.h"
#include "profiler/formats/reader.h"
#include "test_util.h"
#include "trace_fixtures.h"

namespace stepscope::analysis {
namespace {

using testing::TraceMaker;
using trace::FlowKind;
using trace::SliceKind;
using trace::TrackKind;

// Host thread: op "aten::mm" [0, 1000) enclosing three launches; GPU 0: stream 7 and stream 9.
trace::Trace LaunchTrace() {
  TraceMaker m;
  const uint32_t host = m.Host("host");
  const uint32_t thread = m.Lane("thread 1", host, TrackKind::kOpLane, false);
  const uint32_t gpu = m.Device("GPU 0", host);
  const uint32_t s7 = m.Lane("stream 7", gpu, TrackKind::kGpuStream);
  const uint32_t s9 = m.Lane("stream 9", gpu, TrackKind::kGpuStream);
  m.Slice(thread, 0, 1000, "aten::mm", "", SliceKind::kOp);
  m.Slice(thread, 10, 20, "record_function", "", SliceKind::kAnnotation);
  const uint32_t l1 = m.Slice(thread, 100, 110, "cudaLaunchKernel", "", SliceKind::kRuntime);
  const uint32_t l2 = m.Slice(thread, 120, 130, "cudaLaunchKernel", "", SliceKind::kRuntime);
  const uint32_t l3 = m.Slice(thread, 500, 600, "cudaLaunchKernel", "", SliceKind::kRuntime);
  const uint32_t l4 = m.Slice(thread, 700, 710, "cudaMemcpyAsync", "", SliceKind::kRuntime);
  // k1 [150, 250); k2 queued (its call ended at 130) starts at 260: kernel wait 10;
  // k3's call ended at 600 after k2 ended at 300: host wait 320; k4 unlinked: other 30.
  const uint32_t k1 = m.Slice(s7, 150, 250, "gemm", "", SliceKind::kKernel);
  const uint32_t k2 = m.Slice(s7, 260, 300, "relu", "", SliceKind::kKernel);
  const uint32_t k3 = m.Slice(s7, 620, 700, "gemm", "", SliceKind::kKernel);
  m.Slice(s7, 730, 800, "unlinked", "", SliceKind::kKernel);
  m.Slice(s7, 800, 2000, "cuda_sync", "", SliceKind::kSync);  // never work
  const uint32_t c1 = m.Slice(s9, 650, 750, "Memcpy DtoD", "", SliceKind::kMemcpy);
  m.Slice(s9, 760, 900, "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "", SliceKind::kKernel);
  m.Flow(l1, k1, FlowKind::kLaunch);
  m.Flow(l2, k2, FlowKind::kLaunch);
  m.Flow(l3, k3, FlowKind::kLaunch);
  m.Flow(l4, c1, FlowKind::kLaunch);
  return std::move(m).Build();
}

TEST(GpuBreakdownTest, UnionsPerCategoryAndStreamKnownByConstruction) {
  const trace::Trace trace = LaunchTrace();
  const auto rows = ComputeGpuBreakdown(trace);
  ASSERT_EQ(rows.size(), 1u);
  const GpuBreakdown& g = rows[0];
  EXPECT_EQ(g.device, "GPU 0");
  EXPECT_EQ(g.rank, -1);
  EXPECT_EQ(g.time.slices, 6);
  EXPECT_EQ(g.time.span_ns, 900 - 150);
  // [150,250) [260,300) [620,900): 100 + 40 + 280.
  EXPECT_EQ(g.time.busy_ns, 420);
  EXPECT_EQ(g.time.idle_ns, 750 - 420);
  EXPECT_EQ(g.time.compute_ns, 100 + 40 + 80 + 70);
  EXPECT_EQ(g.time.communication_ns, 140);
  EXPECT_EQ(g.time.memory_ns, 100);
  EXPECT_EQ(g.time.compute_communication_overlap_ns, 40);  // nccl [760,900) vs unlinked [730,800)
  ASSERT_EQ(g.streams.size(), 2u);
  EXPECT_EQ(g.streams[0].stream, "stream 7");
  EXPECT_EQ(g.streams[0].time.span_ns, 650);
  EXPECT_EQ(g.streams[0].time.busy_ns, 290);
  EXPECT_EQ(g.streams[0].time.idle_ns, 360);
  EXPECT_EQ(g.streams[1].time.busy_ns, 240);
  EXPECT_EQ(g.streams[1].time.idle_ns, 10);
}

TEST(GpuBreakdownTest, SkipsTensorFlowAggregateRepeats) {
  TraceMaker m;
  const uint32_t gpu = m.Device("GPU:0", m.Host("host"));
  const uint32_t stream = m.Lane("stream:14", gpu, TrackKind::kGpuStream);
  const uint32_t all = m.Lane("stream:all", gpu, TrackKind::kGpuAllStreams);
  const uint32_t memcpy = m.Lane("memcpy", gpu, TrackKind::kGpuMemcpy);
  m.Slice(stream, 0, 100, "MatMul", "", SliceKind::kKernel);
  m.Slice(stream, 200, 300, "MEMCPYHtoD", "", SliceKind::kMemcpy);
  m.Slice(all, 0, 100, "MatMul", "", SliceKind::kKernel, trace::kSliceDuplicate);
  m.Slice(memcpy, 200, 300, "MEMCPYHtoD", "", SliceKind::kMemcpy, trace::kSliceDuplicate);
  const trace::Trace trace = std::move(m).Build();
  const auto rows = ComputeGpuBreakdown(trace);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].time.slices, 2);
  EXPECT_EQ(rows[0].time.busy_ns, 200);
  EXPECT_EQ(rows[0].time.memory_ns, 100);
  ASSERT_EQ(rows[0].streams.size(), 1u);
}

// Our CPU devices (and TensorFlow's) have a /memcpy lane: the host's copies, no GPU's work.
TEST(GpuBreakdownTest, ACpuDeviceMemcpyLaneIsNoGpu) {
  TraceMaker m;
  const uint32_t host = m.Host("host");
  const uint32_t cpu = m.Device("CPU:0", host);
  // As the importers classify it (a CPU device's /memcpy lane holds the host's copies).
  m.Slice(m.Lane("memcpy", cpu, TrackKind::kHostMemcpy), 0, 100, "MEMCPYHtoH", "", SliceKind::kMemcpy);
  const uint32_t gpu = m.Device("GPU:0", host);
  m.Slice(m.Lane("memcpy", gpu, TrackKind::kGpuMemcpy), 0, 50, "MEMCPYHtoD", "", SliceKind::kMemcpy);
  const trace::Trace trace = std::move(m).Build();
  const auto rows = ComputeGpuBreakdown(trace);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].device, "GPU:0");
  EXPECT_EQ(rows[0].time.busy_ns, 50);
}

TEST(IdleTest, CausesKnownByConstruction) {
  const trace::Trace trace = LaunchTrace();
  const IdleReport r = ComputeIdle({GpuInput{&trace, {}}});
  ASSERT_EQ(r.streams.size(), 2u);
  const StreamIdle& s7 = r.streams[0];
  EXPECT_EQ(s7.stream, "stream 7");
  EXPECT_EQ(s7.all.count, 3);
  EXPECT_EQ(s7.all.total_ns, 10 + 320 + 30);
  EXPECT_EQ(s7.by_cause[static_cast<int>(IdleCause::kKernelWait)].total_ns, 10);
  EXPECT_EQ(s7.by_cause[static_cast<int>(IdleCause::kHostWait)].total_ns, 320);
  EXPECT_EQ(s7.by_cause[static_cast<int>(IdleCause::kOther)].total_ns, 30);
  EXPECT_EQ(r.streams[1].all.total_ns, 10);  // memcpy -> nccl, unlinked
  ASSERT_FALSE(r.largest.empty());
  EXPECT_EQ(r.largest[0].length(), 320);
  EXPECT_EQ(r.largest[0].launch, "cudaLaunchKernel");
  EXPECT_EQ(r.largest[0].host_op, "aten::mm");  // the annotation is not an op
  EXPECT_EQ(r.largest[0].before, "relu");

  // HTA's rule: k3's call started at 500, after k2 ended (300): host wait; k2's call started
  // before: kernel wait when under the threshold.
  IdleOptions hta;
  hta.rule = IdleRule::kHta;
  hta.consecutive_kernel_delay_ns = 20;
  const IdleReport h = ComputeIdle({GpuInput{&trace, {}}}, hta);
  EXPECT_EQ(h.streams[0].by_cause[static_cast<int>(IdleCause::kHostWait)].total_ns, 320);
  EXPECT_EQ(h.streams[0].by_cause[static_cast<int>(IdleCause::kKernelWait)].total_ns, 10);
  EXPECT_EQ(h.streams[0].by_cause[static_cast<int>(IdleCause::kOther)].total_ns, 30);
  hta.consecutive_kernel_delay_ns = 5;
  const IdleReport h5 = ComputeIdle({GpuInput{&trace, {}}}, hta);
  EXPECT_EQ(h5.streams[0].by_cause[static_cast<int>(IdleCause::kOther)].total_ns, 40);
}

// Gaps of every size on two streams, each cause among them, one past the 4.3 s a gap's narrow
// form holds: every stream's, cause's and total count, sum, max and percentiles are those of the
// gaps gathered (the report merges its sorted lists instead of gathering them).
TEST(IdleTest, PercentilesEqualThoseOfTheGapsGathered) {
  TraceMaker m;
  const uint32_t host = m.Host("host");
  const uint32_t gpu = m.Device("GPU 0", host);
  std::vector<double> by_stream_cause[2][3], by_cause[3], by_stream[2];
  for (int stream = 0; stream < 2; ++stream) {
    const uint32_t thread = m.Lane("thread " + std::to_string(stream), host, TrackKind::kOpLane, false);
    const uint32_t lane = m.Lane("stream " + std::to_string(stream), gpu, TrackKind::kGpuStream);
    int64_t end = 1000;
    m.Slice(lane, 0, end, "first", "", SliceKind::kKernel);
    for (int64_t i = 0; i < 61; ++i) {
      int64_t gap = (i * 37 % 11 + 1) * 100 * (stream + 1);
      if (stream == 0 && i == 30) gap = int64_t{5'000'000'000};
      const int64_t start = end + gap;
      const uint32_t kernel = m.Slice(lane, start, start + 50, "k", "", SliceKind::kKernel);
      auto cause = IdleCause::kOther;
      if (i % 3 == 0) {  // the call returned after the stream ran dry
        m.Flow(m.Slice(thread, start - 20, start - 10, "cudaLaunchKernel", "", SliceKind::kRuntime), kernel,
               FlowKind::kLaunch);
        cause = IdleCause::kHostWait;
      } else if (i % 3 == 1) {  // queued before
        m.Flow(m.Slice(thread, end - 30, end - 20, "cudaLaunchKernel", "", SliceKind::kRuntime), kernel,
               FlowKind::kLaunch);
        cause = IdleCause::kKernelWait;
      }
      const auto c = static_cast<int>(cause);
      by_stream_cause[stream][c].push_back(static_cast<double>(gap));
      by_cause[c].push_back(static_cast<double>(gap));
      by_stream[stream].push_back(static_cast<double>(gap));
      end = start + 50;
    }
  }
  const trace::Trace trace = std::move(m).Build();
  const IdleReport r = ComputeIdle({GpuInput{&trace, {}}});
  auto expect_stats = [](const IntervalStats& got, const std::vector<double>& gaps, const std::string& what) {
    ASSERT_EQ(got.count, static_cast<int64_t>(gaps.size())) << what;
    double total = 0;
    for (double g : gaps) total += g;
    EXPECT_EQ(got.total_ns, static_cast<int64_t>(total)) << what;
    EXPECT_EQ(got.max_ns, static_cast<int64_t>(*std::max_element(gaps.begin(), gaps.end()))) << what;
    EXPECT_DOUBLE_EQ(got.p50_ns, Quantile(gaps, 0.5)) << what;
    EXPECT_DOUBLE_EQ(got.p95_ns, Quantile(gaps, 0.95)) << what;
  };
  ASSERT_EQ(r.streams.size(), 2u);
  EXPECT_EQ(r.streams[0].all.max_ns, 5'000'000'000);
  for (int stream = 0; stream < 2; ++stream) {
    expect_stats(r.streams[stream].all, by_stream[stream], "stream " + std::to_string(stream));
    for (int c = 0; c < 3; ++c) {
      expect_stats(r.streams[stream].by_cause[c], by_stream_cause[stream][c],
                   "stream " + std::to_string(stream) + " cause " + std::to_string(c));
    }
  }
  for (int c = 0; c < 3; ++c) expect_stats(r.by_cause[c], by_cause[c], "cause " + std::to_string(c));
}

TEST(IdleTest, WindowsKeepWorkStartingInThem) {
  const trace::Trace trace = LaunchTrace();
  const IdleReport r = ComputeIdle({GpuInput{&trace, {{0, 610}}}});
  EXPECT_EQ(r.streams[0].work, 2);
  EXPECT_EQ(r.streams[0].all.total_ns, 10);
}

TEST(LaunchesTest, DelaysAndOpsKnownByConstruction) {
  const trace::Trace trace = LaunchTrace();
  LaunchOptions options;
  options.runtime_cutoff_ns = 50;
  options.delay_cutoff_ns = 25;
  options.keep_all = true;
  options.keep_delays = true;
  const LaunchReport r = ComputeLaunches({GpuInput{&trace, {}}}, options);
  EXPECT_EQ(r.work, 6);
  EXPECT_EQ(r.unlinked, 2);
  EXPECT_EQ(r.linked, 4);
  ASSERT_EQ(r.launches.size(), 4u);
  ASSERT_EQ(r.delays.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(r.delays[i].gpu_start_ns, r.launches[i].gpu_start_ns);
    EXPECT_EQ(r.delays[i].delay_ns, r.launches[i].delay_ns);
  }
  // Not asked for, the launches are not kept; the statistics and outliers are the same.
  const LaunchReport lean = ComputeLaunches({GpuInput{&trace, {}}}, {.runtime_cutoff_ns = 50, .delay_cutoff_ns = 25});
  EXPECT_TRUE(lean.launches.empty());
  EXPECT_TRUE(lean.delays.empty());
  EXPECT_EQ(lean.linked, 4);
  EXPECT_EQ(lean.long_delay_count, 2);
  ASSERT_EQ(lean.long_delay.size(), 2u);
  EXPECT_EQ(lean.long_delay[0].delay_ns, 130);
  EXPECT_EQ(lean.long_delay[0].host_op, "aten::mm");
  EXPECT_DOUBLE_EQ(lean.delay.p50_ns, r.delay.p50_ns);
  EXPECT_FALSE(lean.by_op.empty());
  // Without the rows per op (the viewer's report), the totals and outliers stay.
  const LaunchReport totals =
      ComputeLaunches({GpuInput{&trace, {}}}, {.runtime_cutoff_ns = 50, .delay_cutoff_ns = 25, .by_op = false});
  EXPECT_TRUE(totals.by_op.empty());
  EXPECT_EQ(totals.linked, lean.linked);
  EXPECT_EQ(totals.long_delay_count, lean.long_delay_count);
  ASSERT_EQ(totals.long_delay.size(), lean.long_delay.size());
  EXPECT_EQ(totals.long_delay[0].host_op, "aten::mm");
  EXPECT_DOUBLE_EQ(totals.delay.p95_ns, lean.delay.p95_ns);
  EXPECT_DOUBLE_EQ(totals.cpu.p50_ns, lean.cpu.p50_ns);
  EXPECT_EQ(r.launches[0].delay_ns, 40);   // 150 - 110
  EXPECT_EQ(r.launches[1].delay_ns, 130);  // 260 - 130
  EXPECT_EQ(r.launches[2].delay_ns, 20);   // 620 - 600
  EXPECT_EQ(r.launches[3].delay_ns, -60);  // copy at 650, call ended 710
  EXPECT_EQ(r.launches[2].cpu_ns, 100);
  EXPECT_EQ(r.launches[0].op_to_launch_ns, 100);
  EXPECT_EQ(r.long_runtime_count, 1);
  EXPECT_EQ(r.long_delay_count, 2);
  EXPECT_EQ(r.long_delay[0].delay_ns, 130);
  EXPECT_EQ(r.delay.min_ns, -60);
  EXPECT_EQ(r.delay.max_ns, 130);
  EXPECT_DOUBLE_EQ(r.delay.p50_ns, 30);
  ASSERT_EQ(r.by_op.size(), 1u);
  EXPECT_EQ(r.by_op[0].op, "aten::mm");
  EXPECT_EQ(r.by_op[0].launches, 4);
  ASSERT_EQ(r.by_op[0].kernels.size(), 3u);
  EXPECT_EQ(r.by_op[0].kernels[0].kernel, "gemm");
  EXPECT_EQ(r.by_op[0].kernels[0].count, 2);
  EXPECT_DOUBLE_EQ(r.by_op[0].kernels[0].delay.mean_ns, 30);
}

// Host thread: "forward" [0, 1000) holds "layer1" [0, 400) (two launches) and "layer2"
// [400, 900) (one); a launch at 950 lies outside every annotation; ProfilerStep#3 around all is
// a step, not an annotation row. GPU 0 runs them on one stream.
trace::Trace AnnotatedTrace() {
  TraceMaker m;
  const uint32_t host = m.Host("host");
  const uint32_t thread = m.Lane("thread 1", host, TrackKind::kOpLane, false);
  const uint32_t stream = m.Lane("stream 7", m.Device("GPU 0", host), TrackKind::kGpuStream);
  m.Slice(thread, 0, 1000, "ProfilerStep#3", "", SliceKind::kAnnotation);
  m.Slice(thread, 0, 960, "forward", "", SliceKind::kAnnotation);
  m.Slice(thread, 0, 400, "layer1", "", SliceKind::kAnnotation);
  m.Slice(thread, 10, 300, "aten::linear", "", SliceKind::kOp);
  const uint32_t l1 = m.Slice(thread, 20, 30, "cudaLaunchKernel", "", SliceKind::kRuntime);
  const uint32_t l2 = m.Slice(thread, 40, 50, "cudaLaunchKernel", "", SliceKind::kRuntime);
  m.Slice(thread, 400, 900, "layer2", "", SliceKind::kAnnotation);
  const uint32_t l3 = m.Slice(thread, 410, 420, "cudaLaunchKernel", "", SliceKind::kRuntime);
  const uint32_t l4 = m.Slice(thread, 970, 980, "cudaLaunchKernel", "", SliceKind::kRuntime);
  m.Flow(l1, m.Slice(stream, 100, 200, "gemm", "", SliceKind::kKernel), FlowKind::kLaunch);
  m.Flow(l2, m.Slice(stream, 150, 260, "bias", "", SliceKind::kKernel), FlowKind::kLaunch);
  m.Flow(l3, m.Slice(stream, 500, 540, "relu", "", SliceKind::kKernel), FlowKind::kLaunch);
  m.Flow(l4, m.Slice(stream, 990, 1000, "copy", "", SliceKind::kMemcpy), FlowKind::kLaunch);
  m.Slice(stream, 1000, 1005, "unlinked", "", SliceKind::kKernel);
  return std::move(m).Build();
}

TEST(AnnotationTimeTest, TreeKnownByConstruction) {
  const trace::Trace trace = AnnotatedTrace();
  const AnnotationReport r = ComputeAnnotationTime({GpuInput{&trace, {}}});
  EXPECT_EQ(r.work, 5);
  EXPECT_EQ(r.gpu_ns, 100 + 110 + 40 + 10 + 5);
  EXPECT_EQ(r.unannotated_work, 1);
  EXPECT_EQ(r.unannotated_gpu_ns, 10);
  EXPECT_EQ(r.unlinked_work, 1);
  EXPECT_EQ(r.unlinked_gpu_ns, 5);
  ASSERT_EQ(r.rows.size(), 3u);
  EXPECT_EQ(r.rows[0].path, (std::vector<std::string>{"forward"}));
  EXPECT_EQ(r.rows[0].instances, 1);
  EXPECT_EQ(r.rows[0].cpu_ns, 960);
  EXPECT_EQ(r.rows[0].work, 3);
  EXPECT_EQ(r.rows[0].gpu_ns, 250);
  EXPECT_EQ(r.rows[0].gpu_busy_ns, 160 + 40);  // [100, 260) and [500, 540)
  EXPECT_EQ(r.rows[0].self_work, 0);
  // Siblings by GPU time: layer1 (210) before layer2 (40).
  EXPECT_EQ(r.rows[1].path, (std::vector<std::string>{"forward", "layer1"}));
  EXPECT_EQ(r.rows[1].gpu_ns, 210);
  EXPECT_EQ(r.rows[1].gpu_busy_ns, 160);
  EXPECT_EQ(r.rows[1].self_gpu_ns, 210);
  EXPECT_EQ(r.rows[2].path, (std::vector<std::string>{"forward", "layer2"}));
  EXPECT_EQ(r.rows[2].cpu_ns, 500);
  EXPECT_EQ(r.rows[2].self_work, 1);
  EXPECT_FALSE(r.rows[2].name_scope);

  // A window from 390: the work launched in layer1 starts before it and drops out.
  const AnnotationReport w = ComputeAnnotationTime({GpuInput{&trace, {{390, 2000}}}});
  EXPECT_EQ(w.work, 3);
  ASSERT_EQ(w.rows.size(), 3u);
  EXPECT_EQ(w.rows[0].gpu_ns, 40);
  EXPECT_EQ(w.rows[1].path.back(), "layer2");
  EXPECT_EQ(w.rows[2].instances, 0);  // layer1 started before the window
}

TEST(AnnotationTimeTest, NameScopesOfTheLaunchingOpWithoutAnnotations) {
  TraceMaker m;
  const uint32_t host = m.Host("host");
  const uint32_t gpu = m.Device("GPU:0", host);
  const uint32_t ops = m.Lane("ops", gpu, TrackKind::kOpLane);
  const uint32_t stream = m.Lane("stream:14", gpu, TrackKind::kGpuStream);
  const uint32_t conv = m.Slice(ops, 0, 50, "tower_0/conv1/Conv2D", "Conv2D", SliceKind::kOp);
  const uint32_t bias = m.Slice(ops, 60, 70, "tower_0/conv1/BiasAdd", "BiasAdd", SliceKind::kOp);
  const uint32_t loss = m.Slice(ops, 80, 90, "loss", "Sum", SliceKind::kOp);
  m.Flow(conv, m.Slice(stream, 10, 40, "implicit_gemm", "", SliceKind::kKernel), FlowKind::kLaunch);
  m.Flow(conv, m.Slice(stream, 40, 45, "nhwc_to_nchw", "", SliceKind::kKernel), FlowKind::kLaunch);
  m.Flow(bias, m.Slice(stream, 65, 75, "bias_add", "", SliceKind::kKernel), FlowKind::kLaunch);
  m.Flow(loss, m.Slice(stream, 85, 95, "reduce", "", SliceKind::kKernel), FlowKind::kLaunch);
  const trace::Trace trace = std::move(m).Build();
  const AnnotationReport r = ComputeAnnotationTime({GpuInput{&trace, {}}});
  ASSERT_EQ(r.rows.size(), 2u);
  EXPECT_EQ(r.rows[0].path, (std::vector<std::string>{"tower_0"}));
  EXPECT_TRUE(r.rows[0].name_scope);
  EXPECT_EQ(r.rows[0].instances, 2);  // two ops, each counted once
  EXPECT_EQ(r.rows[0].cpu_ns, 60);
  EXPECT_EQ(r.rows[0].work, 3);
  EXPECT_EQ(r.rows[1].path, (std::vector<std::string>{"tower_0", "conv1"}));
  EXPECT_EQ(r.rows[1].gpu_ns, 30 + 5 + 10);
  EXPECT_EQ(r.rows[1].self_work, 3);
  EXPECT_EQ(r.unannotated_work, 1);  // "loss" has no scope
}

// tests/data/kineto_links/autograd_thread.json: "## backward ##" on the main thread; the autograd
// thread launches three kernels (10 + 20 + 30 us) inside it with no annotation of its own; the
// main thread launches one (5 us) in "## forward ##".
TEST(AnnotationTimeTest, WorkLaunchedOnAnotherThreadCountsForItsAnnotation) {
  auto read = trace::ReadTrace(stepscope::testing::DataPath("kineto_links/autograd_thread.json"));
  ASSERT_TRUE(read.ok()) << read.status().message();
  const AnnotationReport r = ComputeAnnotationTime({GpuInput{&*read, {}}});
  EXPECT_EQ(r.work, 4);
  EXPECT_EQ(r.unannotated_work, 0);
  EXPECT_EQ(r.unlinked_work, 0);
  EXPECT_EQ(r.other_thread_work, 3);
  EXPECT_EQ(r.gpu_annotation_work, 0);
  EXPECT_EQ(r.links.work, 4);
  EXPECT_EQ(r.links.linked, 4);
  ASSERT_EQ(r.rows.size(), 2u);
  EXPECT_EQ(r.rows[0].path, (std::vector<std::string>{"## backward ##"}));
  EXPECT_EQ(r.rows[0].work, 3);
  EXPECT_EQ(r.rows[0].gpu_ns, 60'000);
  EXPECT_EQ(r.rows[0].instances, 1);
  EXPECT_EQ(r.rows[0].cpu_ns, 4'000'000);
  EXPECT_EQ(r.rows[1].path, (std::vector<std::string>{"## forward ##"}));
  EXPECT_EQ(r.rows[1].work, 1);
  EXPECT_EQ(r.rows[1].gpu_ns, 5'000);
}

// The same trace with the profiler's gpu_user_annotation spans on the stream: the work counts for
// the spans around it there, as PyTorch attributes it, and the host spans give count and cpu.
TEST(AnnotationTimeTest, GpuUserAnnotationSpansAttributeTheWorkInside) {
  auto read = trace::ReadTrace(stepscope::testing::DataPath("kineto_links/gpu_user_annotation.json"));
  ASSERT_TRUE(read.ok()) << read.status().message();
  const AnnotationReport r = ComputeAnnotationTime({GpuInput{&*read, {}}});
  EXPECT_EQ(r.work, 4);
  EXPECT_EQ(r.gpu_annotation_work, 4);
  EXPECT_EQ(r.other_thread_work, 0);
  EXPECT_EQ(r.unannotated_work, 0);
  ASSERT_EQ(r.rows.size(), 2u);
  EXPECT_EQ(r.rows[0].path, (std::vector<std::string>{"## backward ##"}));
  EXPECT_EQ(r.rows[0].work, 3);
  EXPECT_EQ(r.rows[0].gpu_ns, 60'000);
  EXPECT_EQ(r.rows[0].instances, 1);
  EXPECT_EQ(r.rows[1].work, 1);
}

// Stream: A B C A B C A B C D with a copy between the second A and B (skipped over); A A A A A on
// another stream holds one AAA (occurrences do not overlap).
TEST(KernelPatternsTest, SequencesKnownByConstruction) {
  TraceMaker m;
  const uint32_t gpu = m.Device("GPU 0", m.Host("host"));
  const uint32_t s7 = m.Lane("stream 7", gpu, TrackKind::kGpuStream);
  const uint32_t s9 = m.Lane("stream 9", gpu, TrackKind::kGpuStream);
  const char* names[] = {"A", "B", "C", "A", "B", "C", "A", "B", "C", "D"};
  for (int i = 0; i < 10; ++i) m.Slice(s7, i * 100, i * 100 + 80, names[i], "", SliceKind::kKernel);
  m.Slice(s7, 385, 395, "Memcpy DtoD", "", SliceKind::kMemcpy);
  for (int i = 0; i < 5; ++i) m.Slice(s9, i * 10, i * 10 + 10, "A", "", SliceKind::kKernel);
  const trace::Trace trace = std::move(m).Build();
  const KernelPatternReport r = ComputeKernelPatterns({GpuInput{&trace, {}}});
  EXPECT_EQ(r.kernels, 15);
  EXPECT_EQ(r.distinct_patterns, 3);  // ABC 3, BCA 2, CAB 2; BCD and AAA once
  ASSERT_EQ(r.patterns.size(), 3u);
  EXPECT_EQ(r.patterns[0].kernels, (std::vector<std::string>{"A", "B", "C"}));
  EXPECT_EQ(r.patterns[0].count, 3);
  EXPECT_EQ(r.patterns[0].gpu_ns, 9 * 80);
  EXPECT_EQ(r.patterns[0].span_ns, 3 * 280);
  EXPECT_EQ(r.patterns[0].gap_ns, 3 * 40);
  KernelPatternOptions ones;
  ones.min_count = 1;
  ones.top = 100;
  const KernelPatternReport all = ComputeKernelPatterns({GpuInput{&trace, {}}}, ones);
  const auto aaa = std::find_if(all.patterns.begin(), all.patterns.end(), [](const KernelPattern& p) {
    return p.kernels == std::vector<std::string>{"A", "A", "A"};
  });
  ASSERT_NE(aaa, all.patterns.end());
  EXPECT_EQ(aaa->count, 1);
  KernelPatternOptions pairs;
  pairs.length = 2;
  pairs.by_time = true;
  const KernelPatternReport two = ComputeKernelPatterns({GpuInput{&trace, {}}}, pairs);
  ASSERT_FALSE(two.patterns.empty());
  EXPECT_EQ(two.patterns[0].count, 3);  // AB or BC: three times each, 480 ns each
  EXPECT_EQ(two.patterns[0].gpu_ns, 480);
}

class AlexNetGpuTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto read = trace::ReadTrace(stepscope::testing::DataPath("pytorch_kineto_alexnet_train.json.gz"));
    ASSERT_TRUE(read.ok());
    trace_ = new trace::Trace(std::move(read).value());
  }
  static void TearDownTestSuite() { delete trace_; }
  static trace::Trace* trace_;
};
trace::Trace* AlexNetGpuTest::trace_ = nullptr;

// Recount: 79 kernels, 16 copies, 3 memsets on GPU 0 (streams 7 and 20).
TEST_F(AlexNetGpuTest, BreakdownMatchesRecount) {
  const auto rows = ComputeGpuBreakdown(*trace_);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].rank, 0);
  EXPECT_EQ(rows[0].device, "GPU 0");
  EXPECT_EQ(rows[0].time.slices, 98);
  EXPECT_EQ(rows[0].time.span_ns, 12920244000);
  EXPECT_EQ(rows[0].time.busy_ns, 66141000);
  EXPECT_EQ(rows[0].time.idle_ns, 12854103000);
  EXPECT_EQ(rows[0].time.compute_ns, 10630000);
  EXPECT_EQ(rows[0].time.memory_ns, 55511000);
  EXPECT_EQ(rows[0].time.communication_ns, 0);
  ASSERT_EQ(rows[0].streams.size(), 2u);
  EXPECT_EQ(rows[0].streams[0].stream, "stream 7");
  EXPECT_EQ(rows[0].streams[0].time.slices, 91);
  EXPECT_EQ(rows[0].streams[0].time.busy_ns, 65133000);
  EXPECT_EQ(rows[0].streams[0].time.idle_ns, 12855111000);
  EXPECT_EQ(rows[0].streams[1].time.span_ns, 12012791000);
  EXPECT_EQ(rows[0].streams[1].time.memory_ns, 4000);
}

TEST_F(AlexNetGpuTest, IdleMatchesRecountAndHta) {
  const IdleReport r = ComputeIdle({GpuInput{trace_, {}}});
  ASSERT_EQ(r.streams.size(), 2u);
  const auto& host7 = r.streams[0].by_cause[static_cast<int>(IdleCause::kHostWait)];
  const auto& kernel7 = r.streams[0].by_cause[static_cast<int>(IdleCause::kKernelWait)];
  EXPECT_EQ(host7.count, 36);
  EXPECT_EQ(host7.total_ns, 12855030000);
  EXPECT_DOUBLE_EQ(host7.p50_ns, 413500);
  EXPECT_EQ(host7.max_ns, 10857887000);
  EXPECT_EQ(kernel7.count, 54);
  EXPECT_EQ(kernel7.total_ns, 81000);
  EXPECT_EQ(r.streams[0].by_cause[static_cast<int>(IdleCause::kOther)].count, 0);
  const auto& host20 = r.streams[1].by_cause[static_cast<int>(IdleCause::kHostWait)];
  EXPECT_EQ(host20.count, 4);
  EXPECT_EQ(host20.total_ns, 12011718000);
  EXPECT_DOUBLE_EQ(host20.p50_ns, 53753500);
  EXPECT_EQ(r.streams[1].by_cause[static_cast<int>(IdleCause::kKernelWait)].total_ns, 3000);

  // HTA (consecutive_kernel_delay 30, in the trace's microseconds): stream 7 host_wait 34 gaps,
  // 12855007 us; kernel_wait 56 gaps, 104 us; stream 20 host_wait 4, 12011718 us; kernel_wait 2, 3 us.
  const IdleReport h = ComputeIdle({GpuInput{trace_, {}}}, {IdleRule::kHta, 30'000, 10});
  EXPECT_EQ(h.streams[0].by_cause[static_cast<int>(IdleCause::kHostWait)].count, 34);
  EXPECT_EQ(h.streams[0].by_cause[static_cast<int>(IdleCause::kHostWait)].total_ns, 12855007000);
  EXPECT_DOUBLE_EQ(h.streams[0].by_cause[static_cast<int>(IdleCause::kHostWait)].p50_ns, 720500);
  EXPECT_EQ(h.streams[0].by_cause[static_cast<int>(IdleCause::kKernelWait)].count, 56);
  EXPECT_EQ(h.streams[0].by_cause[static_cast<int>(IdleCause::kKernelWait)].total_ns, 104000);
  EXPECT_EQ(h.streams[1].by_cause[static_cast<int>(IdleCause::kHostWait)].total_ns, 12011718000);
  EXPECT_EQ(h.streams[1].by_cause[static_cast<int>(IdleCause::kKernelWait)].total_ns, 3000);
  ASSERT_FALSE(r.largest.empty());
  EXPECT_EQ(r.largest[0].length(), 11903747000);
  EXPECT_EQ(r.largest[0].stream, "stream 20");
  EXPECT_EQ(r.largest[0].host_op, "aten::cudnn_convolution");
}

TEST_F(AlexNetGpuTest, LaunchesMatchRecountAndHta) {
  const LaunchReport r = ComputeLaunches({GpuInput{trace_, {}}});
  EXPECT_EQ(r.work, 98);
  EXPECT_EQ(r.unlinked, 0);
  EXPECT_EQ(r.cpu.count, 98);
  EXPECT_EQ(r.cpu.min_ns, 4000);
  EXPECT_EQ(r.cpu.max_ns, 3055567000);
  EXPECT_DOUBLE_EQ(r.cpu.p50_ns, 10000);
  EXPECT_NEAR(r.cpu.p95_ns, 667000, 1e-6);
  EXPECT_NEAR(r.cpu.mean_ns, 31771591.8367, 1e-3);
  EXPECT_NEAR(r.gpu.p95_ns, 853800, 1e-6);
  // Not clipped at 0 as HTA does: one pageable HtoD copy ran inside its cudaMemcpyAsync.
  EXPECT_EQ(r.delay.min_ns, -34691000);
  EXPECT_EQ(r.delay.max_ns, 1533000);
  EXPECT_DOUBLE_EQ(r.delay.p50_ns, 32500);
  EXPECT_NEAR(r.delay.p95_ns, 1319050, 1e-6);
  EXPECT_EQ(r.long_runtime_count, 11);  // HTA: cpu_duration > 50 us
  EXPECT_EQ(r.long_delay_count, 43);    // HTA: launch_delay > 100 us
  ASSERT_FALSE(r.by_op.empty());
  EXPECT_EQ(r.by_op[0].op, "aten::cudnn_convolution");
  EXPECT_EQ(r.by_op[0].launches, 31);
}

// With its flow events removed, the trace links by correlation id alone: idle and annotations
// give the same answers (the AlexNet file's ac2g flows agree with every id).
TEST_F(AlexNetGpuTest, SameAnswersWithoutFlowEvents) {
  auto read = trace::ReadTrace(stepscope::testing::DataPath("kineto_links/alexnet_no_flows.json.gz"));
  ASSERT_TRUE(read.ok());
  const trace::Trace& bare = *read;
  const IdleReport a = ComputeIdle({GpuInput{trace_, {}}}), b = ComputeIdle({GpuInput{&bare, {}}});
  EXPECT_EQ(a.links.work, 98);
  EXPECT_EQ(a.links.linked, 98);
  EXPECT_EQ(b.links.linked, 98);
  for (int c = 0; c < 3; ++c) {
    EXPECT_EQ(a.by_cause[c].count, b.by_cause[c].count) << c;
    EXPECT_EQ(a.by_cause[c].total_ns, b.by_cause[c].total_ns) << c;
  }
  EXPECT_EQ(b.by_cause[static_cast<int>(IdleCause::kHostWait)].count, 36 + 4);
  EXPECT_EQ(b.by_cause[static_cast<int>(IdleCause::kOther)].count, 0);
  const AnnotationReport x = ComputeAnnotationTime({GpuInput{trace_, {}}});
  const AnnotationReport y = ComputeAnnotationTime({GpuInput{&bare, {}}});
  ASSERT_EQ(x.rows.size(), y.rows.size());
  for (size_t i = 0; i < x.rows.size(); ++i) {
    EXPECT_EQ(x.rows[i].path, y.rows[i].path);
    EXPECT_EQ(x.rows[i].work, y.rows[i].work);
  }
  EXPECT_EQ(y.unlinked_work, 0);
}

// Recount: kernels, copies and memsets joined to their cuda_runtime call by correlation, the call
// lying inside the user_annotation span on the same thread.
TEST_F(AlexNetGpuTest, AnnotationsMatchRecount) {
  const AnnotationReport r = ComputeAnnotationTime({GpuInput{trace_, {}}});
  EXPECT_EQ(r.work, 98);
  EXPECT_EQ(r.gpu_ns, 66203000);
  EXPECT_EQ(r.unannotated_work, 0);
  ASSERT_GE(r.rows.size(), 4u);
  EXPECT_EQ(r.rows[0].path, (std::vector<std::string>{"[param|cuda]"}));
  EXPECT_EQ(r.rows[0].work, 98);
  EXPECT_EQ(r.rows[0].gpu_ns, 66203000);
  EXPECT_EQ(r.rows[1].path.back(), "[param|pytorch.model.alex_net|0|0|0]");
  EXPECT_EQ(r.rows[1].work, 81);
  EXPECT_EQ(r.rows[1].gpu_ns, 10629000);
  const std::string measure = "[param|pytorch.model.alex_net|0|0|0|measure|forward]";
  const std::string warmup = "[param|pytorch.model.alex_net|0|0|0|warmup|forward]";
  int seen = 0;
  for (const AnnotationTime& a : r.rows) {
    if (a.path.size() == 3 && a.path.back() == measure) {
      EXPECT_EQ(a.work, 40);
      EXPECT_EQ(a.gpu_ns, 5317000);
      ++seen;
    }
    if (a.path.size() == 3 && a.path.back() == warmup) {
      EXPECT_EQ(a.work, 41);
      EXPECT_EQ(a.gpu_ns, 5312000);
      ++seen;
    }
  }
  EXPECT_EQ(seen, 2);
}

// Recount over the kernel events per stream, in time order: 23 sequences of 3 seen twice or more;
// the most frequent 6 times.
TEST_F(AlexNetGpuTest, KernelPatternsMatchRecount) {
  const KernelPatternReport r = ComputeKernelPatterns({GpuInput{trace_, {}}});
  EXPECT_EQ(r.kernels, 79);
  EXPECT_EQ(r.distinct_patterns, 23);
  ASSERT_GE(r.patterns.size(), 2u);
  EXPECT_EQ(r.patterns[0].count, 6);
  EXPECT_EQ(r.patterns[0].gpu_ns, 2288000);
  EXPECT_EQ(r.patterns[0].kernels[0].rfind("sm80_xmma_fprop_implicit_gemm", 0), 0u);
  EXPECT_EQ(r.patterns[0].host_op, "aten::cudnn_convolution");
  EXPECT_EQ(r.patterns[1].gpu_ns, 2193000);
}

}  // namespace
}  // namespace stepscope::analysis
