// A CPU run's MFU end to end: stepscope-train --profile measures its CPU's sgemm peak and records
// it in each trace (RunMetadata and Chrome JSON), and `stepscope efficiency --json` on those
// traces uses it as the peak, naming it as its source, with an MFU in (0, 1]. The recorded peak
// is compared with an sgemm rate this test measures itself.
#include <cblas.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/run_stepscope.h"
#include "kernels/blas_threads.h"
#include "profiler/formats/reader.h"
#include "test_util.h"
#include "trainer/main/training_loop.h"

namespace stepscope::trainer {
namespace {

// Best of five 1024^3 sgemm products, FLOP/s, written apart from kernels/sgemm_peak so that a
// fault in the trainer's measurement cannot hide in both.
double SgemmRateHere() {
  constexpr int n = 1024;
  std::vector<float> a(n * n, 0.25f), b(n * n, 0.5f), c(n * n);
  double best = 1e9;
  for (int r = 0; r < 6; ++r) {
    const auto start = std::chrono::steady_clock::now();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (r > 0) best = std::min(best, s);  // the first warms OpenBLAS's threads up
  }
  return 2.0 * n * n * n / best;
}

nlohmann::json EfficiencyJson(const std::string& path) {
  const cli::CliResult result = cli::RunStepscope({"efficiency", "--json", path});
  EXPECT_EQ(result.code, 0) << result.err;
  return nlohmann::json::parse(result.out);
}

TEST(CpuPeakRun, EfficiencyOfATrainerCpuTraceUsesItsMeasuredSgemmPeak) {
  const auto dir = testing::ScratchDir("cpu_peak");
  for (const std::string format : {"pb", "chrome"}) {
    SCOPED_TRACE(format);
    auto options = ParseTrainOptions({"--steps", "3", "--profile", "--profile_dir", (dir / format).string(),
                                      "--trace_format", format});
    ASSERT_TRUE(options.ok()) << options.status().message();
    std::ostringstream log;
    auto report = RunTraining(*options, log, false);
    ASSERT_TRUE(report.ok()) << report.status().message();
    ASSERT_EQ(report->trace_paths.size(), 1u);
    const std::string& path = report->trace_paths[0];
    const int threads = kernels::BlasThreads();  // what the run's devices set

    // The trace's device holds the peak.
    auto trace = trace::ReadTrace(path);
    ASSERT_TRUE(trace.ok()) << trace.status().message();
    ASSERT_EQ(trace->step_info().devices.size(), 1u);
    const trace::DeviceProperties& cpu = trace->step_info().devices[0];
    EXPECT_FALSE(cpu.name.empty());
    const std::string by = "measured sgemm peak (stepscope-train, " + std::to_string(threads) +
                           (threads == 1 ? " thread)" : " threads)");
    EXPECT_EQ(cpu.measured_by.rfind(by, 0), 0u) << cpu.measured_by;
    // Within a shared machine's noise of a separate measurement on the same BLAS and threads.
    const double here = SgemmRateHere();
    EXPECT_GT(cpu.measured_flops_per_s, here / 4) << here;
    EXPECT_LT(cpu.measured_flops_per_s, here * 4) << here;

    // `stepscope efficiency` measures the step against it.
    const nlohmann::json efficiency = EfficiencyJson(path);
    const nlohmann::json& peak = efficiency.at("peak");
    EXPECT_EQ(peak.at("source").get<std::string>().rfind(by, 0), 0u) << peak.dump();
    EXPECT_DOUBLE_EQ(peak.at("flops_per_s").get<double>(), cpu.measured_flops_per_s);
    EXPECT_EQ(peak.at("device").get<std::string>(), cpu.name);
    ASSERT_EQ(efficiency.at("steps").size(), 1u);
    const nlohmann::json& step = efficiency.at("steps")[0];
    if (format == "pb") {  // the Chrome export keeps no shapes: FLOPs unknown, no MFU
      ASSERT_TRUE(step.at("mfu").is_number()) << step.dump();
      const double mfu = step.at("mfu").get<double>();
      EXPECT_GT(mfu, 0.0);
      EXPECT_LE(mfu, 1.0);
      const double recount = step.at("model_flops").get<double>() / (step.at("duration_ns").get<double>() * 1e-9) /
                             cpu.measured_flops_per_s;
      EXPECT_NEAR(mfu, recount, recount * 1e-9);
    }
  }
}

}  // namespace
}  // namespace stepscope::trainer
