// A profiled two-device ResNet step with tensor fusion, as `--profile` records it: the fused
// all-reduces and the fusion-buffer copies are in the trace (collective lane and memcpy lane of
// each device), they overlap the backward ops of their device in time, and the overlap analysis
// sees communication hidden behind backward. Without fusion nothing is hidden.
//
// Nothing here depends on how the threads are scheduled: batches go out when the fusion buffer
// is full (their makeup follows from the gradients' sizes and order), and the overlap has a fixed
// cause: tower 0 is held at the start of its last backward layer until a collective has run, and
// tower 1 starts backward only once tower 0 is held, so the step's first collective runs inside
// tower 0's held op. Were reductions deferred to the end of backward, the hold would time out.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "base/file_io.h"
#include "profiler/analysis/step_analyses.h"
#include "profiler/collect/step_collector.h"
#include "profiler/formats/reader.h"
#include "profiler/formats/step_stats/step_stats_io.h"
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
  std::string held_op;     // tower 0's op held until a collective ran ("" when not held)
  std::string hold_error;  // a hold that timed out
};

// Tower 0's first op of its last backward layer (every other gradient is handed in by then).
constexpr const char* kHeldOp = "pool1_pool/MaxPool/MaxPoolGrad";

// Stands between the profiler and the step: passes every op, copy and collective on, and while
// armed holds tower 0 at the start of kHeldOp until a collective has ended, and tower 1 at the
// start of its backward until tower 0 is held. An op is held inside its recorded interval
// (OpListener::OnOpStart comes after the op's start time is taken).
class HoldingObserver final : public runtime::OpListener, public parallel::CollectiveObserver {
 public:
  HoldingObserver(StepProfiler& profiler, std::vector<runtime::Device*> devices)
      : profiler_(profiler), devices_(std::move(devices)) {}

  void Arm() {
    std::lock_guard<std::mutex> lock(mutex_);
    armed_ = true;
  }
  std::string error() {
    std::lock_guard<std::mutex> lock(mutex_);
    return error_;
  }

  void OnOpStart(const runtime::Device& device, const runtime::Node& node, int64_t start_ns) override {
    profiler_.OnOpStart(device, node, start_ns);
    const bool backward = node.name.rfind("gradient_tape/", 0) == 0;
    std::unique_lock<std::mutex> lock(mutex_);
    if (!armed_ || !backward) return;
    if (&device == devices_[0] && !tower0_held_ && node.name.ends_with(kHeldOp)) {
      tower0_held_ = true;
      changed_.notify_all();
      Wait(lock, [&] { return collectives_ > 0; }, "tower 0 held at " + node.name + ": no collective ran while it was held");
    } else if (&device == devices_[1] && !tower1_started_) {
      tower1_started_ = true;
      Wait(lock, [&] { return tower0_held_; }, "tower 1 held at " + node.name + ": tower 0 never reached " + kHeldOp);
    }
  }
  void OnOpEnd(const runtime::Device& device, const runtime::Node& node, int64_t start_ns, int64_t end_ns,
               std::span<const runtime::Tensor> outputs) override {
    profiler_.OnOpEnd(device, node, start_ns, end_ns, outputs);
  }
  void OnCopy(const runtime::Device& device, const runtime::CopyEvent& copy) override {
    profiler_.OnCopy(device, copy);
  }
  void OnCollective(const parallel::CollectiveEvent& event) override {
    profiler_.OnCollective(event);
    std::lock_guard<std::mutex> lock(mutex_);
    if (armed_ && event.phase == parallel::CollectivePhase::kAllReduce) ++collectives_;
    changed_.notify_all();
  }

 private:
  template <typename Done>
  void Wait(std::unique_lock<std::mutex>& lock, Done done, const std::string& timeout_error) {
    if (!changed_.wait_for(lock, std::chrono::seconds(60), done) && error_.empty()) error_ = timeout_error;
  }

  StepProfiler& profiler_;
  const std::vector<runtime::Device*> devices_;
  std::mutex mutex_;
  std::condition_variable changed_;
  bool armed_ = false, tower0_held_ = false, tower1_started_ = false;
  int collectives_ = 0;
  std::string error_;
};

