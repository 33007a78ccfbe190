// The GPU tracer over real CUPTI on a real GPU. In one profiled step, one op runs one of our
// kernels (launched with cudaLaunchKernel: a RUNTIME record) and a cuBLAS GEMM (cuBLAS launches
// through the driver API: a DRIVER record only); both must land on /device:GPU:0 lanes linked
// to the op, with launch times, and the host op must carry their correlation id. A second
// profiled step then holds only its own kernel: work run between the steps, with tracing off, is
// not recorded. Skips, saying why, where there is no usable GPU or CUPTI cannot trace.
// CUPTI is detached between profiled steps while another thread is inside CUDA all the time, as
// NCCL's and the fusion's threads are: every step still traces its own kernel.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "kernels/cuda/cuda_context.h"
#include "kernels/elementwise.h"
#include "kernels/matmul.h"
#include "profiler/collect/cupti/cupti_activity_source.h"
#include "profiler/collect/cupti/gpu_step_tracer.h"
#include "profiler/collect/step_collector.h"

namespace stepscope::collect::cupti {
namespace {

const std::string kGpuDevice = "/job:localhost/replica:0/task:0/device:GPU:0";
constexpr int64_t kSlackNs = 5'000'000;  // clock alignment error and launch latency, generous

// Device memory of `count` floats, zeroed.
class DeviceFloats {
 public:
  explicit DeviceFloats(int64_t count) {
    const size_t bytes = static_cast<size_t>(count) * sizeof(float);
    EXPECT_EQ(cudaMalloc(reinterpret_cast<void**>(&data_), bytes), cudaSuccess);
    EXPECT_EQ(cudaMemset(data_, 0, bytes), cudaSuccess);
  }
  ~DeviceFloats() { (void)cudaFree(data_); }
  DeviceFloats(const DeviceFloats&) = delete;
  DeviceFloats& operator=(const DeviceFloats&) = delete;
  kernels::Out<float> view(kernels::Shape shape) { return {data_, shape}; }

 private:
  float* data_ = nullptr;
};

// Every kernel record of the step, from the lane that repeats all streams.
std::vector<const tf::NodeExecStats*> Kernels(const tf::RunMetadata& metadata) {
  std::vector<const tf::NodeExecStats*> kernels;
  for (const auto& dev : metadata.step_stats().dev_stats()) {
    if (dev.device() != "/device:GPU:0/stream:all") continue;
    for (const auto& node : dev.node_stats()) {
      if (node.has_kernel()) kernels.push_back(&node);
    }
  }
  return kernels;
}

const tf::NodeExecStats* HostOp(const tf::RunMetadata& metadata, const std::string& name) {
  for (const auto& dev : metadata.step_stats().dev_stats()) {
    if (dev.device() != kGpuDevice) continue;
    for (const auto& node : dev.node_stats()) {
      if (node.node_name() == name) return &node;
    }
  }
  return nullptr;
}

// An op of the test's graph: the collector keeps its strings by address until the step ends, as
// the trainer's graph nodes are kept.
struct TestOp {
  std::string name, type;
  std::vector<std::string> inputs;
};

// One op of a step as StepProfiler drives it: the host record and the tracer's op scope around
// `launch`, then a wait for the GPU, as the trainer's step ends after its results are read.
template <typename Launch>
void RunOp(collect::StepCollector& collector, GpuStepTracer& tracer,
           const kernels::CudaContext& ctx, const TestOp& op, Launch launch) {
  const int64_t start = SteadyNowNanos();
  collector.BeginOp(&kGpuDevice, &op.name, &op.type, &op.inputs, start);
  tracer.OnOpStart(op.name, op.type, start);
  launch();
  tracer.OnOpEnd();
  ASSERT_TRUE(ctx.Synchronize().ok());
  collector.EndOp(SteadyNowNanos());
}

TEST(GpuStepTracerIntegrationTest, OurKernelAndCublasGemmAreLinkedToTheirOp) {
  auto ctx_or = kernels::CudaContext::Create(0);
  if (!ctx_or.ok()) GTEST_SKIP() << "no usable CUDA device: " << ctx_or.status().message();
  const kernels::CudaContext& ctx = **ctx_or;
  auto tracer_or = GpuStepTracer::Start(cupti::MakeCuptiActivitySource());
  if (!tracer_or.ok() && tracer_or.status().code() == StatusCode::kUnavailable) {
    GTEST_SKIP() << "CUPTI cannot trace here: " << tracer_or.status().message();
  }
  ASSERT_TRUE(tracer_or.ok()) << tracer_or.status().message();
  GpuStepTracer& tracer = **tracer_or;

  constexpr int64_t n = 512;  // large enough that cuBLAS runs a real GEMM kernel
  DeviceFloats a(n * n), b(n * n), c(n * n), x(n), y(n), z(n);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);

