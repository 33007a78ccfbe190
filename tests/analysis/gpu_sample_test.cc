// stepscope-train's own profiled GPU steps, recorded through CUPTI on an NVIDIA H100
// (samples/h100_*.pb.gz, written by scripts/gpu/check.sh): the PTB LSTM small and ResNet-50
// (image 224, batch 32), step 3 of each. Real records, not synthetic ones: the file's lanes as
// TensorFlow's GPU tracer names them, the CUPTI conversion (kernels and copies linked to the ops
// that launched them, no record dropped), and the analyses on them.
//
// The counts cross-check two paths: the trainer tallied the CUPTI records as they arrived ("GPU:
// 8164 CUPTI records (482 kernels, 250 copies, 1 memsets, 3738 API calls, 40 other), 726 linked
// to 416 ops, 7 unlinked, 0 dropped" for the LSTM; "1337 kernels, 7 copies, 1 memsets ... 1342 linked to 729
// ops, 3 unlinked" for ResNet-50), the reader and analyses count what the file holds.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <string>

#include "profiler/analysis/breakdowns.h"
#include "profiler/analysis/gpu_analyses.h"
#include "profiler/analysis/step_analyses.h"
#include "profiler/formats/reader.h"
#include "profiler/formats/step_stats/step_stats_payload.h"
#include "profiler/formats/writer.h"
#include "stepscope/tf/run_metadata.pb.h"
#include "test_util.h"

