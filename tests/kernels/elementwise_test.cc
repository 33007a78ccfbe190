// BiasAdd, AddN, Add, Mul, Scale, Relu and their gradients; the scalar ops of dropout.
#include "kernels/elementwise.h"

#include <gtest/gtest.h>

#include <cmath>

#include "tests/kernels/test_util.h"

namespace stepscope::kernels {
namespace {

using testing::CView;
using testing::View;

TEST(BiasAdd, MatchesPlainLoopAndGradient) {
  for (const Shape& shape : {Shape{7}, Shape{3, 5}, Shape{2, 3, 4, 7}}) {
    const int64_t c = shape[shape.rank - 1];
    auto x = testing::RandomVector<double>(shape.num_elements(), 1);
    auto bias = testing::RandomVector<double>(c, 2);
    std::vector<double> y(x.size());
    CpuContext ctx;
    ASSERT_OK(BiasAdd(ctx, CView(x, shape), CView(bias, {c}), View(y, shape)));
    for (size_t i = 0; i < x.size(); ++i) {
      ASSERT_DOUBLE_EQ(y[i], x[i] + bias[i % static_cast<size_t>(c)]);
    }
    const auto w = testing::RandomVector<double>(shape.num_elements(), 3);
    std::vector<double> dbias(static_cast<size_t>(c));
    ASSERT_OK(BiasAddGrad(ctx, CView(w, shape), View(dbias, {c})));
    auto loss = [&] {
      EXPECT_TRUE(BiasAdd(ctx, CView(x, shape), CView(bias, {c}), View(y, shape)).ok());
      return testing::Dot(y, w);
    };
    testing::ExpectGradientMatches(bias, dbias, loss, "dbias " + shape.ToString());
  }
}

TEST(BiasAdd, WrongBiasShapeIsInvalidInput) {
  std::vector<float> x(12), bias(3), y(12);
  CpuContext ctx;
  EXPECT_EQ(BiasAdd(ctx, CView(x, {3, 4}), CView(bias, {3}), View(y, {3, 4})).code(),
            StatusCode::kInvalidInput);
}

TEST(BiasAddGrad, SameBitsOnAnyThreadCount) {
  auto dy = testing::RandomVector<float>(3001 * 13, 9);
  std::vector<float> serial(13), threaded(13);
  ASSERT_OK(BiasAddGrad(CpuContext(), CView(dy, {3001, 13}), View(serial, {13})));
  ThreadPool pool(3);
  ASSERT_OK(BiasAddGrad(CpuContext(&pool), CView(dy, {3001, 13}), View(threaded, {13})));
  EXPECT_EQ(serial, threaded);
  double expected = 0;
  for (int64_t r = 0; r < 3001; ++r) expected += dy[static_cast<size_t>(r * 13 + 4)];
  EXPECT_NEAR(serial[4], expected, 1e-4);
}

TEST(AddN, SumsAllInputsIncludingAliasedOutput) {
  const Shape s{5, 3};
  auto a = testing::RandomVector<float>(15, 1), b = testing::RandomVector<float>(15, 2),
       c = testing::RandomVector<float>(15, 3);
  std::vector<float> expected(15);
  for (size_t i = 0; i < 15; ++i) expected[i] = a[i] + b[i] + c[i];
  std::vector<In<float>> inputs = {CView(a, s), CView(b, s), CView(c, s)};
  CpuContext ctx;
  ASSERT_OK(AddN(ctx, std::span<const In<float>>(inputs), View(a, s)));  // out aliases a
  testing::ExpectAllNear(a, expected, 1e-6, 0, "AddN");
  std::vector<In<float>> none;
  EXPECT_FALSE(AddN(ctx, std::span<const In<float>>(none), View(a, s)).ok());
  std::vector<float> wrong(4);
  std::vector<In<float>> mismatched = {CView(b, s), CView(wrong, {2, 2})};
  EXPECT_EQ(AddN(ctx, std::span<const In<float>>(mismatched), View(a, s)).code(),
            StatusCode::kInvalidInput);
}

TEST(Elementwise, AddMulScale) {
  const Shape s{4, 9};
  auto a = testing::RandomVector<float>(36, 1), b = testing::RandomVector<float>(36, 2);
  std::vector<float> sum(36), prod(36), scaled(36);
  CpuContext ctx;
  ASSERT_OK(Add(ctx, CView(a, s), CView(b, s), View(sum, s)));
  ASSERT_OK(Mul(ctx, CView(a, s), CView(b, s), View(prod, s)));
  ASSERT_OK(Scale(ctx, CView(a, s), -2.5f, View(scaled, s)));
  for (size_t i = 0; i < 36; ++i) {
    EXPECT_EQ(sum[i], a[i] + b[i]);
    EXPECT_EQ(prod[i], a[i] * b[i]);
    EXPECT_EQ(scaled[i], -2.5f * a[i]);
  }
  EXPECT_EQ(Add(ctx, CView(a, s), CView(b, {36}), View(sum, s)).code(), StatusCode::kInvalidInput);
}

// Dropout's pieces: keep + u, its floor (the 0/1 mask), x / keep (a true division: x · (1/keep)
// rounds differently for some x).
TEST(Elementwise, AddScalarFloorAndDivideByScalar) {
  const Shape s{3, 11};
  auto x = testing::RandomVector<float>(33, 5);
  std::vector<float> added(33), floored(33), divided(33);
  ThreadPool pool(2);
  const CpuContext ctx(&pool);
  ASSERT_OK(AddScalar(ctx, CView(x, s), 0.6f, View(added, s)));
  ASSERT_OK(Floor(ctx, CView(added, s), View(floored, s)));
  ASSERT_OK(DivideByScalar(ctx, CView(x, s), 0.6f, View(divided, s)));
  bool division_differs_from_reciprocal = false;
  for (size_t i = 0; i < 33; ++i) {
    EXPECT_EQ(added[i], 0.6f + x[i]);
    EXPECT_EQ(floored[i], std::floor(added[i]));
    EXPECT_EQ(divided[i], x[i] / 0.6f);
    division_differs_from_reciprocal |= divided[i] != x[i] * (1.0f / 0.6f);
  }
  EXPECT_TRUE(division_differs_from_reciprocal);
  EXPECT_EQ(Floor(ctx, CView(x, s), View(floored, {33})).code(), StatusCode::kInvalidInput);
  EXPECT_EQ(DivideByScalar(ctx, CView(x, s), 2.0f, View(divided, {11, 3})).code(),
            StatusCode::kInvalidInput);
}

// SplitMix64's published first outputs for seed 0 (0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4,
// 0x06C45D188009454F): the top 24 bits of each over 2^24, from any start in the stream and on
// any thread count.
TEST(Elementwise, RandomUniformIsSplitMix64sStream) {
  const std::vector<float> expected = {0xE220A8 / 16777216.0f, 0x6E789E / 16777216.0f,
                                       0x06C45D / 16777216.0f};
  ThreadPool pool(3);
  for (const CpuContext& ctx : {CpuContext(), CpuContext(&pool)}) {
    std::vector<float> y(3, -1.0f);
    ASSERT_OK(RandomUniform(ctx, 0, View(y, {3})));
    EXPECT_EQ(y, expected);
    std::vector<float> later(2, -1.0f);  // the stream from after its first value
    ASSERT_OK(RandomUniform(ctx, 0x9E3779B97F4A7C15ull, View(later, {2})));
    EXPECT_EQ(later, std::vector<float>(expected.begin() + 1, expected.end()));
  }
  std::vector<float> many(10000);
  ASSERT_OK(RandomUniform(CpuContext(&pool), 42, View(many, {100, 100})));
  double sum = 0;
  for (float u : many) {
    ASSERT_GE(u, 0.0f);
    ASSERT_LT(u, 1.0f);
    sum += u;
  }
  EXPECT_NEAR(sum / 10000, 0.5, 0.01);
}

TEST(Elementwise, MulGradMatchesFiniteDifferences) {
  const Shape s{3, 7};
  auto a = testing::RandomVector<double>(21, 1), b = testing::RandomVector<double>(21, 2);
  const auto w = testing::RandomVector<double>(21, 3);
  std::vector<double> c(21), da(21), db(21);
  CpuContext ctx;
  ASSERT_OK(MulGrad(ctx, CView(a, s), CView(b, s), CView(w, s), View(da, s), View(db, s)));
  auto loss = [&] {
    EXPECT_TRUE(Mul(ctx, CView(a, s), CView(b, s), View(c, s)).ok());
    return testing::Dot(c, w);
  };
  testing::ExpectGradientMatches(a, da, loss, "da");
  testing::ExpectGradientMatches(b, db, loss, "db");
}

TEST(Relu, ForwardAndGradient) {
  const Shape s{5, 11};
  auto x = testing::RandomAwayFromZero<double>(55, 4, 0.05);
  const auto w = testing::RandomVector<double>(55, 5);
  std::vector<double> y(55), dx(55);
  CpuContext ctx;
  ASSERT_OK(Relu(ctx, CView(x, s), View(y, s)));
  int negatives = 0;
  for (size_t i = 0; i < 55; ++i) {
    EXPECT_EQ(y[i], x[i] > 0 ? x[i] : 0.0);
    negatives += x[i] < 0;
  }
  EXPECT_GT(negatives, 5);
  ASSERT_OK(ReluGrad(ctx, CView(w, s), CView(x, s), View(dx, s)));
  // Relu's output gives the same gradient as its input.
  std::vector<double> dx_from_y(55);
  ASSERT_OK(ReluGrad(ctx, CView(w, s), CView(y, s), View(dx_from_y, s)));
  EXPECT_EQ(dx, dx_from_y);
  auto loss = [&] {
    EXPECT_TRUE(Relu(ctx, CView(x, s), View(y, s)).ok());
    return testing::Dot(y, w);
  };
  testing::ExpectGradientMatches(x, dx, loss, "relu dx");
}

// One dropout site in one kernel gives the bits of TF's five ops run one by one (RandomUniform,
// Add, Floor, RealDiv, Mul) and its gradient those of Mul then RealDiv, also when x, y and dy are
// strided rows inside a larger (B·T, H) buffer (a time step read and written where it lies).
TEST(FusedDropout, SameBitsAsTheSeparateOpsOnStridedRows) {
  const int64_t rows = 6, cols = 13, steps = 4, ld = steps * cols;
  const float keep = 0.55f;
  const uint64_t state = 0x1234567890ABCDEFull;
  const auto big = testing::RandomVector<float>(rows * ld, 9, -3, 3);  // (rows, steps·cols)
  const Shape s{rows, cols};
  ThreadPool pool(2);
  for (const CpuContext& ctx : {CpuContext(), CpuContext(&pool)}) {
    for (int64_t step = 0; step < steps; ++step) {
      std::vector<float> x(static_cast<size_t>(rows * cols));
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t c = 0; c < cols; ++c) x[static_cast<size_t>(r * cols + c)] = big[static_cast<size_t>(r * ld + step * cols + c)];
      }
      std::vector<float> u(x.size()), kept(x.size()), mask(x.size()), div(x.size()), y(x.size());
      ASSERT_OK(RandomUniform(ctx, state, View(u, s)));
      ASSERT_OK(AddScalar(ctx, CView(u, s), keep, View(kept, s)));
      ASSERT_OK(Floor(ctx, CView(kept, s), View(mask, s)));
      ASSERT_OK(DivideByScalar(ctx, CView(x, s), keep, View(div, s)));
      ASSERT_OK(Mul(ctx, CView(div, s), CView(mask, s), View(y, s)));

      std::vector<float> fused_mask(x.size(), -1.0f), out(big.size(), -7.0f);
      const StridedRows<const float> x_rows(big.data() + step * cols, rows, cols, ld);
      ASSERT_OK(FusedDropout(ctx, state, keep, x_rows, View(fused_mask, s),
                             StridedRows<float>(out.data() + step * cols, rows, cols, ld)));
      EXPECT_EQ(fused_mask, mask);
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t c = 0; c < ld; ++c) {
          const float got = out[static_cast<size_t>(r * ld + c)];
          const bool mine = c >= step * cols && c < (step + 1) * cols;
          ASSERT_EQ(got, mine ? y[static_cast<size_t>(r * cols + c - step * cols)] : -7.0f)
              << "row " << r << " column " << c;  // nothing outside the step's rows is written
        }
      }
      // Backward: (dy · mask) / keep, dy read as strided rows.
      std::vector<float> masked(x.size()), dx(x.size()), fused_dx(x.size());
      ASSERT_OK(Mul(ctx, CView(x, s), CView(mask, s), View(masked, s)));
      ASSERT_OK(DivideByScalar(ctx, CView(masked, s), keep, View(dx, s)));
      ASSERT_OK(FusedDropoutGrad(ctx, x_rows, CView(mask, s), keep, View(fused_dx, s)));
      EXPECT_EQ(fused_dx, dx);
    }
  }
  std::vector<float> mask(static_cast<size_t>(rows * cols)), y(mask.size());
  const StridedRows<const float> x_rows(big.data(), rows, cols, ld);
  EXPECT_EQ(FusedDropout(CpuContext(), state, 0.0f, x_rows, View(mask, s), View(y, s)).code(),
            StatusCode::kInvalidInput);  // keep_prob out of (0, 1]
  EXPECT_EQ(FusedDropout(CpuContext(), state, keep, StridedRows<const float>(big.data(), rows, cols, cols - 1),
                         View(mask, s), View(y, s)).code(),
            StatusCode::kInvalidInput);  // overlapping rows
  EXPECT_EQ(FusedDropout(CpuContext(), state, keep, x_rows, View(mask, s), View(y, {cols, rows})).code(),
            StatusCode::kInvalidInput);
}

}  // namespace
}  // namespace stepscope::kernels
