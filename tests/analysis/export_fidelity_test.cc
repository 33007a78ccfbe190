// Every analysis gives the same answer on a trace and on our own export of it, in every format we
// write that can hold the trace: Chrome JSON and Perfetto protobuf always, RunMetadata for step
// stats inputs. Real traces only: TensorFlow 1.x's GPU step, stepscope-train's H100 steps and CPU
// steps (one device; two, with their host copy lanes), PyTorch's AlexNet.
#include <gtest/gtest.h>

#include <map>
#include <ostream>
#include <string>
#include <tuple>

#include "profiler/analysis/breakdowns.h"
#include "profiler/analysis/gpu_analyses.h"
#include "profiler/analysis/op_stats.h"
#include "profiler/analysis/step_analyses.h"
#include "profiler/formats/reader.h"
#include "profiler/formats/step_stats/step_stats_payload.h"
#include "profiler/formats/writer.h"
#include "test_util.h"

namespace stepscope::analysis {
namespace {

// What the analyses answer, in figures that do not depend on how a format names things.
struct Figures {
  int64_t kernels = 0, kernel_ns = 0;
  int64_t copies = 0, copy_bytes = 0, copy_ns = 0;
  std::map<std::string, std::tuple<int64_t, int64_t, int64_t, int64_t>> gpu;  // device: busy, compute, memory, slices
  int64_t gpu_work = 0, gpu_linked = 0;
  int64_t path_ns = 0;
  PathBound bound_by = PathBound::kCpu;
  int64_t host_op_ns = 0;  // ops' host time: annotations, sync markers and Python frames apart
  bool operator==(const Figures&) const = default;
};

std::ostream& operator<<(std::ostream& out, const Figures& f) {
  out << "kernels " << f.kernels << " (" << f.kernel_ns << " ns), copies " << f.copies << " (" << f.copy_bytes
      << " B, " << f.copy_ns << " ns), launch links " << f.gpu_linked << " of " << f.gpu_work << ", path "
      << f.path_ns << " ns bound by " << PathBoundName(f.bound_by) << ", host op time " << f.host_op_ns << " ns, gpu:";
  for (const auto& [device, t] : f.gpu) {
    out << " [" << device << " busy " << std::get<0>(t) << " compute " << std::get<1>(t) << " memory "
        << std::get<2>(t) << " slices " << std::get<3>(t) << "]";
  }
  return out;
}

Figures Measure(const trace::Trace& trace) {
  Figures f;
  const KernelStats kernels = ComputeKernelStats(trace);
  f.kernels = kernels.launches;
  f.kernel_ns = kernels.total_ns;
  const MemcpyBreakdown copies = ComputeMemcpyStats(trace);
  f.copies = copies.count;
  f.copy_bytes = copies.bytes;
  f.copy_ns = copies.total_ns;
  // Devices in order: their names differ between formats ("GPU:0", "GPU 0").
  int index = 0;
  for (const GpuBreakdown& b : ComputeGpuBreakdown(trace)) {
    f.gpu["device " + std::to_string(index++)] = {b.time.busy_ns, b.time.compute_ns, b.time.memory_ns, b.time.slices};
  }
  const LaunchLinks links = CountLaunchLinks({GpuInput{&trace, {}}});
  f.gpu_work = links.work;
  f.gpu_linked = links.linked;
  const CriticalPath path = ComputeCriticalPath(trace);
  f.path_ns = path.length_ns;
  f.bound_by = path.bound_by;
  f.host_op_ns = ComputeOpStats(trace).host_total_ns;
  return f;
}

struct Written {
  trace::OutputFormat format;
  const char* extension;
};

TEST(ExportFidelityTest, EveryFormatWeWriteGivesTheSameAnswers) {
  const std::vector<std::string> inputs = {
      stepscope::testing::DataPath("ptb_lstm_tf1_gpu_step.pbtxt"),
      stepscope::testing::SamplePath("h100_lstm_small_step3.pb.gz"),
      stepscope::testing::SamplePath("h100_resnet50_b32_step3.pb.gz"),
      stepscope::testing::DataPath("trainer/lstm_small_step3.pb"),
      stepscope::testing::DataPath("trainer/lstm_small_cpu2_step3.pb.gz"),
      stepscope::testing::DataPath("pytorch_kineto_alexnet_train.json.gz"),
      // A real CPU trace recorded with_stack: 506 Python frames that are no ops in any format.
      stepscope::testing::DataPath("kineto_args/pytorch_cpu_tiny_stack.json.gz"),
  };
  const auto dir = stepscope::testing::ScratchDir("export_fidelity");
  for (const std::string& input : inputs) {
    SCOPED_TRACE(input);
    auto source = trace::ReadTrace(input);
    ASSERT_TRUE(source.ok()) << source.status().message();
    const Figures want = Measure(*source);
    std::vector<Written> formats = {{trace::OutputFormat::kPerfettoJson, ".json.gz"},
                                    {trace::OutputFormat::kPerfettoProto, ".pftrace"}};
    if (HasStepStats(*source)) formats.push_back({trace::OutputFormat::kRunMetadataBinary, ".pb"});
    for (const Written& w : formats) {
      const std::string path = (dir / ("export" + std::string(w.extension))).string();
      SCOPED_TRACE(path);
      ASSERT_TRUE(trace::WriteTrace(*source, path, w.format).ok());
      auto back = trace::ReadTrace(path);
      ASSERT_TRUE(back.ok()) << back.status().message();
      EXPECT_EQ(Measure(*back), want);
    }
  }
}

}  // namespace
}  // namespace stepscope::analysis