  // Step 1: one op, our Add and a cuBLAS GEMM.
  collect::StepCollector collector;
  collector.BeginStep(1);
  ASSERT_TRUE(tracer.BeginStep().ok());
  const int64_t step_start = SteadyNowNanos();
  const TestOp matmul_op{"op/MatMul", "MatMul", {}};
  RunOp(collector, tracer, ctx, matmul_op, [&] {
    EXPECT_TRUE(kernels::Add(ctx, x.view({n}), y.view({n}), z.view({n})).ok());
    EXPECT_TRUE(kernels::MatMul(ctx, a.view({n, n}), b.view({n, n}), c.view({n, n})).ok());
  });
  const int64_t step_end = SteadyNowNanos();
  tf::RunMetadata metadata = collector.FinishStep(0);
  auto summary = tracer.EndStep(0, &metadata);
  ASSERT_TRUE(summary.ok()) << summary.status().message();

  bool has_stream_lane = false;
  for (const auto& dev : metadata.step_stats().dev_stats()) {
    const std::string& lane = dev.device();
    if (lane.starts_with("/device:GPU:0/stream:") && lane != "/device:GPU:0/stream:all") {
      has_stream_lane = true;
    }
  }
  EXPECT_TRUE(has_stream_lane);
  const std::vector<const tf::NodeExecStats*> kernels = Kernels(metadata);
  ASSERT_GE(kernels.size(), 2u) << metadata.step_stats().DebugString();
  const tf::NodeExecStats* host_op = HostOp(metadata, "op/MatMul");
  ASSERT_NE(host_op, nullptr);
  EXPECT_NE(host_op->correlation_id(), 0u);
  int ours = 0, others = 0;  // our Add's kernel; cuBLAS's (any name: sm90_xmma_*, nvjet_*, ...)
  for (const tf::NodeExecStats* kernel : kernels) {
    SCOPED_TRACE(kernel->timeline_label());
    EXPECT_EQ(kernel->node_name(), "op/MatMul:MatMul");
    EXPECT_TRUE(kernel->timeline_label().ends_with("@@op/MatMul:MatMul"));
    EXPECT_EQ(kernel->correlation_id(), host_op->correlation_id());
    // Launch time from the runtime or driver record; both times on the host's clock.
    EXPECT_NE(kernel->scheduled_nanos(), 0);
    EXPECT_GE(kernel->scheduled_nanos(), step_start - kSlackNs);
    EXPECT_LE(kernel->scheduled_nanos(), kernel->all_start_nanos() + kSlackNs);
    EXPECT_GE(kernel->all_start_nanos(), step_start - kSlackNs);
    EXPECT_LE(kernel->all_start_nanos() + kernel->all_end_rel_nanos(), step_end + kSlackNs);
    if (kernel->timeline_label().find("AddFn") != std::string::npos) {
      ++ours;
    } else {
      ++others;
    }
  }
  EXPECT_EQ(ours, 1);
  EXPECT_GE(others, 1);
  EXPECT_EQ(summary->linked_host_ops, 1u);
  EXPECT_EQ(summary->stats.unlinked_records, 0u);
  EXPECT_EQ(summary->stats.dropped_total(), 0u);
  EXPECT_EQ(summary->stats.dropped_correlations, 0u);
  EXPECT_EQ(metadata.stepscope_session().dropped_gpu_records(), 0u);
  EXPECT_EQ(tracer.correlation_errors(), 0u);

  // Between profiled steps tracing is off: this kernel is not recorded anywhere.
  ASSERT_TRUE(kernels::Add(ctx, x.view({n}), y.view({n}), z.view({n})).ok());
  ASSERT_TRUE(ctx.Synchronize().ok());

