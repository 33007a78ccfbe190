// Gather, its sparse gradient through ScatterAdd, and ScatterSub (sparse SGD).
#include "kernels/embedding.h"

#include <gtest/gtest.h>

#include "kernels/math/embedding_math.h"
#include "tests/kernels/test_util.h"

namespace stepscope::kernels {
namespace {

using testing::CView;
using testing::View;

TEST(Gather, CopiesRowsAndRejectsBadIds) {
  auto params = testing::RandomVector<float>(10 * 3, 1);
  std::vector<int32_t> ids = {4, 0, 9, 4, 7};
  std::vector<float> out(15);
  ThreadPool pool(2);
  CpuContext ctx(&pool);
  ASSERT_OK(Gather(ctx, CView(params, {10, 3}), CView(ids, {5}), View(out, {5, 3})));
  for (size_t n = 0; n < 5; ++n) {
    for (size_t d = 0; d < 3; ++d) EXPECT_EQ(out[n * 3 + d], params[static_cast<size_t>(ids[n]) * 3 + d]);
  }
  ids[2] = 10;
  Status s = Gather(ctx, CView(params, {10, 3}), CView(ids, {5}), View(out, {5, 3}));
  EXPECT_EQ(s.code(), StatusCode::kInvalidInput);
  EXPECT_NE(s.message().find("ids[2] = 10"), std::string::npos) << s.message();
  ids[2] = -1;
  EXPECT_EQ(Gather(ctx, CView(params, {10, 3}), CView(ids, {5}), View(out, {5, 3})).code(),
            StatusCode::kInvalidInput);
}

TEST(Gather, SparseGradientScatteredDenseMatchesFiniteDifferences) {
  auto params = testing::RandomVector<double>(6 * 4, 2);
  const std::vector<int32_t> ids = {5, 1, 5, 5, 0, 3, 1};  // duplicates accumulate
  const auto w = testing::RandomVector<double>(7 * 4, 3);
  std::vector<double> out(28);
  CpuContext ctx;
  auto loss = [&] {
    EXPECT_TRUE(Gather(ctx, CView(params, {6, 4}), CView(ids, {7}), View(out, {7, 4})).ok());
    return testing::Dot(out, w);
  };
  // The sparse gradient is (ids, dout = w); densify it.
  std::vector<double> dense(24, 0.0);
  ThreadPool pool(3);
  ASSERT_OK(ScatterAdd(CpuContext(&pool), View(dense, {6, 4}), CView(ids, {7}), CView(w, {7, 4})));
  testing::ExpectGradientMatches(params, dense, loss, "dparams");
  for (int d = 0; d < 4; ++d) EXPECT_EQ(dense[static_cast<size_t>(2 * 4 + d)], 0.0);  // row 2 unused
}

TEST(ScatterSub, AppliesScaledRowsWithDuplicates) {
  std::vector<float> var(5 * 37, 1.0f);
  const std::vector<int32_t> ids = {3, 3, 0};
  auto upd = testing::RandomVector<float>(3 * 37, 4);
  ThreadPool pool(2);
  ASSERT_OK(ScatterSub(CpuContext(&pool), View(var, {5, 37}), CView(ids, {3}), CView(upd, {3, 37}), 0.5f));
  for (size_t d = 0; d < 37; ++d) {
    EXPECT_FLOAT_EQ(var[3 * 37 + d], 1.0f - 0.5f * upd[d] - 0.5f * upd[37 + d]);
    EXPECT_FLOAT_EQ(var[0 * 37 + d], 1.0f - 0.5f * upd[74 + d]);
    EXPECT_EQ(var[1 * 37 + d], 1.0f);
  }
  std::vector<int32_t> bad = {5};
  std::vector<float> one_row(37);
  EXPECT_EQ(ScatterSub(CpuContext(), View(var, {5, 37}), CView(bad, {1}), CView(one_row, {1, 37})).code(),
            StatusCode::kInvalidInput);
  EXPECT_EQ(ScatterSub(CpuContext(), View(var, {5, 37}), CView(bad, {1}), CView(one_row, {37})).code(),
            StatusCode::kInvalidInput);
}

TEST(ScatterOrder, RepeatedIdsFormChainsInPositionOrder) {
  const std::vector<int32_t> ids = {7, 2, 7, 7, 0, 2, 9};
  const int64_t count = static_cast<int64_t>(ids.size());
  std::vector<int64_t> next(ids.size());
  std::vector<bool> first(ids.size());
  for (int64_t n = 0; n < count; ++n) {
    next[static_cast<size_t>(n)] = math::NextOccurrence(ids.data(), count, n);
    first[static_cast<size_t>(n)] = math::IsFirstOccurrence(ids.data(), n);
  }
  EXPECT_EQ(next, (std::vector<int64_t>{2, 5, 3, -1, -1, -1, -1}));
  EXPECT_EQ(first, (std::vector<bool>{true, true, false, false, true, false, true}));
}

// The CUDA scatters add each id's chain (embedding_math.h); done on the host, that is the CPU
// kernel's result bit for bit. Scale 0.5 keeps every product exact, so a fused multiply-add on
// either side cannot round differently.
TEST(ScatterOrder, ChainSumsEqualTheCpuScatter) {
  const int64_t rows = 13, dim = 5, count = 400;
  std::vector<int32_t> ids(static_cast<size_t>(count));
  for (int64_t n = 0; n < count; ++n) ids[static_cast<size_t>(n)] = static_cast<int32_t>((n * 7 + n / 3) % rows);
  const auto values = testing::RandomVector<float>(count * dim, 5, -100, 100);
  const auto table = testing::RandomVector<float>(rows * dim, 6);
  auto expected = table;
  ThreadPool pool(2);
  ASSERT_OK(ScatterSub(CpuContext(&pool), View(expected, {rows, dim}), CView(ids, {count}),
                       CView(values, {count, dim}), 0.5f));
  std::vector<int64_t> next(static_cast<size_t>(count));
  for (int64_t n = 0; n < count; ++n) next[static_cast<size_t>(n)] = math::NextOccurrence(ids.data(), count, n);
  auto chained = table;
  int64_t heads = 0;
  for (int64_t n = 0; n < count; ++n) {
    if (!math::IsFirstOccurrence(ids.data(), n)) continue;
    ++heads;
    for (int64_t d = 0; d < dim; ++d) {
      float& dst = chained[static_cast<size_t>(ids[static_cast<size_t>(n)] * dim + d)];
      dst = math::AddAlongChain(dst, next.data(), n, values.data(), dim, d, -0.5f);
    }
  }
  EXPECT_EQ(heads, rows);
  EXPECT_EQ(chained, expected);
}

}  // namespace
}  // namespace stepscope::kernels
