// Each analysis on traces where the right answer is known by construction.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "profiler/formats/inputs.h"
#include "profiler/analysis/breakdowns.h"
#include "profiler/analysis/diff.h"
#include "profiler/analysis/merge.h"
#include "profiler/analysis/step_analyses.h"
#include "profiler/analysis/steps.h"
#include "profiler/formats/reader.h"
#include "test_util.h"
#include "trace_fixtures.h"

namespace stepscope::analysis {
namespace {

using testing::TraceMaker;
using trace::SliceKind;
using trace::TrackKind;

TEST(OverlapTest, CommHalfCoveredByComputeIsExactlyHalfHidden) {
  TraceMaker m;
  const uint32_t gpu = m.Device("GPU:0", m.Host("host"));
  const uint32_t compute = m.Lane("stream:7", gpu, TrackKind::kGpuStream);
  const uint32_t comm = m.Lane("stream:20", gpu, TrackKind::kGpuStream);
  m.Slice(comm, 0, 100, "ncclKernel_AllReduce_RING_LL_Sum_float", "", SliceKind::kKernel);
  m.Slice(compute, 50, 150, "gemm", "", SliceKind::kKernel);
  const trace::Trace trace = std::move(m).Build();
  const OverlapStats stats = ComputeOverlap(trace);
  EXPECT_EQ(stats.comm_ns, 100);
  EXPECT_EQ(stats.hidden_ns, 50);
  EXPECT_EQ(stats.exposed_ns, 50);
  EXPECT_DOUBLE_EQ(stats.hidden_share, 0.5);
  EXPECT_DOUBLE_EQ(stats.exposed_share_of_step, 50.0 / 150.0);
}

TEST(OverlapTest, ComputeOnAnotherDeviceHidesNothing) {
  TraceMaker m;
  const uint32_t host = m.Host("host");
  const uint32_t gpu0 = m.Device("GPU:0", host);
  const uint32_t gpu1 = m.Device("GPU:1", host);
  m.Slice(m.Lane("ops", gpu0, TrackKind::kOpLane), 0, 100, "allreduce", "NcclAllReduce", SliceKind::kCollective);
  m.Slice(m.Lane("ops", gpu1, TrackKind::kOpLane), 0, 100, "matmul", "MatMul", SliceKind::kOp);
  const OverlapStats stats = ComputeOverlap(std::move(m).Build());
  EXPECT_EQ(stats.comm_ns, 100);
  EXPECT_EQ(stats.hidden_ns, 0);
  EXPECT_EQ(stats.exposed_ns, 100);
}

// The names of a path's elements and the edges that enter them, in path order.
std::pair<std::vector<std::string>, std::vector<std::string>> NamesAndEdges(const CriticalPath& path) {
  std::vector<std::string> names, edges;
  for (const auto& e : path.elements) {
    names.push_back(e.name);
    edges.push_back(e.edge);
  }
  return {names, edges};
}

// a -> b (dataflow), c runs on another lane and ends earlier; d waits for b (lane) and c
// (dataflow). The path is a, b, d: b ends later than c.
TEST(CriticalPathTest, FollowsTheLastReadyPredecessor) {
  TraceMaker m;
  const uint32_t device = m.Device("CPU:0", m.Host("host"));
  const uint32_t lane1 = m.Lane("thread 1", device, TrackKind::kOpLane);
  const uint32_t lane2 = m.Lane("thread 2", device, TrackKind::kOpLane);
  const uint32_t a = m.Slice(lane1, 0, 10, "a");
  const uint32_t b = m.Slice(lane2, 15, 40, "b");
  const uint32_t c = m.Slice(lane1, 12, 30, "c");
  const uint32_t d = m.Slice(lane2, 45, 60, "d");
  m.Flow(a, b);
  m.Flow(c, d);
  const trace::Trace trace = std::move(m).Build();
  const CriticalPath path = ComputeCriticalPath(trace);
  ASSERT_EQ(path.elements.size(), 3u);
  EXPECT_EQ(path.elements[0].name, "a");
  EXPECT_EQ(path.elements[1].name, "b");
  EXPECT_EQ(path.elements[1].edge, "dataflow");
  EXPECT_EQ(path.elements[1].wait_ns, 5);
  EXPECT_EQ(path.elements[2].name, "d");
  EXPECT_EQ(path.elements[2].edge, "lane");
  EXPECT_EQ(path.elements[2].wait_ns, 5);
  EXPECT_EQ(path.length_ns, 60);
  EXPECT_EQ(path.wait_ns, 10);
  EXPECT_EQ(path.busy_ns, 50);
  int64_t held = 0;
  for (const auto& s : path.by_op_type) held += s.total_ns;
  EXPECT_EQ(held + path.wait_ns, path.length_ns);
}

// A PyTorch-like step: aten::mm launches k1 (launch delay 20), aten::relu launches k2, queued
// behind k1; cudaDeviceSynchronize waits for k2; aten::item ends the step. ProfilerStep#1 is an
// annotation (not work); a watchdog thread's cudaEventQuery ends later but is no step work.
TEST(CriticalPathTest, LaunchStreamAndSyncEdgesWithWhatBoundThePath) {
  TraceMaker m;
  const uint32_t host = m.Host("host");
  const uint32_t thread = m.Lane("thread 1", host, TrackKind::kOpLane, false);
  const uint32_t watchdog = m.Lane("thread 2", host, TrackKind::kOpLane, false);
  const uint32_t stream = m.Lane("stream 7", m.Device("GPU 0", host), TrackKind::kGpuStream);
  m.Slice(thread, 0, 1000, "ProfilerStep#1", "", SliceKind::kAnnotation);
  m.Slice(thread, 10, 100, "aten::mm", "aten::mm", SliceKind::kOp);
  const uint32_t call1 = m.Slice(thread, 20, 30, "cudaLaunchKernel", "cudaLaunchKernel", SliceKind::kRuntime);
  m.Slice(thread, 110, 150, "aten::relu", "aten::relu", SliceKind::kOp);
  const uint32_t call2 = m.Slice(thread, 120, 130, "cudaLaunchKernel", "cudaLaunchKernel", SliceKind::kRuntime);
  m.Slice(thread, 160, 460, "cudaDeviceSynchronize", "cudaDeviceSynchronize", SliceKind::kRuntime);
  m.Slice(thread, 470, 500, "aten::item", "aten::item", SliceKind::kOp);
  m.Slice(watchdog, 900, 950, "cudaEventQuery", "cudaEventQuery", SliceKind::kRuntime);
  m.Flow(call1, m.Slice(stream, 50, 400, "k1", "k1", SliceKind::kKernel), trace::FlowKind::kLaunch);
  m.Flow(call2, m.Slice(stream, 400, 450, "k2", "k2", SliceKind::kKernel), trace::FlowKind::kLaunch);
  const trace::Trace trace = std::move(m).Build();

  const CriticalPath path = ComputeCriticalPath(trace);
  const auto [names, edges] = NamesAndEdges(path);
  EXPECT_EQ(names, (std::vector<std::string>{"aten::mm", "cudaLaunchKernel", "k1", "k2", "cudaDeviceSynchronize",
                                             "aten::item"}));
  EXPECT_EQ(edges, (std::vector<std::string>{"", "nested", "launch", "stream", "sync", "lane"}));
  EXPECT_EQ(path.length_ns, 490);
  const auto bound = [&](PathBound b) { return path.bound_ns[static_cast<int>(b)]; };
  EXPECT_EQ(bound(PathBound::kCpu), 10 + 10 + 10 + 30);  // mm before its call, the call, item's wait and item
  EXPECT_EQ(bound(PathBound::kLaunchDelay), 20);
  EXPECT_EQ(bound(PathBound::kGpuCompute), 350 + 50);
  EXPECT_EQ(bound(PathBound::kKernelGap), 0);
  EXPECT_EQ(bound(PathBound::kSync), 10);
  int64_t total = 0;
  for (int64_t ns : path.bound_ns) total += ns;
  EXPECT_EQ(total, path.length_ns);
  EXPECT_EQ(path.bound_by, PathBound::kGpuCompute);
  EXPECT_EQ(path.elements[2].held_ns, 350);
  EXPECT_EQ(path.elements[2].wait_ns, 20);

  // The work that starts in [0, 105): aten::mm, its call and k1, which ends the window's path.
  const CriticalPath window = ComputeCriticalPath(trace, 0, 105);
  ASSERT_EQ(window.elements.size(), 3u);
  EXPECT_EQ(window.elements.back().name, "k1");
  EXPECT_EQ(window.length_ns, 390);
}

// A TensorFlow-style GPU step: host ops only enqueue their kernels (conv, loss), the host then
// blocks unrecorded until the loss comes back (two device-to-host copies on another stream), and
// grad runs after it. The path runs through the kernels and the copies, not the host's enqueue
// times: conv, k_conv (launch), k_loss (stream), copy1 (after k_loss, cross_stream), copy2 (stream),
// grad (readback), k_grad (launch).
TEST(CriticalPathTest, HostOpWaitsForTheCopyOfADeviceResult) {
  TraceMaker m;
  const uint32_t gpu = m.Device("GPU:0", m.Host("host"));
  const uint32_t ops = m.Lane("ops", gpu, TrackKind::kOpLane);
  const uint32_t compute = m.Lane("stream:13", gpu, TrackKind::kGpuStream);
  const uint32_t copies = m.Lane("stream:15", gpu, TrackKind::kGpuStream);
  const uint32_t conv = m.Slice(ops, 0, 10, "conv", "Conv2D", SliceKind::kOp);
  const uint32_t loss = m.Slice(ops, 10, 20, "loss", "SparseSoftmaxCrossEntropyWithLogits", SliceKind::kOp);
  const uint32_t grad = m.Slice(ops, 610, 620, "grad", "Mul", SliceKind::kOp);
  m.Flow(conv, m.Slice(compute, 5, 400, "k_conv", "Conv2D", SliceKind::kKernel), trace::FlowKind::kLaunch);
  m.Flow(loss, m.Slice(compute, 400, 450, "k_loss", "SparseSoftmaxCrossEntropyWithLogits", SliceKind::kKernel),
         trace::FlowKind::kLaunch);
  m.Flow(grad, m.Slice(compute, 620, 900, "k_grad", "Mul", SliceKind::kKernel), trace::FlowKind::kLaunch);
  m.Slice(copies, 455, 460, "MEMCPYDtoH", "MEMCPYDtoH", SliceKind::kMemcpy);
  m.Slice(copies, 600, 605, "MEMCPYDtoH", "MEMCPYDtoH", SliceKind::kMemcpy);
  m.Slice(copies, 1, 3, "MEMCPYHtoD", "MEMCPYHtoD", SliceKind::kMemcpy);  // a copy in: read by nobody on the host
  m.Flow(conv, loss);
  m.Flow(loss, grad);
  const trace::Trace trace = std::move(m).Build();

  const CriticalPath path = ComputeCriticalPath(trace);
  const auto [names, edges] = NamesAndEdges(path);
  EXPECT_EQ(names, (std::vector<std::string>{"conv", "k_conv", "k_loss", "MEMCPYDtoH", "MEMCPYDtoH", "grad", "k_grad"}));
  EXPECT_EQ(edges, (std::vector<std::string>{"", "launch", "stream", "cross_stream", "stream", "readback", "launch"}));
  EXPECT_EQ(path.length_ns, 900);
  const auto bound = [&](PathBound b) { return path.bound_ns[static_cast<int>(b)]; };
  EXPECT_EQ(bound(PathBound::kGpuCompute), 395 + 50 + 280);
  EXPECT_EQ(bound(PathBound::kGpuMemory), 5 + 5);
  EXPECT_EQ(bound(PathBound::kKernelGap), 5 + 140);  // copy1 after k_loss; copy2 after copy1
  EXPECT_EQ(bound(PathBound::kSync), 5);              // grad's start after the copy's end
  EXPECT_EQ(bound(PathBound::kCpu), 5 + 10);          // conv until its kernel started; grad
  EXPECT_EQ(path.bound_by, PathBound::kGpuCompute);
}

TEST(StreamsTest, BusyTimeAndLargestGaps) {
  TraceMaker m;
  const uint32_t gpu = m.Device("GPU:0", m.Host("host"));
  const uint32_t stream = m.Lane("stream:7", gpu, TrackKind::kGpuStream);
  m.Slice(stream, 0, 10, "k1", "", SliceKind::kKernel);
  m.Slice(stream, 5, 20, "k2", "", SliceKind::kKernel);  // overlaps k1: its own lane, same stream
  m.Slice(stream, 50, 60, "k3", "", SliceKind::kKernel);
  m.Slice(stream, 62, 100, "k4", "", SliceKind::kKernel);
  const StreamStats stats = ComputeStreamStats(std::move(m).Build(), 2);
  ASSERT_EQ(stats.streams.size(), 1u);
  const StreamUsage& s = stats.streams[0];
  EXPECT_EQ(s.slices, 4);
  EXPECT_EQ(s.busy_ns, 20 + 10 + 38);
  EXPECT_EQ(s.idle_ns, 32);
  ASSERT_EQ(s.largest_gaps.size(), 2u);
  EXPECT_EQ(s.largest_gaps[0].begin_ns, 20);
  EXPECT_EQ(s.largest_gaps[0].length(), 30);
  EXPECT_EQ(s.largest_gaps[0].before, "k2");
  EXPECT_EQ(s.largest_gaps[0].after, "k3");
  EXPECT_EQ(s.largest_gaps[1].length(), 2);
}

trace::Trace Rank(int r) {
  auto trace = trace::ReadTrace(stepscope::testing::DataPath("analysis/ranks/rank" + std::to_string(r) + ".pbtxt"));
  EXPECT_TRUE(trace.ok()) << trace.status().message();
  return std::move(trace).value();
}

TEST(KernelsTest, LaunchGeometryAndNcclFromOurRecords) {
  const KernelStats stats = ComputeKernelStats(Rank(0));
  ASSERT_EQ(stats.kernels.size(), 3u);
  EXPECT_EQ(stats.launches, 3);
  EXPECT_EQ(stats.total_ns, 80000 + 180000 + 180000);
  const KernelRow* nccl = nullptr;
  for (const auto& k : stats.kernels) {
    if (k.communication) nccl = &k;
  }
  ASSERT_NE(nccl, nullptr);
  EXPECT_EQ(nccl->grid, "2,1,1");
  EXPECT_EQ(nccl->block, "512,1,1");
  ASSERT_EQ(stats.streams.size(), 2u);
}

TEST(KernelsTest, CommunicationKernelsAreNcclInAnyCaseInTheFirst64Characters) {
  EXPECT_TRUE(IsCommunicationKernel("ncclKernel_AllReduce_RING_LL_Sum_float"));
  EXPECT_TRUE(IsCommunicationKernel("void ncclDevKernel_AllGather_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"));
  EXPECT_TRUE(IsCommunicationKernel("NCCL_AllReduce"));
  EXPECT_TRUE(IsCommunicationKernel("xNcClx"));
  EXPECT_TRUE(IsCommunicationKernel(std::string(60, 'a') + "nccl"));     // ends at character 64
  EXPECT_FALSE(IsCommunicationKernel(std::string(61, 'a') + "nccl"));    // past it
  EXPECT_FALSE(IsCommunicationKernel("void at::native::vectorized_elementwise_kernel<4>"));
  EXPECT_FALSE(IsCommunicationKernel("ncc"));
  EXPECT_FALSE(IsCommunicationKernel("n-c-c-l"));
  EXPECT_FALSE(IsCommunicationKernel(""));
  // Characters whose bit 5 set gives a letter of "nccl" are that letter's upper case only.
  EXPECT_FALSE(IsCommunicationKernel("\x0e\x03\x03\x0c"));
  EXPECT_FALSE(IsCommunicationKernel("NCC\x0c"));
}

TEST(MemcpyTest, BandwidthFromRecordedBytes) {
  const MemcpyBreakdown stats = ComputeMemcpyStats(Rank(0));
  ASSERT_EQ(stats.rows.size(), 2u);
  EXPECT_EQ(stats.rows[0].kind, "HtoD");
  EXPECT_EQ(stats.rows[0].memory, "Pinned to Device");
  EXPECT_EQ(stats.rows[0].bytes, 1048576);
  EXPECT_DOUBLE_EQ(stats.rows[0].bandwidth_gbps, 1048576.0 / 50000.0);
  EXPECT_DOUBLE_EQ(stats.rows[0].step_share, 50000.0 / 450000.0);
  const CopyName kineto = ParseCopyName("Memcpy DtoH (Device -> Pinned)");
  EXPECT_EQ(kineto.kind, "DtoH");
  EXPECT_EQ(kineto.src_memory, "Device");
  EXPECT_EQ(kineto.dst_memory, "Pinned");
}

TEST(DiffTest, DeltasSortedByImpact) {
  const TraceDiff diff = DiffTraces(Rank(0), Rank(1));
  ASSERT_FALSE(diff.by_op_type.empty());
  // Rank 1's backward pass is 60 us slower on the host and its kernel 60 us slower on the GPU.
  EXPECT_EQ(diff.by_op_type[0].name, "Conv2DBackpropFilter");
  EXPECT_EQ(diff.by_op_type[0].delta_ns, 60000);
  EXPECT_EQ(diff.by_op_type[0].presence, "both");
  EXPECT_EQ(diff.by_op_type[1].delta_ns, 60000);
  EXPECT_EQ(diff.by_op_type[2].delta_ns, 0);
  EXPECT_EQ(diff.span_b - diff.span_a, 60000);
}

TEST(MergeTest, ClocksAlignedBySyncRecordAndStragglerFound) {
  std::vector<trace::Trace> traces;
  traces.push_back(Rank(0));
  traces.push_back(Rank(1));
  const MergeResult merged = MergeTraces(std::move(traces), AlignMethod::kBarrier);
  const MergeReport& report = merged.report;
  ASSERT_EQ(report.inputs.size(), 2u);
  EXPECT_EQ(report.inputs[0].alignment, "reference");
  EXPECT_EQ(report.inputs[1].alignment, "clock_sync");
  EXPECT_EQ(report.inputs[1].offset_ns, -1000000000);  // host-b's clock runs 1 s ahead
  EXPECT_EQ(report.inputs[0].begin_ns, report.inputs[1].begin_ns);
  ASSERT_EQ(report.stragglers.size(), 1u);
  EXPECT_EQ(report.inputs[report.stragglers[0].input].rank, 1);
  EXPECT_EQ(report.stragglers[0].lag_ns, 60000);
  EXPECT_EQ(merged.trace.span_end_ns() - merged.trace.span_begin_ns(), 510000);
  EXPECT_EQ(merged.trace.slices().size(), 2 * Rank(0).slices().size());
  EXPECT_EQ(merged.trace.flows().size(), 2 * Rank(0).flows().size());
  // StepStats details survive: the merged trace still finds each copy's bytes.
  EXPECT_EQ(ComputeMemcpyStats(merged.trace).bytes, 2 * (1048576 + 4096));
}

// Lane names say what the trace means, not the placeholders it writes: Kineto's tid -1 on a GPU
// (context-wide syncs: no stream), a negative host tid (a 32-bit pthread id written signed, shown
// in hex), our trainer's collectives lane (a made-up thread id with a name).
std::string TrackNamed(const trace::Trace& t, const std::string& full_name) {
  for (const trace::Track& track : t.tracks()) {
    if (t.str(track.full_name) == full_name) return std::string(t.str(track.name));
  }
  return "(no track " + full_name + ")";
}

TEST(LaneNamesTest, NoPlaceholderIdsInLaneNames) {
  auto kineto = trace::ReadTraceFromBytes(
      R"({"traceEvents": [
  {"ph": "M", "name": "process_labels", "pid": 0, "args": {"labels": "GPU 0"}},
  {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1700000000000010, "dur": 5},
  {"ph": "X", "cat": "cuda_sync", "name": "Context Sync", "pid": 0, "tid": -1, "ts": 1700000000000020, "dur": 1},
  {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1102, "tid": -247463936, "ts": 1700000000000000, "dur": 9},
  {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1102, "tid": 1102, "ts": 1700000000000000, "dur": 9}
]})",
      "kineto.json");
  ASSERT_TRUE(kineto.ok()) << kineto.status().message();
  EXPECT_EQ(TrackNamed(*kineto, "0/none"), "no stream (device-wide)");
  EXPECT_EQ(TrackNamed(*kineto, "1102/0xf1400000"), "thread 0xf1400000");
  EXPECT_EQ(TrackNamed(*kineto, "1102/1102"), "thread 1102");
  for (const trace::Track& track : kineto->tracks()) {
    EXPECT_EQ(kineto->str(track.name).find("-1"), std::string_view::npos) << kineto->str(track.name);
    EXPECT_EQ(kineto->str(track.full_name).find("/-"), std::string_view::npos) << kineto->str(track.full_name);
  }

  auto ours = trace::ReadTraceFromBytes(R"pb(step_stats { dev_stats {
      device: "/job:localhost/replica:0/task:0/device:CPU:0"
      node_stats { node_name: "a" all_start_micros: 10 all_end_rel_micros: 5 thread_id: 12 }
      node_stats { node_name: "tower_0/AllReduce/w" op_type: "ALLREDUCE" all_start_micros: 12 all_end_rel_micros: 5
                   thread_id: 2147418112 }
      node_stats { node_name: "b" all_start_micros: 20 all_end_rel_micros: 5 thread_id: 13 }
      node_stats { node_name: "c" all_start_micros: 30 all_end_rel_micros: 5 thread_id: 14 }
      thread_names { key: 2147418112 value: "collectives" }
      thread_names { key: 13 value: "worker" }
      thread_names { key: 14 value: "worker" } } })pb",
                                        "ours.pbtxt");
  ASSERT_TRUE(ours.ok()) << ours.status().message();
  std::set<std::string> lanes;
  for (const trace::Track& track : ours->tracks()) {
    if (track.kind == TrackKind::kOpLane) lanes.insert(std::string(ours->str(track.name)));
  }
  // Named threads by their name, the id only to tell two of one name apart.
  EXPECT_EQ(lanes, (std::set<std::string>{"thread 12", "collectives", "worker (thread 13)", "worker (thread 14)"}));
}