// Two ResNet-14 towers on 32×32 images, 2 images each; step 2 is profiled, with fusion held as
// HoldingObserver holds it.
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
  HoldingObserver holding(profiler, device_list);
  TowerOptions options;
  options.fusion_threshold_bytes = fusion_threshold_bytes;
  options.cycle_time_ms = 60'000;  // the longest: a batch goes out when the buffer is full
  options.observer = &holding;
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
    if (step == 2) {
      profiler.BeginStep(step, device_list);
      if (fusion_threshold_bytes > 0) {
        holding.Arm();
        for (runtime::Device* device : device_list) device->set_op_listener(&holding);
        out.held_op = kHeldOp;
      }
    }
    auto result = towers->Step(batch, 0.01f);
    EXPECT_TRUE(result.ok()) << result.status().message();
    if (step == 2) {
      auto path = profiler.EndStep();
      EXPECT_TRUE(path.ok()) << path.status().message();
      if (!path.ok()) return out;
      out.path = *path;
    }
  }
  out.hold_error = holding.error();
  auto parsed = trace::ParseStepStats(*ReadFile(out.path), out.path);
  EXPECT_TRUE(parsed.ok()) << parsed.status().message();
  if (parsed.ok()) out.metadata = parsed->run_metadata;
  return out;
}

TEST(FusionProfile, FusedCollectivesAndCopiesOverlapBackwardOnTheirDevice) {
  // 256 KiB: the last layers' small gradients fuse; conv5's kernels (MiBs) go alone.
  const ProfiledStep step = ProfileResNetStep("on", int64_t{256} << 10);
  ASSERT_NE(step.metadata, nullptr);
  EXPECT_EQ(step.hold_error, "");
  std::map<std::string, const tf::DeviceStepStats*> devices;
  for (const auto& dev : step.metadata->step_stats().dev_stats()) devices[dev.device()] = &dev;
  ASSERT_EQ(devices.size(), 4u) << "two executors and their two memcpy lanes";

  std::vector<Interval> held, first_allreduce;  // tower 0's
  for (int d = 0; d < 2; ++d) {
    const std::string name = "/job:localhost/replica:0/task:0/device:CPU:" + std::to_string(d);
    SCOPED_TRACE(name);
    ASSERT_EQ(devices.count(name), 1u);
    ASSERT_EQ(devices.count(name + "/memcpy"), 1u);
    const std::string tower = "tower_" + std::to_string(d) + "/";
    int allreduces = 0, copies_in = 0, copies_out = 0;
    for (const auto& node : devices[name]->node_stats()) {
      const Interval interval{node.all_start_nanos(),
                              node.all_start_nanos() + node.all_end_rel_nanos(), node.node_name()};
      if (d == 0 && node.node_name().ends_with(step.held_op)) held.push_back(interval);
      if (!node.has_collective()) continue;
      EXPECT_EQ(node.thread_id(), collect::kCollectiveLaneThreadId);
      EXPECT_EQ(node.node_name().rfind(tower + "HorovodAllreduce_", 0), 0u) << node.node_name();
      EXPECT_EQ(node.collective().group_size(), 2);
      EXPECT_GT(node.collective().bytes(), 0);
      if (node.op_type() == "ALLREDUCE") {
        ++allreduces;
        if (d == 0 && (first_allreduce.empty() || interval.start < first_allreduce[0].start)) {
          first_allreduce = {interval};
        }
      }
      if (node.op_type() == "MEMCPY_IN_FUSION_BUFFER") ++copies_in;
      if (node.op_type() == "MEMCPY_OUT_FUSION_BUFFER") ++copies_out;
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
      if (node.node_name().find("_FUSION_BUFFER:MEMCPYDtoD") != std::string::npos) ++fusion_copies;
      if (node.node_name() == tower + "TrainInput/split:Slice:MEMCPYHtoD") {
        ++staging;
        EXPECT_EQ(node.memcpy().src_memory(), "Pageable");
      }
    }
    EXPECT_EQ(fusion_copies, copies_in + copies_out);
    EXPECT_EQ(staging, 2);  // images and labels
  }
  // Tower 0 was held in its op until a collective had run, and no collective could start before
  // the hold (tower 1 had handed in nothing): the step's first all-reduce lies inside that op, on
  // the same device's lanes.
  ASSERT_EQ(held.size(), 1u) << step.held_op;
  ASSERT_EQ(first_allreduce.size(), 1u);
  EXPECT_GT(first_allreduce[0].start, held[0].start) << first_allreduce[0].name << " in " << held[0].name;
  EXPECT_LT(first_allreduce[0].end, held[0].end) << first_allreduce[0].name << " in " << held[0].name;

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
