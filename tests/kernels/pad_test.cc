// Pad / PadGrad: plain-loop reference on ranks 1–4 and finite differences.
#include "kernels/pad.h"

#include <gtest/gtest.h>

#include "tests/kernels/test_util.h"

namespace stepscope::kernels {
namespace {

using testing::CView;
using testing::View;

TEST(Pad, MatchesPlainLoopsOnEveryRank) {
  struct Case {
    Shape shape;
    Paddings p;
  };
  Paddings p1, p2, p4;
  p1.before = {2, 0, 0, 0};
  p1.after = {1, 0, 0, 0};
  p2.before = {0, 3, 0, 0};
  p2.after = {1, 0, 0, 0};
  p4.before = {1, 0, 2, 1};
  p4.after = {0, 2, 1, 0};
  for (const Case& tc : {Case{{5}, p1}, Case{{3, 2}, p2}, Case{{2, 3, 2, 3}, p4}}) {
    const Shape out_shape = tc.p.PaddedShape(tc.shape);
    auto x = testing::RandomVector<double>(tc.shape.num_elements(), 1);
    std::vector<double> y(static_cast<size_t>(out_shape.num_elements()));
    ThreadPool pool(2);
    CpuContext ctx(&pool);
    ASSERT_OK(Pad(ctx, CView(x, tc.shape), tc.p, View(y, out_shape), -7.0));
    // Walk every output index; inside the copy region it must equal the input element.
    int64_t copied = 0;
    for (int64_t o = 0; o < out_shape.num_elements(); ++o) {
      int64_t rem = o, in_index = 0, stride = 1;
      bool inside = true;
      for (int d = out_shape.rank - 1; d >= 0; --d) {
        const int64_t od = rem % out_shape[d];
        rem /= out_shape[d];
        const int64_t id = od - tc.p.before[static_cast<size_t>(d)];
        if (id < 0 || id >= tc.shape[d]) inside = false;
        in_index += id * stride;
        stride *= tc.shape[d];
      }
      if (inside) {
        ++copied;
        ASSERT_EQ(y[static_cast<size_t>(o)], x[static_cast<size_t>(in_index)]);
      } else {
        ASSERT_EQ(y[static_cast<size_t>(o)], -7.0);
      }
    }
    EXPECT_EQ(copied, tc.shape.num_elements());
    const auto w = testing::RandomVector<double>(out_shape.num_elements(), 2);
    std::vector<double> dx(x.size());
    ASSERT_OK(PadGrad(ctx, CView(w, out_shape), tc.p, View(dx, tc.shape)));
    auto loss = [&] {
      EXPECT_TRUE(Pad(ctx, CView(x, tc.shape), tc.p, View(y, out_shape)).ok());
      return testing::Dot(y, w);
    };
    testing::ExpectGradientMatches(x, dx, loss, "pad dx " + tc.shape.ToString());
  }
}

TEST(Pad, BadPaddingsAreInvalidInput) {
  std::vector<float> x(6), y(20);
  Paddings neg;
  neg.before = {-1, 0, 0, 0};
  std::vector<float> y3(3);
  EXPECT_EQ(Pad(CpuContext(), CView(x, {2, 3}), neg, View(y3, {1, 3})).code(), StatusCode::kInvalidInput);
  Paddings beyond_rank;
  beyond_rank.after = {0, 0, 1, 0};
  EXPECT_EQ(Pad(CpuContext(), CView(x, {2, 3}), beyond_rank, View(x, {2, 3})).code(),
            StatusCode::kInvalidInput);
  Paddings ok;
  ok.before = {1, 1, 0, 0};
  ok.after = {1, 1, 0, 0};
  EXPECT_EQ(Pad(CpuContext(), CView(x, {2, 3}), ok, View(y, {5, 4})).code(), StatusCode::kInvalidInput);
  EXPECT_TRUE(Pad(CpuContext(), CView(x, {2, 3}), ok, View(y, {4, 5})).ok());
}

}  // namespace
}  // namespace stepscope::kernels
