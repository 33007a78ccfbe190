// Memory curves: derived from outputs (known by construction), from allocation records (the
// real sample), and the live-tensor query that attributes a peak.
#include "profiler/analysis/memory_timeline.h"

#include <gtest/gtest.h>

#include "profiler/trace/reader.h"
#include "test_util.h"

namespace stepscope::analysis {
namespace {

// A (0-10 µs) makes 100 bytes that B (20-30 µs) consumes; C (5-15 µs) makes 50 bytes nobody
// uses; D makes 7 bytes on another allocator. No allocation records: curves come from outputs.
constexpr char kOutputsOnly[] = R"pb(
step_stats {
  dev_stats {
    device: "/job:localhost/replica:0/task:0/device:GPU:0"
    node_stats {
      node_name: "A" all_start_micros: 1000 all_end_rel_micros: 10
      timeline_label: "A = Const()"
      output { tensor_description { allocation_description {
        requested_bytes: 100 allocated_bytes: 128 allocator_name: "GPU_0_bfc" } } }
    }
    node_stats {
      node_name: "C" all_start_micros: 1005 all_end_rel_micros: 10
      timeline_label: "C = Const()"
      output { tensor_description { allocation_description {
        requested_bytes: 50 allocated_bytes: 64 allocator_name: "GPU_0_bfc" } } }
    }
    node_stats {
      node_name: "B" all_start_micros: 1020 all_end_rel_micros: 10
      timeline_label: "B = Identity(A)"
    }
    node_stats {
      node_name: "D" all_start_micros: 1002 all_end_rel_micros: 1
      timeline_label: "D = Const()"
      output { tensor_description { allocation_description {
        requested_bytes: 7 allocator_name: "cpu" } } }
    }
  }
}
)pb";

trace::Trace Read(std::string_view text) {
  auto trace = trace::ReadTraceFromBytes(text, "outputs.pbtxt");
  EXPECT_TRUE(trace.ok()) << trace.status().message();
  return std::move(trace).value();
}

TEST(MemoryTimelineTest, CurveFromOutputsIsKnownByConstruction) {
  const trace::Trace trace = Read(kOutputsOnly);
  const auto timelines = ComputeMemoryTimelines(trace);
  ASSERT_EQ(timelines.size(), 2u);
  const AllocatorTimeline& gpu = timelines[0];
  EXPECT_EQ(gpu.allocator, "GPU_0_bfc");
  EXPECT_TRUE(gpu.derived_from_outputs);
  EXPECT_EQ(gpu.origin, "outputs");
  EXPECT_NE(gpu.device.find("GPU:0"), std::string::npos);
  const std::vector<MemoryPoint> expected = {
      {0, 100}, {5000, 150}, {15000, 100}, {30000, 0}};
  EXPECT_EQ(gpu.curve, expected);
  EXPECT_EQ(gpu.peak_bytes, 150);
  EXPECT_EQ(gpu.peak_ns, 5000);
  EXPECT_EQ(BytesAt(gpu.curve, 14999), 150);
  EXPECT_EQ(BytesAt(gpu.curve, 15000), 100);
  EXPECT_EQ(BytesAt(gpu.curve, -1), 0);
  EXPECT_EQ(timelines[1].allocator, "cpu");
  EXPECT_EQ(timelines[1].peak_bytes, 7);
}

TEST(MemoryTimelineTest, LiveTensorsAtThePeakAddUpToIt) {
  const trace::Trace trace = Read(kOutputsOnly);
  const auto timelines = ComputeMemoryTimelines(trace);
  const AllocatorTimeline& gpu = timelines[0];
  const auto live = LiveTensorsAt(trace, gpu, gpu.peak_ns);
  ASSERT_EQ(live.size(), 2u);
  EXPECT_EQ(live[0].name, "A");
  EXPECT_EQ(live[0].bytes, 100);
  EXPECT_EQ(live[0].allocated_bytes, 128);
  EXPECT_EQ(live[0].alloc_ns, 0);
  EXPECT_EQ(live[0].free_ns, 30000);  // the end of its consumer B
  EXPECT_EQ(live[0].producer_op, "Const");
  EXPECT_EQ(trace.str(trace.slice_name(trace.slices()[static_cast<size_t>(live[0].producer_slice)])), "A");
  EXPECT_EQ(live[1].name, "C");
  EXPECT_EQ(live[1].free_ns, 15000);  // unconsumed: its producer's end
  // At every curve point the live tensors add up to the curve.
  for (const MemoryPoint& p : gpu.curve) {
    int64_t sum = 0;
    for (const LiveTensor& t : LiveTensorsAt(trace, gpu, p.time_ns)) sum += t.bytes;
    EXPECT_EQ(sum, p.bytes) << "at " << p.time_ns;
  }
  EXPECT_TRUE(LiveTensorsAt(trace, gpu, 30000).empty());
}

TEST(MemoryTimelineTest, SampleCurvesComeFromAllocationRecords) {
  auto trace = trace::ReadTrace(stepscope::testing::DataPath("ptb_lstm_tf1_gpu_step.pbtxt"));
  ASSERT_TRUE(trace.ok());
  const auto timelines = ComputeMemoryTimelines(*trace);
  const AllocatorTimeline* gpu = nullptr;
  for (const auto& t : timelines) {
    if (t.allocator == "GPU_0_bfc") gpu = &t;
  }
  ASSERT_NE(gpu, nullptr);
  EXPECT_FALSE(gpu->derived_from_outputs);
  EXPECT_NE(gpu->origin.find("allocation_records"), std::string::npos);
  ASSERT_FALSE(gpu->curve.empty());
  for (size_t i = 1; i < gpu->curve.size(); ++i) EXPECT_LT(gpu->curve[i - 1].time_ns, gpu->curve[i].time_ns);
  int64_t max = 0;
  for (const auto& p : gpu->curve) max = std::max(max, p.bytes);
  EXPECT_EQ(gpu->peak_bytes, max);
  EXPECT_EQ(BytesAt(gpu->curve, gpu->peak_ns), max);
  const auto live = LiveTensorsAt(*trace, *gpu, gpu->peak_ns);
  ASSERT_FALSE(live.empty());
  EXPECT_EQ(live.front().bytes, 8000000);  // 10000 x 200 fp32 softmax weights
  for (size_t i = 1; i < live.size(); ++i) EXPECT_GE(live[i - 1].bytes, live[i].bytes);
}

TEST(MemoryTimelineTest, TraceWithoutMemoryHasNoTimelines) {
  const trace::Trace trace = Read(R"pb(step_stats { dev_stats { device: "/device:CPU:0"
      node_stats { node_name: "x" all_start_micros: 5 all_end_rel_micros: 1 } } })pb");
  EXPECT_TRUE(ComputeMemoryTimelines(trace).empty());
}

}  // namespace
}  // namespace stepscope::analysis
