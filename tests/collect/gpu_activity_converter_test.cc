// GpuActivityConverter fed with synthetic CUPTI activity records (the toolkit's own structs), as
// CUPTI would deliver them: TF's lanes, names, labels, extension fields, links, times and drops.
#include "profiler/collect/cupti/gpu_activity_converter.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "tests/collect/cupti_records.h"

namespace stepscope::collect::cupti {
namespace {

using testing::Feed;
using testing::kCuptiStart;
using testing::kHostStart;
const ClockAlignment kClock{kCuptiStart, kHostStart};

// The layouts the toolkits before this one deliver (still declared by its headers, deprecated)
// have every field the converter reads, so activity_records.h's older choices build too.
static_assert(KernelActivityFields<CUpti_ActivityKernel9>);
static_assert(MemcpyActivityFields<CUpti_ActivityMemcpy5>);

KernelActivity Kernel(uint32_t device, uint32_t stream, uint32_t correlation, int64_t start_rel,
                      int64_t duration, const char* name) {
  const auto start = static_cast<uint64_t>(kCuptiStart + start_rel);
  KernelActivity k = testing::KernelRecord(device, stream, correlation, start,
                                           start + static_cast<uint64_t>(duration), name);
  k.registersPerThread = 128;
  k.staticSharedMemory = 12288;
  k.dynamicSharedMemory = 4096;
  return k;
}

MemcpyActivity Memcpy(uint8_t copy_kind, uint8_t src, uint8_t dst, uint64_t bytes,
                      uint32_t stream, uint32_t correlation, int64_t start_rel) {
  const auto start = static_cast<uint64_t>(kCuptiStart + start_rel);
  return testing::MemcpyRecord(copy_kind, src, dst, bytes, 0, stream, correlation, start,
                               start + 2500);
}

ExternalCorrelationActivity Link(uint32_t correlation, uint64_t external_id) {
  return testing::ExternalCorrelationRecord(correlation, external_id);
}

std::map<std::string, const tf::DeviceStepStats*> ByDevice(const tf::StepStats& stats) {
  std::map<std::string, const tf::DeviceStepStats*> out;
  for (const auto& dev : stats.dev_stats()) out[dev.device()] = &dev;
  return out;
}

std::set<std::string> Devices(const tf::StepStats& stats) {
  std::set<std::string> out;
  for (const auto& dev : stats.dev_stats()) out.insert(dev.device());
  return out;
}

TEST(GpuActivityConverterTest, KernelsOnSeveralStreamsGoToTfLanes) {
  GpuActivityConverter converter(kClock);
  converter.RegisterOp(1, "lstm/MatMul", "MatMul");
  converter.RegisterOp(2, "lstm/add", "AddV2");
  // Links first, as CUPTI emits them (before the API record), kernels in a later buffer.
  Feed(converter, Link(10, 1));
  Feed(converter, Link(11, 2));
  Feed(converter, Link(12, 1));
  Feed(converter, Kernel(0, 13, 11, 9'000, 1'000, "add_kernel"));
  Feed(converter, Kernel(0, 7, 10, 2'000, 3'500, "volta_sgemm_128x64_nn"));
  Feed(converter, Kernel(1, 7, 12, 4'000, 500, "volta_sgemm_128x64_nn"));

  const ConvertedStep step = converter.Finish(/*clock_offset_ns=*/7);
  EXPECT_EQ(Devices(step.step_stats),
            (std::set<std::string>{"/device:GPU:0/stream:13", "/device:GPU:0/stream:7",
                                   "/device:GPU:0/stream:all", "/device:GPU:1/stream:7",
                                   "/device:GPU:1/stream:all"}));
  auto lanes = ByDevice(step.step_stats);
  ASSERT_EQ(lanes["/device:GPU:0/stream:all"]->node_stats_size(), 2);
  ASSERT_EQ(lanes["/device:GPU:0/stream:7"]->node_stats_size(), 1);
  ASSERT_EQ(lanes["/device:GPU:0/stream:13"]->node_stats_size(), 1);
  ASSERT_EQ(lanes["/device:GPU:1/stream:7"]->node_stats_size(), 1);

  const tf::NodeExecStats& matmul = lanes["/device:GPU:0/stream:7"]->node_stats(0);
  EXPECT_EQ(matmul.node_name(), "lstm/MatMul:MatMul");
  EXPECT_EQ(matmul.timeline_label(),
            "volta_sgemm_128x64_nn regs:128 shm:16384 grid:4,2,1 block:256,1,1@@lstm/MatMul:MatMul");
  EXPECT_EQ(matmul.correlation_id(), 1u);
  EXPECT_EQ(matmul.all_start_nanos(), kHostStart + 2'000 + 7);
  EXPECT_EQ(matmul.all_start_micros(), (kHostStart + 2'000 + 7) / 1000);
  EXPECT_EQ(matmul.op_start_rel_micros(), 0);
  EXPECT_EQ(matmul.op_end_rel_nanos(), 3'500);
  EXPECT_EQ(matmul.all_end_rel_nanos(), 3'500);
  EXPECT_EQ(matmul.all_end_rel_micros(), 3);
  ASSERT_TRUE(matmul.has_kernel());
  EXPECT_EQ(matmul.kernel().grid_x(), 4u);
  EXPECT_EQ(matmul.kernel().grid_y(), 2u);
  EXPECT_EQ(matmul.kernel().block_x(), 256u);
  EXPECT_EQ(matmul.kernel().registers_per_thread(), 128u);
  EXPECT_EQ(matmul.kernel().static_shared_memory(), 12288u);
  EXPECT_EQ(matmul.kernel().dynamic_shared_memory(), 4096u);
  EXPECT_EQ(matmul.kernel().stream_id(), 7u);
  EXPECT_EQ(matmul.kernel().device_id(), 0u);

  // stream:all repeats the stream records, sorted by start.
  const auto* all = lanes["/device:GPU:0/stream:all"];
  EXPECT_EQ(all->node_stats(0).node_name(), "lstm/MatMul:MatMul");
  EXPECT_EQ(all->node_stats(1).node_name(), "lstm/add:AddV2");
  EXPECT_EQ(all->node_stats(1).correlation_id(), 2u);
  EXPECT_EQ(lanes["/device:GPU:1/stream:7"]->node_stats(0).node_name(), "lstm/MatMul:MatMul");

  EXPECT_EQ(step.stats.kernels, 3u);
  EXPECT_EQ(step.stats.linked_records, 3u);
  EXPECT_EQ(step.stats.unlinked_records, 0u);
  EXPECT_EQ(step.stats.external_correlations, 3u);
  ASSERT_EQ(step.launched_ops.size(), 2u);
  EXPECT_EQ(step.launched_ops[0].external_id, 1u);
  EXPECT_EQ(step.launched_ops[0].node_name, "lstm/MatMul");
  EXPECT_EQ(step.launched_ops[1].node_name, "lstm/add");
}

TEST(GpuActivityConverterTest, ShortKernelLastsOneMicrosecondInTfFields) {
  GpuActivityConverter converter(kClock);
  Feed(converter, Kernel(0, 7, 1, 0, 300, "tiny"));
  const ConvertedStep step = converter.Finish();
  const auto& node = ByDevice(step.step_stats)["/device:GPU:0/stream:7"]->node_stats(0);
  EXPECT_EQ(node.all_end_rel_micros(), 1);
  EXPECT_EQ(node.all_end_rel_nanos(), 300);
}

TEST(GpuActivityConverterTest, KernelNamesAreDemangled) {
  GpuActivityConverter converter(kClock);
  Feed(converter, Kernel(0, 7, 1, 0, 1000, "_Z10add_kernelPKfS0_Pfi"));
  const ConvertedStep step = converter.Finish();
  const auto& node = ByDevice(step.step_stats)["/device:GPU:0/stream:7"]->node_stats(0);
  EXPECT_EQ(node.node_name(), "add_kernel(float const*, float const*, float*, int)");
}

TEST(GpuActivityConverterTest, MemcpyOfEveryKindAndMemoryKind) {
  GpuActivityConverter converter(kClock);
  converter.RegisterOp(5, "input/staging", "_Recv");
  struct Case {
    uint8_t copy, src, dst;
    std::string label;
  };
  const std::vector<Case> cases = {
      {CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE,
       CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, "MEMCPYHtoD 4096 bytes (Pageable to Device)"},
      {CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, CUPTI_ACTIVITY_MEMORY_KIND_PINNED,
       CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, "MEMCPYHtoD 4096 bytes (Pinned to Device)"},
      {CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
       CUPTI_ACTIVITY_MEMORY_KIND_PINNED, "MEMCPYDtoH 4096 bytes (Device to Pinned)"},
      {CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
       CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE, "MEMCPYDtoH 4096 bytes (Device to Pageable)"},
      {CUPTI_ACTIVITY_MEMCPY_KIND_DTOD, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
       CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, "MEMCPYDtoD 4096 bytes (Device to Device)"},
      {CUPTI_ACTIVITY_MEMCPY_KIND_HTOH, CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE,
       CUPTI_ACTIVITY_MEMORY_KIND_PINNED, "MEMCPYHtoH 4096 bytes (Pageable to Pinned)"},
      {CUPTI_ACTIVITY_MEMCPY_KIND_HTOA, CUPTI_ACTIVITY_MEMORY_KIND_PINNED,
       CUPTI_ACTIVITY_MEMORY_KIND_ARRAY, "MEMCPYHtoA 4096 bytes (Pinned to Array)"},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const uint32_t correlation = 100 + static_cast<uint32_t>(i);
    Feed(converter, Link(correlation, 5));
    Feed(converter, Memcpy(cases[i].copy, cases[i].src, cases[i].dst, 4096, 3, correlation,
                           static_cast<int64_t>(i) * 10'000));
  }
  // A peer copy arrives as a MEMCPY2 record.
  PeerMemcpyActivity peer{};
  peer.kind = CUPTI_ACTIVITY_KIND_MEMCPY2;
  peer.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_PTOP;
  peer.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  peer.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  peer.bytes = 1 << 20;
  peer.deviceId = 0;
  peer.streamId = 3;
  peer.srcDeviceId = 1;
  peer.dstDeviceId = 0;
  peer.correlationId = 200;
  peer.start = static_cast<uint64_t>(kCuptiStart + 1'000'000);
  peer.end = peer.start + 40'000;
  Feed(converter, Link(200, 5));
  Feed(converter, peer);

  const ConvertedStep step = converter.Finish();
  EXPECT_EQ(Devices(step.step_stats),
            (std::set<std::string>{"/device:GPU:0/memcpy", "/device:GPU:0/stream:3",
                                   "/device:GPU:0/stream:all"}));
  auto lanes = ByDevice(step.step_stats);
  const auto* memcpy_lane = lanes["/device:GPU:0/memcpy"];
  ASSERT_EQ(memcpy_lane->node_stats_size(), static_cast<int>(cases.size()) + 1);
  EXPECT_EQ(lanes["/device:GPU:0/stream:3"]->node_stats_size(), memcpy_lane->node_stats_size());
  EXPECT_EQ(lanes["/device:GPU:0/stream:all"]->node_stats_size(), memcpy_lane->node_stats_size());
  for (size_t i = 0; i < cases.size(); ++i) {
    const tf::NodeExecStats& node = memcpy_lane->node_stats(static_cast<int>(i));
    SCOPED_TRACE(cases[i].label);
    EXPECT_EQ(node.timeline_label(), cases[i].label);
    const std::string kind = MemcpyKindName(cases[i].copy);
    EXPECT_EQ(node.node_name(), "input/staging:_Recv:MEMCPY" + kind);
    EXPECT_EQ(node.memcpy().kind(), kind);
    EXPECT_EQ(node.memcpy().bytes(), 4096);
    EXPECT_EQ(node.memcpy().src_memory(), MemoryKindName(cases[i].src));
    EXPECT_EQ(node.memcpy().dst_memory(), MemoryKindName(cases[i].dst));
    EXPECT_EQ(node.correlation_id(), 5u);
    EXPECT_EQ(node.all_end_rel_nanos(), 2500);
    EXPECT_EQ(node.all_end_rel_micros(), 2);
  }
  const tf::NodeExecStats& p2p = memcpy_lane->node_stats(static_cast<int>(cases.size()));
  EXPECT_EQ(p2p.node_name(), "input/staging:_Recv:MEMCPYPtoP");
  EXPECT_EQ(p2p.timeline_label(), "MEMCPYPtoP 1048576 bytes (Device to Device)");
  EXPECT_EQ(p2p.memcpy().kind(), "PtoP");
  EXPECT_EQ(step.stats.memcpys, cases.size() + 1);
}

TEST(GpuActivityConverterTest, EveryKindHasTfName) {
  EXPECT_EQ(MemcpyKindName(CUPTI_ACTIVITY_MEMCPY_KIND_ATOH), "AtoH");
  EXPECT_EQ(MemcpyKindName(CUPTI_ACTIVITY_MEMCPY_KIND_ATOA), "AtoA");
  EXPECT_EQ(MemcpyKindName(CUPTI_ACTIVITY_MEMCPY_KIND_ATOD), "AtoD");
  EXPECT_EQ(MemcpyKindName(CUPTI_ACTIVITY_MEMCPY_KIND_DTOA), "DtoA");
  EXPECT_EQ(MemcpyKindName(CUPTI_ACTIVITY_MEMCPY_KIND_UNKNOWN), "Unknown");
  EXPECT_EQ(MemoryKindName(CUPTI_ACTIVITY_MEMORY_KIND_UNKNOWN), "Unknown");
  EXPECT_EQ(MemoryKindName(CUPTI_ACTIVITY_MEMORY_KIND_MANAGED), "Managed");
  EXPECT_EQ(MemoryKindName(200), "Unknown");
}

TEST(GpuActivityConverterTest, MemsetOnStreamLanesNotOnMemcpyLane) {
  GpuActivityConverter converter(kClock);
  converter.RegisterOp(9, "gradients/zeros", "Fill");
  MemsetActivity memset{};
  memset.kind = CUPTI_ACTIVITY_KIND_MEMSET;
  memset.bytes = 256;
  memset.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  memset.deviceId = 2;
  memset.streamId = 21;
  memset.correlationId = 77;
  memset.start = static_cast<uint64_t>(kCuptiStart + 50);
  memset.end = memset.start + 1'200;
  Feed(converter, Link(77, 9));
  Feed(converter, memset);
  const ConvertedStep step = converter.Finish();
  EXPECT_EQ(Devices(step.step_stats),
            (std::set<std::string>{"/device:GPU:2/stream:21", "/device:GPU:2/stream:all"}));
  const auto& node = ByDevice(step.step_stats)["/device:GPU:2/stream:21"]->node_stats(0);
  EXPECT_EQ(node.node_name(), "gradients/zeros:Fill:MEMSET");
  EXPECT_EQ(node.timeline_label(), "MEMSET 256 bytes (Device)");
  EXPECT_EQ(node.correlation_id(), 9u);
  EXPECT_EQ(step.stats.memsets, 1u);
}

TEST(GpuActivityConverterTest, RecordsWithoutCorrelationKeepTfFallbackNames) {
  GpuActivityConverter converter(kClock);
  Feed(converter, Kernel(0, 7, 40, 0, 1000, "cudnn_bn_fw"));
  Feed(converter, Memcpy(CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
                         CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE, 64, 7, 41, 5'000));
  // Linked to an id no op was registered under: the id is kept, the name is not invented.
  Feed(converter, Link(42, 999));
  Feed(converter, Kernel(0, 7, 42, 9'000, 1000, "orphan"));
  const ConvertedStep step = converter.Finish();
  const auto* lane = ByDevice(step.step_stats)["/device:GPU:0/stream:7"];
  ASSERT_EQ(lane->node_stats_size(), 3);
  EXPECT_EQ(lane->node_stats(0).node_name(), "cudnn_bn_fw");
  EXPECT_EQ(lane->node_stats(0).timeline_label(),
            "cudnn_bn_fw regs:128 shm:16384 grid:4,2,1 block:256,1,1");
  EXPECT_EQ(lane->node_stats(0).correlation_id(), 0u);
  EXPECT_EQ(lane->node_stats(1).node_name(), "unknown:MEMCPYDtoH");
  EXPECT_EQ(lane->node_stats(2).node_name(), "orphan");
  EXPECT_EQ(lane->node_stats(2).correlation_id(), 999u);
  EXPECT_EQ(step.stats.unlinked_records, 3u);
  EXPECT_EQ(step.stats.linked_records, 0u);
  EXPECT_TRUE(step.launched_ops.empty());
}

TEST(GpuActivityConverterTest, DropsAreCountedAndReturned) {
  ConverterOptions options;
  options.max_records = 3;
  GpuActivityConverter converter(kClock, options);
  for (int i = 0; i < 5; ++i) Feed(converter, Kernel(0, 7, 1, i * 1000, 500, "k"));
  converter.OnDropped(DropReason::kCupti, 40);
  converter.OnDropped(DropReason::kCupti, 2);
  converter.OnDropped(DropReason::kBufferBudget, 3);
  const ConvertedStep step = converter.Finish();
  EXPECT_EQ(ByDevice(step.step_stats)["/device:GPU:0/stream:7"]->node_stats_size(), 3);
  EXPECT_EQ(step.stats.kernels, 3u);
  EXPECT_EQ(step.stats.dropped_by_record_limit, 2u);
  EXPECT_EQ(step.stats.dropped_by_cupti, 42u);
  EXPECT_EQ(step.stats.dropped_buffers, 3u);
  EXPECT_EQ(step.stats.dropped_total(), 47u);

  // Counts are per step.
  const ConvertedStep next = converter.Finish();
  EXPECT_EQ(next.stats, ConversionStats{});
  EXPECT_EQ(next.step_stats.dev_stats_size(), 0);
}

TEST(GpuActivityConverterTest, ClockOffsetAndLaunchTimeFromRuntimeRecord) {
  // CUPTI's clock is ahead of the steady clock by ~1.8e18 ns: every GPU time lands on the host
  // timeline at cupti_ns + (host - cupti).
  const ClockAlignment clock{kCuptiStart + 123, kHostStart + 45};
  EXPECT_EQ(clock.offset(), kHostStart + 45 - kCuptiStart - 123);
  GpuActivityConverter converter(ClockAlignment{});
  Feed(converter, Kernel(0, 7, 5, 10'000, 2'000, "k"));
  converter.SetClock(clock);  // measured after records may already have arrived
  EXPECT_EQ(converter.clock(), clock);
  const ApiActivity runtime = testing::ApiRecord(
      CUPTI_ACTIVITY_KIND_RUNTIME, 5, static_cast<uint64_t>(kCuptiStart + 500),
      static_cast<uint64_t>(kCuptiStart + 3'500));
  ApiActivity driver = runtime;  // the driver call inside the runtime call
  driver.kind = CUPTI_ACTIVITY_KIND_DRIVER;
  driver.start += 100;
  Feed(converter, driver);
  Feed(converter, runtime);
  const ConvertedStep step = converter.Finish(/*clock_offset_ns=*/1'000'000);
  const auto& node = ByDevice(step.step_stats)["/device:GPU:0/stream:7"]->node_stats(0);
  EXPECT_EQ(node.all_start_nanos(), kHostStart + 45 - 123 + 10'000 + 1'000'000);
  EXPECT_EQ(node.scheduled_nanos(), kHostStart + 45 - 123 + 500 + 1'000'000);
  EXPECT_EQ(node.scheduled_micros(), node.scheduled_nanos() / 1000);
  EXPECT_EQ(step.stats.api_records, 2u);
}

TEST(GpuActivityConverterTest, KernelLaunchedThroughTheDriverIsLinkedWithItsLaunchTime) {
  // cuBLAS inside the op's scope: cuLaunchKernelEx has a DRIVER record and no runtime record; the
  // link CUPTI writes next to the driver record is the only one for the kernel's id. The op's own
  // kernel goes through cudaLaunchKernel (RUNTIME). Records arrive in any order across buffers.
  GpuActivityConverter converter(kClock);
  converter.RegisterOp(4, "lstm/MatMul", "MatMul", /*host_start_ns=*/kHostStart + 100);
  Feed(converter, Kernel(0, 7, 61, 9'000, 4'000, "sm90_xmma_gemm_f32f32_tf32f32_f32_nn"));
  Feed(converter, Kernel(0, 7, 60, 5'000, 1'000, "add_kernel"));
  Feed(converter, testing::ApiRecord(CUPTI_ACTIVITY_KIND_DRIVER, 61,
                                     static_cast<uint64_t>(kCuptiStart + 2'000),
                                     static_cast<uint64_t>(kCuptiStart + 2'600)));
  // A call CUPTI could not time: no launch time from it.
  Feed(converter, testing::ApiRecord(CUPTI_ACTIVITY_KIND_DRIVER, 61, 0, 0));
  Feed(converter, Link(61, 4));
  Feed(converter, Link(60, 4));
  Feed(converter, testing::ApiRecord(CUPTI_ACTIVITY_KIND_RUNTIME, 60,
                                     static_cast<uint64_t>(kCuptiStart + 1'000),
                                     static_cast<uint64_t>(kCuptiStart + 1'400)));
  // cuBLAS's bookkeeping calls (cuCtxGetCurrent and the like): linked, launching nothing.
  for (uint32_t id = 62; id < 66; ++id) {
    Feed(converter, Link(id, 4));
    Feed(converter, testing::ApiRecord(CUPTI_ACTIVITY_KIND_DRIVER, id,
                                       static_cast<uint64_t>(kCuptiStart + 2'700 + id),
                                       static_cast<uint64_t>(kCuptiStart + 2'800 + id)));
  }

  const ConvertedStep step = converter.Finish(/*clock_offset_ns=*/1'000'000);
  const auto* lane = ByDevice(step.step_stats)["/device:GPU:0/stream:7"];
  ASSERT_EQ(lane->node_stats_size(), 2);
  const tf::NodeExecStats& add = lane->node_stats(0);
  const tf::NodeExecStats& gemm = lane->node_stats(1);
  EXPECT_EQ(gemm.node_name(), "lstm/MatMul:MatMul");
  EXPECT_EQ(gemm.timeline_label(),
            "sm90_xmma_gemm_f32f32_tf32f32_f32_nn regs:128 shm:16384 grid:4,2,1 "
            "block:256,1,1@@lstm/MatMul:MatMul");
  EXPECT_EQ(gemm.correlation_id(), 4u);
  EXPECT_EQ(gemm.all_start_nanos(), kHostStart + 9'000 + 1'000'000);
  EXPECT_EQ(gemm.scheduled_nanos(), kHostStart + 2'000 + 1'000'000);  // the driver call
  EXPECT_EQ(gemm.scheduled_micros(), gemm.scheduled_nanos() / 1000);
  EXPECT_EQ(add.node_name(), "lstm/MatMul:MatMul");
  EXPECT_EQ(add.correlation_id(), 4u);
  EXPECT_EQ(add.scheduled_nanos(), kHostStart + 1'000 + 1'000'000);  // the runtime call

  EXPECT_EQ(step.stats.kernels, 2u);
  EXPECT_EQ(step.stats.linked_records, 2u);
  EXPECT_EQ(step.stats.unlinked_records, 0u);
  EXPECT_EQ(step.stats.api_records, 7u);
  EXPECT_EQ(step.stats.external_correlations, 6u);
  EXPECT_EQ(step.stats.dropped_correlations, 0u);
  ASSERT_EQ(step.launched_ops.size(), 1u);
  EXPECT_EQ(step.launched_ops[0],
            (LaunchedOp{4, "lstm/MatMul", kHostStart + 100 + 1'000'000}));
}

TEST(GpuActivityConverterTest, CorrelationsPastTheLimitAreCountedAndFreedEachStep) {
  ConverterOptions options;
  options.max_correlations = 3;
  GpuActivityConverter converter(kClock, options);
  converter.RegisterOp(1, "conv/Conv2D", "Conv2D");
  // Three API calls that launch nothing fill the table; the kernel's own link and launch come
  // after it is full: counted, and the kernel stays on its lane, unlinked.
  for (uint32_t id = 1; id <= 3; ++id) {
    Feed(converter, testing::ApiRecord(CUPTI_ACTIVITY_KIND_DRIVER, id, kCuptiStart + id,
                                       kCuptiStart + id + 1));
  }
  Feed(converter, Link(3, 1));  // an id already held: no new entry
  Feed(converter, Link(4, 1));
  Feed(converter, testing::ApiRecord(CUPTI_ACTIVITY_KIND_DRIVER, 4, kCuptiStart + 10,
                                     kCuptiStart + 20));
  Feed(converter, Kernel(0, 7, 4, 100, 1'000, "implicit_convolve_sgemm"));
  ConvertedStep step = converter.Finish();
  EXPECT_EQ(step.stats.dropped_correlations, 2u);
  EXPECT_EQ(step.stats.dropped_total(), 0u);  // no GPU record lost
  EXPECT_EQ(step.stats.unlinked_records, 1u);
  const auto& node = ByDevice(step.step_stats)["/device:GPU:0/stream:7"]->node_stats(0);
  EXPECT_EQ(node.node_name(), "implicit_convolve_sgemm");
  EXPECT_EQ(node.scheduled_nanos(), 0);

  // The next step starts with an empty table.
  converter.RegisterOp(2, "conv/Conv2D", "Conv2D");
  Feed(converter, Link(5, 2));
  Feed(converter, Kernel(0, 7, 5, 100, 1'000, "implicit_convolve_sgemm"));
  step = converter.Finish();
  EXPECT_EQ(step.stats.dropped_correlations, 0u);
  EXPECT_EQ(ByDevice(step.step_stats)["/device:GPU:0/stream:7"]->node_stats(0).node_name(),
            "conv/Conv2D:Conv2D");
}

TEST(GpuActivityConverterTest, OtherKindsAreCountedNotDrawn) {
  GpuActivityConverter converter(kClock);
  CUpti_Activity sync{};
  sync.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
  converter.OnRecord(sync);
  CUpti_Activity overhead{};
  overhead.kind = CUPTI_ACTIVITY_KIND_OVERHEAD;
  converter.OnRecord(overhead);
  const ConvertedStep step = converter.Finish();
  EXPECT_EQ(step.stats.other_records, 2u);
  EXPECT_EQ(step.step_stats.dev_stats_size(), 0);
}

TEST(GpuActivityConverterTest, LinkOpsMarksTheLaunchingHostOps) {
  GpuActivityConverter converter(kClock);
  // The same node ran twice in the step (a loop body): told apart by start time.
  converter.RegisterOp(1, "while/body/MatMul", "MatMul", /*host_start_ns=*/1'000);
  converter.RegisterOp(2, "while/body/MatMul", "MatMul", /*host_start_ns=*/9'000);
  converter.RegisterOp(3, "loss/Sum", "Sum");
  Feed(converter, Link(10, 1));
  Feed(converter, Link(11, 2));
  Feed(converter, Link(12, 3));
  Feed(converter, Kernel(0, 7, 10, 0, 100, "a"));
  Feed(converter, Kernel(0, 7, 11, 1000, 100, "b"));
  Feed(converter, Kernel(0, 7, 12, 2000, 100, "c"));
  const ConvertedStep step = converter.Finish(/*clock_offset_ns=*/500);
  ASSERT_EQ(step.launched_ops.size(), 3u);
  EXPECT_EQ(step.launched_ops[1].start_nanos, 9'500);

  tf::StepStats host;
  tf::DeviceStepStats* cpu = host.add_dev_stats();
  cpu->set_device("/job:localhost/replica:0/task:0/device:GPU:0");
  auto add = [&](const std::string& name, int64_t start) {
    tf::NodeExecStats* node = cpu->add_node_stats();
    node->set_node_name(name);
    node->set_all_start_nanos(start);
  };
  add("while/body/MatMul", 9'500);
  add("while/body/MatMul", 1'500);
  add("loss/Sum", 20'000);
  add("unrelated", 30'000);
  EXPECT_EQ(GpuActivityConverter::LinkOps(step.launched_ops, &host), 3u);
  EXPECT_EQ(cpu->node_stats(0).correlation_id(), 2u);
  EXPECT_EQ(cpu->node_stats(1).correlation_id(), 1u);
  EXPECT_EQ(cpu->node_stats(2).correlation_id(), 3u);
  EXPECT_EQ(cpu->node_stats(3).correlation_id(), 0u);

  // The same id sits on the GPU record and on the op.
  const auto* lane = ByDevice(step.step_stats)["/device:GPU:0/stream:7"];
  EXPECT_EQ(lane->node_stats(1).correlation_id(), cpu->node_stats(0).correlation_id());
}

}  // namespace
}  // namespace stepscope::collect::cupti
