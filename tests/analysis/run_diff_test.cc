// The statistics behind `stepscope steps` and `stepscope diff` over several steps, on cases whose
// answers are known: Mann-Whitney exact p-values against the published critical values, SciPy's
// documented example, Benjamini-Hochberg against a hand-computed example, bootstrap intervals
// covering a known shift, kernel names of a real PyTorch profiler trace, step windows of a
// Kineto-style trace, outlier steps, and run diffs with verdicts and the regression gate.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "profiler/analysis/run_diff.h"
#include "profiler/analysis/statistics.h"
#include "profiler/analysis/steps.h"
#include "profiler/formats/reader.h"
#include "test_util.h"
#include "trace_fixtures.h"

namespace stepscope::analysis {
namespace {

using trace::SliceKind;
using trace::TrackKind;

TEST(Statistics, MedianMadAndRobustZ) {
  EXPECT_DOUBLE_EQ(Median({3, 1, 2}), 2);
  EXPECT_DOUBLE_EQ(Median({4, 1, 3, 2}), 2.5);
  // Median 3, deviations {2, 1, 0, 1, 97}: MAD 1.
  const std::vector<double> x = {1, 2, 3, 4, 100};
  EXPECT_DOUBLE_EQ(MedianAbsoluteDeviation(x), 1);
  const std::vector<double> z = RobustZScores(x);
  EXPECT_NEAR(z[4], 0.6745 * 97, 1e-9);
  EXPECT_NEAR(z[0], -0.6745 * 2, 1e-9);
  EXPECT_GT(std::fabs(z[4]), kOutlierZ);
  EXPECT_LT(std::fabs(z[3]), kOutlierZ);
  // MAD 0 (most values equal): the mean absolute deviation stands in and the odd one stands out.
  const std::vector<double> flat = {5, 5, 5, 5, 9};
  const std::vector<double> zf = RobustZScores(flat);
  EXPECT_NEAR(zf[4], 4 / (1.253314 * 0.8), 1e-9);
  EXPECT_DOUBLE_EQ(zf[0], 0);
  EXPECT_EQ(RobustZScores({7, 7, 7}), (std::vector<double>{0, 0, 0}));
  const Spread s = Describe({10, 20, 30, 40});
  EXPECT_DOUBLE_EQ(s.mean, 25);
  EXPECT_NEAR(s.stddev, std::sqrt(500.0 / 3), 1e-9);
  EXPECT_NEAR(s.cv, std::sqrt(500.0 / 3) / 25, 1e-12);
  EXPECT_NEAR(s.p95_over_p50, 38.5 / 25, 1e-12);
}

// Published two-tailed critical values of U at alpha = 0.05: p(U_crit) <= 0.05 < p(U_crit + 1).
TEST(Statistics, MannWhitneyExactMatchesCriticalValueTables) {
  struct Case { size_t n1, n2; double critical; };
  for (const Case c : {Case{5, 5, 2}, Case{6, 6, 5}, Case{7, 7, 8}, Case{8, 8, 13}, Case{10, 10, 23}}) {
    EXPECT_LE(MannWhitneyExactP(c.n1, c.n2, c.critical), 0.05) << c.n1 << "x" << c.n2;
    EXPECT_GT(MannWhitneyExactP(c.n1, c.n2, c.critical + 1), 0.05) << c.n1 << "x" << c.n2;
  }
  // Exact values: P(U <= 2 | 5, 5) = 4/252; P(U <= 23 | 10, 10) = 7989/184756.
  EXPECT_NEAR(MannWhitneyExactP(5, 5, 2), 8.0 / 252, 1e-12);
  EXPECT_NEAR(MannWhitneyExactP(10, 10, 23), 0.04325705254497824, 1e-12);
  EXPECT_NEAR(MannWhitneyExactP(3, 3, 0), 0.1, 1e-12);
  EXPECT_DOUBLE_EQ(MannWhitneyExactP(4, 4, 8), 1.0);  // the centre
  // Symmetric: U and n1 n2 - U give the same two-sided p.
  EXPECT_NEAR(MannWhitneyExactP(7, 9, 12), MannWhitneyExactP(7, 9, 63 - 12), 1e-12);
  EXPECT_NEAR(MannWhitneyMinP(5, 5), 2.0 / 252, 1e-15);
  EXPECT_NEAR(MannWhitneyMinP(1, 10), 2.0 / 11, 1e-15);
}

TEST(Statistics, MannWhitneyOnSamplesAsScipyDocuments) {
  // SciPy's mannwhitneyu example: U = 17, exact p = 0.1111, asymptotic p = 0.11134688653314041.
  const std::vector<double> males = {19, 22, 16, 29, 24}, females = {20, 11, 17, 12};
  const MannWhitney exact = MannWhitneyU(males, females);
  EXPECT_TRUE(exact.exact);
  EXPECT_DOUBLE_EQ(exact.u, 17);
  EXPECT_NEAR(exact.p, 1.0 / 9, 1e-12);
  // With a tie the normal approximation is used, with the tie correction: U counts half a tie.
  const std::vector<double> tied = {19, 22, 16, 29, 20};
  const MannWhitney approx = MannWhitneyU(tied, females);
  EXPECT_FALSE(approx.exact);
  EXPECT_DOUBLE_EQ(approx.u, 16.5);
  // n = 9, one pair tied: variance 20/12 (10 - 6/72); z = (6.5 - 0.5) / sd.
  const double sd = std::sqrt(20.0 / 12 * (10 - 6.0 / 72));
  EXPECT_NEAR(approx.p, std::erfc(6.0 / sd / std::sqrt(2.0)), 1e-12);
  // Large samples without ties: the normal approximation agrees with the exact distribution.
  std::vector<double> a, b;
  for (int i = 0; i < 60; ++i) a.push_back(i * 2.0 + 0.5);
  for (int i = 0; i < 60; ++i) b.push_back(i * 2.0 + 9.25);
  const MannWhitney large = MannWhitneyU(a, b);
  EXPECT_FALSE(large.exact);
  EXPECT_NEAR(large.p, MannWhitneyExactP(60, 60, large.u), 0.01);
  EXPECT_DOUBLE_EQ(MannWhitneyU({}, b).p, 1);
  EXPECT_DOUBLE_EQ(MannWhitneyU({3, 3}, {3, 3, 3}).p, 1);
}

TEST(Statistics, WelchTTestAndStudentTAsScipyComputes) {
  // scipy.special.betainc and 2 * scipy.stats.t.sf.
  EXPECT_NEAR(RegularizedIncompleteBeta(0.3, 2.5, 3.5), 0.29675298929566646, 1e-12);
  EXPECT_NEAR(RegularizedIncompleteBeta(0.9, 0.5, 0.5), 0.7951672353008665, 1e-12);
  EXPECT_NEAR(StudentTTwoSidedP(2.0, 5), 0.10193947882985835, 1e-12);
  EXPECT_NEAR(StudentTTwoSidedP(-3.56, 3.8), 0.02568821107565921, 1e-12);
  EXPECT_NEAR(StudentTTwoSidedP(0.5, 1), 0.7048327646991335, 1e-12);
  EXPECT_NEAR(StudentTTwoSidedP(1.3, 2.5), 0.3004867892707083, 1e-12);
  EXPECT_NEAR(StudentTTwoSidedP(10, 30) / 4.575251408229618e-11, 1, 1e-9);
  // scipy.stats.ttest_ind(b, a, equal_var=False)
  const WelchT welch = WelchTTest({10.1, 10.4, 9.8, 10.2}, {11.0, 10.6, 11.5, 10.9, 11.2});
  EXPECT_NEAR(welch.t, 4.680016098981222, 1e-9);
  EXPECT_NEAR(welch.df, 6.9888036016609245, 1e-9);
  EXPECT_NEAR(welch.p, 0.0022704344276862514, 1e-12);
  EXPECT_DOUBLE_EQ(WelchTTest({1}, {2, 3}).p, 1);         // one value: no variance to test against
  EXPECT_DOUBLE_EQ(WelchTTest({5, 5, 5}, {5, 5}).p, 1);   // nothing varies, nothing differs
  EXPECT_DOUBLE_EQ(WelchTTest({5, 5, 5}, {6, 6}).p, 0);   // nothing varies, the means differ
  EXPECT_EQ(GroupMedians({1, 9, 2, 8, 3}, {0, 1, 0, 1, 0}), (std::vector<double>{2, 8.5}));
}

TEST(Statistics, BenjaminiHochbergAgainstAHandComputedExample) {
  // Sorted 0.005, 0.01, 0.03, 0.04 (m = 4): p m / rank = 0.02, 0.02, 0.04, 0.04.
  const std::vector<double> q = BenjaminiHochberg({0.01, 0.04, 0.03, 0.005});
  const std::vector<double> expected = {0.02, 0.04, 0.04, 0.02};
  for (size_t i = 0; i < q.size(); ++i) EXPECT_NEAR(q[i], expected[i], 1e-12) << i;
  // Monotone step-up: 0.104 and 0.082 at ranks 3 and 4 fall to 0.0672 from rank 5.
  const std::vector<double> q8 = BenjaminiHochberg({0.001, 0.008, 0.039, 0.041, 0.042, 0.06, 0.074, 0.205});
  const std::vector<double> e8 = {0.008, 0.032, 0.0672, 0.0672, 0.0672, 0.08, 0.074 * 8 / 7, 0.205};
  for (size_t i = 0; i < q8.size(); ++i) EXPECT_NEAR(q8[i], e8[i], 1e-12) << i;
  EXPECT_DOUBLE_EQ(BenjaminiHochberg({0.9, 0.8})[0], 0.9);
  EXPECT_TRUE(BenjaminiHochberg({}).empty());
}

std::vector<double> Normal(SplitMix64& rng, size_t n, double mean, double sd) {
  std::vector<double> out;
  while (out.size() < n) {
    const double u1 = (static_cast<double>(rng.Next() >> 11) + 0.5) / 9007199254740992.0;
    const double u2 = (static_cast<double>(rng.Next() >> 11) + 0.5) / 9007199254740992.0;
    out.push_back(mean + sd * std::sqrt(-2 * std::log(u1)) * std::cos(2 * M_PI * u2));
  }
  return out;
}

TEST(Statistics, BootstrapIntervalCoversTheTrueShift) {
  SplitMix64 data(42);
  int covers_shift = 0, excludes_zero = 0, covers_zero_under_null = 0;
  const int trials = 200;
  for (int t = 0; t < trials; ++t) {
    const std::vector<double> a = Normal(data, 20, 100, 5), b = Normal(data, 20, 110, 5);
    const BootstrapInterval ci = BootstrapMedianDelta(a, b, {2000, 0.95, static_cast<uint64_t>(t)});
    EXPECT_LE(ci.low, ci.estimate);
    EXPECT_GE(ci.high, ci.estimate);
    covers_shift += ci.low <= 10 && 10 <= ci.high;
    excludes_zero += ci.low > 0;
    const std::vector<double> c = Normal(data, 20, 100, 5);
    const BootstrapInterval null = BootstrapMedianDelta(a, c, {2000, 0.95, static_cast<uint64_t>(t)});
    covers_zero_under_null += null.low <= 0 && 0 <= null.high;
  }
  // Nominal 95%; the percentile bootstrap of a median of 20 runs a little short of it.
  EXPECT_GE(covers_shift, trials * 88 / 100) << covers_shift;
  EXPECT_GE(covers_zero_under_null, trials * 88 / 100) << covers_zero_under_null;
  EXPECT_EQ(excludes_zero, trials);  // a shift of 2 standard deviations is always seen
  // Same seed, same interval.
  const std::vector<double> a = {1, 2, 3, 4, 5}, b = {3, 4, 5, 6, 7};
  const BootstrapInterval x = BootstrapMedianDelta(a, b, {500, 0.9, 7}), y = BootstrapMedianDelta(a, b, {500, 0.9, 7});
  EXPECT_EQ(x.low, y.low);
  EXPECT_EQ(x.high, y.high);
  EXPECT_DOUBLE_EQ(x.estimate, 2);
}

TEST(KernelNames, NormalisedAsTraceLensGroupsThem) {
  EXPECT_EQ(NormalizeKernelName("void cudnn::ops::nchwToNhwcKernel<float, float, float, false, true, "
                                "(cudnnKernelDataType_t)2>(cudnn::ops::nchw2nhwc_params_t<float>, float const*, float*)"),
            "cudnn::ops::nchwToNhwcKernel<>");
  EXPECT_EQ(NormalizeKernelName("void fft2d_r2c_32x32<float, false, 5u, true>(float2*, float const*, int, int, int, "
                                "int, int, int, int, int, int, cudnn::reduced_divisor, bool, int2, int, int)"),
            NormalizeKernelName("void fft2d_r2c_32x32<float, false, 0u, false>(float2*, float const*, int, int, int, "
                                "int, int, int, int, int, int, cudnn::reduced_divisor, bool, int2, int, int)"));
  EXPECT_EQ(NormalizeKernelName("void at::native::(anonymous namespace)::max_pool_forward_nchw<float, float>(int, "
                                "float const*, long, long, long, int, int, int, int, int, int, int, int, int, int, "
                                "float*, long*)"),
            "at::native::(anonymous namespace)::max_pool_forward_nchw<>");
  EXPECT_EQ(NormalizeKernelName("ampere_sgemm_32x32_sliced1x4_tn"), "ampere_sgemm_32x32_sliced1x4_tn");
  EXPECT_EQ(NormalizeKernelName("cudnn_ampere_scudnn_128x64_relu_xregs_large_nn_v1"),
            "cudnn_ampere_scudnn_128x64_relu_xregs_large_nn_v1");
  EXPECT_EQ(NormalizeKernelName("triton_poi_fused_add_relu_12"), "triton_poi_fused_add_relu");
  EXPECT_EQ(NormalizeKernelName("triton_red_fused_sum_0_1"), "triton_red_fused_sum");
  EXPECT_EQ(NormalizeKernelName("kernel_at_0x7f3a2b10c000"), "kernel_at_0x");
  EXPECT_EQ(NormalizeKernelName("f()::{lambda()#7}::operator()() const::{lambda(float)#1}"),
            "f()::{lambda()#}::operator()() const::{lambda(float)#}");
  EXPECT_EQ(NormalizeKernelName("Memcpy HtoD (Pageable -> Device)"), "Memcpy HtoD");

  // The kernels of a real PyTorch profiler trace: fewer names, none with template arguments,
  // parameters or addresses left, and the same kernel with other arguments under one name.
  auto trace = trace::ReadTrace(stepscope::testing::DataPath("pytorch_kineto_alexnet_train.json.gz"));
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  std::set<std::string> raw, normalised;
  for (const trace::Slice& s : trace->slices()) {
    if (s.kind != SliceKind::kKernel) continue;
    raw.insert(std::string(trace->str(trace->slice_name(s))));
    const std::string n = NormalizeKernelName(trace->str(trace->slice_name(s)));
    normalised.insert(n);
    EXPECT_EQ(n.find("float"), std::string::npos) << n;
    EXPECT_EQ(n.find("void "), std::string::npos) << n;
  }
  EXPECT_EQ(raw.size(), 16u);
  EXPECT_EQ(normalised.size(), 15u);  // the two fft2d_r2c_32x32 instantiations are one kernel
  EXPECT_TRUE(normalised.count("fft2d_r2c_32x32<>"));
  EXPECT_TRUE(normalised.count("at::native::vectorized_elementwise_kernel<>"));
  EXPECT_TRUE(normalised.count("sm80_xmma_fprop_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc_nchw_tilesize128x128x16_"
                               "stage4_warpsize2x2x1_g1_tensor16x8x8_alignc4_execute_kernel_cudnn"));
}

// A Kineto-style trace: ProfilerStep#1..#4 of 1 ms on a host thread, each with a MatMul of
// 300 us (1.3 ms in step 3) and a kernel on a GPU stream; a kernel still running after step 2
// ends is clipped to the window.
trace::Trace KinetoSteps() {
  testing::TraceMaker m;
  const uint32_t host = m.Host("python3");
  const uint32_t thread = m.Lane("thread 1", host, TrackKind::kOpLane, false);
  const uint32_t gpu = m.Device("GPU 0", host);
  const uint32_t stream = m.Lane("stream 7", gpu, TrackKind::kGpuStream);
  int64_t t = 0;
  for (int step = 1; step <= 4; ++step) {
    const int64_t length = step == 3 ? 2'000'000 : 1'000'000;
    m.Slice(thread, t, t + length, "ProfilerStep#" + std::to_string(step));
    m.Slice(thread, t + 100'000, t + 100'000 + (step == 3 ? 1'300'000 : 300'000), "aten::mm");
    const int64_t kernel_end = step == 2 ? t + length + 200'000 : t + 600'000;
    m.Slice(stream, t + 500'000, kernel_end, "void gemm<float, 3>(float*, 0x7f00)", "", SliceKind::kKernel);
    t += length;
  }
  return std::move(m).Build();
}

TEST(Steps, ProfilerStepSpansAreStepWindows) {
  const trace::Trace trace = KinetoSteps();
  const std::vector<Step> steps = StepsOfTrace(trace);
  ASSERT_EQ(steps.size(), 4u);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(steps[i].step, i + 1);
    EXPECT_EQ(steps[i].marker, "ProfilerStep#" + std::to_string(i + 1));
  }
  EXPECT_EQ(steps[2].duration_ns, 2'000'000);
  auto total = [](const std::vector<StepOpTotal>& rows, const std::string& name) -> int64_t {
    for (const auto& r : rows) {
      if (r.name == name) return r.total_ns;
    }
    return -1;
  };
  EXPECT_EQ(total(steps[0].op_types, "aten::mm"), 300'000);
  EXPECT_EQ(total(steps[2].op_types, "aten::mm"), 1'300'000);
  ASSERT_EQ(steps[1].kernels.size(), 1u);
  EXPECT_EQ(steps[1].kernels[0].name, "gemm<>");
  EXPECT_EQ(steps[1].kernels[0].total_ns, 500'000);  // clipped at the step's end
  EXPECT_EQ(steps[2].kernels[0].total_ns, 300'000);  // 200 us of step 2's kernel spill in, clipped
  // Windows only: the same steps, no totals.
  const std::vector<Step> windows = StepsOfTrace(trace, /*with_totals=*/false);
  ASSERT_EQ(windows.size(), 4u);
  EXPECT_EQ(windows[2].duration_ns, 2'000'000);
  EXPECT_EQ(windows[2].begin_ns, steps[2].begin_ns);
  EXPECT_TRUE(windows[2].op_types.empty());
  EXPECT_TRUE(windows[2].kernels.empty());
}

TEST(Steps, OutlierStepNamesWhatDeviated) {
  std::vector<Step> steps;
  for (int i = 0; i < 12; ++i) {
    Step s;
    s.step = i + 1;
    s.source = "step" + std::to_string(i + 1) + ".pb";
    const int64_t jitter = (i % 3) * 1000;
    const int64_t matmul = i == 7 ? 900'000 : 500'000 + jitter;
    s.duration_ns = 1'000'000 + jitter + (matmul - 500'000);
    s.op_types = {{"MatMul", "MatMul", "host", matmul, 4}, {"Add", "Add", "host", 100'000 + jitter, 2}};
    s.nodes = {{"dense/MatMul", "MatMul", "host", matmul, 4}};
    steps.push_back(std::move(s));
  }
  const StepsReport report = AnalyzeSteps(steps, 3);
  ASSERT_EQ(report.outliers.size(), 1u);
  EXPECT_EQ(report.steps[report.outliers[0].step].step, 8);
  EXPECT_GT(report.outliers[0].z, kOutlierZ);
  ASSERT_FALSE(report.outliers[0].causes.empty());
  EXPECT_EQ(report.outliers[0].causes[0].name, "MatMul");
  EXPECT_NEAR(report.outliers[0].causes[0].deviation_ns, 900'000 - 501'000, 1);
  EXPECT_NEAR(report.median_ns, 1'002'000, 1);
  EXPECT_NEAR(report.mad_ns, 2'000, 1);
  EXPECT_GT(report.p95_over_p50, 1.0);
}

// Per-step totals for a synthetic pair of runs: MatMul 20% slower in B, Add the same, Fused only
// in B, Split only in A.
std::vector<Step> SyntheticRun(bool b, uint64_t seed, size_t count) {
  SplitMix64 rng(seed);
  std::vector<Step> steps;
  for (size_t i = 0; i < count; ++i) {
    Step s;
    s.step = static_cast<int64_t>(i);
    s.source = (b ? "b/" : "a/") + std::to_string(i);
    auto noisy = [&](double mean) { return static_cast<int64_t>(mean * (1 + 0.02 * (static_cast<double>(rng.Below(1000000)) / 500000 - 1))); };
    const int64_t matmul = noisy(b ? 12e6 : 10e6), add = noisy(2e6);
    s.op_types = {{"MatMul", "MatMul", "host", matmul, 10}, {"Add", "Add", "host", add, 10}};
    s.op_types.push_back(b ? StepOpTotal{"Fused", "Fused", "host", noisy(1e6), 1}
                           : StepOpTotal{"Split", "Split", "host", noisy(1e6), 1});
    s.duration_ns = matmul + add + 1'000'000;
    steps.push_back(std::move(s));
  }
  return steps;
}

const RunDiffRow* Find(const std::vector<RunDiffRow>& rows, const std::string& name) {
  for (const auto& r : rows) {
    if (r.name == name) return &r;
  }
  return nullptr;
}

TEST(RunDiff, VerdictsConfidenceAndGate) {
  const RunDiff diff = DiffRuns(SyntheticRun(false, 1, 10), SyntheticRun(true, 2, 10));
  EXPECT_TRUE(diff.confident);
  ASSERT_EQ(diff.by_op_type.size(), 4u);
  EXPECT_EQ(diff.by_op_type[0].name, "MatMul");  // sorted by impact
  const RunDiffRow* matmul = Find(diff.by_op_type, "MatMul");
  EXPECT_EQ(matmul->verdict, "regressed");
  EXPECT_NEAR(matmul->change, 0.2, 0.03);
  EXPECT_GT(matmul->ci_low_ns, 1.5e6);
  EXPECT_LT(matmul->ci_high_ns, 2.5e6);
  EXPECT_TRUE(matmul->exact);
  EXPECT_LT(matmul->q, 1e-3);
  EXPECT_EQ(Find(diff.by_op_type, "Add")->verdict, "unchanged");
  EXPECT_EQ(Find(diff.by_op_type, "Fused")->verdict, "new");
  EXPECT_EQ(Find(diff.by_op_type, "Split")->verdict, "gone");
  EXPECT_EQ(diff.step.verdict, "regressed");
  EXPECT_EQ(Find(diff.by_op_type, "Add")->a.size(), 10u);

  auto hits = RegressionGate(diff, 10, 0);
  ASSERT_EQ(hits.size(), 1u);
  EXPECT_EQ(hits[0].row->name, "MatMul");
  EXPECT_TRUE(RegressionGate(diff, 25, 0).empty());     // not 25% slower
  EXPECT_TRUE(RegressionGate(diff, 10, 3e6).empty());   // not 3 ms per step

  // A/A: the same distribution on both sides flags nothing.
  const RunDiff same = DiffRuns(SyntheticRun(false, 3, 12), SyntheticRun(false, 4, 12));
  for (const auto& r : same.by_op_type) EXPECT_EQ(r.verdict, "unchanged") << r.name;
  EXPECT_TRUE(RegressionGate(same, 0, 0).empty());

  // Two steps a side: no p-value can get below 0.05, so nothing is flagged, however large; a 20%
  // change without confidence is no evidence of no change either: inconclusive, not unchanged.
  const RunDiff few = DiffRuns(SyntheticRun(false, 5, 2), SyntheticRun(true, 6, 2));
  EXPECT_FALSE(few.confident);
  const RunDiffRow* few_matmul = Find(few.by_op_type, "MatMul");
  EXPECT_NEAR(few_matmul->change, 0.2, 0.03);
  EXPECT_GT(few_matmul->ci_high_ns, 0.05 * few_matmul->median_a);
  EXPECT_EQ(few_matmul->verdict, "inconclusive");
  EXPECT_EQ(few.step.verdict, "inconclusive");
  EXPECT_TRUE(RegressionGate(few, 0, 0).empty());
}

// "unchanged" is practical equivalence: the whole interval of the change within +-tolerance of
// A's median. The same rows with a tighter tolerance than their interval are inconclusive.
TEST(RunDiff, UnchangedOnlyWhenTheIntervalLiesWithinTheTolerance) {
  const std::vector<Step> a = SyntheticRun(false, 3, 12), b = SyntheticRun(false, 4, 12);
  const RunDiff loose = DiffRuns(a, b);
  const RunDiffRow* add = Find(loose.by_op_type, "Add");
  ASSERT_NE(add, nullptr);
  // Steps within +-2% of 2 ms: the interval is well inside +-5% (100 us).
  EXPECT_GE(add->ci_low_ns, -0.05 * add->median_a);
  EXPECT_LE(add->ci_high_ns, 0.05 * add->median_a);
  EXPECT_EQ(add->verdict, "unchanged");
  RunDiffOptions tight;
  tight.tolerance = 0.0001;  // 200 ns of 2 ms: narrower than the interval
  const RunDiff strict = DiffRuns(a, b, tight);
  const RunDiffRow* strict_add = Find(strict.by_op_type, "Add");
  ASSERT_TRUE(strict_add->ci_low_ns < -0.0001 * strict_add->median_a ||
              strict_add->ci_high_ns > 0.0001 * strict_add->median_a);
  EXPECT_EQ(strict_add->verdict, "inconclusive");
}

// The verdicts read the Benjamini-Hochberg q-values, not the raw p-values. Four steps a side, one
// run each (Mann-Whitney, exact): "Shifted" is twice as slow in every step of B (all of B above
// all of A: p = 2 / C(8, 4) = 0.0286 < 0.05), nine other rows are the same on both sides. Among ten
// rows its q is 10 x 0.0286 = 0.286: not a discovery, so not regressed (with the raw p it would
// be). Alone in its table, q = p and it is regressed. The equal rows take the same time in every
// step: their interval is [0, 0], unchanged.
std::vector<Step> ShiftedAmongEqualRows(bool b, int equal_rows) {
  std::vector<Step> steps;
  for (int i = 0; i < 4; ++i) {
    Step s;
    s.step = i;
    s.source = (b ? "b/" : "a/") + std::to_string(i);
    s.run = b ? "b" : "a";
    s.op_types.push_back({"Shifted", "Shifted", "host", (b ? 20'000'000 : 10'000'000) + i * 1'000'000, 1});
    for (int k = 0; k < equal_rows; ++k) {
      const std::string name = "Equal" + std::to_string(k);
      s.op_types.push_back({name, name, "host", 5'000'000 + k * 10'000, 1});  // the same in every step
    }
    s.duration_ns = 40'000'000 + i * 1'000'000;
    steps.push_back(std::move(s));
  }
  return steps;
}

TEST(RunDiff, FalseDiscoveryCorrectionDecidesVerdicts) {
  const RunDiff many = DiffRuns(ShiftedAmongEqualRows(false, 9), ShiftedAmongEqualRows(true, 9));
  EXPECT_FALSE(many.per_run);
  ASSERT_EQ(many.by_op_type.size(), 10u);
  const RunDiffRow* shifted = Find(many.by_op_type, "Shifted");
  ASSERT_NE(shifted, nullptr);
  EXPECT_TRUE(shifted->exact);
  EXPECT_NEAR(shifted->p, 2.0 / 70, 1e-12);
  EXPECT_NEAR(shifted->q, 10 * 2.0 / 70, 1e-12);
  EXPECT_GT(shifted->ci_low_ns, 0);  // the interval excludes 0: only q stands in the way
  EXPECT_EQ(shifted->verdict, "inconclusive");
  for (const RunDiffRow& r : many.by_op_type) {
    if (r.name != "Shifted") {
      EXPECT_EQ(r.verdict, "unchanged") << r.name;
    }
  }
  EXPECT_TRUE(RegressionGate(many, 0, 0).empty());

  const RunDiff alone = DiffRuns(ShiftedAmongEqualRows(false, 0), ShiftedAmongEqualRows(true, 0));
  ASSERT_EQ(alone.by_op_type.size(), 1u);
  EXPECT_NEAR(alone.by_op_type[0].q, 2.0 / 70, 1e-12);
  EXPECT_EQ(alone.by_op_type[0].verdict, "regressed");
}

// Four runs of four steps a side, each run at its own level (the machine's state while that process
// ran), its steps within 0.6% of it: MatMul's runs at A +3%, -2%, +4%, 0% and B -3%, +1%, -1%,
// -4% of 10 ms, times `b_factor` on side B.
std::vector<Step> RunsAtLevels(bool b, double b_factor) {
  const double a_levels[] = {0.03, -0.02, 0.04, 0}, b_levels[] = {-0.03, 0.01, -0.01, -0.04};
  const double step_noise[] = {-0.006, -0.002, 0.002, 0.006};
  std::vector<Step> steps;
  for (int run = 0; run < 4; ++run) {
    for (int i = 0; i < 4; ++i) {
      Step s;
      s.run = std::string(b ? "b" : "a") + "/run" + std::to_string(run);
      s.source = s.run + "/step" + std::to_string(i);
      s.step = i;
      const double level = 1 + (b ? b_levels : a_levels)[run];
      const auto matmul = static_cast<int64_t>(10e6 * level * (1 + step_noise[i]) * (b ? b_factor : 1));
      s.op_types = {{"MatMul", "MatMul", "host", matmul, 10}};
      s.duration_ns = matmul + 1'000'000;
      steps.push_back(std::move(s));
    }
  }
  return steps;
}

TEST(RunDiff, TestsTheRunsWhenEachSideHasSeveral) {
  // The same configuration: B's runs happened to land lower. Over the 16 steps a side that reads as
  // a change (SciPy's mannwhitneyu p = 0.0027); over the runs it does not (Welch's t on the logs of
  // the run medians, scipy.stats.ttest_ind(equal_var=False): p = 0.1425).
  const RunDiff same = DiffRuns(RunsAtLevels(false, 1), RunsAtLevels(true, 1));
  EXPECT_TRUE(same.per_run);
  EXPECT_EQ(same.runs_a, 4u);
  EXPECT_TRUE(same.confident);
  const RunDiffRow* matmul = Find(same.by_op_type, "MatMul");
  ASSERT_NE(matmul, nullptr);
  EXPECT_LT(MannWhitneyU(std::vector<double>(matmul->a.begin(), matmul->a.end()),
                         std::vector<double>(matmul->b.begin(), matmul->b.end())).p, 0.01);
  EXPECT_NEAR(matmul->p, 0.1425238824036034, 1e-6);
  // No change shown, and none ruled out either: runs 3-4% apart on each side leave an interval
  // wider than +-5% of A's median (here [-700.8 us, +100 us] of 10.149 ms): inconclusive.
  EXPECT_TRUE(matmul->ci_low_ns < -0.05 * matmul->median_a || matmul->ci_high_ns > 0.05 * matmul->median_a);
  EXPECT_EQ(matmul->verdict, "inconclusive");
  EXPECT_EQ(same.step.verdict, "inconclusive");
  // B 10% slower over the same run levels: found (p = 0.0108).
  const RunDiff slower = DiffRuns(RunsAtLevels(false, 1), RunsAtLevels(true, 1.10));
  const RunDiffRow* slow = Find(slower.by_op_type, "MatMul");
  ASSERT_NE(slow, nullptr);
  EXPECT_NEAR(slow->p, 0.01081182073960377, 1e-6);
  EXPECT_EQ(slow->verdict, "regressed");
  // Two runs on side A: too few to test runs, so the steps are tested.
  std::vector<Step> two_runs = RunsAtLevels(false, 1);
  two_runs.resize(8);
  const RunDiff few = DiffRuns(two_runs, RunsAtLevels(true, 1));
  EXPECT_FALSE(few.per_run);
  EXPECT_EQ(few.runs_a, 2u);
}

}  // namespace
}  // namespace stepscope::analysis
