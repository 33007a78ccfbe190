// L2Loss, global norm, clipping, gradient descent and momentum.
#include "kernels/optimizers.h"

#include <gtest/gtest.h>

#include <cmath>

#include "tests/kernels/test_util.h"

namespace stepscope::kernels {
namespace {

using testing::CView;
using testing::View;

TEST(L2Loss, HalfSumOfSquaresAndGradient) {
  auto x = testing::RandomVector<double>(77, 1);
  double loss = 0;
  CpuContext ctx;
  ASSERT_OK(L2Loss(ctx, CView(x, {7, 11}), Out<double>(&loss, {})));
  EXPECT_NEAR(loss, testing::Dot(x, x) / 2, 1e-12);
  const double dloss = 1.7;
  std::vector<double> dx(77);
  ASSERT_OK(L2LossGrad(ctx, CView(x, {7, 11}), In<double>(&dloss, {}), View(dx, {7, 11})));
  auto fn = [&] {
    double l = 0;
    EXPECT_TRUE(L2Loss(ctx, CView(x, {7, 11}), Out<double>(&l, {})).ok());
    return dloss * l;
  };
  testing::ExpectGradientMatches(x, dx, fn, "l2loss dx");
}

TEST(GlobalNorm, ClipScalesOnlyAboveTheThreshold) {
  std::vector<float> a = {3, 0, 0}, b = {0, 4};  // global norm 5
  std::vector<In<float>> in = {CView(a, {3}), CView(b, {2})};
  float norm = 0;
  ThreadPool pool(2);
  CpuContext ctx(&pool);
  ASSERT_OK(GlobalNorm(ctx, std::span<const In<float>>(in), Out<float>(&norm, {})));
  EXPECT_FLOAT_EQ(norm, 5.0f);
  std::vector<TensorView<float>> out = {View(a, {3}), View(b, {2})};
  ASSERT_OK(ClipByGlobalNorm(ctx, std::span<const TensorView<float>>(out), 10.0f, Out<float>(&norm, {})));
  EXPECT_EQ(a[0], 3.0f);  // under the threshold: unchanged
  ASSERT_OK(ClipByGlobalNorm(ctx, std::span<const TensorView<float>>(out), 2.5f, Out<float>(&norm, {})));
  EXPECT_FLOAT_EQ(norm, 5.0f);
  EXPECT_FLOAT_EQ(a[0], 1.5f);
  EXPECT_FLOAT_EQ(b[1], 2.0f);
  // Large tensors: the threaded reduction agrees with a plain sum.
  auto big = testing::RandomVector<float>(100003, 3);
  std::vector<In<float>> one = {CView(big, {100003})};
  ASSERT_OK(GlobalNorm(ctx, std::span<const In<float>>(one), Out<float>(&norm, {})));
  EXPECT_NEAR(norm, std::sqrt(testing::Dot(big, big)), 1e-3);
  EXPECT_EQ(ClipByGlobalNorm(ctx, std::span<const TensorView<float>>(out), 0.0f, Out<float>(&norm, {})).code(),
            StatusCode::kInvalidInput);
}

TEST(ApplyGradientDescent, SubtractsScaledGradient) {
  auto var = testing::RandomVector<float>(50, 4);
  const auto grad = testing::RandomVector<float>(50, 5);
  auto expected = var;
  for (size_t i = 0; i < 50; ++i) expected[i] = var[i] - 0.3f * grad[i];
  ASSERT_OK(ApplyGradientDescent(CpuContext(), View(var, {50}), 0.3f, CView(grad, {50})));
  EXPECT_EQ(var, expected);
  EXPECT_EQ(ApplyGradientDescent(CpuContext(), View(var, {50}), 0.3f, CView(grad, {5, 10})).code(),
            StatusCode::kInvalidInput);
}

TEST(ApplyMomentum, MatchesTensorFlowUpdateWithWeightDecayAndNesterov) {
  for (const bool nesterov : {false, true}) {
    auto var = testing::RandomVector<double>(20, 6);
    auto accum = testing::RandomVector<double>(20, 7);
    const auto grad = testing::RandomVector<double>(20, 8);
    auto v = var, a = accum;
    MomentumOptions o;
    o.momentum = 0.9;
    o.weight_decay = 1e-4;
    o.use_nesterov = nesterov;
    // Two steps, written out.
    for (int step = 0; step < 2; ++step) {
      ASSERT_OK(ApplyMomentum(CpuContext(), View(var, {20}), View(accum, {20}), 0.1, CView(grad, {20}), o));
      for (size_t i = 0; i < 20; ++i) {
        const double g = grad[i] + 1e-4 * v[i];
        a[i] = 0.9 * a[i] + g;
        v[i] = nesterov ? v[i] - 0.1 * (g + 0.9 * a[i]) : v[i] - 0.1 * a[i];
      }
    }
    testing::ExpectAllNear(var, v, 1e-15, 1e-14, nesterov ? "nesterov var" : "var");
    testing::ExpectAllNear(accum, a, 1e-15, 1e-14, "accum");
  }
}

}  // namespace
}  // namespace stepscope::kernels
