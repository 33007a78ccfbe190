// L2Loss, global norm, clipping, gradient descent and momentum.
#include "kernels/optimizers.h"

#include <gtest/gtest.h>

#include <cmath>

#include "kernels/math/reduce_math.h"
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

// The chunking the CPU and CUDA sums of squares share: contiguous, in order, covering [0, n)
// exactly, a function of n alone.
TEST(SumChunks, PartitionDependsOnTheLengthOnly) {
  EXPECT_EQ(math::SumChunkCount(0), 0);
  EXPECT_EQ(math::SumChunkCount(1), 1);
  EXPECT_EQ(math::SumChunkCount(math::kSumChunk), 1);
  EXPECT_EQ(math::SumChunkCount(math::kSumChunk + 1), 2);
  for (const int64_t n : {int64_t{1}, int64_t{1000}, 3 * math::kSumChunk, 5 * math::kSumChunk + 17}) {
    int64_t covered = 0;
    for (int64_t c = 0; c < math::SumChunkCount(n); ++c) {
      EXPECT_EQ(math::SumChunkBegin(c), covered) << n;
      EXPECT_GT(math::SumChunkEnd(c, n), math::SumChunkBegin(c)) << n;
      EXPECT_LE(math::SumChunkEnd(c, n) - math::SumChunkBegin(c), math::kSumChunk) << n;
      covered = math::SumChunkEnd(c, n);
    }
    EXPECT_EQ(covered, n);
  }
  EXPECT_EQ(math::SquareAsDouble(3.0f), 9.0);
  // The float square rounds; the double one is exact.
  const float x = 1.0f + 0x1p-20f;
  EXPECT_EQ(math::SquareAsDouble(x), 1.0 + 0x1p-19 + 0x1p-40);
}

// The sums of squares add fixed chunks in order: bit-identical on any pool size.
TEST(L2Loss, SameBitsOnAnyThreadCount) {
  auto x = testing::RandomVector<float>(7 * math::kSumChunk + 123, 12, -3, 3);
  float serial = 0;
  ASSERT_OK(L2Loss(CpuContext(), CView(x, {static_cast<int64_t>(x.size())}), Out<float>(&serial, {})));
  for (const int threads : {1, 3, 7}) {
    ThreadPool pool(threads);
    float pooled = 0;
    ASSERT_OK(L2Loss(CpuContext(&pool), CView(x, {static_cast<int64_t>(x.size())}), Out<float>(&pooled, {})));
    EXPECT_EQ(pooled, serial) << threads;
  }
  EXPECT_NEAR(serial, testing::Dot(x, x) / 2, 1e-6 * serial);
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

// The clip read from the norm where GlobalNorm left it equals ClipByGlobalNorm, above and below
// the threshold.
TEST(ClipByNorm, EqualsClipByGlobalNormWithTheNormInPlace) {
  const auto a = testing::RandomVector<float>(1000, 5), b = testing::RandomVector<float>(77, 6);
  std::vector<In<float>> tensors = {CView(a, {1000}), CView(b, {77})};
  float norm = 0;
  ASSERT_OK(GlobalNorm(CpuContext(), std::span<const In<float>>(tensors), Out<float>(&norm, {})));
  for (const float clip : {norm / 3, norm * 2}) {
    auto ca = a, cb = b;
    std::vector<TensorView<float>> in_place = {View(ca, {1000}), View(cb, {77})};
    float norm_before = 0;
    ASSERT_OK(ClipByGlobalNorm(CpuContext(), std::span<const TensorView<float>>(in_place), clip,
                               Out<float>(&norm_before, {})));
    std::vector<float> ya(1000), yb(77);
    ASSERT_OK(ClipByNorm(CpuContext(), CView(a, {1000}), In<float>(&norm, {}), clip, View(ya, {1000})));
    ASSERT_OK(ClipByNorm(CpuContext(), CView(b, {77}), In<float>(&norm, {}), clip, View(yb, {77})));
    EXPECT_EQ(ya, ca);
    EXPECT_EQ(yb, cb);
  }
  std::vector<float> y(77);
  EXPECT_EQ(ClipByNorm(CpuContext(), CView(b, {77}), In<float>(&norm, {}), 0.0f, View(y, {77})).code(),
            StatusCode::kInvalidInput);
  EXPECT_EQ(ClipByNorm(CpuContext(), CView(b, {77}), CView(a, {1000}), 1.0f, View(y, {77})).code(),
            StatusCode::kInvalidInput);
}

}  // namespace
}  // namespace stepscope::kernels