namespace stepscope::analysis {
namespace {

struct GpuSample {
  const char* file;
  int64_t kernels, copies, memsets, linked, ops_lane_nodes;
  int64_t launching_ops;  // the ops the linked work came from (the trainer's "linked to N ops")
};
const GpuSample kLstm{"h100_lstm_small_step3.pb.gz", 482, 250, 1, 726, 418, 416};
const GpuSample kResNet{"h100_resnet50_b32_step3.pb.gz", 1337, 7, 1, 1342, 729, 729};

trace::Trace Read(const GpuSample& sample) {
  auto read = trace::ReadTrace(stepscope::testing::SamplePath(sample.file));
  EXPECT_TRUE(read.ok()) << read.status().message();
  return read.ok() ? std::move(read).value() : trace::Trace();
}

class GpuSampleTest : public ::testing::TestWithParam<GpuSample> {};

// The RunMetadata as written: TensorFlow's lanes, every record linked or counted, no drops.
TEST_P(GpuSampleTest, LanesAndRecordsAreTensorFlowsGpuTracers) {
  const trace::Trace trace = Read(GetParam());
  ASSERT_TRUE(HasStepStats(trace));
  EXPECT_EQ(trace.step_info().step, 3);
  EXPECT_EQ(trace.step_info().dropped_records, 0u);
  EXPECT_EQ(trace.import_stats().Get("collector_dropped_gpu_records"), 0);
  const auto metadata = LoadRunMetadata(trace);
  ASSERT_NE(metadata, nullptr);
  std::map<std::string, int> nodes;  // lane -> node count
  int64_t kernels = 0, copies = 0, linked = 0, copy_bytes = 0;
  std::set<uint64_t> host_ids;
  for (const auto& dev : metadata->step_stats().dev_stats()) {
    nodes[dev.device()] = dev.node_stats_size();
    const bool stream = dev.device().starts_with("/device:GPU:0/stream:") &&
                        dev.device() != "/device:GPU:0/stream:all";
    for (const auto& node : dev.node_stats()) {
      if (dev.device() == "/job:localhost/replica:0/task:0/device:GPU:0" &&
          node.correlation_id() != 0) {
        host_ids.insert(node.correlation_id());
      }
      if (!stream) continue;
      kernels += node.has_kernel();
      if (node.has_memcpy()) {
        ++copies;
        copy_bytes += node.memcpy().bytes();
        EXPECT_FALSE(node.memcpy().kind().empty());
      }
    }
  }
  for (const auto& dev : metadata->step_stats().dev_stats()) {
    if (!dev.device().starts_with("/device:GPU:0/stream:") || dev.device().ends_with(":all")) continue;
    for (const auto& node : dev.node_stats()) linked += host_ids.count(node.correlation_id());
  }
  EXPECT_EQ(nodes["/job:localhost/replica:0/task:0/device:GPU:0"], GetParam().ops_lane_nodes);
  EXPECT_EQ(nodes["/device:GPU:0/stream:all"], GetParam().kernels + GetParam().copies + GetParam().memsets);
  EXPECT_EQ(nodes["/device:GPU:0/memcpy"], GetParam().copies);
  // The runtime's own copy lane gives way to CUPTI's on a traced GPU.
  EXPECT_EQ(nodes.count("/job:localhost/replica:0/task:0/device:GPU:0/memcpy"), 0u);
  EXPECT_EQ(kernels, GetParam().kernels);
  EXPECT_EQ(copies, GetParam().copies);
  EXPECT_GT(copy_bytes, 0);
  EXPECT_EQ(linked, GetParam().linked);  // each linked record carries its op's id
  // Allocations of the GPU's and the pinned host allocator, as TensorFlow names them.
  std::set<std::string> allocators;
  for (const auto& dev : metadata->step_stats().dev_stats()) {
    for (const auto& node : dev.node_stats()) {
      for (const auto& memory : node.memory()) allocators.insert(memory.allocator_name());
    }
  }
  EXPECT_TRUE(allocators.count("GPU_0_bfc")) << ::testing::PrintToString(allocators);
  // The pinned staging buffers of the host-to-GPU copies, as TensorFlow's GPU steps record them.
  EXPECT_TRUE(allocators.count("cuda_host_bfc")) << ::testing::PrintToString(allocators);
}

// What the reader makes of it: every piece of GPU work once, on its stream, linked to its launch.
TEST_P(GpuSampleTest, AnalysesCountWhatTheTracerRecorded) {
  const trace::Trace trace = Read(GetParam());
  const int64_t work = GetParam().kernels + GetParam().copies + GetParam().memsets;
  const auto rows = ComputeGpuBreakdown(trace);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].time.slices, work);
  EXPECT_GT(rows[0].time.busy_ns, 0);
  EXPECT_EQ(rows[0].time.busy_ns + rows[0].time.idle_ns, rows[0].time.span_ns);
  const KernelStats kernels = ComputeKernelStats(trace);
  EXPECT_EQ(kernels.launches, GetParam().kernels);
  const MemcpyBreakdown copies = ComputeMemcpyStats(trace);
  EXPECT_EQ(copies.count, GetParam().copies);
  EXPECT_EQ(copies.without_bytes, 0);
  const LaunchReport launches = ComputeLaunches({GpuInput{&trace, {}}});
  EXPECT_EQ(launches.work, work);
  EXPECT_EQ(launches.work - launches.unlinked, GetParam().linked);
  // Here an op is the launch of all its kernels: each op counts once as a call, lists once among
  // the long calls, and is its own row of the per-op table (no "(no op)").
  EXPECT_EQ(launches.cpu.count, GetParam().launching_ops);
  std::set<std::string> long_calls;
  for (const Launch& l : launches.long_runtime) {
    EXPECT_TRUE(long_calls.insert(l.runtime).second) << "listed twice: " << l.runtime;
    EXPECT_EQ(l.host_op, l.runtime);
  }
  EXPECT_FALSE(long_calls.empty());
  EXPECT_EQ(static_cast<int64_t>(launches.by_op.size()), GetParam().launching_ops);
  for (const OpLaunches& op : launches.by_op) EXPECT_NE(op.op, "(no op)");
  const IdleReport idle = ComputeIdle({GpuInput{&trace, {}}});
  EXPECT_FALSE(idle.streams.empty());
  const CriticalPath path = ComputeCriticalPath(trace);
  ASSERT_FALSE(path.elements.empty());
  int64_t bounds = 0;
  for (int64_t ns : path.bound_ns) bounds += ns;
  EXPECT_EQ(bounds, path.length_ns);
  EXPECT_LE(path.length_ns, trace.span_end_ns() - trace.span_begin_ns());
}

