// Analyses of PyTorch profiler (Kineto) traces as Kineto writes them: annotations and sync
// markers are not work, streams group under their GPU, the profiler's own span is no op and no
// straggler, older and other devices' categories, launch geometry through merges, and copy
// bandwidth from the per-copy argument. Fixtures use Kineto's real layout, category and arg names.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <string>

#include "profiler/formats/inputs.h"
#include "profiler/analysis/breakdowns.h"
#include "profiler/analysis/merge.h"
#include "profiler/analysis/op_stats.h"
#include "profiler/analysis/summary.h"
#include "profiler/formats/chrome_json/chrome_json_reader.h"
#include "profiler/formats/reader.h"
#include "test_util.h"

namespace stepscope::analysis {
namespace {

using trace::Trace;

constexpr long long kBase = 1700000000000000LL;  // µs since the epoch, as Kineto writes ts

// One rank's step as the PyTorch profiler (CUDA) writes it. `shift` moves the work (µs);
// `span_dur` is the length of the profiler's own span.
std::string CudaStep(int rank, long long shift, long long span_dur) {
  auto ts = [&](long long us) { return std::to_string(kBase + shift + us); };
  std::string j = "{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [{\"id\": 0, \"name\": \"NVIDIA A100-SXM4-80GB\", "
                  "\"totalGlobalMem\": 85051572224, \"computeMajor\": 8, \"computeMinor\": 0, \"numSms\": 108}],\n"
                  "  \"distributedInfo\": {\"backend\": \"nccl\", \"rank\": " + std::to_string(rank) +
                  ", \"world_size\": 2},\n  \"traceEvents\": [\n";
  j += "  {\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#1\", \"pid\": 2000, \"tid\": 2000, \"ts\": " +
       ts(0) + ", \"dur\": 1000, \"args\": {\"External id\": 1, \"Record function id\": 0, \"Ev Idx\": 0}},\n";
  j += "  {\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"## forward ##\", \"pid\": 2000, \"tid\": 2000, \"ts\": " +
       ts(10) + ", \"dur\": 500, \"args\": {\"External id\": 2, \"Record function id\": 0, \"Ev Idx\": 1}},\n";
  j += "  {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::linear\", \"pid\": 2000, \"tid\": 2000, \"ts\": " + ts(20) +
       ", \"dur\": 100, \"args\": {\"External id\": 3, \"Record function id\": 0, \"Sequence number\": 7, "
       "\"Fwd thread id\": 0, \"Ev Idx\": 2}},\n";
  // Overhangs aten::linear's end by 50 µs (threads and clocks make real traces do this).
  j += "  {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::addmm\", \"pid\": 2000, \"tid\": 2000, \"ts\": " + ts(50) +
       ", \"dur\": 120, \"args\": {\"External id\": 4, \"Record function id\": 0, \"Sequence number\": 8, "
       "\"Fwd thread id\": 0, \"Ev Idx\": 3}},\n";
  j += "  {\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 2000, \"tid\": 2000, \"ts\": " +
       ts(60) + ", \"dur\": 10, \"args\": {\"External id\": 4, \"cbid\": 211, \"correlation\": 101}},\n";
  j += "  {\"ph\": \"s\", \"id\": 101, \"pid\": 2000, \"tid\": 2000, \"ts\": " + ts(60) +
       ", \"cat\": \"ac2g\", \"name\": \"ac2g\"},\n";
  j += "  {\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaMemcpyAsync\", \"pid\": 2000, \"tid\": 2000, \"ts\": " +
       ts(200) + ", \"dur\": 5, \"args\": {\"External id\": 5, \"cbid\": 41, \"correlation\": 102}},\n";
  // GPU 0: a GPU-side annotation enclosing the stream's work, kernels on two streams, a copy
  // whose duration is rounded to 1 µs (0.8 µs at 1250 GB/s), a stream sync marker.
  j += "  {\"ph\": \"X\", \"cat\": \"gpu_user_annotation\", \"name\": \"## forward ##\", \"pid\": 0, \"tid\": 7, \"ts\": " +
       ts(70) + ", \"dur\": 400, \"args\": {\"External id\": 2}},\n";
  j += "  {\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"ampere_sgemm_128x64_tn\", \"pid\": 0, \"tid\": 7, \"ts\": " + ts(80) +
       ", \"dur\": 100, \"args\": {\"External id\": 4, \"queued\": 0, \"device\": 0, \"context\": 1, \"stream\": 7, "
       "\"correlation\": 101, \"registers per thread\": 128, \"shared memory\": 16384, \"blocks per SM\": 2.370370, "
       "\"warps per SM\": 18.962963, \"grid\": [128, 2, 1], \"block\": [256, 1, 1], \"est. achieved occupancy %\": 25}},\n";
  j += "  {\"ph\": \"f\", \"id\": 101, \"pid\": 0, \"tid\": 7, \"ts\": " + ts(80) +
       ", \"cat\": \"ac2g\", \"name\": \"ac2g\", \"bp\": \"e\"},\n";
  j += "  {\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"void at::native::vectorized_elementwise_kernel<4>\", \"pid\": 0, "
       "\"tid\": 7, \"ts\": " + ts(300) + ", \"dur\": 50, \"args\": {\"External id\": 6, \"queued\": 0, \"device\": 0, "
       "\"context\": 1, \"stream\": 7, \"correlation\": 103, \"registers per thread\": 16, \"shared memory\": 0, "
       "\"grid\": [1024, 1, 1], \"block\": [128, 1, 1]}},\n";
  j += "  {\"ph\": \"X\", \"cat\": \"gpu_memcpy\", \"name\": \"Memcpy HtoD (Pinned -> Device)\", \"pid\": 0, \"tid\": 7, "
       "\"ts\": " + ts(400) + ", \"dur\": 1, \"args\": {\"External id\": 5, \"device\": 0, \"context\": 1, \"stream\": 7, "
       "\"correlation\": 102, \"bytes\": 1000000, \"memory bandwidth (GB/s)\": 1250}},\n";
  j += "  {\"ph\": \"X\", \"cat\": \"cuda_sync\", \"name\": \"Stream Sync\", \"pid\": 0, \"tid\": 7, \"ts\": " + ts(500) +
       ", \"dur\": 300, \"args\": {\"External id\": 7, \"cuda_sync_kind\": \"Stream Sync\", \"stream\": 7, "
       "\"correlation\": 104, \"device\": 0, \"context\": 1}},\n";
  j += "  {\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"ncclKernel_AllReduce_RING_LL_Sum_float\", \"pid\": 0, \"tid\": 20, "
       "\"ts\": " + ts(150) + ", \"dur\": 200, \"args\": {\"External id\": 8, \"queued\": 0, \"device\": 0, \"context\": 1, "
       "\"stream\": 20, \"correlation\": 105, \"registers per thread\": 96, \"shared memory\": 0, \"grid\": [2, 1, 1], "
       "\"block\": [512, 1, 1]}},\n";
  // The profiler's own span, on its pseudo process.
  j += "  {\"ph\": \"X\", \"cat\": \"Trace\", \"ts\": " + std::to_string(kBase - 100) + ", \"dur\": " +
       std::to_string(span_dur) + ", \"pid\": \"Spans\", \"tid\": \"PyTorch Profiler\", \"name\": \"PyTorch Profiler (0)\", "
       "\"args\": {\"Op count\": 0}},\n";
  j += "  {\"name\": \"process_name\", \"ph\": \"M\", \"ts\": " + ts(0) +
       ", \"pid\": 2000, \"tid\": 0, \"args\": {\"name\": \"python3.10\"}},\n"
       "  {\"name\": \"process_labels\", \"ph\": \"M\", \"ts\": " + ts(0) +
       ", \"pid\": 2000, \"tid\": 0, \"args\": {\"labels\": \"CPU\"}},\n"
       "  {\"name\": \"process_name\", \"ph\": \"M\", \"ts\": " + ts(0) +
       ", \"pid\": 0, \"tid\": 0, \"args\": {\"name\": \"python3.10\"}},\n"
       "  {\"name\": \"process_labels\", \"ph\": \"M\", \"ts\": " + ts(0) +
       ", \"pid\": 0, \"tid\": 0, \"args\": {\"labels\": \"GPU 0\"}},\n"
       "  {\"name\": \"thread_name\", \"ph\": \"M\", \"ts\": " + ts(0) +
       ", \"pid\": 0, \"tid\": 7, \"args\": {\"name\": \"stream 7 \"}},\n"
       "  {\"name\": \"thread_name\", \"ph\": \"M\", \"ts\": " + ts(0) +
       ", \"pid\": 0, \"tid\": 20, \"args\": {\"name\": \"stream 20 \"}},\n"
       "  {\"name\": \"thread_name\", \"ph\": \"M\", \"ts\": " + ts(0) +
       ", \"pid\": 2000, \"tid\": 2000, \"args\": {\"name\": \"thread 2000 (python3.10)\"}},\n"
       "  {\"ph\": \"i\", \"s\": \"t\", \"name\": \"Iteration Start: PyTorch Profiler\", \"pid\": \"Traces\", "
       "\"tid\": \"Trace PyTorch Profiler\", \"ts\": " + std::to_string(kBase - 100) + "},\n"
       "  {\"ph\": \"i\", \"s\": \"g\", \"name\": \"Record Window End\", \"pid\": \"\", \"tid\": \"\", \"ts\": " +
       std::to_string(kBase + 5000) + "}\n  ],\n  \"traceName\": \"rank" + std::to_string(rank) + ".pt.trace.json\"\n}\n";
  return j;
}

Trace Read(const std::string& json, const std::string& name = "step.pt.trace.json") {
  auto trace = trace::ReadChromeJson(json, name);
  EXPECT_TRUE(trace.ok()) << trace.status().message();
  return std::move(trace).value();
}

const DeviceUsage* GpuUsage(const Summary& summary) {
  const DeviceUsage* found = nullptr;
  for (const DeviceUsage& u : summary.usage) {
    if (u.lanes == "gpu streams") {
      EXPECT_EQ(found, nullptr) << "a second GPU entry: " << u.name;
      found = &u;
    }
  }
  return found;
}

// ---- 4, 5: busy time counts kernels, copies and memsets; streams group under their GPU -------

TEST(KinetoFidelityTest, AnnotationsAndSyncsAreNotGpuBusyTime) {
  const Trace trace = Read(CudaStep(0, 0, 2000));
  const StreamStats streams = ComputeStreamStats(trace);
  int64_t stream7_work = -1, stream7_annotation = -1, stream7_sync = -1;
  for (const StreamUsage& s : streams.streams) {
    if (s.stream != "stream 7") continue;
    EXPECT_EQ(s.device, "GPU 0");
    if (s.content == "work") stream7_work = s.busy_ns;
    if (s.content == "annotation") stream7_annotation = s.busy_ns;
    if (s.content == "sync") stream7_sync = s.busy_ns;
  }
  // Kernels 100 + 50 µs and the 1 µs copy; not the 400 µs annotation or the 300 µs sync.
  EXPECT_EQ(stream7_work, 151000);
  EXPECT_EQ(stream7_annotation, 400000);
  EXPECT_EQ(stream7_sync, 300000);

  const Summary summary = Summarize(trace);
  const DeviceUsage* gpu = GpuUsage(summary);
  ASSERT_NE(gpu, nullptr);
  EXPECT_EQ(gpu->name, "GPU 0");
  // Union over both streams: [80, 350] and [400, 401] µs.
  EXPECT_EQ(gpu->busy_ns, 271000);
  EXPECT_EQ(gpu->slices, 4);
  ASSERT_EQ(gpu->streams.size(), 2u);
  EXPECT_EQ(gpu->streams[0].name, "stream 7");
  EXPECT_EQ(gpu->streams[0].busy_ns, 151000);
  EXPECT_EQ(gpu->streams[1].name, "stream 20");
  EXPECT_EQ(gpu->streams[1].busy_ns, 200000);
  bool sync_row = false;
  for (const AnnotationUsage& a : summary.annotations) {
    if (a.lane == "GPU 0 / stream 7" && a.kind == "sync") sync_row = a.span_ns == 300000;
  }
  EXPECT_TRUE(sync_row);
}

TEST(KinetoFidelityTest, AlexNetGpuBusyIsItsKernelsCopiesAndMemsets) {
  auto read = trace::ReadTrace(stepscope::testing::DataPath("pytorch_kineto_alexnet_train.json.gz"));
  ASSERT_TRUE(read.ok()) << read.status().message();
  const Summary summary = Summarize(*read);
  const DeviceUsage* gpu = GpuUsage(summary);
  ASSERT_NE(gpu, nullptr);
  // Union of the kernel, gpu_memcpy and gpu_memset events of pid 0, computed from the JSON.
  EXPECT_EQ(gpu->name, "GPU 0");
  EXPECT_EQ(gpu->busy_ns, 66141000);
  EXPECT_EQ(gpu->slices, 98);
  ASSERT_EQ(gpu->streams.size(), 2u);  // stream 7 once, though some of its events overlap
  EXPECT_EQ(gpu->streams[0].name, "stream 7");
  EXPECT_EQ(gpu->streams[0].busy_ns, 65133000);
  EXPECT_EQ(gpu->streams[1].name, "stream 20");
  EXPECT_EQ(gpu->streams[1].busy_ns, 1070000);
  for (const DeviceUsage& u : summary.usage) EXPECT_NE(u.name, "Spans/PyTorch Profiler");
  ASSERT_FALSE(summary.op_types.empty());
  EXPECT_EQ(summary.op_types.front().op_type, "aten::to");
}

// ---- 6: the profiler's span, steps and annotations are not ops --------------------------------

TEST(KinetoFidelityTest, ProfilerSpanStepsAndAnnotationsAreNotOps) {
  const Trace trace = Read(CudaStep(0, 0, 2000));
  const OpStats stats = ComputeOpStats(trace);
  for (const OpStatsRow& row : stats.by_op_type) {
    EXPECT_NE(row.name, "PyTorch Profiler (0)");
    EXPECT_NE(row.name, "ProfilerStep#1");
    EXPECT_NE(row.name, "## forward ##");
    EXPECT_NE(row.name, "Stream Sync");
  }
  std::vector<std::string> annotations;
  for (const OpStatsRow& row : stats.annotations) annotations.push_back(row.name);
  std::sort(annotations.begin(), annotations.end());
  EXPECT_EQ(annotations, (std::vector<std::string>{"## forward ##", "## forward ##", "ProfilerStep#1",
                                                   "PyTorch Profiler (0)", "Stream Sync"}));
  // Host time is the CPU ops and runtime calls: 100 + 120 + 10 + 5 µs.
  EXPECT_EQ(stats.host_total_ns, 235000);
  ASSERT_FALSE(stats.by_op_type.empty());
  EXPECT_EQ(stats.by_op_type.front().name, "ncclKernel_AllReduce_RING_LL_Sum_float");
}

TEST(KinetoFidelityTest, SelfTimeWhenAChildOverhangsItsParent) {
  const Trace trace = Read(CudaStep(0, 0, 2000));
  const OpStats stats = ComputeOpStats(trace);
  auto row = [&](const std::string& name) {
    for (const OpStatsRow& r : stats.by_op_type) {
      if (r.name == name) return r;
    }
    ADD_FAILURE() << name;
    return OpStatsRow{};
  };
  // aten::linear [20, 120] µs loses the part of aten::addmm [50, 170] inside it: 70 µs.
  EXPECT_EQ(row("aten::linear").total_ns, 100000);
  EXPECT_EQ(row("aten::linear").self_ns, 30000);
  // aten::addmm encloses the launch [60, 70].
  EXPECT_EQ(row("aten::addmm").self_ns, 110000);
  EXPECT_EQ(row("cudaLaunchKernel").self_ns, 10000);
}

TEST(KinetoFidelityTest, ProfilerSpanIsNeverTheStraggler) {
  const auto dir = stepscope::testing::ScratchDir("kineto_straggler");
  // Rank 0's profiler span runs long after its work; rank 1's work ends 1 ms later than rank 0's.
  std::ofstream(dir / "rank0.pt.trace.json") << CudaStep(0, 0, 6000);
  std::ofstream(dir / "rank1.pt.trace.json") << CudaStep(1, 1000, 3000);
  auto traces = trace::ReadTraces({dir.string()});
  ASSERT_TRUE(traces.ok()) << traces.status().message();
  const MergeResult merged = MergeTraces(std::move(traces).value(), AlignMethod::kClock);
  ASSERT_EQ(merged.report.stragglers.size(), 1u);
  const StepStraggler& straggler = merged.report.stragglers[0];
  EXPECT_EQ(merged.report.inputs[straggler.input].rank, 1);
  EXPECT_EQ(straggler.lag_ns, 1000000);  // the work of rank 1 ends 1 ms after rank 0's
  for (const MergedInput& input : merged.report.inputs) {
    EXPECT_EQ(input.last_device, "GPU 0");  // not the profiler's span (Spans / PyTorch Profiler)
  }
  std::filesystem::remove_all(dir);
}

// ---- 7: older profilers' categories, MTIA, ROCm -----------------------------------------------

TEST(KinetoFidelityTest, LegacyCategoriesReadLikeTodays) {
  // PyTorch 1.8's Kineto: Operator, Runtime, Kernel, Memcpy, Memset.
  const std::string json = R"json({"schemaVersion": 1, "traceEvents": [
  {"ph": "X", "cat": "Operator", "name": "aten::mm", "pid": 77, "tid": "77", "ts": 1700000000000010, "dur": 40, "args": {"Input dims": [[64, 64], [64, 64]], "External id": 3}},
  {"ph": "X", "cat": "Runtime", "name": "cudaLaunchKernel", "pid": 77, "tid": "77", "ts": 1700000000000020, "dur": 8, "args": {"cbid": 211, "correlation": 9, "external id": 3, "external ts": 1700000000000010}},
  {"ph": "X", "cat": "Kernel", "name": "volta_sgemm_64x64_nn", "pid": 0, "tid": "stream 7", "ts": 1700000000000030, "dur": 12, "args": {"queued": 0, "device": 0, "context": 1, "stream": 7, "correlation": 9, "external id": 3, "registers per thread": 126, "shared memory": 8192, "grid": [1, 1, 1], "block": [256, 1, 1], "theoretical occupancy %": 12.5}},
  {"ph": "X", "cat": "Memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": 0, "tid": "stream 7", "ts": 1700000000000050, "dur": 4, "args": {"device": 0, "context": 1, "stream": 7, "correlation": 10, "external id": 4, "bytes": 16384, "memory bandwidth (GB/s)": 5.12}},
  {"ph": "X", "cat": "Memset", "name": "Memset (Device)", "pid": 0, "tid": "stream 7", "ts": 1700000000000060, "dur": 1, "args": {"device": 0, "context": 1, "stream": 7, "correlation": 11, "external id": 5, "bytes": 4096, "memory bandwidth (GB/s)": 4.096}}
]})json";
  const Trace trace = Read(json);
  const KernelStats kernels = ComputeKernelStats(trace);
  ASSERT_EQ(kernels.launches, 1);
  EXPECT_EQ(kernels.kernels[0].grid, "1,1,1");
  EXPECT_EQ(kernels.kernels[0].registers, "126");
  EXPECT_EQ(ComputeMemcpyStats(trace).count, 1);
  const OpStats ops = ComputeOpStats(trace);
  bool runtime = false, memset = false;
  for (const OpStatsRow& r : ops.by_op_type) {
    runtime = runtime || (r.name == "cudaLaunchKernel" && r.kind == "runtime");
    memset = memset || (r.name == "Memset (Device)" && r.kind == "memset" && r.where == "device");
  }
  EXPECT_TRUE(runtime);
  EXPECT_TRUE(memset);
}

