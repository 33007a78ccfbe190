// Conv2D and its gradients: geometry against TF's rules, plain-loop references (forward and
// both backward ops) in float, finite differences in double; odd sizes, strides, SAME/VALID/
// explicit padding, 1×1, windows larger than the input, and several im2col slabs.
#include "kernels/conv2d.h"

#include <gtest/gtest.h>

#include "tests/kernels/test_util.h"

namespace stepscope::kernels {
namespace {

using testing::CView;
using testing::View;

struct ConvCase {
  int64_t n, h, w, c, kh, kw, oc;
  Conv2DOptions options;
  std::string name;
};

Conv2DOptions Opts(int stride_h, int stride_w, Padding padding, int top = 0, int bottom = 0,
                   int left = 0, int right = 0) {
  Conv2DOptions o;
  o.stride_h = stride_h;
  o.stride_w = stride_w;
  o.padding = padding;
  o.pad_top = top;
  o.pad_bottom = bottom;
  o.pad_left = left;
  o.pad_right = right;
  return o;
}

std::vector<ConvCase> Cases() {
  return {
      {2, 5, 5, 3, 3, 3, 4, Opts(1, 1, Padding::kSame), "same_s1"},
      {1, 7, 6, 2, 3, 3, 3, Opts(2, 2, Padding::kSame), "same_s2_odd"},
      {2, 6, 7, 3, 2, 3, 2, Opts(2, 1, Padding::kValid), "valid_s21"},
      {1, 5, 5, 2, 3, 3, 2, Opts(2, 2, Padding::kExplicit, 1, 2, 0, 1), "explicit"},
      {2, 4, 4, 3, 1, 1, 5, Opts(1, 1, Padding::kValid), "pointwise"},
      {1, 8, 7, 2, 1, 1, 3, Opts(2, 2, Padding::kValid), "pointwise_s2"},
      {1, 3, 3, 1, 5, 5, 2, Opts(1, 1, Padding::kSame), "window_larger_than_input"},
      {3, 9, 9, 2, 7, 7, 2, Opts(2, 2, Padding::kSame), "resnet_stem_like"},
      {1, 6, 5, 2, 3, 2, 3, Opts(1, 1, Padding::kValid), "valid_s1"},
      // Padding wider than the window: BackpropInput falls back from the flipped-filter route.
      {1, 4, 4, 1, 2, 2, 2, Opts(1, 1, Padding::kExplicit, 2, 0, 1, 3), "explicit_s1_wide_pad"},
  };
}

// Plain loops over the definition: out[n,oh,ow,o] = Σ in[n,ih,iw,c]·f[kh,kw,c,o].
template <typename Fn>
void ForEachTap(const Conv2DGeometry& g, Fn fn) {
  for (int64_t n = 0; n < g.batch; ++n)
    for (int64_t oh = 0; oh < g.out_h; ++oh)
      for (int64_t ow = 0; ow < g.out_w; ++ow)
        for (int64_t kh = 0; kh < g.k_h; ++kh)
          for (int64_t kw = 0; kw < g.k_w; ++kw) {
            const int64_t ih = oh * g.stride_h - g.pad_top + kh;
            const int64_t iw = ow * g.stride_w - g.pad_left + kw;
            if (ih < 0 || ih >= g.in_h || iw < 0 || iw >= g.in_w) continue;
            for (int64_t c = 0; c < g.in_c; ++c)
              for (int64_t o = 0; o < g.out_c; ++o) {
                fn(((n * g.in_h + ih) * g.in_w + iw) * g.in_c + c,
                   ((kh * g.k_w + kw) * g.in_c + c) * g.out_c + o,
                   ((n * g.out_h + oh) * g.out_w + ow) * g.out_c + o);
              }
          }
}

TEST(Conv2DGeometry, FollowsTensorFlowPaddingRules) {
  auto same = ComputeConv2DGeometry({1, 7, 6, 2}, {3, 3, 2, 1}, Opts(2, 2, Padding::kSame));
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(same->out_h, 4);  // ceil(7/2)
  EXPECT_EQ(same->out_w, 3);  // ceil(6/2)
  EXPECT_EQ(same->pad_top, 1);   // total (4-1)*2+3-7 = 2
  EXPECT_EQ(same->pad_left, 0);  // total (3-1)*2+3-6 = 1: the odd pixel goes right
  auto resnet = ComputeConv2DGeometry({8, 224, 224, 3}, {7, 7, 3, 64}, Opts(2, 2, Padding::kSame));
  ASSERT_TRUE(resnet.ok());
  EXPECT_EQ(resnet->out_h, 112);
  EXPECT_EQ(resnet->pad_top, 2);
  auto valid = ComputeConv2DGeometry({1, 6, 7, 3}, {2, 3, 3, 2}, Opts(2, 1, Padding::kValid));
  ASSERT_TRUE(valid.ok());
  EXPECT_EQ(valid->out_h, 3);
  EXPECT_EQ(valid->out_w, 5);
  auto expl = ComputeConv2DGeometry({1, 5, 5, 2}, {3, 3, 2, 2},
                                    Opts(2, 2, Padding::kExplicit, 1, 2, 0, 1));
  ASSERT_TRUE(expl.ok());
  EXPECT_EQ(expl->out_h, 3);  // (5+3-3)/2+1
  EXPECT_EQ(expl->out_w, 2);  // (5+1-3)/2+1
  auto bad = ComputeConv2DGeometry({1, 5, 5, 2}, {3, 3, 4, 2}, Opts(1, 1, Padding::kValid));
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidInput);
  EXPECT_NE(bad.status().message().find("input channels"), std::string::npos);
}

class Conv2DTest : public ::testing::TestWithParam<ConvCase> {};

TEST_P(Conv2DTest, ForwardAndBackwardMatchPlainLoops) {
  const ConvCase& tc = GetParam();
  const Shape in_shape{tc.n, tc.h, tc.w, tc.c}, f_shape{tc.kh, tc.kw, tc.c, tc.oc};
  auto g = ComputeConv2DGeometry(in_shape, f_shape, tc.options);
  ASSERT_TRUE(g.ok()) << g.status().message();
  const Shape out_shape = g->output_shape();
  auto input = testing::RandomVector<float>(in_shape.num_elements(), 1);
  auto filter = testing::RandomVector<float>(f_shape.num_elements(), 2);
  auto dout = testing::RandomVector<float>(out_shape.num_elements(), 3);
  std::vector<double> out_ref(static_cast<size_t>(out_shape.num_elements())),
      din_ref(input.size()), df_ref(filter.size());
  ForEachTap(*g, [&](int64_t i, int64_t f, int64_t o) {
    const auto si = static_cast<size_t>(i), sf = static_cast<size_t>(f), so = static_cast<size_t>(o);
    out_ref[so] += double{input[si]} * filter[sf];
    din_ref[si] += double{filter[sf]} * dout[so];
    df_ref[sf] += double{input[si]} * dout[so];
  });
  ThreadPool pool(2);
  CpuContext ctx(&pool);
  std::vector<float> out(out_ref.size(), 9.0f), din(input.size(), 9.0f), df(filter.size(), 9.0f);
  ASSERT_OK(Conv2D(ctx, CView(input, in_shape), CView(filter, f_shape), View(out, out_shape), tc.options));
  ASSERT_OK(Conv2DBackpropInput(ctx, CView(filter, f_shape), CView(dout, out_shape), View(din, in_shape), tc.options));
  ASSERT_OK(Conv2DBackpropFilter(ctx, CView(input, in_shape), CView(dout, out_shape), View(df, f_shape), tc.options));
  testing::ExpectAllNear(out, out_ref, 1e-4, 1e-4, tc.name + " output");
  testing::ExpectAllNear(din, din_ref, 1e-4, 1e-4, tc.name + " dinput");
  testing::ExpectAllNear(df, df_ref, 1e-4, 1e-4, tc.name + " dfilter");
  // accumulate adds to the filter gradient already there.
  ASSERT_OK(Conv2DBackpropFilter(ctx, CView(input, in_shape), CView(dout, out_shape), View(df, f_shape), tc.options, true));
  for (double& v : df_ref) v *= 2;
  testing::ExpectAllNear(df, df_ref, 2e-4, 1e-4, tc.name + " dfilter accumulated");
}

TEST_P(Conv2DTest, GradientsMatchFiniteDifferences) {
  const ConvCase& tc = GetParam();
  const Shape in_shape{tc.n, tc.h, tc.w, tc.c}, f_shape{tc.kh, tc.kw, tc.c, tc.oc};
  auto g = ComputeConv2DGeometry(in_shape, f_shape, tc.options);
  ASSERT_TRUE(g.ok());
  const Shape out_shape = g->output_shape();
  auto input = testing::RandomVector<double>(in_shape.num_elements(), 4);
  auto filter = testing::RandomVector<double>(f_shape.num_elements(), 5);
  const auto w = testing::RandomVector<double>(out_shape.num_elements(), 6);
  std::vector<double> out(static_cast<size_t>(out_shape.num_elements()));
  CpuContext ctx;
  auto loss = [&] {
    EXPECT_TRUE(Conv2D(ctx, CView(input, in_shape), CView(filter, f_shape), View(out, out_shape), tc.options).ok());
    return testing::Dot(out, w);
  };
  std::vector<double> din(input.size()), df(filter.size());
  ASSERT_OK(Conv2DBackpropInput(ctx, CView(filter, f_shape), CView(w, out_shape), View(din, in_shape), tc.options));
  ASSERT_OK(Conv2DBackpropFilter(ctx, CView(input, in_shape), CView(w, out_shape), View(df, f_shape), tc.options));
  testing::ExpectGradientMatches(input, din, loss, tc.name + " dinput");
  testing::ExpectGradientMatches(filter, df, loss, tc.name + " dfilter");
}

INSTANTIATE_TEST_SUITE_P(Cases, Conv2DTest, ::testing::ValuesIn(Cases()),
                         [](const auto& param_info) { return param_info.param.name; });

// 30 images of 32×32×16 with a 3×3 filter need 30·1024·144 column entries, more than 4 Mi (the
// CPU slab budget is at most that), so the slab loop and its filter-gradient accumulation run.
TEST(Conv2D, ManySlabsMatchPlainLoops) {
  const Shape in_shape{30, 32, 32, 16}, f_shape{3, 3, 16, 8};
  const Conv2DOptions o = Opts(1, 1, Padding::kSame);
  auto g = ComputeConv2DGeometry(in_shape, f_shape, o);
  ASSERT_TRUE(g.ok());
  ASSERT_GT(g->batch * g->out_h * g->out_w * 3 * 3 * 16, int64_t{1} << 22);
  auto input = testing::RandomVector<float>(in_shape.num_elements(), 7);
  auto filter = testing::RandomVector<float>(f_shape.num_elements(), 8);
  auto dout = testing::RandomVector<float>(g->output_shape().num_elements(), 9);
  std::vector<double> out_ref(dout.size()), df_ref(filter.size());
  ForEachTap(*g, [&](int64_t i, int64_t f, int64_t oo) {
    out_ref[static_cast<size_t>(oo)] += double{input[static_cast<size_t>(i)]} * filter[static_cast<size_t>(f)];
    df_ref[static_cast<size_t>(f)] += double{input[static_cast<size_t>(i)]} * dout[static_cast<size_t>(oo)];
  });
  ThreadPool pool(1);
  CpuContext ctx(&pool);
  std::vector<float> out(dout.size()), df(filter.size());
  ASSERT_OK(Conv2D(ctx, CView(input, in_shape), CView(filter, f_shape), View(out, g->output_shape()), o));
  ASSERT_OK(Conv2DBackpropFilter(ctx, CView(input, in_shape), CView(dout, g->output_shape()), View(df, f_shape), o));
  testing::ExpectAllNear(out, out_ref, 1e-4, 1e-4, "output");
  testing::ExpectAllNear(df, df_ref, 1e-2, 1e-4, "dfilter");
}

TEST(Conv2D, WrongOutputShapeIsInvalidInput) {
  std::vector<float> in(2 * 5 * 5 * 3), f(3 * 3 * 3 * 4), out(2 * 5 * 5 * 4);
  const Status s = Conv2D(CpuContext(), CView(in, {2, 5, 5, 3}), CView(f, {3, 3, 3, 4}),
                          View(out, {2, 5, 5, 4}), Opts(1, 1, Padding::kValid));
  EXPECT_EQ(s.code(), StatusCode::kInvalidInput);
  EXPECT_NE(s.message().find("expected [2,3,3,4]"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace stepscope::kernels
