// SparseSoftmaxCrossEntropyWithLogits: reference values, stability, finite differences.
#include "kernels/softmax_xent.h"

#include <gtest/gtest.h>

#include <cmath>

#include "tests/kernels/test_util.h"

namespace stepscope::kernels {
namespace {

using testing::CView;
using testing::View;

TEST(SoftmaxXent, MatchesPlainLoopsAndGradient) {
  for (const auto& [b, c] : {std::pair<int64_t, int64_t>{1, 1}, {3, 5}, {4, 129}}) {
    auto logits = testing::RandomVector<double>(b * c, 1, -3, 3);
    std::vector<int32_t> labels(static_cast<size_t>(b));
    for (int64_t r = 0; r < b; ++r) labels[static_cast<size_t>(r)] = static_cast<int32_t>((r * 7 + 2) % c);
    std::vector<double> loss(static_cast<size_t>(b)), backprop(static_cast<size_t>(b * c));
    CpuContext ctx;
    ASSERT_OK(SparseSoftmaxCrossEntropyWithLogits(ctx, CView(logits, {b, c}), CView(labels, {b}),
                                                  View(loss, {b}), View(backprop, {b, c})));
    for (int64_t r = 0; r < b; ++r) {
      double z = 0;
      for (int64_t k = 0; k < c; ++k) z += std::exp(logits[static_cast<size_t>(r * c + k)]);
      EXPECT_NEAR(loss[static_cast<size_t>(r)],
                  std::log(z) - logits[static_cast<size_t>(r * c + labels[static_cast<size_t>(r)])], 1e-12);
    }
    // L = Σ_b wb · loss_b; dlogits through SparseSoftmaxCrossEntropyGrad.
    const auto wb = testing::RandomVector<double>(b, 2);
    std::vector<double> dlogits(static_cast<size_t>(b * c));
    ASSERT_OK(SparseSoftmaxCrossEntropyGrad(ctx, CView(backprop, {b, c}), CView(wb, {b}),
                                            View(dlogits, {b, c})));
    auto fn = [&] {
      EXPECT_TRUE(SparseSoftmaxCrossEntropyWithLogits(ctx, CView(logits, {b, c}), CView(labels, {b}),
                                                      View(loss, {b}), View(backprop, {b, c}))
                      .ok());
      return testing::Dot(loss, wb);
    };
    if (c > 1) testing::ExpectGradientMatches(logits, dlogits, fn, "dlogits");
  }
}

TEST(SoftmaxXent, HugeLogitsGiveFiniteLossAndGradient) {
  std::vector<float> logits = {1e4f, -1e4f, 9990.0f, 3e4f, 3e4f, -5.0f};
  std::vector<int32_t> labels = {2, 0};
  std::vector<float> loss(2), backprop(6);
  ASSERT_OK(SparseSoftmaxCrossEntropyWithLogits(CpuContext(), CView(logits, {2, 3}),
                                                CView(labels, {2}), View(loss, {2}),
                                                View(backprop, {2, 3})));
  EXPECT_NEAR(loss[0], 10.0f, 1e-3);           // log(1 + e^-10 + e^-2e4) + 10
  EXPECT_NEAR(loss[1], std::log(2.0f), 1e-6);  // two equal maxima
  for (float v : backprop) EXPECT_TRUE(std::isfinite(v));
  EXPECT_NEAR(backprop[3], -0.5f, 1e-6);
  EXPECT_NEAR(backprop[4], 0.5f, 1e-6);
}

TEST(SoftmaxXent, LabelOutOfRangeIsInvalidInput) {
  std::vector<float> logits(6), loss(2), backprop(6);
  std::vector<int32_t> labels = {1, 3};
  const Status s = SparseSoftmaxCrossEntropyWithLogits(CpuContext(), CView(logits, {2, 3}),
                                                       CView(labels, {2}), View(loss, {2}),
                                                       View(backprop, {2, 3}));
  EXPECT_EQ(s.code(), StatusCode::kInvalidInput);
  EXPECT_NE(s.message().find("labels[1] = 3"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace stepscope::kernels