// The Chrome export Perfetto opens: the GPU work once (TensorFlow's repeats left out), readable.
TEST_P(GpuSampleTest, ChromeExportKeepsEveryKernelAndCopy) {
  const trace::Trace trace = Read(GetParam());
  const auto dir = stepscope::testing::ScratchDir("gpu_sample_export");
  const std::string path = (dir / "step.json.gz").string();
  ASSERT_TRUE(trace::WriteTrace(trace, path, trace::OutputFormat::kPerfettoJson).ok());
  auto back = trace::ReadTrace(path);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(ComputeKernelStats(*back).launches, GetParam().kernels);
  EXPECT_EQ(ComputeMemcpyStats(*back).count, GetParam().copies);
  std::filesystem::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(H100, GpuSampleTest, ::testing::Values(kLstm, kResNet),
                         [](const ::testing::TestParamInfo<GpuSample>& sample) {
                           return std::string(sample.param.file == kLstm.file ? "LstmSmall"
                                                                              : "ResNet50");
                         });

// The two models' GPU steps differ as they should: ResNet-50 keeps the GPU busy (host far ahead,
// launches waiting in the queue), the LSTM small leaves it mostly idle (host-bound launches).
TEST(GpuSamples, ResNetIsGpuBoundAndTheLstmHostBound) {
  const auto resnet = ComputeGpuBreakdown(Read(kResNet));
  const auto lstm = ComputeGpuBreakdown(Read(kLstm));
  ASSERT_EQ(resnet.size(), 1u);
  ASSERT_EQ(lstm.size(), 1u);
  EXPECT_GT(resnet[0].time.busy_ns * 10, resnet[0].time.span_ns * 8);  // > 80% busy
  EXPECT_LT(lstm[0].time.busy_ns * 10, lstm[0].time.span_ns * 3);      // < 30% busy
}

// Length of the union of [begin, end) intervals: a recount made here, not by the analyses.
int64_t UnionNs(std::vector<std::pair<int64_t, int64_t>> intervals) {
  std::sort(intervals.begin(), intervals.end());
  int64_t total = 0, covered_to = INT64_MIN;
  for (const auto& [begin, end] : intervals) {
    if (end <= covered_to) continue;
    total += end - std::max(begin, covered_to);
    covered_to = end;
  }
  return total;
}

// The critical path of the real GPU steps against what their records allow. A path's pieces are
// disjoint in time, so the time it holds in kernels (copies, host work) can be no more than the
// union of the step's kernels (copies, host ops and calls). ResNet-50 keeps stream 13 busy and its
// host blocks on the loss' device-to-host copies before the backward pass: the path runs through
// the kernels and those copies, bound by GPU compute. The LSTM steps (H100, and TensorFlow 1.x's
// own, 58% of its span on the GPU against 82% on the host op lane) are bound by the host.
TEST(GpuSamples, CriticalPathRunsThroughTheGpuWhereTheGpuIsBusy) {
  struct Case {
    std::string path;
    PathBound bound;
  };
  const std::vector<Case> cases = {{stepscope::testing::SamplePath(kResNet.file), PathBound::kGpuCompute},
                                   {stepscope::testing::SamplePath(kLstm.file), PathBound::kCpu},
                                   {stepscope::testing::DataPath("ptb_lstm_tf1_gpu_step.pbtxt"), PathBound::kCpu}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.path);
    auto read = trace::ReadTrace(c.path);
    ASSERT_TRUE(read.ok()) << read.status().message();
    const trace::Trace& trace = *read;
    std::vector<std::pair<int64_t, int64_t>> kernels, copies, host;
    for (const trace::Slice& s : trace.slices()) {
      if (s.duplicate()) continue;
      const trace::TrackKind lane = trace.tracks()[s.track].kind;
      const bool gpu = lane == trace::TrackKind::kGpuStream;
      if (gpu && s.kind == trace::SliceKind::kKernel) kernels.emplace_back(s.start_ns, s.end_ns());
      if (gpu && s.kind == trace::SliceKind::kMemcpy) copies.emplace_back(s.start_ns, s.end_ns());
      if (!gpu && (s.kind == trace::SliceKind::kOp || s.kind == trace::SliceKind::kRuntime)) {
        host.emplace_back(s.start_ns, s.end_ns());
      }
    }
    const CriticalPath path = ComputeCriticalPath(trace);
    int64_t held_in_kernels = 0, held_in_copies = 0, held_on_host = 0;
    for (const PathElement& e : path.elements) {
      if (e.kind == "kernel") held_in_kernels += e.held_ns;
      if (e.kind == "memcpy") held_in_copies += e.held_ns;
      if (e.kind == "op" || e.kind == "runtime") held_on_host += e.held_ns;
    }
    EXPECT_LE(held_in_kernels, UnionNs(kernels));
    EXPECT_LE(held_in_copies, UnionNs(copies));
    EXPECT_LE(held_on_host, UnionNs(host));
    EXPECT_LE(path.length_ns, trace.span_end_ns() - trace.span_begin_ns());
    EXPECT_EQ(path.bound_by, c.bound);
  }
  // ResNet-50: GPU compute for most of the step, and the backward pass' first op after the
  // copies that brought the loss back.
  const CriticalPath resnet = ComputeCriticalPath(Read(kResNet));
  EXPECT_GT(resnet.bound_ns[static_cast<int>(PathBound::kGpuCompute)] * 10, resnet.length_ns * 8);
  const auto mul = std::find_if(resnet.elements.begin(), resnet.elements.end(), [](const PathElement& e) {
    return e.name == "gradient_tape/SparseSoftmaxCrossEntropyWithLogits/mul";
  });
  ASSERT_NE(mul, resnet.elements.end());
  EXPECT_EQ(mul->edge, "readback");
  ASSERT_NE(mul, resnet.elements.begin());
  EXPECT_EQ(std::prev(mul)->kind, "memcpy");
}

}  // namespace
}  // namespace stepscope::analysis
