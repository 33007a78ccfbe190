// MatMul / MatMulGrad: plain-loop reference in float, finite differences in double, for all
// four transpose combinations and odd shapes.
#include "kernels/matmul.h"

#include <gtest/gtest.h>

#include <tuple>

#include "tests/kernels/test_util.h"

namespace stepscope::kernels {
namespace {

using testing::CView;
using testing::View;

// op(x)[r][c] for a row-major matrix stored with `cols` columns.
template <typename T>
T At(const std::vector<T>& x, int64_t cols, bool trans, int64_t r, int64_t c) {
  return trans ? x[static_cast<size_t>(c * cols + r)] : x[static_cast<size_t>(r * cols + c)];
}

template <typename T>
std::vector<T> NaiveMatMul(const std::vector<T>& a, const std::vector<T>& b, int64_t m, int64_t n,
                           int64_t k, bool ta, bool tb) {
  std::vector<T> c(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t p = 0; p < k; ++p) {
        s += static_cast<double>(At(a, ta ? m : k, ta, i, p)) * At(b, tb ? k : n, tb, p, j);
      }
      c[static_cast<size_t>(i * n + j)] = static_cast<T>(s);
    }
  }
  return c;
}

class MatMulTest : public ::testing::TestWithParam<std::tuple<int, int, int, bool, bool>> {};

TEST_P(MatMulTest, ForwardMatchesPlainLoops) {
  const auto [m, n, k, ta, tb] = GetParam();
  const Shape sa = ta ? Shape{k, m} : Shape{m, k};
  const Shape sb = tb ? Shape{n, k} : Shape{k, n};
  auto a = testing::RandomVector<float>(m * k, 1);
  auto b = testing::RandomVector<float>(k * n, 2);
  std::vector<float> c(static_cast<size_t>(m * n), 7.0f);
  CpuContext ctx;
  ASSERT_OK(MatMul(ctx, CView(a, sa), CView(b, sb), View(c, {m, n}), {ta, tb, false}));
  testing::ExpectAllNear(c, NaiveMatMul(a, b, m, n, k, ta, tb), 1e-5, 1e-5, "c");

  // accumulate adds to what is there.
  std::vector<float> acc(static_cast<size_t>(m * n), 1.5f);
  ASSERT_OK(MatMul(ctx, CView(a, sa), CView(b, sb), View(acc, {m, n}), {ta, tb, true}));
  for (float& v : c) v += 1.5f;
  testing::ExpectAllNear(acc, c, 1e-5, 1e-5, "c accumulated");
}

TEST_P(MatMulTest, GradientsMatchFiniteDifferences) {
  const auto [m, n, k, ta, tb] = GetParam();
  const Shape sa = ta ? Shape{k, m} : Shape{m, k};
  const Shape sb = tb ? Shape{n, k} : Shape{k, n};
  auto a = testing::RandomVector<double>(m * k, 3);
  auto b = testing::RandomVector<double>(k * n, 4);
  const auto weights = testing::RandomVector<double>(m * n, 5);  // L = Σ w ⊙ c, so dc = w
  CpuContext ctx;
  std::vector<double> c(static_cast<size_t>(m * n));
  auto loss = [&] {
    EXPECT_TRUE(MatMul(ctx, CView(a, sa), CView(b, sb), View(c, {m, n}), {ta, tb, false}).ok());
    return testing::Dot(c, weights);
  };
  std::vector<double> da(a.size()), db(b.size());
  ASSERT_OK(MatMulGrad(ctx, CView(a, sa), CView(b, sb), CView(weights, {m, n}), View(da, sa),
                       View(db, sb), {ta, tb, false}));
  testing::ExpectGradientMatches(a, da, loss, "da");
  testing::ExpectGradientMatches(b, db, loss, "db");

  // Only db asked for: da stays absent, db identical.
  std::vector<double> db_only(b.size());
  ASSERT_OK(MatMulGrad(ctx, CView(a, sa), CView(b, sb), CView(weights, {m, n}), Out<double>{},
                       View(db_only, sb), {ta, tb, false}));
  EXPECT_EQ(db_only, db);
}

INSTANTIATE_TEST_SUITE_P(Shapes, MatMulTest,
                         ::testing::Combine(::testing::Values(1, 3, 17), ::testing::Values(1, 5),
                                            ::testing::Values(4, 9), ::testing::Bool(),
                                            ::testing::Bool()));

