// FusedBatchNorm / FusedBatchNormGrad: plain-loop statistics, running-average update,
// inference mode, finite differences in double for x, scale and offset.
#include "kernels/batch_norm.h"

#include <gtest/gtest.h>

#include <cmath>

#include "tests/kernels/test_util.h"

namespace stepscope::kernels {
namespace {

using testing::CView;
using testing::View;

template <typename T>
struct BnState {
  Shape shape;
  int64_t c;
  std::vector<T> x, scale, offset, running_mean, running_var, y, saved_mean, saved_inv_std;
  BnState(Shape s, uint32_t seed)
      : shape(s), c(s[s.rank - 1]),
        x(testing::RandomVector<T>(s.num_elements(), seed, -2, 3)),
        scale(testing::RandomVector<T>(c, seed + 1, 0.5, 1.5)),
        offset(testing::RandomVector<T>(c, seed + 2)),
        running_mean(testing::RandomVector<T>(c, seed + 3)),
        running_var(testing::RandomVector<T>(c, seed + 4, 0.5, 2)),
        y(x.size()), saved_mean(static_cast<size_t>(c)), saved_inv_std(static_cast<size_t>(c)) {}
  BatchNormArgs<T> Args() {
    return {CView(x, shape), CView(scale, {c}), CView(offset, {c}), View(running_mean, {c}),
            View(running_var, {c}), View(y, shape), View(saved_mean, {c}),
            View(saved_inv_std, {c})};
  }
};

TEST(FusedBatchNorm, TrainingMatchesPlainLoopsAndUpdatesRunningStats) {
  BnState<float> s({2, 5, 3, 4}, 1);
  const auto old_mean = s.running_mean, old_var = s.running_var;
  BatchNormOptions o;
  o.epsilon = 1e-3;
  o.exponential_avg_factor = 0.1;
  ThreadPool pool(2);
  ASSERT_OK(FusedBatchNorm(CpuContext(&pool), s.Args(), o));
  const int64_t rows = 30;
  for (int64_t j = 0; j < s.c; ++j) {
    double mean = 0, var = 0;
    for (int64_t r = 0; r < rows; ++r) mean += s.x[static_cast<size_t>(r * s.c + j)];
    mean /= rows;
    for (int64_t r = 0; r < rows; ++r) var += std::pow(s.x[static_cast<size_t>(r * s.c + j)] - mean, 2);
    var /= rows;
    const size_t sj = static_cast<size_t>(j);
    EXPECT_NEAR(s.saved_mean[sj], mean, 1e-5);
    EXPECT_NEAR(s.saved_inv_std[sj], 1 / std::sqrt(var + 1e-3), 1e-4);
    EXPECT_NEAR(s.running_mean[sj], 0.9 * old_mean[sj] + 0.1 * mean, 1e-5);
    EXPECT_NEAR(s.running_var[sj], 0.9 * old_var[sj] + 0.1 * var * rows / (rows - 1), 1e-5);
    for (int64_t r = 0; r < rows; ++r) {
      const size_t e = static_cast<size_t>(r * s.c + j);
      EXPECT_NEAR(s.y[e], s.scale[sj] * (s.x[e] - mean) / std::sqrt(var + 1e-3) + s.offset[sj], 1e-4);
    }
  }
}

TEST(FusedBatchNorm, InferenceUsesRunningStatsAndLeavesThem) {
  BnState<float> s({7, 3}, 2);
  const auto old_mean = s.running_mean, old_var = s.running_var;
  BatchNormOptions o;
  o.is_training = false;
  ASSERT_OK(FusedBatchNorm(CpuContext(), s.Args(), o));
  EXPECT_EQ(s.running_mean, old_mean);
  EXPECT_EQ(s.running_var, old_var);
  for (size_t e = 0; e < s.x.size(); ++e) {
    const size_t j = e % 3;
    EXPECT_NEAR(s.y[e], s.scale[j] * (s.x[e] - old_mean[j]) / std::sqrt(old_var[j] + 1e-3) + s.offset[j], 1e-5);
  }
}

class BatchNormGradTest : public ::testing::TestWithParam<bool> {};

TEST_P(BatchNormGradTest, MatchesFiniteDifferences) {
  const bool training = GetParam();
  for (const Shape& shape : {Shape{2, 3, 5, 4}, Shape{9, 3}, Shape{1, 1, 1, 2}}) {
    if (training && shape.num_elements() / shape[shape.rank - 1] < 2) continue;
    BnState<double> s(shape, 3);
    BatchNormOptions o;
    o.is_training = training;
    const auto w = testing::RandomVector<double>(shape.num_elements(), 9);
    const auto rm = s.running_mean, rv = s.running_var;
    auto loss = [&] {
      s.running_mean = rm;  // the forward updates them; keep each evaluation identical
      s.running_var = rv;
      EXPECT_TRUE(FusedBatchNorm(CpuContext(), s.Args(), o).ok());
      return testing::Dot(s.y, w);
    };
    loss();
    std::vector<double> dx(s.x.size()), dscale(static_cast<size_t>(s.c)), doffset(static_cast<size_t>(s.c));
    BatchNormGradArgs<double> g{CView(w, shape), CView(s.x, shape), CView(s.scale, {s.c}),
                                CView(s.saved_mean, {s.c}), CView(s.saved_inv_std, {s.c}),
                                View(dx, shape), View(dscale, {s.c}), View(doffset, {s.c})};
    ASSERT_OK(FusedBatchNormGrad(CpuContext(), g, o));
    const std::string what = std::string(training ? "training " : "inference ") + shape.ToString();
    // Saved statistics are inputs of the gradient; copy them so perturbing x cannot move them.
    testing::ExpectGradientMatches(s.x, dx, loss, what + " dx", 1e-6, 1e-6);
    testing::ExpectGradientMatches(s.scale, dscale, loss, what + " dscale");
    testing::ExpectGradientMatches(s.offset, doffset, loss, what + " doffset");
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, BatchNormGradTest, ::testing::Bool(),
                         [](const auto& param_info) { return param_info.param ? "training" : "inference"; });

TEST(FusedBatchNorm, SameBitsOnAnyThreadCount) {
  BnState<float> a({4, 33, 33, 5}, 5), b({4, 33, 33, 5}, 5);
  ThreadPool pool(3);
  ASSERT_OK(FusedBatchNorm(CpuContext(), a.Args(), {}));
  ASSERT_OK(FusedBatchNorm(CpuContext(&pool), b.Args(), {}));
  EXPECT_EQ(a.y, b.y);
  EXPECT_EQ(a.running_var, b.running_var);
}

TEST(FusedBatchNorm, WrongScaleShapeIsInvalidInput) {
  BnState<float> s({3, 4}, 6);
  auto args = s.Args();
  args.scale = TensorView<const float>(s.scale.data(), {3});  // 3 of the 4 channels
  EXPECT_EQ(FusedBatchNorm(CpuContext(), args, {}).code(), StatusCode::kInvalidInput);
}

}  // namespace
}  // namespace stepscope::kernels