// A real run's step files (tests/data/trainer/lstm_run_steps: steps 7-10 of one rank) opened as
// one timeline: its four steps, with their numbers, in time order, each over its own file's span
// (read on its own), the steps `steps` finds in the same directory.
TEST(MergeTest, OneRunsStepDirectoryIsItsConsecutiveSteps) {
  const std::string dir = stepscope::testing::DataPath("trainer/lstm_run_steps");
  auto files = trace::ResolveTracePaths({dir});
  ASSERT_TRUE(files.ok()) << files.status().message();
  ASSERT_EQ(files->size(), 4u);
  std::map<int64_t, std::pair<int64_t, int64_t>> spans;  // step -> its file's span, absolute
  for (const std::string& file : *files) {
    auto t = trace::ReadTrace(file);
    ASSERT_TRUE(t.ok()) << t.status().message();
    spans[t->step_info().step] = {t->epoch_ns() + t->span_begin_ns(), t->epoch_ns() + t->span_end_ns()};
  }
  ASSERT_EQ(spans.size(), 4u);
  EXPECT_EQ(spans.begin()->first, 7);
  // Names in numeric order: step10 after step9.
  EXPECT_NE(files->back().find("lstm_small_step10.pb.gz"), std::string::npos) << files->back();

  auto traces = trace::ReadTraces({dir});
  ASSERT_TRUE(traces.ok()) << traces.status().message();
  const trace::Trace merged = OneTrace(std::move(*traces));
  const std::vector<Step> steps = StepsOfTrace(merged, /*with_totals=*/false);
  ASSERT_EQ(steps.size(), 4u);
  StepCollector collector;
  ASSERT_TRUE(trace::ForEachTrace({dir}, [&](trace::Trace t) { return collector.Add(std::move(t)); }).ok());
  auto collected = std::move(collector).Finish();
  ASSERT_TRUE(collected.ok());
  ASSERT_EQ(collected->size(), 4u);
  for (size_t i = 0; i < steps.size(); ++i) {
    const int64_t number = 7 + static_cast<int64_t>(i);
    EXPECT_EQ(steps[i].step, number);
    EXPECT_EQ(merged.epoch_ns() + steps[i].begin_ns, spans[number].first) << number;
    EXPECT_EQ(merged.epoch_ns() + steps[i].end_ns, spans[number].second) << number;
    EXPECT_EQ((*collected)[i].step, number);
    EXPECT_EQ((*collected)[i].duration_ns, steps[i].duration_ns) << number;
  }
}