  // Step 2: tracing on again, with only its own op's kernel.
  collect::StepCollector second;
  second.BeginStep(2);
  ASSERT_TRUE(tracer.BeginStep().ok());
  const TestOp add_op{"op/Add", "AddV2", {}};
  RunOp(second, tracer, ctx, add_op, [&] {
    EXPECT_TRUE(kernels::Add(ctx, x.view({n}), y.view({n}), z.view({n})).ok());
  });
  tf::RunMetadata metadata2 = second.FinishStep(0);
  auto summary2 = tracer.EndStep(0, &metadata2);
  ASSERT_TRUE(summary2.ok()) << summary2.status().message();
  const std::vector<const tf::NodeExecStats*> kernels2 = Kernels(metadata2);
  ASSERT_EQ(kernels2.size(), 1u) << metadata2.step_stats().DebugString();
  EXPECT_EQ(kernels2[0]->node_name(), "op/Add:AddV2");
  const tf::NodeExecStats* host_add = HostOp(metadata2, "op/Add");
  ASSERT_NE(host_add, nullptr);
  EXPECT_NE(host_add->correlation_id(), 0u);
  EXPECT_NE(host_add->correlation_id(), host_op->correlation_id());
  EXPECT_EQ(kernels2[0]->correlation_id(), host_add->correlation_id());
  EXPECT_EQ(summary2->stats.dropped_total(), 0u)
      << "by CUPTI " << summary2->stats.dropped_by_cupti << ", buffers refused "
      << summary2->stats.dropped_buffers << ", other records " << summary2->stats.other_records
      << ", between steps " << summary2->dropped_between_steps;
  EXPECT_EQ(tracer.correlation_errors(), 0u);
}

TEST(GpuStepTracerIntegrationTest, DetachesWhileAnotherThreadIsInsideCuda) {
  auto ctx_or = kernels::CudaContext::Create(0);
  if (!ctx_or.ok()) GTEST_SKIP() << "no usable CUDA device: " << ctx_or.status().message();
  const kernels::CudaContext& ctx = **ctx_or;
  auto tracer_or = GpuStepTracer::Start(cupti::MakeCuptiActivitySource());
  if (!tracer_or.ok() && tracer_or.status().code() == StatusCode::kUnavailable) {
    GTEST_SKIP() << "CUPTI cannot trace here: " << tracer_or.status().message();
  }
  ASSERT_TRUE(tracer_or.ok()) << tracer_or.status().message();
  GpuStepTracer& tracer = **tracer_or;
  EXPECT_EQ(tracer.between_steps(), "detached");

  constexpr int64_t n = 1 << 16;
  DeviceFloats x(n), y(n), z(n), busy(n);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::atomic<bool> stop{false};
  std::atomic<int> busy_calls{0}, busy_failures{0};
  std::thread inside_cuda([&] {
    if (cudaSetDevice(0) != cudaSuccess) ++busy_failures;
    cudaStream_t stream = nullptr;
    if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess) ++busy_failures;
    while (!stop) {
      if (cudaMemsetAsync(busy.view({n}).data, 0, n * sizeof(float), stream) != cudaSuccess ||
          cudaStreamSynchronize(stream) != cudaSuccess) {
        ++busy_failures;
      }
      ++busy_calls;
    }
    (void)cudaStreamDestroy(stream);
  });

  for (int step = 1; step <= 20; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    collect::StepCollector collector;
    collector.BeginStep(step);
    ASSERT_TRUE(tracer.BeginStep().ok());
    const TestOp add_op{"op/Add", "AddV2", {}};
    RunOp(collector, tracer, ctx, add_op, [&] {
      EXPECT_TRUE(kernels::Add(ctx, x.view({n}), y.view({n}), z.view({n})).ok());
    });
    tf::RunMetadata metadata = collector.FinishStep(0);
    auto summary = tracer.EndStep(0, &metadata);
    ASSERT_TRUE(summary.ok()) << summary.status().message();
    EXPECT_EQ(tracer.between_steps(), "detached");
    int linked = 0;
    for (const tf::NodeExecStats* kernel : Kernels(metadata)) {
      if (kernel->node_name() == "op/Add:AddV2") ++linked;
    }
    EXPECT_EQ(linked, 1);
    EXPECT_EQ(summary->stats.dropped_total(), 0u);
    // The other thread's unprofiled work between steps runs against a detached CUPTI.
    const int calls_before = busy_calls;
    while (busy_calls < calls_before + 3) std::this_thread::yield();
  }
  stop = true;
  inside_cuda.join();
  EXPECT_EQ(busy_failures, 0);
  EXPECT_GT(busy_calls, 60);
}

}  // namespace
}  // namespace stepscope::collect::cupti