TEST(MatMulShapes, MismatchIsInvalidInputNamingShapes) {
  std::vector<float> a(6), b(6), c(4);
  CpuContext ctx;
  const Status s = MatMul(ctx, CView(a, {2, 3}), CView(b, {2, 3}), View(c, {2, 2}));
  EXPECT_EQ(s.code(), StatusCode::kInvalidInput);
  EXPECT_NE(s.message().find("[2,3]"), std::string::npos) << s.message();
  // Transposing b makes the same data valid.
  EXPECT_TRUE(MatMul(ctx, CView(a, {2, 3}), CView(b, {2, 3}), View(c, {2, 2}), {false, true}).ok());
  const Status wrong_out = MatMul(ctx, CView(a, {2, 3}), CView(b, {3, 2}), View(c, {4, 1}));
  EXPECT_EQ(wrong_out.code(), StatusCode::kInvalidInput);
}

TEST(MatMulShapes, EmptyInnerDimensionGivesZeros) {
  std::vector<float> a, b, c(6, 3.0f);
  CpuContext ctx;
  ASSERT_OK(MatMul(ctx, CView(a, {2, 0}), CView(b, {0, 3}), View(c, {2, 3})));
  for (float v : c) EXPECT_EQ(v, 0.0f);
}

// MatMul on strided rows: each operand a block of a larger buffer (its rows further apart than
// its width), the product written into a block of another, in every transpose; equal to MatMul on
// packed copies, and nothing outside the output block touched.
TEST(MatMulStrided, EqualsMatMulOnPackedCopies) {
  const auto pack = [](const std::vector<double>& big, int64_t ld, int64_t first, int64_t rows,
                       int64_t cols) {
    std::vector<double> out;
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < cols; ++c) out.push_back(big[static_cast<size_t>(r * ld + first + c)]);
    }
    return out;
  };
  const int64_t m = 5, n = 7, k = 9;
  for (const bool ta : {false, true}) {
    for (const bool tb : {false, true}) {
      for (const bool accumulate : {false, true}) {
        const int64_t a_rows = ta ? k : m, a_cols = ta ? m : k;
        const int64_t b_rows = tb ? n : k, b_cols = tb ? k : n;
        const int64_t a_ld = a_cols + 4, b_ld = b_cols + 3, c_ld = n + 6;
        const auto a_big = testing::RandomVector<double>(a_rows * a_ld, 1);
        const auto b_big = testing::RandomVector<double>(b_rows * b_ld, 2);
        auto c_big = testing::RandomVector<double>(m * c_ld, 3);
        const auto c_before = c_big;
        const auto a = pack(a_big, a_ld, 2, a_rows, a_cols), b = pack(b_big, b_ld, 1, b_rows, b_cols);
        auto c = pack(c_big, c_ld, 5, m, n);
        const MatMulOptions options{.transpose_a = ta, .transpose_b = tb, .accumulate = accumulate};
        ASSERT_OK(MatMul(CpuContext(), CView(a, {a_rows, a_cols}), CView(b, {b_rows, b_cols}),
                         View(c, {m, n}), options));
        ASSERT_OK(MatMulStrided(CpuContext(), StridedRows<const double>(a_big.data() + 2, a_rows, a_cols, a_ld),
                                StridedRows<const double>(b_big.data() + 1, b_rows, b_cols, b_ld),
                                StridedRows<double>(c_big.data() + 5, m, n, c_ld), options));
        EXPECT_EQ(pack(c_big, c_ld, 5, m, n), c) << ta << tb << accumulate;
        for (int64_t r = 0; r < m; ++r) {
          for (int64_t col = 0; col < c_ld; ++col) {
            if (col >= 5 && col < 5 + n) continue;
            ASSERT_EQ(c_big[static_cast<size_t>(r * c_ld + col)], c_before[static_cast<size_t>(r * c_ld + col)]);
          }
        }
      }
    }
  }
  std::vector<double> a(6), b(6), c(4);
  EXPECT_EQ(MatMulStrided(CpuContext(), StridedRows<const double>(a.data(), 2, 3, 2),
                          StridedRows<const double>(b.data(), 3, 2, 2),
                          StridedRows<double>(c.data(), 2, 2, 2))
                .code(),
            StatusCode::kInvalidInput);  // a's rows 2 apart, 3 wide
}

}  // namespace
}  // namespace stepscope::kernels