TEST(KinetoFidelityTest, MtiaAndRocmDeviceEvents) {
  // MTIA: device work is mtia_ccp_events (dma* are copies), its runtime mtia_runtime.
  const std::string mtia = R"json({"schemaVersion": 1, "traceEvents": [
  {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1234, "tid": 1234, "ts": 1700000000000010, "dur": 40, "args": {"External id": 3}},
  {"ph": "X", "cat": "mtia_runtime", "name": "runFunction", "pid": 1234, "tid": 1234, "ts": 1700000000000020, "dur": 8, "args": {"External id": 3, "correlation": 9}},
  {"ph": "X", "cat": "mtia_ccp_events", "name": "fused_mm_kernel_0", "pid": 0, "tid": 1, "ts": 1700000000000030, "dur": 12, "args": {"External id": 3, "device": 0, "stream": 1, "correlation": 9}},
  {"ph": "X", "cat": "mtia_ccp_events", "name": "dma_h2d", "pid": 0, "tid": 1, "ts": 1700000000000050, "dur": 4, "args": {"External id": 4, "device": 0, "stream": 1, "correlation": 10, "bytes": 16384}},
  {"name": "process_labels", "ph": "M", "ts": 1700000000000000, "pid": 0, "tid": 0, "args": {"labels": "MTIA 0"}}
]})json";
  const Trace a = Read(mtia);
  EXPECT_EQ(ComputeKernelStats(a).launches, 1);
  EXPECT_EQ(ComputeMemcpyStats(a).count, 1);
  const Summary summary_a = Summarize(a);  // GpuUsage points into it
  const DeviceUsage* device = GpuUsage(summary_a);
  ASSERT_NE(device, nullptr);
  EXPECT_EQ(device->name, "MTIA 0");
  EXPECT_EQ(device->busy_ns, 16000);

  // ROCm: HIP runtime calls as cuda_runtime, roctracer copies named CopyHostToDevice.
  const std::string rocm = R"json({"schemaVersion": 1, "traceEvents": [
  {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 4321, "tid": 4321, "ts": 1700000000000010, "dur": 40, "args": {"External id": 3}},
  {"ph": "X", "cat": "cuda_runtime", "name": "hipLaunchKernel", "pid": 4321, "tid": 4321, "ts": 1700000000000020, "dur": 8, "args": {"External id": 3, "cbid": 0, "correlation": 9}},
  {"ph": "X", "cat": "kernel", "name": "Cijk_Ailk_Bljk_SB_MT64x64x16_SN_1LDSB0", "pid": 2, "tid": 0, "ts": 1700000000000030, "dur": 12, "args": {"External id": 3, "device": 2, "stream": 0, "correlation": 9, "grid": [4096, 1, 1], "block": [256, 1, 1]}},
  {"ph": "X", "cat": "gpu_memcpy", "name": "CopyHostToDevice", "pid": 2, "tid": 0, "ts": 1700000000000050, "dur": 4, "args": {"External id": 4, "device": 2, "stream": 0, "correlation": 10, "bytes": 16384}},
  {"ph": "X", "cat": "kernel", "name": "hipMemsetAsync", "pid": 2, "tid": 0, "ts": 1700000000000060, "dur": 2, "args": {"External id": 5, "device": 2, "stream": 0, "correlation": 11}},
  {"name": "process_labels", "ph": "M", "ts": 1700000000000000, "pid": 2, "tid": 0, "args": {"labels": "GPU 2"}}
]})json";
  const Trace b = Read(rocm);
  EXPECT_EQ(ComputeKernelStats(b).launches, 1);
  const MemcpyBreakdown copies = ComputeMemcpyStats(b);
  ASSERT_EQ(copies.rows.size(), 1u);
  EXPECT_EQ(copies.rows[0].kind, "HtoD");
  const Summary summary_b = Summarize(b);
  const DeviceUsage* gpu = GpuUsage(summary_b);
  ASSERT_NE(gpu, nullptr);
  EXPECT_EQ(gpu->name, "GPU 2");
  EXPECT_EQ(gpu->slices, 3);
}

