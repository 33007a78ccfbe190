// gpu, idle and launches on traces whose answer is known by construction, and on the real AlexNet
// PyTorch trace against an exact recount of its raw events (kernel, gpu_memcpy, gpu_memset and
// their cuda_runtime calls joined by correlation, microseconds scaled to ns). HTA 0.x's
// get_idle_time_breakdown and get_cuda_kernel_launch_stats give the same counts and totals where
// the definitions agree (docs/analysis.md).
#include <gtest/gtest.h>

#include "profiler/analysis/gpu_analyses.h"
#include "profiler/trace/reader.h"
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
  const LaunchReport r = ComputeLaunches({GpuInput{&trace, {}}}, options);
  EXPECT_EQ(r.work, 6);
  EXPECT_EQ(r.unlinked, 2);
  ASSERT_EQ(r.launches.size(), 4u);
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

}  // namespace
}  // namespace stepscope::analysis
