// MaxPool / MaxPoolGrad and global average pooling: plain loops, TF's tie rule, finite
// differences in double (distinct inputs keep the maxima away from ties).
#include "kernels/pooling.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "tests/kernels/test_util.h"

namespace stepscope::kernels {
namespace {

using testing::CView;
using testing::View;

Pool2DOptions Pool(int window, int stride, Padding padding) {
  Pool2DOptions o;
  o.window_h = o.window_w = window;
  o.stride_h = o.stride_w = stride;
  o.padding = padding;
  return o;
}

struct PoolCase {
  Shape shape;
  Pool2DOptions options;
};

TEST(MaxPool, MatchesPlainLoopsAndFiniteDifferences) {
  for (const PoolCase& tc : {PoolCase{{2, 7, 7, 3}, Pool(3, 2, Padding::kSame)},
                             PoolCase{{1, 6, 5, 2}, Pool(2, 2, Padding::kValid)},
                             PoolCase{{2, 5, 6, 1}, Pool(3, 1, Padding::kSame)},
                             PoolCase{{1, 4, 4, 2}, Pool(3, 2, Padding::kValid)}}) {
    auto g = ComputePool2DGeometry(tc.shape, tc.options);
    ASSERT_TRUE(g.ok());
    const Shape out_shape = g->output_shape();
    auto x = testing::DistinctValues<double>(tc.shape.num_elements(), 1);
    std::vector<double> y(static_cast<size_t>(out_shape.num_elements()));
    CpuContext ctx;
    ASSERT_OK(MaxPool(ctx, CView(x, tc.shape), View(y, out_shape), tc.options));
    for (int64_t n = 0; n < g->batch; ++n)
      for (int64_t oh = 0; oh < g->out_h; ++oh)
        for (int64_t ow = 0; ow < g->out_w; ++ow)
          for (int64_t c = 0; c < g->in_c; ++c) {
            double best = -std::numeric_limits<double>::infinity();
            for (int64_t ih = oh * g->stride_h - g->pad_top; ih < oh * g->stride_h - g->pad_top + g->k_h; ++ih)
              for (int64_t iw = ow * g->stride_w - g->pad_left; iw < ow * g->stride_w - g->pad_left + g->k_w; ++iw)
                if (ih >= 0 && ih < g->in_h && iw >= 0 && iw < g->in_w)
                  best = std::max(best, x[static_cast<size_t>(((n * g->in_h + ih) * g->in_w + iw) * g->in_c + c)]);
            ASSERT_EQ(y[static_cast<size_t>(((n * g->out_h + oh) * g->out_w + ow) * g->in_c + c)], best);
          }
    const auto w = testing::RandomVector<double>(out_shape.num_elements(), 2);
    std::vector<double> dx(x.size());
    ASSERT_OK(MaxPoolGrad(ctx, CView(x, tc.shape), CView(w, out_shape), View(dx, tc.shape), tc.options));
    auto loss = [&] {
      EXPECT_TRUE(MaxPool(ctx, CView(x, tc.shape), View(y, out_shape), tc.options).ok());
      return testing::Dot(y, w);
    };
    testing::ExpectGradientMatches(x, dx, loss, "maxpool dx " + tc.shape.ToString(), 1e-5);
  }
}

TEST(MaxPoolGrad, TiesGoToTheFirstMaximumInWindowOrder) {
  std::vector<float> x = {1, 5, 5, 5};  // one 2×2 window, three equal maxima
  std::vector<float> dy = {2}, dx(4);
  ASSERT_OK(MaxPoolGrad(CpuContext(), CView(x, {1, 2, 2, 1}), CView(dy, {1, 1, 1, 1}),
                        View(dx, {1, 2, 2, 1}), Pool(2, 2, Padding::kValid)));
  EXPECT_EQ(dx, (std::vector<float>{0, 2, 0, 0}));
}

// The CUDA MaxPoolGrad gathers per input (pooling_math.h MaxPoolGradAt) instead of scattering
// per window; on the host the gather must give the CPU kernel's scatter bit for bit, ties and
// overlapping windows included (both add the same values in window order).
TEST(MaxPoolGrad, GatherPerInputEqualsTheCpuScatter) {
  for (const PoolCase& tc : {PoolCase{{2, 9, 8, 3}, Pool(3, 2, Padding::kSame)},
                             PoolCase{{1, 9, 9, 2}, Pool(3, 2, Padding::kValid)},
                             PoolCase{{2, 6, 7, 2}, Pool(3, 1, Padding::kSame)},
                             PoolCase{{1, 8, 6, 1}, Pool(2, 2, Padding::kValid)}}) {
    auto g = ComputePool2DGeometry(tc.shape, tc.options);
    ASSERT_TRUE(g.ok());
    const Shape out_shape = g->output_shape();
    // Few distinct values: many ties, so the first-maximum rule decides.
    auto x = testing::RandomVector<float>(tc.shape.num_elements(), 8);
    for (float& v : x) v = std::round(v * 2);
    const auto dy = testing::RandomVector<float>(out_shape.num_elements(), 9);
    std::vector<float> expected(x.size());
    ASSERT_OK(MaxPoolGrad(CpuContext(), CView(x, tc.shape), CView(dy, out_shape),
                          View(expected, tc.shape), tc.options));
    const math::PoolWindow w = internal::ToPoolWindow(*g);
    std::vector<float> gathered(x.size());
    for (int64_t n = 0; n < g->batch; ++n)
      for (int64_t ih = 0; ih < g->in_h; ++ih)
        for (int64_t iw = 0; iw < g->in_w; ++iw)
          for (int64_t c = 0; c < g->in_c; ++c) {
            gathered[static_cast<size_t>(((n * g->in_h + ih) * g->in_w + iw) * g->in_c + c)] =
                math::MaxPoolGradAt(w, x.data(), dy.data(), g->out_h, g->out_w, n, ih, iw, c);
          }
    EXPECT_EQ(gathered, expected) << tc.shape.ToString();
  }
}

TEST(MaxPool, ExplicitPaddingIsRejected) {
  std::vector<float> x(16), y(16);
  Pool2DOptions o = Pool(2, 1, Padding::kExplicit);
  EXPECT_EQ(MaxPool(CpuContext(), CView(x, {1, 4, 4, 1}), View(y, {1, 4, 4, 1}), o).code(),
            StatusCode::kInvalidInput);
}

TEST(GlobalAvgPool, MeanOverSpaceAndGradient) {
  const Shape shape{3, 4, 5, 6};
  auto x = testing::RandomVector<double>(shape.num_elements(), 3);
  std::vector<double> y(18);
  ThreadPool pool(2);
  CpuContext ctx(&pool);
  ASSERT_OK(GlobalAvgPool(ctx, CView(x, shape), View(y, {3, 6})));
  for (int64_t n = 0; n < 3; ++n)
    for (int64_t c = 0; c < 6; ++c) {
      double s = 0;
      for (int64_t p = 0; p < 20; ++p) s += x[static_cast<size_t>((n * 20 + p) * 6 + c)];
      EXPECT_NEAR(y[static_cast<size_t>(n * 6 + c)], s / 20, 1e-12);
    }
  const auto w = testing::RandomVector<double>(18, 4);
  std::vector<double> dx(x.size());
  ASSERT_OK(GlobalAvgPoolGrad(ctx, CView(w, {3, 6}), View(dx, shape)));
  auto loss = [&] {
    EXPECT_TRUE(GlobalAvgPool(ctx, CView(x, shape), View(y, {3, 6})).ok());
    return testing::Dot(y, w);
  };
  testing::ExpectGradientMatches(x, dx, loss, "global avg pool dx");
  EXPECT_EQ(GlobalAvgPool(ctx, CView(x, shape), View(y, {6, 3})).code(), StatusCode::kInvalidInput);
}

}  // namespace
}  // namespace stepscope::kernels
