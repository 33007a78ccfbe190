// A profiled two-device ResNet step with tensor fusion, as `--profile` records it: the fused
// all-reduces and the fusion-buffer copies are in the trace (collective lane and memcpy lane of
// each device), they overlap the backward ops of their device in time, and the overlap analysis
// sees communication hidden behind backward. Without fusion nothing is hidden.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "base/file_io.h"
#include "profiler/analysis/step_analyses.h"
#include "profiler/collect/step_collector.h"
#include "profiler/trace/reader.h"
#include "profiler/trace/step_stats_io.h"
#include "stepscope/tf/run_metadata.pb.h"
#include "test_util.h"
#include "trainer/main/step_profiler.h"
#include "trainer/models/resnet_model.h"
#include "trainer/towers/towers.h"

namespace stepscope::trainer {
namespace {

using runtime::DType;

struct Interval {
  int64_t start = 0, end = 0;
  std::string name;
};

struct ProfiledStep {
  std::string path;
  std::shared_ptr<tf::RunMetadata> metadata;
};

// Two ResNet-14 towers on 32×32 images, 2 images each; step 2 is profiled.
ProfiledStep ProfileResNetStep(const std::string& tag, int64_t fusion_threshold_bytes) {
  auto devices = runtime::CreateDevices(*runtime::ParseDeviceSpec("cpu:2")).value();
  std::vector<runtime::Device*> device_list;
  std::vector<std::unique_ptr<models::Model>> replicas;
  models::ResNetConfig config;
  config.depth = 14;
  config.image_size = 32;
  config.num_classes = 10;
  for (auto& d : devices) {
    device_list.push_back(d.get());
    replicas.push_back(models::MakeResNet(*d, config).value());
  }
  ProfileOptions profile;
  profile.enabled = true;
  profile.dir = testing::ScratchDir("fusion_profile_" + tag).string();
  StepProfiler profiler(profile, "resnet14");
  TowerOptions options;
  options.fusion_threshold_bytes = fusion_threshold_bytes;
  options.cycle_time_ms = 1.0;
  options.observer = &profiler;
  auto towers = Towers::Create(std::move(replicas), options).value();

  models::Batch batch;
  batch.inputs = *devices[0]->Allocate(DType::kFloat32, {4, 32, 32, 3});
  batch.labels = *devices[0]->Allocate(DType::kInt32, {4});
  for (int64_t k = 0; k < batch.inputs.num_elements(); ++k) {
    batch.inputs.data<float>()[k] = static_cast<float>(k % 17) / 17.0f - 0.5f;
  }
  for (int i = 0; i < 4; ++i) batch.labels.data<int32_t>()[i] = i;
  ProfiledStep out;
  for (int step = 1; step <= 2; ++step) {
    if (step == 2) profiler.BeginStep(step, device_list);
    auto result = towers->Step(batch, 0.01f);
    EXPECT_TRUE(result.ok()) << result.status().message();
    if (step == 2) {
      auto path = profiler.EndStep();
      EXPECT_TRUE(path.ok()) << path.status().message();
      if (!path.ok()) return out;
      out.path = *path;
    }
  }
  auto parsed = trace::ParseStepStats(*ReadFile(out.path), out.path);
  EXPECT_TRUE(parsed.ok()) << parsed.status().message();
  if (parsed.ok()) out.metadata = parsed->run_metadata;
  return out;
}

bool Overlaps(const Interval& a, const Interval& b) { return a.start < b.end && b.start < a.end; }

TEST(FusionProfile, FusedCollectivesAndCopiesOverlapBackwardOnTheirDevice) {
  const ProfiledStep step = ProfileResNetStep("on", int64_t{64} << 20);
  ASSERT_NE(step.metadata, nullptr);
  std::map<std::string, const tf::DeviceStepStats*> devices;
  for (const auto& dev : step.metadata->step_stats().dev_stats()) devices[dev.device()] = &dev;
  ASSERT_EQ(devices.size(), 4u) << "two executors and their two memcpy lanes";

  std::vector<Interval> all_backward, all_communication;
  for (int d = 0; d < 2; ++d) {
    const std::string name = "/job:localhost/replica:0/task:0/device:CPU:" + std::to_string(d);
    SCOPED_TRACE(name);
    ASSERT_EQ(devices.count(name), 1u);
    ASSERT_EQ(devices.count(name + "/memcpy"), 1u);
    const std::string tower = "tower_" + std::to_string(d) + "/";
    std::vector<Interval> backward, communication;
    int allreduces = 0, copies_in = 0, copies_out = 0;
    for (const auto& node : devices[name]->node_stats()) {
      const Interval interval{node.all_start_nanos(),
                              node.all_start_nanos() + node.all_end_rel_nanos(), node.node_name()};
      if (node.node_name().rfind("gradient_tape/", 0) == 0) backward.push_back(interval);
      if (!node.has_collective()) continue;
      EXPECT_EQ(node.thread_id(), collect::kCollectiveLaneThreadId);
      EXPECT_EQ(node.node_name().rfind(tower + "HorovodAllreduce_", 0), 0u) << node.node_name();
      EXPECT_EQ(node.collective().group_size(), 2);
      EXPECT_GT(node.collective().bytes(), 0);
      if (node.op_type() == "ALLREDUCE") ++allreduces;
      if (node.op_type() == "MEMCPY_IN_FUSION_BUFFER") ++copies_in;
      if (node.op_type() == "MEMCPY_OUT_FUSION_BUFFER") ++copies_out;
      communication.push_back(interval);
    }
    EXPECT_GT(allreduces, 1);
    EXPECT_GT(copies_in, 0);
    EXPECT_EQ(copies_in, copies_out);
    // The same fusion copies, with this participant's own times, on the memcpy lane; and the
    // staging of the tower's images and labels.
    int fusion_copies = 0, staging = 0;
    for (const auto& node : devices[name + "/memcpy"]->node_stats()) {
      ASSERT_TRUE(node.has_memcpy()) << node.node_name();
      EXPECT_GT(node.memcpy().bytes(), 0);
      EXPECT_EQ(node.timeline_label(), "MEMCPY" + node.memcpy().kind() + " " +
                                           std::to_string(node.memcpy().bytes()) + " bytes (" +
                                           node.memcpy().src_memory() + " to Device)");
      if (node.node_name().find("_FUSION_BUFFER:MEMCPYDtoD") != std::string::npos) {
        ++fusion_copies;
        communication.push_back({node.all_start_nanos(),
                                 node.all_start_nanos() + node.all_end_rel_nanos(),
                                 node.node_name()});
      }
      if (node.node_name() == tower + "TrainInput/split:Slice:MEMCPYHtoD") {
        ++staging;
        EXPECT_EQ(node.memcpy().src_memory(), "Pageable");
      }
    }
    EXPECT_EQ(fusion_copies, copies_in + copies_out);
    EXPECT_EQ(staging, 2);  // images and labels
    all_backward.insert(all_backward.end(), backward.begin(), backward.end());
    all_communication.insert(all_communication.end(), communication.begin(), communication.end());
  }
  // A collective waits for both towers' gradients, so the tower that finishes backward first may
  // see its reductions only after its own backward; the other tower's backward is still running
  // then. The step's communication must overlap backward work, on whichever device.
  bool overlapped = false;
  for (const Interval& c : all_communication) {
    for (const Interval& b : all_backward) overlapped = overlapped || Overlaps(c, b);
  }
  EXPECT_TRUE(overlapped) << "no collective or fusion copy overlaps a gradient_tape op";

  // Read as every front end reads it: copies are memcpy slices, and the overlap analysis finds
  // communication hidden behind compute.
  auto trace = trace::ReadTrace(step.path);
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  int memcpy_slices = 0;
  for (const trace::Slice& slice : trace->slices()) {
    if (slice.kind == trace::SliceKind::kMemcpy) ++memcpy_slices;
  }
  EXPECT_GT(memcpy_slices, 4);
  const analysis::OverlapStats overlap = analysis::ComputeOverlap(*trace);
  EXPECT_GT(overlap.comm_ns, 0);
  EXPECT_GT(overlap.hidden_ns, 0);
}

TEST(FusionProfile, WithoutFusionTheReductionWaitsForBackward) {
  const ProfiledStep step = ProfileResNetStep("off", 0);
  ASSERT_NE(step.metadata, nullptr);
  int64_t last_backward_end = 0, first_collective_start = INT64_MAX;
  int collectives = 0;
  for (const auto& dev : step.metadata->step_stats().dev_stats()) {
    for (const auto& node : dev.node_stats()) {
      const int64_t end = node.all_start_nanos() + node.all_end_rel_nanos();
      if (node.node_name().rfind("gradient_tape/", 0) == 0) {
        last_backward_end = std::max(last_backward_end, end);
      }
      if (node.has_collective()) {
        ++collectives;
        EXPECT_EQ(node.op_type(), "ALLREDUCE");  // no fusion phases
        first_collective_start = std::min(first_collective_start, node.all_start_nanos());
      }
    }
  }
  EXPECT_GT(collectives, 0);
  EXPECT_GE(first_collective_start, last_backward_end);
}

}  // namespace
}  // namespace stepscope::trainer