// ---- 8: launch geometry survives loading a directory -------------------------------------------

TEST(KinetoFidelityTest, KernelGeometryFromADirectory) {
  const auto dir = stepscope::testing::ScratchDir("kineto_geometry");
  std::ofstream(dir / "rank0.pt.trace.json") << CudaStep(0, 0, 2000);
  std::ofstream(dir / "rank1.pt.trace.json") << CudaStep(1, 0, 2000);
  auto traces = trace::ReadTraces({dir.string()});
  ASSERT_TRUE(traces.ok()) << traces.status().message();
  const Trace merged = OneTrace(std::move(*traces));
  const KernelStats stats = ComputeKernelStats(merged);
  ASSERT_EQ(stats.launches, 6);
  bool found = false;
  for (const KernelRow& k : stats.kernels) {
    if (k.name != "ampere_sgemm_128x64_tn") continue;
    found = true;
    EXPECT_EQ(k.grid, "128,2,1");
    EXPECT_EQ(k.block, "256,1,1");
    EXPECT_EQ(k.registers, "128");
  }
  EXPECT_TRUE(found);
  // Copy sizes come along too.
  EXPECT_EQ(ComputeMemcpyStats(merged).bytes, 2000000);
  std::filesystem::remove_all(dir);
}

// ---- 9: copy bandwidth from the per-copy argument ----------------------------------------------

TEST(KinetoFidelityTest, CopyBandwidthFromThePerCopyArgument) {
  const Trace trace = Read(CudaStep(0, 0, 2000));
  const MemcpyBreakdown copies = ComputeMemcpyStats(trace);
  ASSERT_EQ(copies.rows.size(), 1u);
  // 1 MB in 0.8 µs (the duration says 1 µs, which would give 1000 GB/s).
  EXPECT_NEAR(copies.rows[0].bandwidth_gbps, 1250.0, 0.01);
  EXPECT_EQ(copies.rows[0].bandwidth_from, "bandwidth_args");
  const Summary summary = Summarize(trace);
  ASSERT_EQ(summary.memcpy.size(), 1u);
  EXPECT_NEAR(summary.memcpy[0].bandwidth_gbps(), 1250.0, 0.01);
  EXPECT_EQ(summary.memcpy[0].bandwidth_from(), "bandwidth_args");
}

}  // namespace
}  // namespace stepscope::analysis
