// `stepscope steps` and `stepscope diff` over several steps per side, on PyTorch-profiler-style
// traces written here with known step times: verdicts, kernels matched across renames, the
// regression gate's exit code 3, outlier steps, and the errors (exit 2) for bad input.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "base/file_io.h"
#include "profiler/cli/cli.h"
#include "run_stepscope.h"
#include "test_util.h"

namespace stepscope::cli {
namespace {

using Result = CliResult;

using stepscope::testing::DataPath;

// Eight ProfilerStep#N spans of 1 ms (step 5 of side A: 3 ms, its aten::mm 2.1 ms); in each
// aten::mm (300 us, `mm_us` on side B) and aten::add (100 us) on the CPU thread and a GEMM kernel
// whose template arguments and address differ between the sides.
std::string WriteRun(const std::string& name, double mm_us, bool slow_step5) {
  std::string events;
  double t = 1000;
  for (int step = 1; step <= 8; ++step) {
    const double jitter = (step * 7 % 5) * 2.0;  // 0..8 us, distinct per step
    const bool slow = slow_step5 && step == 5;
    const double length = slow ? 3000 : 1000;
    const double mm = (slow ? 2100 : mm_us) + jitter;
    auto event = [&](const std::string& cat, const std::string& n, int pid, int tid, double ts, double dur,
                     const std::string& args = "{}") {
      events += std::string(events.empty() ? "" : ",\n") + "{\"ph\": \"X\", \"cat\": \"" + cat + "\", \"name\": \"" + n +
                "\", \"pid\": " + std::to_string(pid) + ", \"tid\": " + std::to_string(tid) +
                ", \"ts\": " + std::to_string(t + ts) + ", \"dur\": " + std::to_string(dur) + ", \"args\": " + args + "}";
    };
    event("user_annotation", "ProfilerStep#" + std::to_string(step), 100, 100, 0, length);
    event("cpu_op", "aten::mm", 100, 100, 10, mm);
    event("cpu_op", "aten::add", 100, 100, mm + 20, 100 + jitter / 2);
    const std::string kernel = mm_us > 300 ? "void gemm_kernel<float, 256>(float*, 0x7f99aa)"
                                           : "void gemm_kernel<float, 128>(float*, 0x7f01bb)";
    event("kernel", kernel, 0, 7, 15, 200 + jitter, "{\"device\": 0, \"stream\": 7, \"correlation\": " +
          std::to_string(step) + "}");
    t += length;
  }
  const auto dir = stepscope::testing::ScratchDir("compare_cli");
  const std::string path = (dir / name).string();
  EXPECT_TRUE(WriteFileAtomically(path, "{\"traceEvents\": [\n" + events + "\n]}\n").ok());
  return path;
}

const nlohmann::json* Row(const nlohmann::json& rows, const std::string& name) {
  for (const auto& r : rows) {
    if (r["name"] == name) return &r;
  }
  return nullptr;
}

TEST(CompareCommandsTest, DiffOverStepsGivesVerdictsAndMatchesRenamedKernels) {
  const std::string a = WriteRun("a.json", 300, false), b = WriteRun("b.json", 450, false);
  const Result r = RunStepscope({"diff", a, "--vs", b, "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["schema"], "stepscope.diff/2");
  EXPECT_EQ(doc["a"]["steps"], 8);
  EXPECT_EQ(doc["b"]["steps"], 8);
  EXPECT_TRUE(doc["confident"]);
  const auto* mm = Row(doc["by_op_type"], "aten::mm");
  ASSERT_NE(mm, nullptr);
  EXPECT_EQ((*mm)["verdict"], "regressed");
  EXPECT_NEAR((*mm)["delta_ns"].get<double>(), 150'000, 1'000);
  EXPECT_GT((*mm)["ci_low_ns"].get<double>(), 140'000);
  EXPECT_LT((*mm)["q"].get<double>(), 0.01);
  EXPECT_EQ((*mm)["per_step_a_ns"].size(), 8u);
  EXPECT_EQ((*Row(doc["by_op_type"], "aten::add"))["verdict"], "unchanged");
  EXPECT_EQ(doc["by_op_type"][0]["name"], "aten::mm");  // sorted by impact
  // The kernel is one row (not new + gone), unchanged.
  const auto* kernel = Row(doc["by_kernel"], "gemm_kernel<>");
  ASSERT_NE(kernel, nullptr) << doc["by_kernel"].dump();
  EXPECT_EQ((*kernel)["verdict"], "unchanged");
  EXPECT_EQ(doc["by_kernel"].size(), 1u);
  EXPECT_EQ(Row(doc["by_op_type"], "void gemm_kernel<float, 128>(float*, 0x7f01bb)"), nullptr);  // not an op row
  EXPECT_FALSE(doc["gate"]["enabled"]);

  // Two positionals that hold several steps each: the same comparison.
  const Result two = RunStepscope({"diff", a, b, "--json"});
  ASSERT_EQ(two.code, 0) << two.err;
  EXPECT_EQ(nlohmann::json::parse(two.out)["by_op_type"], doc["by_op_type"]);
  // The text names the verdicts.
  const Result text = RunStepscope({"diff", a, "--vs", b});
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find("regressed"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("Kernels (names normalised)"), std::string::npos) << text.out;
}

TEST(CompareCommandsTest, RegressionGateExitsThree) {
  const std::string a = WriteRun("a.json", 300, false), b = WriteRun("b.json", 450, false);
  Result r = RunStepscope({"diff", a, "--vs", b, "--fail-on-regression", "20"});
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_NE(r.err.find("regression gate"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("aten::mm"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("FAILED"), std::string::npos);
  r = RunStepscope({"diff", a, "--vs", b, "--fail-on-regression", "20,0.01", "--json"});
  EXPECT_EQ(r.code, 3);
  const auto doc = nlohmann::json::parse(r.out);
  EXPECT_TRUE(doc["gate"]["failed"]);
  EXPECT_EQ(doc["gate"]["regressions"][0]["name"], "aten::mm");
  // Not 60% slower; not 1 ms per step; B faster than A is no regression.
  EXPECT_EQ(RunStepscope({"diff", a, "--vs", b, "--fail-on-regression", "60"}).code, 0);
  EXPECT_EQ(RunStepscope({"diff", a, "--vs", b, "--fail-on-regression", "20,1"}).code, 0);
  EXPECT_EQ(RunStepscope({"diff", b, "--vs", a, "--fail-on-regression", "0,0"}).code, 0);
  // The same run on both sides passes the strictest gate.
  EXPECT_EQ(RunStepscope({"diff", a, "--vs", a, "--fail-on-regression", "0,0"}).code, 0);
  r = RunStepscope({"diff", a, "--vs", b, "--fail-on-regression", "ten"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--fail-on-regression"), std::string::npos);
  // The help lists exit code 3 where it applies, and only there.
  EXPECT_NE(RunStepscope({"diff", "--help"}).out.find("3 a check failed: regression gate"), std::string::npos);
  EXPECT_EQ(RunStepscope({"ops", "--help"}).out.find("3 a check failed"), std::string::npos);
  EXPECT_NE(RunStepscope({"--help"}).out.find("3 a check failed"), std::string::npos);
}

TEST(CompareCommandsTest, OneStepPerSideStaysTheAggregateDiff) {
  const Result r = RunStepscope({"diff", DataPath("analysis/ranks/rank0.pbtxt"), DataPath("analysis/ranks/rank1.pbtxt"),
                              "--json", "--fail-on-regression", "1"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["schema"], "stepscope.diff/1");
  EXPECT_NE(r.err.find("no confidence can be given"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("gate is not applied"), std::string::npos) << r.err;
}

TEST(CompareCommandsTest, DifferentModelsCompareAsNewAndGone) {
  const std::string a = WriteRun("a.json", 300, false);
  const Result r = RunStepscope({"diff", DataPath("analysis/ranks/rank0.pbtxt"), "--vs", a, "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  EXPECT_FALSE(doc["confident"]);  // one step against eight: no p-value below 0.05 is possible
  EXPECT_EQ((*Row(doc["by_op_type"], "aten::mm"))["verdict"], "new");
  EXPECT_EQ((*Row(doc["by_op_type"], "Conv2DBackpropFilter"))["verdict"], "gone");
}

TEST(CompareCommandsTest, BadInputNamesTheFileAndExitsTwo) {
  const std::string a = WriteRun("a.json", 300, false);
  Result r = RunStepscope({"diff", a, "--vs"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("side B is empty"), std::string::npos) << r.err;
  r = RunStepscope({"diff", "--vs", a});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("side A is empty"), std::string::npos) << r.err;
  r = RunStepscope({"diff", a, a, a});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--vs"), std::string::npos) << r.err;
  const std::string missing = (stepscope::testing::ScratchDir("compare_cli") / "missing.json").string();
  r = RunStepscope({"diff", a, "--vs", missing});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("missing.json"), std::string::npos) << r.err;
  const std::string empty = (stepscope::testing::ScratchDir("compare_cli") / "empty.json").string();
  ASSERT_TRUE(WriteFileAtomically(empty, "{\"traceEvents\": []}\n").ok());
  r = RunStepscope({"diff", a, "--vs", empty});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("empty.json: no steps found"), std::string::npos) << r.err;
  r = RunStepscope({"steps", empty});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("empty.json"), std::string::npos) << r.err;
  const std::string garbage = (stepscope::testing::ScratchDir("compare_cli") / "garbage.json").string();
  ASSERT_TRUE(WriteFileAtomically(garbage, "[{\"ph\": \"X\", \"ts\": }]").ok());
  r = RunStepscope({"steps", garbage});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("garbage.json"), std::string::npos) << r.err;
}

TEST(CompareCommandsTest, StepsFindsTheOutlierAndWhatDeviated) {
  const std::string a = WriteRun("outlier.json", 300, true);
  const Result r = RunStepscope({"steps", a, "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["schema"], "stepscope.steps/1");
  ASSERT_EQ(doc["steps"].size(), 8u);
  EXPECT_EQ(doc["steps"][4]["duration_ns"], 3'000'000);
  EXPECT_EQ(doc["steps"][4]["marker"], "ProfilerStep#5");
  EXPECT_NEAR(doc["duration"]["median_ns"].get<double>(), 1'000'000, 1);
  ASSERT_EQ(doc["outliers"].size(), 1u);
  EXPECT_EQ(doc["outliers"][0]["step"], 5);
  // The first cause that is an op (the step's own ProfilerStep span is an annotation, not an op).
  const nlohmann::json* cause = nullptr;
  for (const auto& c : doc["outliers"][0]["causes"]) {
    if (cause == nullptr && c["name"].get<std::string>().rfind("ProfilerStep#", 0) != 0) cause = &c;
  }
  ASSERT_NE(cause, nullptr);
  EXPECT_EQ((*cause)["name"], "aten::mm");
  EXPECT_EQ((*cause)["table"], "op type");
  EXPECT_GT((*cause)["deviation_ns"].get<double>(), 1'700'000);
  // Our own step traces: a directory of per-rank traces of one step is one step.
  const Result ranks = RunStepscope({"steps", DataPath("analysis/ranks"), "--json"});
  ASSERT_EQ(ranks.code, 0) << ranks.err;
  const auto rdoc = nlohmann::json::parse(ranks.out);
  ASSERT_EQ(rdoc["steps"].size(), 1u);
  EXPECT_EQ(rdoc["steps"][0]["marker"], "ranks merged");
  EXPECT_EQ(rdoc["steps"][0]["step"], 5);
  const Result text = RunStepscope({"steps", a});
  ASSERT_EQ(text.code, 0);
  EXPECT_NE(text.out.find("outlier"), std::string::npos);
  EXPECT_NE(text.out.find("Step 5 (3.000 ms"), std::string::npos) << text.out;
}

}  // namespace
}  // namespace stepscope::cli
