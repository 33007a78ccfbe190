// `stepscope efficiency` through RunCli: the figures of a hand-made H100 step worked out on
// paper (tests/data/efficiency/README.md), the JSON contract, the peak's overrides, a trace
// without shapes (time, no FLOPs presented as zero), and bad input (exit 2).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "run_stepscope.h"
#include "test_util.h"

namespace stepscope::cli {
namespace {

using testing::DataPath;

std::string Fixture() { return DataPath("efficiency/h100_mm_step.json"); }

TEST(EfficiencyCliTest, HandCountedFiguresOfAnH100Step) {
  const CliResult r = RunStepscope({"efficiency", Fixture(), "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["schema"], "stepscope.efficiency/1");
  for (const char* key : {"peak", "steps", "ops", "unknown_ops", "collectives"}) EXPECT_TRUE(doc.contains(key)) << key;
  const auto& peak = doc["peak"];
  EXPECT_EQ(peak["device"], "h100-sxm");
  EXPECT_EQ(peak["flops_per_s"], 67e12);
  EXPECT_EQ(peak["bytes_per_s"], 3350e9);
  EXPECT_EQ(peak["precision"], "fp32");
  EXPECT_NE(peak["source"].get<std::string>().find("NVIDIA H100 80GB HBM3"), std::string::npos);

  const double mm_flops = 2.0 * 1024 * 2048 * 4096;
  ASSERT_EQ(doc["steps"].size(), 1u);
  const auto& step = doc["steps"][0];
  EXPECT_EQ(step["rank"], 3);
  EXPECT_EQ(step["step"], 7);
  EXPECT_EQ(step["duration_ns"], 1000000);
  EXPECT_EQ(step["model_flops"], 17179869184);
  EXPECT_EQ(step["flops"], 17179869184 + 1024 * 4096);
  EXPECT_DOUBLE_EQ(step["mfu"].get<double>(), mm_flops / 1e-3 / 67e12);

  ASSERT_EQ(doc["ops"].size(), 2u);
  const auto& mm = doc["ops"][0];
  EXPECT_EQ(mm["op_type"], "aten::mm");
  EXPECT_EQ(mm["count"], 1);
  EXPECT_EQ(mm["time_ns"], 400000);  // its kernel's time, not the CPU op's 50 µs
  EXPECT_EQ(mm["flops"], 17179869184);
  EXPECT_EQ(mm["bytes"], (1024 * 2048 + 2048 * 4096 + 1024 * 4096) * 4);
  EXPECT_EQ(mm["flops_source"], "pytorch_shapes");
  EXPECT_DOUBLE_EQ(mm["flops_per_s"].get<double>(), mm_flops / 400e-6);
  EXPECT_DOUBLE_EQ(mm["intensity"].get<double>(), mm_flops / 58720256);
  EXPECT_EQ(mm["bound"], "compute");
  EXPECT_DOUBLE_EQ(mm["share_of_peak"].get<double>(), mm_flops / 400e-6 / 67e12);
  const auto& relu = doc["ops"][1];
  EXPECT_EQ(relu["op_type"], "aten::relu");
  EXPECT_EQ(relu["time_ns"], 20000);  // a CPU op: its own time
  EXPECT_EQ(relu["model_flops"], 0);
  EXPECT_EQ(relu["bound"], "memory");
  // The roof at 0.125 FLOP/B is the bandwidth's: 0.125 x 3.35 TB/s.
  EXPECT_DOUBLE_EQ(relu["share_of_peak"].get<double>(), (1024.0 * 4096 / 20e-6) / (0.125 * 3350e9));

  ASSERT_EQ(doc["kernels"].size(), 1u);
  EXPECT_EQ(doc["kernels"][0]["op_type"], "aten::mm");
  EXPECT_EQ(doc["kernels"][0]["flops"], 17179869184);
  ASSERT_EQ(doc["unknown_ops"].size(), 1u);
  EXPECT_EQ(doc["unknown_ops"][0]["op_type"], "aten::mystery_op");
  EXPECT_EQ(doc["unknown_ops"][0]["count"], 1);
  EXPECT_EQ(doc["unknown_ops"][0]["time_ns"], 5000);

  const CliResult text = RunStepscope({"efficiency", Fixture()});
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find("25.6%"), std::string::npos) << text.out;  // the MFU
  EXPECT_NE(text.out.find("aten::mystery_op"), std::string::npos);
}

TEST(EfficiencyCliTest, PeakOverridesAndPrecision) {
  const auto bf16 = nlohmann::json::parse(RunStepscope({"efficiency", Fixture(), "--json", "--precision", "bf16"}).out);
  EXPECT_EQ(bf16["peak"]["flops_per_s"], 989.5e12);
  EXPECT_EQ(bf16["peak"]["precision_source"], "--precision");
  const auto given = nlohmann::json::parse(RunStepscope({"efficiency", Fixture(), "--json", "--peak", "100"}).out);
  EXPECT_EQ(given["peak"]["flops_per_s"], 100e12);
  EXPECT_EQ(given["peak"]["bytes_per_s"], 3350e9);
  EXPECT_DOUBLE_EQ(given["steps"][0]["mfu"].get<double>(), 2.0 * 1024 * 2048 * 4096 / 1e-3 / 100e12);
  EXPECT_TRUE(given["notes"].empty());
  // A peak below the recorded work (17.2 TFLOP/s of model FLOPs on a 10 TFLOP/s peak) is said to
  // be impossible, not printed as 172 % and left at that.
  const auto low = nlohmann::json::parse(RunStepscope({"efficiency", Fixture(), "--json", "--peak", "10"}).out);
  EXPECT_GT(low["steps"][0]["mfu"].get<double>(), 1.0);
  ASSERT_EQ(low["notes"].size(), 1u);
  EXPECT_NE(low["notes"][0].get<std::string>().find("MFU above 100 % in 1 of 1 steps"), std::string::npos);
  const auto l4 = nlohmann::json::parse(RunStepscope({"efficiency", Fixture(), "--json", "--device", "NVIDIA L4"}).out);
  EXPECT_EQ(l4["peak"]["device"], "l4");
  EXPECT_EQ(l4["peak"]["flops_per_s"], 30.3e12);
}

TEST(EfficiencyCliTest, NoShapesMeansTimeButNoFlopsAndAnUnknownDeviceNoMfu) {
  // The committed AlexNet trace was recorded without record_shapes, on an A100 board the table
  // knows by family: time per op, FLOPs unknown (null), never 0 presented as a figure.
  const CliResult r = RunStepscope({"efficiency", DataPath("pytorch_kineto_alexnet_train.json.gz"), "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  EXPECT_FALSE(doc["has_shapes"].get<bool>());
  EXPECT_EQ(doc["peak"]["device"], "a100-sxm4-40gb");
  ASSERT_FALSE(doc["steps"].empty());
  EXPECT_TRUE(doc["steps"][0]["model_flops"].is_null());
  EXPECT_TRUE(doc["steps"][0]["mfu"].is_null());
  EXPECT_GT(doc["steps"][0]["duration_ns"].get<int64_t>(), 0);
  ASSERT_FALSE(doc["unknown_ops"].empty());
  EXPECT_GT(doc["unknown_ops"][0]["time_ns"].get<int64_t>(), 0);
  const CliResult text = RunStepscope({"efficiency", DataPath("pytorch_kineto_alexnet_train.json.gz")});
  EXPECT_NE(text.out.find("shapes      none recorded"), std::string::npos) << text.out;

  // A device the table does not know: FLOP/s, no MFU, exit 0 and what to do.
  const CliResult cpu = RunStepscope({"efficiency", DataPath("op_cost/pytorch_resnet50_b1_train.json.gz")});
  ASSERT_EQ(cpu.code, 0) << cpu.err;
  EXPECT_NE(cpu.out.find("peak        unknown: pass --peak"), std::string::npos) << cpu.out;
  const auto cpu_doc =
      nlohmann::json::parse(RunStepscope({"efficiency", DataPath("op_cost/pytorch_resnet50_b1_train.json.gz"), "--json"}).out);
  EXPECT_TRUE(cpu_doc["peak"]["flops_per_s"].is_null());
  EXPECT_TRUE(cpu_doc["steps"][0]["mfu"].is_null());
  EXPECT_GT(cpu_doc["steps"][0]["model_flops"].get<int64_t>(), 0);
  EXPECT_FALSE(cpu_doc["ops"][0]["flops_per_s"].is_null());
}

TEST(EfficiencyCliTest, NonsensePeakOrDeviceExitsTwo) {
  for (const char* peak : {"abc", "0", "-5", "1e12", "nan"}) {
    const CliResult r = RunStepscope({"efficiency", Fixture(), "--peak", peak});
    EXPECT_EQ(r.code, 2) << peak;
    EXPECT_NE(r.err.find("--peak"), std::string::npos) << r.err;
    EXPECT_TRUE(r.out.empty());
  }
  const CliResult device = RunStepscope({"efficiency", Fixture(), "--device", "tpu-v9"});
  EXPECT_EQ(device.code, 2);
  EXPECT_NE(device.err.find("not in the table of device peaks"), std::string::npos) << device.err;
  EXPECT_EQ(RunStepscope({"efficiency", Fixture(), "--precision", "fp4"}).code, 2);
  EXPECT_EQ(RunStepscope({"efficiency", Fixture(), "--step", "99"}).code, 2);
}

}  // namespace
}  // namespace stepscope::cli
