// What a profiled step records of its GPUs, on stand-in GPU devices over host memory that give an
// H200's properties as CUDA describes it: the step's RunMetadata describes each GPU device (a
// virtual GPU too, under its own name and id), `stepscope efficiency` on the trace picks the
// H200 row of the device table, and the Chrome export carries Kineto's deviceProperties. A
// stand-in that gives no properties is described by nothing.
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/file_io.h"
#include "cli/run_stepscope.h"
#include "host_memory_gpu.h"
#include "stepscope/tf/run_metadata.pb.h"
#include "test_util.h"
#include "trainer/main/step_profiler.h"
#include "trainer/runtime/op_scope.h"

namespace stepscope::trainer {
namespace {

const std::string kTask = "/job:localhost/replica:0/task:0";

// One profiled step of one op on each of `devices`; returns the trace's path.
std::string ProfileOneStep(const std::vector<runtime::Device*>& devices, trace::OutputFormat format,
                           const std::string& dir) {
  ProfileOptions options;
  options.enabled = true;
  options.level = ProfileLevel::kHost;  // no CUPTI: the stand-ins run no kernels
  options.format = format;
  options.dir = dir;
  StepProfiler profiler(options, "lstm_small");
  // The collector keeps pointers to the nodes' names until the step ends, as a graph's nodes live.
  std::vector<runtime::Node> nodes;
  for (size_t d = 0; d < devices.size(); ++d) {
    const std::string tower = "tower_" + std::to_string(d);
    nodes.push_back({tower + "/MatMul", "MatMul", {tower + "/x", tower + "/w"}});
  }
  profiler.BeginStep(3, devices);
  for (size_t d = 0; d < devices.size(); ++d) {
    runtime::OpScope scope(*devices[d], nodes[d]);
    auto output = devices[d]->Allocate(runtime::DType::kFloat32, {4, 8});
    EXPECT_TRUE(output.ok());
    if (output.ok()) scope.Output(*output);
  }
  auto path = profiler.EndStep();
  EXPECT_TRUE(path.ok()) << path.status().message();
  return path.ok() ? *path : "";
}

// Two virtual GPUs on CUDA device 0, as `--devices gpu:0 --virtual_gpus_per_gpu 2` makes them.
std::vector<std::unique_ptr<runtime::Device>> TwoVirtualH200s(testing::GpuTransferCounts* counts,
                                                              const runtime::GpuProperties& gpu) {
  const std::vector<runtime::VirtualGpu> plan = {{0, 0, int64_t{256} << 20}, {1, 0, int64_t{256} << 20}};
  return testing::MakeHostMemoryGpuDevices(plan, counts, gpu);
}

std::vector<runtime::Device*> Pointers(const std::vector<std::unique_ptr<runtime::Device>>& devices) {
  std::vector<runtime::Device*> out;
  for (const auto& device : devices) out.push_back(device.get());
  return out;
}

TEST(GpuProperties, ProfiledStepDescribesEachGpuDevice) {
  testing::GpuTransferCounts counts;
  const runtime::GpuProperties h200 = testing::H200Properties();
  auto devices = TwoVirtualH200s(&counts, h200);
  const auto dir = testing::ScratchDir("gpu_properties_pb");
  const std::string path = ProfileOneStep(Pointers(devices), trace::OutputFormat::kRunMetadataBinary,
                                          dir.string());
  ASSERT_FALSE(path.empty());
  auto bytes = ReadFile(path);
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  tf::RunMetadata metadata;
  ASSERT_TRUE(metadata.ParseFromString(*bytes));
  const tf::TraceSession& session = metadata.stepscope_session();
  ASSERT_EQ(session.devices_size(), 2);
  for (int k = 0; k < 2; ++k) {
    const tf::DeviceDescription& described = session.devices(k);
    EXPECT_EQ(described.device(), kTask + "/device:GPU:" + std::to_string(k));
    EXPECT_EQ(described.id(), k);
    EXPECT_EQ(described.name(), "NVIDIA H200");
    EXPECT_EQ(described.sm_count(), 132);
    EXPECT_EQ(described.memory_bytes(), h200.memory_bytes);
    EXPECT_EQ(described.clock_khz(), 1'980'000);
    EXPECT_EQ(described.compute_major(), 9);
    EXPECT_EQ(described.compute_minor(), 0);
    EXPECT_EQ(described.measured_flops_per_s(), 0.0);  // no GPU peak is measured
  }

  // `stepscope efficiency` on the trace picks the H200 row by the recorded name.
  const cli::CliResult text = cli::RunStepscope({"efficiency", path});
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find("(h200-sxm)\n"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("dense peak of h200-sxm (NVIDIA H200 Tensor Core GPU datasheet"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("matched by the trace's device name \"NVIDIA H200\""), std::string::npos)
      << text.out;
  const cli::CliResult json = cli::RunStepscope({"efficiency", "--json", path});
  ASSERT_EQ(json.code, 0) << json.err;
  const nlohmann::json peak = nlohmann::json::parse(json.out).at("peak");
  EXPECT_EQ(peak.at("device"), "h200-sxm") << peak.dump();
  EXPECT_EQ(peak.at("bytes_per_s").get<double>(), 4800e9) << peak.dump();  // the table's 4.8 TB/s
  std::filesystem::remove_all(dir);
}

TEST(GpuProperties, ChromeExportCarriesDeviceProperties) {
  testing::GpuTransferCounts counts;
  const runtime::GpuProperties h200 = testing::H200Properties();
  auto devices = TwoVirtualH200s(&counts, h200);
  const auto dir = testing::ScratchDir("gpu_properties_chrome");
  const std::string path = ProfileOneStep(Pointers(devices), trace::OutputFormat::kPerfettoJson,
                                          dir.string());
  ASSERT_FALSE(path.empty());
  auto text = ReadFile(path);  // inflated
  ASSERT_TRUE(text.ok()) << text.status().message();
  const nlohmann::json trace = nlohmann::json::parse(*text);
  ASSERT_TRUE(trace.contains("deviceProperties")) << text->substr(0, 400);
  const nlohmann::json& described = trace.at("deviceProperties");
  ASSERT_EQ(described.size(), 2u) << described.dump();
  for (int k = 0; k < 2; ++k) {
    const nlohmann::json& gpu = described[static_cast<size_t>(k)];
    EXPECT_EQ(gpu.at("id"), k);
    EXPECT_EQ(gpu.at("name"), "NVIDIA H200");
    EXPECT_EQ(gpu.at("numSms"), 132);
    EXPECT_EQ(gpu.at("totalGlobalMem").get<int64_t>(), h200.memory_bytes);
    EXPECT_EQ(gpu.at("clockRate"), 1'980'000);
    EXPECT_EQ(gpu.at("computeMajor"), 9);
    EXPECT_EQ(gpu.at("computeMinor"), 0);
  }
  // And efficiency picks the same row from the export.
  const cli::CliResult json = cli::RunStepscope({"efficiency", "--json", path});
  ASSERT_EQ(json.code, 0) << json.err;
  EXPECT_EQ(nlohmann::json::parse(json.out).at("peak").at("device"), "h200-sxm") << json.out;
  std::filesystem::remove_all(dir);
}

// A stand-in GPU that gives no properties is described by nothing: no record with an empty name.
TEST(GpuProperties, GpuWithoutPropertiesIsNotDescribed) {
  testing::GpuTransferCounts counts;
  auto gpu = testing::MakeHostMemoryGpuDevice(0, &counts);
  const auto dir = testing::ScratchDir("gpu_properties_none");
  const std::string path =
      ProfileOneStep({gpu.get()}, trace::OutputFormat::kRunMetadataBinary, dir.string());
  ASSERT_FALSE(path.empty());
  auto bytes = ReadFile(path);
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  tf::RunMetadata metadata;
  ASSERT_TRUE(metadata.ParseFromString(*bytes));
  EXPECT_EQ(metadata.stepscope_session().devices_size(), 0);
  const cli::CliResult text = cli::RunStepscope({"efficiency", path});
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find("peak        unknown"), std::string::npos) << text.out;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace stepscope::trainer
