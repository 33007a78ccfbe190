// StepCollector's copy records: each goes on its destination device's `<device>/memcpy` lane in
// start order, with TensorFlow's memcpy node name and label and a MemcpyInfo; copies arriving
// while not recording are dropped, and a new step starts with none.
#include "profiler/collect/step_collector.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

namespace stepscope::collect {
namespace {

const std::string kCpu0 = "/job:localhost/replica:0/task:0/device:CPU:0";
const std::string kCpu1 = "/job:localhost/replica:0/task:0/device:CPU:1";
const std::string kSplit = "tower_1/TrainInput/split";
const std::string kSlice = "Slice";

CopyRecord Copy(const std::string& device, std::string annotation, std::string kind,
                int64_t bytes, int64_t start_ns, int64_t end_ns) {
  CopyRecord record;
  record.device = &device;
  record.annotation = std::move(annotation);
  record.kind = std::move(kind);
  record.src_memory = record.kind == "HtoD" ? "Pageable" : "Device";
  record.dst_memory = "Device";
  record.bytes = bytes;
  record.start_ns = start_ns;
  record.end_ns = end_ns;
  return record;
}

const tf::DeviceStepStats* FindDevice(const tf::RunMetadata& metadata, const std::string& name) {
  for (const auto& dev : metadata.step_stats().dev_stats()) {
    if (dev.device() == name) return &dev;
  }
  return nullptr;
}

TEST(StepCollectorCopies, GoOnTheDestinationsMemcpyLaneInStartOrder) {
  StepCollector collector;
  collector.BeginStep(7);
  // An op on CPU:1, so the executor lane exists next to the memcpy lanes.
  collector.BeginOp(&kCpu1, &kSplit, &kSlice, nullptr, 1'000);
  collector.RecordCopy(Copy(kCpu1, "tower_1/TrainInput/split:Slice", "HtoD", 12288, 1'500, 4'500));
  collector.EndOp(5'000);
  // From another thread, out of start order.
  std::thread other([&] {
    collector.RecordCopy(Copy(kCpu1, "tower_1/HorovodAllreduce_fused_0:MEMCPY_OUT_FUSION_BUFFER",
                              "DtoD", 4000, 9'000, 9'250));
    collector.RecordCopy(Copy(kCpu0, "tower_0/gradients/AllGather:AllGather", "DtoD", 808, 6'000,
                              6'100));
  });
  other.join();
  const tf::RunMetadata metadata = collector.FinishStep(/*clock_offset_ns=*/1'000'000);
  ASSERT_EQ(metadata.step_stats().dev_stats_size(), 3);  // CPU:1, CPU:0/memcpy, CPU:1/memcpy

  const tf::DeviceStepStats* lane = FindDevice(metadata, kCpu1 + "/memcpy");
  ASSERT_NE(lane, nullptr);
  ASSERT_EQ(lane->node_stats_size(), 2);
  const tf::NodeExecStats& staging = lane->node_stats(0);
  EXPECT_EQ(staging.node_name(), "tower_1/TrainInput/split:Slice:MEMCPYHtoD");
  EXPECT_EQ(staging.timeline_label(), "MEMCPYHtoD 12288 bytes (Pageable to Device)");
  EXPECT_EQ(staging.all_start_nanos(), 1'001'500);
  EXPECT_EQ(staging.all_start_micros(), 1'001);
  EXPECT_EQ(staging.all_end_rel_nanos(), 3'000);
  EXPECT_EQ(staging.all_end_rel_micros(), 3);
  ASSERT_TRUE(staging.has_memcpy());
  EXPECT_EQ(staging.memcpy().kind(), "HtoD");
  EXPECT_EQ(staging.memcpy().bytes(), 12288);
  EXPECT_EQ(staging.memcpy().src_memory(), "Pageable");
  EXPECT_EQ(staging.memcpy().dst_memory(), "Device");
  const tf::NodeExecStats& fusion = lane->node_stats(1);
  EXPECT_EQ(fusion.node_name(),
            "tower_1/HorovodAllreduce_fused_0:MEMCPY_OUT_FUSION_BUFFER:MEMCPYDtoD");
  EXPECT_EQ(fusion.timeline_label(), "MEMCPYDtoD 4000 bytes (Device to Device)");

  const tf::DeviceStepStats* lane0 = FindDevice(metadata, kCpu0 + "/memcpy");
  ASSERT_NE(lane0, nullptr);
  ASSERT_EQ(lane0->node_stats_size(), 1);
  EXPECT_EQ(lane0->node_stats(0).memcpy().bytes(), 808);

  // The executor lane keeps only the op.
  const tf::DeviceStepStats* executor = FindDevice(metadata, kCpu1);
  ASSERT_NE(executor, nullptr);
  ASSERT_EQ(executor->node_stats_size(), 1);
  EXPECT_EQ(executor->node_stats(0).node_name(), kSplit);
}

TEST(StepCollectorCopies, OutsideAStepAreDroppedAndANewStepStartsEmpty) {
  StepCollector collector;
  collector.RecordCopy(Copy(kCpu0, "before:Slice", "HtoD", 4, 1, 2));  // not recording yet
  collector.BeginStep(1);
  collector.RecordCopy(Copy(kCpu0, "first:Slice", "HtoD", 4, 10, 20));
  tf::RunMetadata first = collector.FinishStep();
  ASSERT_EQ(first.step_stats().dev_stats_size(), 1);
  ASSERT_EQ(first.step_stats().dev_stats(0).node_stats_size(), 1);
  EXPECT_EQ(first.step_stats().dev_stats(0).node_stats(0).node_name(), "first:Slice:MEMCPYHtoD");
  collector.RecordCopy(Copy(kCpu0, "after:Slice", "HtoD", 4, 30, 40));  // stopped
  collector.BeginStep(2);
  EXPECT_EQ(collector.FinishStep().step_stats().dev_stats_size(), 0);
}

}  // namespace
}  // namespace stepscope::collect