TEST(MergeTest, OtherHostWithoutSyncRecordIsReportedUnaligned) {
  auto a = trace::ReadTraceFromBytes(R"pb(stepscope_session { rank: 0 host: "a" step: 1 }
      step_stats { dev_stats { device: "/device:CPU:0" node_stats { node_name: "x" all_start_micros: 10 all_end_rel_micros: 5 } } })pb",
                                     "a.pbtxt");
  auto b = trace::ReadTraceFromBytes(R"pb(stepscope_session { rank: 1 host: "b" step: 1 }
      step_stats { dev_stats { device: "/device:CPU:0" node_stats { node_name: "x" all_start_micros: 12 all_end_rel_micros: 5 } } })pb",
                                     "b.pbtxt");
  ASSERT_TRUE(a.ok() && b.ok());
  std::vector<trace::Trace> traces;
  traces.push_back(std::move(a).value());
  traces.push_back(std::move(b).value());
  const MergeResult merged = MergeTraces(std::move(traces));
  EXPECT_EQ(merged.report.unaligned, 1);
  EXPECT_EQ(merged.report.inputs[1].alignment, "unaligned");
  EXPECT_EQ(merged.trace.import_stats().Get("merge_clock_unaligned"), 1);
}

// Free-form arguments (here the real JAX and TensorFlow 2 XSpace fixtures' stats) follow their
// slices into the merge: none is dropped, each with its key and value.
TEST(MergeTest, SliceArgumentsFollowTheirSlices) {
  std::vector<trace::Trace> traces;
  for (const char* name : {"xspace/jax_mlp_cpu.xplane.pb.gz", "xspace/tf2_keras_mlp_cpu.xplane.pb.gz"}) {
    auto trace = trace::ReadTrace(stepscope::testing::DataPath(name));
    ASSERT_TRUE(trace.ok()) << trace.status().message();
    ASSERT_FALSE(trace->all_slice_args().empty()) << name;
    traces.push_back(std::move(trace).value());
  }
  // Per input: its slices' names and arguments as text, to find again in the merge.
  std::multiset<std::string> expected;
  auto describe = [](const trace::Trace& t, uint32_t slice) {
    std::string text(t.str(t.slice_name(t.slices()[slice])));
    for (const trace::SliceArg& arg : t.slice_args(slice)) {
      text += " " + std::string(t.str(arg.key)) + "=" + arg.Text(t.strings());
    }
    return text;
  };
  size_t args = 0;
  for (const trace::Trace& t : traces) {
    args += t.all_slice_args().size();
    for (uint32_t k = 0; k < t.slices().size(); ++k) {
      if (!t.slice_args(k).empty()) expected.insert(describe(t, k));
    }
  }
  const MergeResult merged = MergeTraces(std::move(traces));
  EXPECT_EQ(merged.trace.all_slice_args().size(), args);
  std::multiset<std::string> found;
  for (uint32_t k = 0; k < merged.trace.slices().size(); ++k) {
    if (!merged.trace.slice_args(k).empty()) found.insert(describe(merged.trace, k));
  }
  EXPECT_EQ(found, expected);
}

TEST(MergeTest, DirectoryWithoutTracesIsAClearError) {
  const auto dir = stepscope::testing::ScratchDir("empty_ranks");
  auto traces = trace::ReadTraces({dir.string()});
  ASSERT_FALSE(traces.ok());
  EXPECT_EQ(traces.status().code(), StatusCode::kInvalidInput);
  EXPECT_NE(traces.status().message().find(dir.string()), std::string::npos);
  EXPECT_NE(traces.status().message().find("no trace files"), std::string::npos);
}

}  // namespace
}  // namespace stepscope::analysis
