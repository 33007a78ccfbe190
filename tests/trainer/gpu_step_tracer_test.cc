// The trainer's CUPTI bridge (GpuStepTracer) driven by a source that delivers synthetic CUPTI
// records (the toolkit's own structs, built as CUPTI fills them) through the real converter: GPU
// lanes named after the ops that launched them, host ops carrying the same correlation ids, times
// on the host clock, only the profiled step's work, drops in the trace; tracing on only inside
// profiled steps, with the clock alignment read again for each. Then the real CUPTI source on
// this driverless machine: a kUnavailable naming CUPTI, and StepProfiler's single warning.
#include "profiler/collect/cupti/gpu_step_tracer.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "base/file_io.h"
#include "host_memory_gpu.h"
#include "profiler/collect/step_collector.h"
#include "test_util.h"
#include "tests/collect/cupti_records.h"
#include "trainer/main/step_profiler.h"
#include "trainer/runtime/bfc_allocator.h"
#include "trainer/runtime/cpu_sub_allocator.h"
#include "trainer/runtime/op_scope.h"
#include "trainer/runtime/transfers.h"

namespace stepscope::trainer {
namespace {

namespace cupti = collect::cupti;
using cupti::GpuStepTracer;

constexpr int64_t kCuptiAtStart = 1'795'000'000'000'000'000;  // CUPTI ns when the source started
constexpr int64_t kHostAtStart = 40'000'000'000;              // steady-clock ns at that instant
constexpr int64_t kEpochOffset = 1'700'000'000'000'000'000;   // the profiler's wall-minus-steady
const std::string kGpuDevice = "/job:localhost/replica:0/task:0/device:GPU:0";

// The alignment the source reads at its n-th Start/Resume (0 = Start): CUPTI's clock drifts
// against the host's, so each reading has its own offset.
cupti::ClockAlignment AlignmentAt(int n) {
  return {kCuptiAtStart + n * int64_t{3'600'000'000'017}, kHostAtStart + n * int64_t{1'000}};
}

// Stands in for CUPTI: records only while tracing is on (between Start/Resume and Pause), keeps
// the pushed external ids per thread as CUPTI does, and for each "launch" queues the
// EXTERNAL_CORRELATION record (when an id is pushed) and the GPU record with a new CUPTI
// correlation id, delivered to the sink at Flush, as CUPTI delivers its buffers. Launch times
// are given on the host clock and written in CUPTI's, through the alignment of the last reading.
class SyntheticCuptiSource final : public cupti::CuptiActivitySource {
 public:
  explicit SyntheticCuptiSource(Status start_status = Status::Ok())
      : start_status_(std::move(start_status)) {}

  Status Start(cupti::ActivityRecordSink* sink) override {
    if (!start_status_.ok()) return start_status_;
    sink_ = sink;
    tracing_ = true;
    clock_ = AlignmentAt(0);
    return Status::Ok();
  }
  Status Flush() override {
    if (sink_ == nullptr) return Status::Ok();
    for (const Record& record : queued_) {
      std::visit(
          [&](const auto& r) { sink_->OnRecord(reinterpret_cast<const CUpti_Activity&>(r)); },
          record);
    }
    queued_.clear();
    if (dropped_ > 0) sink_->OnDropped(cupti::DropReason::kCupti, dropped_);
    dropped_ = 0;
    ++flushes_;
    return Status::Ok();
  }
  Status Pause() override {
    if (sink_ == nullptr || !tracing_) return Status::Ok();
    (void)Flush();
    tracing_ = false;
    ++pauses_;
    return Status::Ok();
  }
  Status Resume() override {
    if (sink_ == nullptr) return Internal("CUPTI tracer resumed before it was started");
    if (tracing_) return Status::Ok();
    if (fail_resume_) return Internal("CUPTI call cuptiActivityEnable(kind 10) failed");
    tracing_ = true;
    ++resumes_;
    clock_ = AlignmentAt(resumes_);
    return Status::Ok();
  }
  Status Stop() override {
    (void)Pause();
    sink_ = nullptr;
    return Status::Ok();
  }
  Status PushExternalCorrelation(uint64_t external_id) override {
    if (fail_pushes_) return Internal("CUPTI call cuptiActivityPushExternalCorrelationId failed");
    if (!tracing_) ++calls_while_off_;
    pushed_.push_back(external_id);
    ++pushes_;
    return Status::Ok();
  }
  Status PopExternalCorrelation() override {
    if (pushed_.empty()) return Internal("CUPTI: pop with nothing pushed");
    if (!tracing_) ++calls_while_off_;
    pushed_.pop_back();
    ++pops_;
    return Status::Ok();
  }
  cupti::ClockAlignment clock_alignment() const override { return clock_; }

  // A kernel that started at `host_start_ns` on the host clock.
  void LaunchKernel(uint32_t stream, int64_t host_start_ns, int64_t duration_ns, const char* name) {
    if (!tracing_) return;  // CUPTI records nothing while the kinds are disabled
    queued_.emplace_back(Kernel(stream, host_start_ns, duration_ns, name));
  }
  void LaunchHostToDeviceCopy(uint32_t stream, int64_t host_start_ns, int64_t duration_ns,
                              uint64_t bytes) {
    if (!tracing_) return;
    const auto start = static_cast<uint64_t>(host_start_ns - clock_.offset());
    queued_.emplace_back(testing::MemcpyRecord(
        CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, CUPTI_ACTIVITY_MEMORY_KIND_PINNED,
        CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, bytes, cuda_device_, stream, Correlate(), start,
        start + static_cast<uint64_t>(duration_ns)));
  }
  void DropRecords(uint64_t count) {
    // CUPTI's count of what it lost while tracing was off (after a detach) is read at the
    // next attach, before the kinds go on: it belongs to no step.
    (tracing_ ? dropped_ : dropped_while_off_) += count;
  }
  uint64_t dropped_while_off() const override { return dropped_while_off_; }
  // A buffer CUPTI completes on its own thread whenever it likes, here right now: a kernel that
  // ran before tracing went off.
  void DeliverLateKernel(uint32_t stream, int64_t host_start_ns, const char* name) {
    const testing::KernelActivity k = Kernel(stream, host_start_ns, 1'000, name);
    sink_->OnRecord(reinterpret_cast<const CUpti_Activity&>(k));
  }

  bool tracing() const { return tracing_; }
  bool links_ops() const override { return links_; }

  bool fail_pushes_ = false, fail_resume_ = false;
  bool links_ = true;  // false: a level that records no links (--profile_level attached/activity)
  uint32_t cuda_device_ = 0;  // the CUDA device records name
  int pushes_ = 0, pops_ = 0, flushes_ = 0, pauses_ = 0, resumes_ = 0;
  int calls_while_off_ = 0;  // pushes and pops made while tracing was off
  std::vector<uint64_t> pushed_;

 private:
  using Record = std::variant<testing::KernelActivity, testing::MemcpyActivity,
                              testing::ExternalCorrelationActivity>;

  testing::KernelActivity Kernel(uint32_t stream, int64_t host_start_ns, int64_t duration_ns,
                                 const char* name) {
    const auto start = static_cast<uint64_t>(host_start_ns - clock_.offset());
    testing::KernelActivity k = testing::KernelRecord(
        cuda_device_, stream, Correlate(), start, start + static_cast<uint64_t>(duration_ns), name);
    k.registersPerThread = 64;
    return k;
  }

  // CUPTI emits the link before the API record of every launch made under a pushed id.
  uint32_t Correlate() {
    const uint32_t correlation = next_correlation_++;
    if (!pushed_.empty()) {
      queued_.emplace_back(testing::ExternalCorrelationRecord(correlation, pushed_.back()));
    }
    return correlation;
  }

  Status start_status_;
  cupti::ActivityRecordSink* sink_ = nullptr;
  bool tracing_ = false;
  cupti::ClockAlignment clock_;
  std::vector<Record> queued_;
  uint64_t dropped_ = 0;
  uint64_t dropped_while_off_ = 0;
  uint32_t next_correlation_ = 100;
};

struct Started {
  std::unique_ptr<GpuStepTracer> tracer;
  SyntheticCuptiSource* source = nullptr;  // owned by the tracer
};

Started StartSynthetic(bool links_ops = true) {
  auto owned = std::make_unique<SyntheticCuptiSource>();
  owned->links_ = links_ops;
  SyntheticCuptiSource* source = owned.get();
  auto tracer = GpuStepTracer::Start(std::move(owned));
  EXPECT_TRUE(tracer.ok()) << tracer.status().message();
  return {tracer.ok() ? std::move(tracer).value() : nullptr, source};
}

// One op on the GPU device as StepProfiler reports it: host record and GPU registration.
struct HostOp {
  std::string name, type;
  std::vector<std::string> inputs;
  int64_t start_ns = 0;
};

std::map<std::string, const tf::DeviceStepStats*> Lanes(const tf::RunMetadata& metadata) {
  std::map<std::string, const tf::DeviceStepStats*> lanes;
  for (const auto& dev : metadata.step_stats().dev_stats()) lanes[dev.device()] = &dev;
  return lanes;
}

const tf::NodeExecStats* FindNode(const tf::DeviceStepStats& lane, const std::string& name) {
  for (const auto& node : lane.node_stats()) {
    if (node.node_name() == name) return &node;
  }
  return nullptr;
}

// Levels that record no links (kernels and copies only, or CUPTI attached with nothing): ops
// make no CUPTI call and register nothing; their kernels still come out, unlinked.
TEST(GpuStepTracerTest, WithoutLinksOpsMakeNoCuptiCall) {
  Started started = StartSynthetic(/*links_ops=*/false);
  ASSERT_NE(started.tracer, nullptr);
  collect::StepCollector collector;
  collector.BeginStep(2);
  ASSERT_TRUE(started.tracer->BeginStep().ok());
  const HostOp op{"lstm/MatMul", "MatMul", {}, kHostAtStart + 100'000};
  collector.BeginOp(&kGpuDevice, &op.name, &op.type, &op.inputs, op.start_ns);
  started.tracer->OnOpStart(op.name, op.type, op.start_ns);
  started.source->LaunchKernel(7, op.start_ns + 5'000, 3'500, "volta_sgemm_128x64_nn");
  started.tracer->OnOpEnd();
  collector.EndOp(op.start_ns + 20'000);
  tf::RunMetadata metadata = collector.FinishStep(kEpochOffset);
  auto summary = started.tracer->EndStep(kEpochOffset, &metadata);
  ASSERT_TRUE(summary.ok()) << summary.status().message();
  EXPECT_EQ(started.source->pushes_, 0);
  EXPECT_EQ(started.source->pops_, 0);
  EXPECT_EQ(summary->stats.kernels, 1u);
  EXPECT_EQ(summary->stats.unlinked_records, 1u);
  EXPECT_EQ(summary->linked_host_ops, 0u);
}

TEST(GpuStepTracerTest, OpsGetTheirKernelsAndCopiesOnGpuLanesOnTheHostClock) {
  Started started = StartSynthetic();
  ASSERT_NE(started.tracer, nullptr);
  GpuStepTracer& tracer = *started.tracer;
  SyntheticCuptiSource& source = *started.source;

  // Before the first profiled step tracing is off: this work is not recorded at all.
  EXPECT_FALSE(source.tracing());
  source.LaunchKernel(7, kHostAtStart + 10'000, 2'000, "warmup_kernel");
  source.DropRecords(9);

  collect::StepCollector collector;
  collector.BeginStep(3);
  ASSERT_TRUE(tracer.BeginStep().ok());
  EXPECT_TRUE(source.tracing());
  const HostOp matmul{"lstm/MatMul", "MatMul", {"lstm/concat", "lstm/kernel"},
                      kHostAtStart + 100'000};
  const HostOp add{"lstm/add", "AddV2", {"lstm/MatMul", "lstm/bias"}, kHostAtStart + 150'000};

  collector.BeginOp(&kGpuDevice, &matmul.name, &matmul.type, &matmul.inputs, matmul.start_ns);
  tracer.OnOpStart(matmul.name, matmul.type, matmul.start_ns);
  source.LaunchHostToDeviceCopy(15, matmul.start_ns + 1'000, 2'500, 4096);
  // The runtime's view of that copy (the host thread waited 9 us): it gives way to CUPTI's.
  collector.RecordCopy({&kGpuDevice, "lstm/MatMul:MatMul", "HtoD", "Pinned", "Device", 4096,
                        matmul.start_ns + 500, matmul.start_ns + 9'500});
  source.LaunchKernel(7, matmul.start_ns + 5'000, 3'500, "volta_sgemm_128x64_nn");
  tracer.OnOpEnd();
  collector.EndOp(matmul.start_ns + 20'000);

  collector.BeginOp(&kGpuDevice, &add.name, &add.type, &add.inputs, add.start_ns);
  tracer.OnOpStart(add.name, add.type, add.start_ns);
  source.LaunchKernel(7, add.start_ns + 4'000, 1'200, "add_kernel");
  tracer.OnOpEnd();
  collector.EndOp(add.start_ns + 9'000);
  source.DropRecords(5);

  tf::RunMetadata metadata = collector.FinishStep(kEpochOffset);
  auto summary = tracer.EndStep(kEpochOffset, &metadata);
  ASSERT_TRUE(summary.ok()) << summary.status().message();
  EXPECT_FALSE(source.tracing());
  EXPECT_EQ(source.pushes_, 2);
  EXPECT_EQ(source.pops_, 2);
  EXPECT_EQ(source.calls_while_off_, 0);
  EXPECT_TRUE(source.pushed_.empty());

  auto lanes = Lanes(metadata);
  std::set<std::string> names;
  for (const auto& [name, lane] : lanes) names.insert(name);
  EXPECT_EQ(names, (std::set<std::string>{kGpuDevice, "/device:GPU:0/memcpy",
                                          "/device:GPU:0/stream:15", "/device:GPU:0/stream:7",
                                          "/device:GPU:0/stream:all"}));
  ASSERT_EQ(names.size(), 5u);

  const tf::DeviceStepStats& stream7 = *lanes["/device:GPU:0/stream:7"];
  ASSERT_EQ(stream7.node_stats_size(), 2);  // the unprofiled step's kernel is gone
  const tf::NodeExecStats& sgemm = stream7.node_stats(0);
  const tf::NodeExecStats& add_kernel = stream7.node_stats(1);
  EXPECT_EQ(sgemm.node_name(), "lstm/MatMul:MatMul");
  EXPECT_EQ(sgemm.timeline_label(),
            "volta_sgemm_128x64_nn regs:64 shm:0 grid:4,2,1 block:256,1,1@@lstm/MatMul:MatMul");
  EXPECT_EQ(add_kernel.node_name(), "lstm/add:AddV2");
  // CUPTI times on the host clock, shifted by the host ops' own offset.
  EXPECT_EQ(sgemm.all_start_nanos(), matmul.start_ns + 5'000 + kEpochOffset);
  EXPECT_EQ(sgemm.all_end_rel_nanos(), 3'500);
  EXPECT_EQ(add_kernel.all_start_nanos(), add.start_ns + 4'000 + kEpochOffset);

  ASSERT_EQ(lanes["/device:GPU:0/stream:15"]->node_stats_size(), 1);
  const tf::NodeExecStats& copy = lanes["/device:GPU:0/stream:15"]->node_stats(0);
  EXPECT_EQ(copy.node_name(), "lstm/MatMul:MatMul:MEMCPYHtoD");
  EXPECT_EQ(copy.timeline_label(), "MEMCPYHtoD 4096 bytes (Pinned to Device)");
  EXPECT_EQ(copy.all_start_nanos(), matmul.start_ns + 1'000 + kEpochOffset);
  EXPECT_EQ(lanes["/device:GPU:0/memcpy"]->node_stats_size(), 1);
  EXPECT_EQ(lanes["/device:GPU:0/stream:all"]->node_stats_size(), 3);

  // The host ops carry the ids of the GPU work they launched; each launch has its own id.
  const tf::NodeExecStats* host_matmul = FindNode(*lanes[kGpuDevice], "lstm/MatMul");
  const tf::NodeExecStats* host_add = FindNode(*lanes[kGpuDevice], "lstm/add");
  ASSERT_NE(host_matmul, nullptr);
  ASSERT_NE(host_add, nullptr);
  EXPECT_NE(sgemm.correlation_id(), 0u);
  EXPECT_NE(sgemm.correlation_id(), add_kernel.correlation_id());
  EXPECT_EQ(host_matmul->correlation_id(), sgemm.correlation_id());
  EXPECT_EQ(copy.correlation_id(), sgemm.correlation_id());
  EXPECT_EQ(host_add->correlation_id(), add_kernel.correlation_id());
  // Each kernel starts inside its launching op on one timeline.
  EXPECT_EQ(host_matmul->all_start_nanos(), matmul.start_ns + kEpochOffset);
  EXPECT_GT(sgemm.all_start_nanos(), host_matmul->all_start_nanos());
  EXPECT_LT(sgemm.all_start_nanos(),
            host_matmul->all_start_nanos() + host_matmul->all_end_rel_nanos());

  EXPECT_EQ(summary->linked_host_ops, 2u);
  EXPECT_EQ(summary->stats.kernels, 2u);
  EXPECT_EQ(summary->stats.memcpys, 1u);
  EXPECT_EQ(summary->stats.linked_records, 3u);
  EXPECT_EQ(summary->stats.unlinked_records, 0u);
  // Only the drops reported during the step, next to the collector's own count.
  EXPECT_EQ(metadata.stepscope_session().dropped_gpu_records(), 5u);
  EXPECT_EQ(metadata.stepscope_session().dropped_records(), 0u);
  EXPECT_EQ(tracer.correlation_errors(), 0u);
}

// Rank 1 of an MPI run whose gpu:0 is CUDA device 1: CUPTI's records name device 1, but the
// lanes must be the rank's /device:GPU:0 (the streams mapped to it), next to its host lanes, and
// its runtime copy lane must give way to CUPTI's copies of the same GPU.
TEST(GpuStepTracerTest, RankWithAGpuOffsetGetsItsKernelsOnItsOwnGpuLanes) {
  Started started = StartSynthetic();
  ASSERT_NE(started.tracer, nullptr);
  GpuStepTracer& tracer = *started.tracer;
  SyntheticCuptiSource& source = *started.source;
  source.cuda_device_ = 1;
  const std::string rank_gpu = "/job:worker/replica:0/task:1/device:GPU:0";

  collect::StepCollector collector;
  collector.BeginStep(2);
  ASSERT_TRUE(tracer.BeginStep().ok());
  tracer.SetStreamDevices({{1, 7, 0}, {1, 15, 0}});
  const HostOp matmul{"lstm/MatMul", "MatMul", {"lstm/concat"}, kHostAtStart + 100'000};
  collector.BeginOp(&rank_gpu, &matmul.name, &matmul.type, &matmul.inputs, matmul.start_ns);
  tracer.OnOpStart(matmul.name, matmul.type, matmul.start_ns);
  source.LaunchHostToDeviceCopy(15, matmul.start_ns + 1'000, 2'500, 4096);
  collector.RecordCopy({&rank_gpu, "lstm/MatMul:MatMul", "HtoD", "Pinned", "Device", 4096,
                        matmul.start_ns + 500, matmul.start_ns + 9'500});
  source.LaunchKernel(7, matmul.start_ns + 5'000, 3'500, "sgemm");
  tracer.OnOpEnd();
  collector.EndOp(matmul.start_ns + 20'000);
  tf::RunMetadata metadata = collector.FinishStep(kEpochOffset);
  ASSERT_TRUE(tracer.EndStep(kEpochOffset, &metadata).ok());

  std::set<std::string> names;
  for (const auto& [name, lane] : Lanes(metadata)) names.insert(name);
  EXPECT_EQ(names, (std::set<std::string>{rank_gpu, "/device:GPU:0/memcpy",
                                          "/device:GPU:0/stream:15", "/device:GPU:0/stream:7",
                                          "/device:GPU:0/stream:all"}));
}

TEST(GpuStepTracerTest, TracingIsOnOnlyInsideStepsWithEachStepsOwnClockAlignment) {
  Started started = StartSynthetic();
  ASSERT_NE(started.tracer, nullptr);
  GpuStepTracer& tracer = *started.tracer;
  SyntheticCuptiSource& source = *started.source;
  // Started, then off until the first step.
  EXPECT_FALSE(source.tracing());
  EXPECT_EQ(source.pauses_, 1);
  EXPECT_EQ(source.resumes_, 0);
  const HostOp op{"tower_0/conv1/Conv2D", "Conv2D", {}, kHostAtStart + 1'000'000};

  std::vector<uint64_t> ids;
  for (int step = 0; step < 3; ++step) {
    SCOPED_TRACE("step " + std::to_string(step + 1));
    collect::StepCollector collector;
    collector.BeginStep(step + 1);
    ASSERT_TRUE(tracer.BeginStep().ok());
    EXPECT_TRUE(source.tracing());
    EXPECT_EQ(source.resumes_, step + 1);
    // A new reading for each step; a stale one would put this step's kernel elsewhere.
    EXPECT_EQ(source.clock_alignment(), AlignmentAt(step + 1));
    ASSERT_NE(AlignmentAt(step + 1).offset(), AlignmentAt(step).offset());
    const int64_t start = op.start_ns + step * 10'000'000;
    collector.BeginOp(&kGpuDevice, &op.name, &op.type, &op.inputs, start);
    tracer.OnOpStart(op.name, op.type, start);
    source.LaunchKernel(3, start + 2'000, 50'000, "implicit_convolve_sgemm");
    tracer.OnOpEnd();
    collector.EndOp(start + 60'000);
    tf::RunMetadata metadata = collector.FinishStep(0);
    ASSERT_TRUE(tracer.EndStep(0, &metadata).ok());
    EXPECT_FALSE(source.tracing());
    EXPECT_EQ(source.pauses_, step + 2);

    // Between steps: tracing is off and an op costs nothing (no push, pop or registration);
    // its work is not recorded, and a buffer CUPTI completes late is not kept.
    const int64_t between = start + 5'000'000;
    tracer.OnOpStart("tower_0/ApplyGradientDescent", "ApplyGradientDescent", between);
    source.LaunchKernel(3, between + 1'000, 1'000, "optimizer_kernel");
    tracer.OnOpEnd();
    source.DeliverLateKernel(3, between + 3'000, "late_kernel");
    source.DropRecords(1);
    EXPECT_EQ(source.pushes_, step + 1);
    EXPECT_EQ(source.pops_, step + 1);

    auto lanes = Lanes(metadata);
    ASSERT_EQ(lanes.count("/device:GPU:0/stream:3"), 1u);
    const tf::DeviceStepStats& stream = *lanes["/device:GPU:0/stream:3"];
    ASSERT_EQ(stream.node_stats_size(), 1);
    EXPECT_EQ(stream.node_stats(0).node_name(), "tower_0/conv1/Conv2D:Conv2D");
    EXPECT_EQ(stream.node_stats(0).all_start_nanos(), start + 2'000);
    EXPECT_EQ(FindNode(*lanes[kGpuDevice], op.name)->correlation_id(),
              stream.node_stats(0).correlation_id());
    ids.push_back(stream.node_stats(0).correlation_id());
  }
  EXPECT_NE(ids[0], ids[1]);
  EXPECT_NE(ids[1], ids[2]);
  EXPECT_EQ(source.calls_while_off_, 0);

  // What arrived between the steps was never kept: the next step's lanes are empty.
  ASSERT_TRUE(tracer.BeginStep().ok());
  tf::RunMetadata empty;
  auto summary = tracer.EndStep(0, &empty);
  ASSERT_TRUE(summary.ok());
  EXPECT_EQ(summary->stats, cupti::ConversionStats{});
  // What CUPTI dropped between the steps is reported apart, never as the step's loss.
  EXPECT_EQ(summary->dropped_between_steps, 3u);
  EXPECT_EQ(empty.step_stats().dev_stats_size(), 0);
}

TEST(GpuStepTracerTest, StepThatCannotResumeTracesNothing) {
  Started started = StartSynthetic();
  ASSERT_NE(started.tracer, nullptr);
  SyntheticCuptiSource& source = *started.source;
  source.fail_resume_ = true;
  const Status begun = started.tracer->BeginStep();
  ASSERT_FALSE(begun.ok());
  EXPECT_NE(begun.message().find("resuming the CUPTI GPU tracer"), std::string::npos)
      << begun.message();
  EXPECT_FALSE(source.tracing());
  started.tracer->OnOpStart("lstm/MatMul", "MatMul", kHostAtStart);
  started.tracer->OnOpEnd();
  EXPECT_EQ(source.pushes_, 0);
  EXPECT_EQ(source.pops_, 0);
}

TEST(GpuStepTracerTest, RefusedPushLeavesTheOpUnlinkedAndIsCounted) {
  Started started = StartSynthetic();
  ASSERT_NE(started.tracer, nullptr);
  SyntheticCuptiSource& source = *started.source;
  source.fail_pushes_ = true;
  const HostOp op{"lstm/MatMul", "MatMul", {}, kHostAtStart + 100'000};

  collect::StepCollector collector;
  collector.BeginStep(1);
  ASSERT_TRUE(started.tracer->BeginStep().ok());
  collector.BeginOp(&kGpuDevice, &op.name, &op.type, &op.inputs, op.start_ns);
  started.tracer->OnOpStart(op.name, op.type, op.start_ns);
  source.LaunchKernel(7, op.start_ns + 1'000, 1'000, "volta_sgemm_128x64_nn");
  started.tracer->OnOpEnd();
  collector.EndOp(op.start_ns + 5'000);
  tf::RunMetadata metadata = collector.FinishStep(0);
  auto summary = started.tracer->EndStep(0, &metadata);
  ASSERT_TRUE(summary.ok());

  EXPECT_EQ(started.tracer->correlation_errors(), 1u);
  EXPECT_EQ(source.pops_, 0);  // nothing was pushed, so nothing is popped
  EXPECT_EQ(summary->linked_host_ops, 0u);
  EXPECT_EQ(summary->stats.unlinked_records, 1u);
  auto lanes = Lanes(metadata);
  ASSERT_EQ(lanes.count("/device:GPU:0/stream:7"), 1u);
  EXPECT_EQ(lanes["/device:GPU:0/stream:7"]->node_stats(0).node_name(), "volta_sgemm_128x64_nn");
  EXPECT_EQ(FindNode(*lanes[kGpuDevice], op.name)->correlation_id(), 0u);
}

TEST(GpuStepTracerTest, SourceThatCannotStartIsUnavailableNamingCupti) {
  auto tracer = GpuStepTracer::Start(std::make_unique<SyntheticCuptiSource>(
      Internal("cuptiActivityEnable(kind 10) failed: CUPTI_ERROR_UNKNOWN")));
  ASSERT_FALSE(tracer.ok());
  EXPECT_EQ(tracer.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(tracer.status().message().find("CUPTI_ERROR_UNKNOWN"), std::string::npos);

  auto unnamed = GpuStepTracer::Start(
      std::make_unique<SyntheticCuptiSource>(Internal("tracer already running")));
  ASSERT_FALSE(unnamed.ok());
  EXPECT_EQ(unnamed.status().message(), "CUPTI: tracer already running");
}

bool DriverPresent() {
  void* driver = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (driver != nullptr) ::dlclose(driver);
  return driver != nullptr;
}

TEST(GpuStepTracerTest, RealCuptiWithoutDriverIsUnavailable) {
  if (DriverPresent()) GTEST_SKIP() << "an NVIDIA driver is installed here";
  auto tracer = GpuStepTracer::Start(cupti::MakeCuptiActivitySource());
  ASSERT_FALSE(tracer.ok());
  EXPECT_EQ(tracer.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(tracer.status().message().find("CUPTI"), std::string::npos)
      << tracer.status().message();
  EXPECT_NE(tracer.status().message().find("driver"), std::string::npos)
      << tracer.status().message();
}

void RunOneOp(const runtime::Device& device, const runtime::Node& node) {
  runtime::OpScope scope(device, node);
  auto output = device.Allocate(runtime::DType::kFloat32, {4, 8});
  ASSERT_TRUE(output.ok());
  scope.Output(*output);
}

size_t Count(const std::string& text, const std::string& what) {
  size_t count = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) {
    ++count;
  }
  return count;
}

TEST(StepProfilerGpuTest, WithoutDriverWarnsOnceAndRecordsHostOps) {
  if (DriverPresent()) GTEST_SKIP() << "an NVIDIA driver is installed here";
  testing::GpuTransferCounts transfers;
  auto gpu = testing::MakeHostMemoryGpuDevice(0, &transfers);
  std::vector<std::unique_ptr<runtime::Device>> cpus;
  cpus.push_back(std::make_unique<runtime::Device>(
      runtime::DeviceKind::kCpu, 0, runtime::DevicePlacement{}, 1,
      std::make_unique<runtime::BFCAllocator>(std::make_unique<runtime::CpuSubAllocator>(),
                                              int64_t{64} << 20, "cpu")));
  const runtime::Node node{"tower_0/MatMul", "MatMul", {"tower_0/x", "tower_0/w"}};
  ProfileOptions options;
  options.enabled = true;
  options.dir = testing::ScratchDir("gpu_step_profiler").string();
  StepProfiler profiler(options, "lstm_small");

  ::testing::internal::CaptureStderr();
  std::vector<std::string> paths;
  // A CPU-only step starts no GPU tracer; then two steps with the GPU device.
  for (int step = 1; step <= 3; ++step) {
    runtime::Device& device = step == 1 ? *cpus[0] : *gpu;
    profiler.BeginStep(step, {&device});
    RunOneOp(device, node);
    auto path = profiler.EndStep();
    ASSERT_TRUE(path.ok()) << path.status().message();
    paths.push_back(*path);
    if (step == 1) {
      EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
      ::testing::internal::CaptureStderr();
    }
  }
  const std::string warnings = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(Count(warnings, "warning"), 1u) << warnings;
  EXPECT_EQ(Count(warnings, "\n"), 1u) << warnings;
  EXPECT_NE(warnings.find("CUPTI"), std::string::npos) << warnings;
  EXPECT_NE(warnings.find("libcuda.so.1"), std::string::npos) << warnings;
  EXPECT_NE(warnings.find("host ops only"), std::string::npos) << warnings;

  // The GPU steps' traces hold the op on its GPU device, and nothing else.
  for (size_t k = 1; k < paths.size(); ++k) {
    auto bytes = ReadFile(paths[k]);
    ASSERT_TRUE(bytes.ok()) << bytes.status().message();
    tf::RunMetadata metadata;
    ASSERT_TRUE(metadata.ParseFromString(*bytes));
    ASSERT_EQ(metadata.step_stats().dev_stats_size(), 1);
    const tf::DeviceStepStats& dev = metadata.step_stats().dev_stats(0);
    EXPECT_EQ(dev.device(), kGpuDevice);
    ASSERT_EQ(dev.node_stats_size(), 1);
    EXPECT_EQ(dev.node_stats(0).node_name(), node.name);
    EXPECT_EQ(dev.node_stats(0).correlation_id(), 0u);
    EXPECT_EQ(metadata.stepscope_session().dropped_gpu_records(), 0u);
  }
  std::filesystem::remove_all(options.dir);
}

// --profile_level host: CUPTI is never attached, so even without a driver there is no warning,
// and the GPU step's trace holds its host op.
TEST(StepProfilerGpuTest, HostLevelNeverAttachesCupti) {
  testing::GpuTransferCounts transfers;
  auto gpu = testing::MakeHostMemoryGpuDevice(0, &transfers);
  const runtime::Node node{"tower_0/MatMul", "MatMul", {"tower_0/x", "tower_0/w"}};
  ProfileOptions options;
  options.enabled = true;
  options.level = ProfileLevel::kHost;
  options.dir = testing::ScratchDir("gpu_host_level_profiler").string();
  StepProfiler profiler(options, "lstm_small");
  ::testing::internal::CaptureStderr();
  profiler.BeginStep(1, {gpu.get()});
  RunOneOp(*gpu, node);
  auto path = profiler.EndStep();
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  ASSERT_TRUE(path.ok()) << path.status().message();
  EXPECT_EQ(profiler.last_gpu_note(), "");
  auto bytes = ReadFile(*path);
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  tf::RunMetadata metadata;
  ASSERT_TRUE(metadata.ParseFromString(*bytes));
  ASSERT_EQ(metadata.step_stats().dev_stats_size(), 1);
  EXPECT_EQ(metadata.step_stats().dev_stats(0).node_stats(0).node_name(), node.name);
  std::filesystem::remove_all(options.dir);
}

// A copy from the host into a GPU is staged through pinned memory (runtime/transfers.h), and its
// MEMCPY record says so, as TF labels its copies; into a CPU device it reads pageable memory.
TEST(StepProfilerGpuTest, HostCopiesIntoAGpuAreRecordedFromPinnedMemory) {
  testing::GpuTransferCounts transfers;
  auto gpu = testing::MakeHostMemoryGpuDevice(0, &transfers);
  auto cpus = runtime::CreateDevices(*runtime::ParseDeviceSpec("cpu:1"));
  ASSERT_TRUE(cpus.ok()) << cpus.status().message();
  runtime::Device& cpu = *(*cpus)[0];
  ProfileOptions options;
  options.enabled = true;
  options.dir = testing::ScratchDir("gpu_copy_profiler").string();
  StepProfiler profiler(options, "lstm_small");
  ::testing::internal::CaptureStderr();  // the no-driver warning, where there is no driver
  profiler.BeginStep(1, {gpu.get(), &cpu});
  // Inside the input op, as the trainer copies its batch in.
  const runtime::Node split{"tower_0/TrainInput/split", "Slice", {"TrainInput"}};
  for (runtime::Device* device : {gpu.get(), &cpu}) {
    runtime::OpScope op(*device, split);
    runtime::Tensor t = *device->Allocate(runtime::DType::kFloat32, {256});
    op.Output(t);
    const std::vector<float> values(256, 1.5f);
    runtime::CopyScope copy(*device, "tower_0/TrainInput/split:Slice",
                            runtime::CopyKind::kHostToDevice, t.bytes());
    ASSERT_TRUE(runtime::CopyFromHost<float>(*device, values, t).ok());
  }
  auto path = profiler.EndStep();
  (void)::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(path.ok()) << path.status().message();
  auto bytes = ReadFile(*path);
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  tf::RunMetadata metadata;
  ASSERT_TRUE(metadata.ParseFromString(*bytes));
  std::map<std::string, std::string> labels;  // memcpy lane -> its copy's label
  std::set<std::string> allocators;             // of the GPU's memory records
  for (const auto& dev : metadata.step_stats().dev_stats()) {
    for (const auto& node : dev.node_stats()) {
      if (node.has_memcpy()) labels[dev.device()] = node.timeline_label();
      if (dev.device() != kGpuDevice) continue;
      for (const auto& memory : node.memory()) allocators.insert(memory.allocator_name());
    }
  }
  // The staging buffer came from the GPU's pinned allocator, recorded as TensorFlow records it.
  EXPECT_TRUE(allocators.count("cuda_host_bfc")) << ::testing::PrintToString(allocators);
  EXPECT_EQ(labels[kGpuDevice + "/memcpy"], "MEMCPYHtoD 1024 bytes (Pinned to Device)");
  EXPECT_EQ(labels["/job:localhost/replica:0/task:0/device:CPU:0/memcpy"],
            "MEMCPYHtoD 1024 bytes (Pageable to Device)");
  EXPECT_EQ(transfers.to_device.load(), 1);
  std::filesystem::remove_all(options.dir);
}

}  // namespace
}  // namespace stepscope::trainer
