// LSTMBlockCell / LSTMBlockCellGrad: plain-loop forward reference and finite differences of
// every input (x, cs_prev, h_prev, w, b) in double, through both outputs h and cs.
#include "kernels/lstm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <tuple>

#include "tests/kernels/test_util.h"

namespace stepscope::kernels {
namespace {

using testing::CView;
using testing::View;

template <typename T>
struct LstmState {
  int64_t b, in, h;
  std::vector<T> x, cs_prev, h_prev, w, bias;
  std::vector<T> i, cs, f, o, ci, co, hout, gates;

  LstmState(int64_t batch, int64_t input, int64_t hidden, uint32_t seed)
      : b(batch), in(input), h(hidden),
        x(testing::RandomVector<T>(batch * input, seed)),
        cs_prev(testing::RandomVector<T>(batch * hidden, seed + 1, -2, 2)),
        h_prev(testing::RandomVector<T>(batch * hidden, seed + 2)),
        w(testing::RandomVector<T>((input + hidden) * 4 * hidden, seed + 3, -0.7, 0.7)),
        bias(testing::RandomVector<T>(4 * hidden, seed + 4)) {
    for (auto* v : {&i, &cs, &f, &o, &ci, &co, &hout}) v->assign(static_cast<size_t>(b * h), T(0));
    gates.assign(static_cast<size_t>(b * 4 * h), T(0));
  }
  LstmBlockCellInputs<T> Inputs() const {
    return {CView(x, {b, in}), CView(cs_prev, {b, h}), CView(h_prev, {b, h}),
            CView(w, {in + h, 4 * h}), CView(bias, {4 * h})};
  }
  LstmBlockCellOutputs<T> Outputs() {
    const Shape s{b, h};
    return {View(i, s), View(cs, s), View(f, s), View(o, s), View(ci, s), View(co, s),
            View(hout, s)};
  }
  Status Forward(const LstmBlockCellOptions& options) {
    return LstmBlockCell(CpuContext(), Inputs(), Outputs(), View(gates, {b, 4 * h}), options);
  }
};

double Sigmoid(double v) { return 1 / (1 + std::exp(-v)); }

class LstmTest : public ::testing::TestWithParam<std::tuple<int, int, int>> {};

TEST_P(LstmTest, ForwardMatchesPlainLoops) {
  const auto [b, in, h] = GetParam();
  LstmState<float> s(b, in, h, 11);
  LstmBlockCellOptions options;
  options.forget_bias = 0.5;
  ASSERT_OK(s.Forward(options));
  for (int64_t r = 0; r < b; ++r) {
    for (int64_t j = 0; j < h; ++j) {
      double g[4];
      for (int q = 0; q < 4; ++q) {
        double acc = s.bias[static_cast<size_t>(q * h + j)];
        for (int64_t k = 0; k < in; ++k) acc += double{s.x[static_cast<size_t>(r * in + k)]} * s.w[static_cast<size_t>(k * 4 * h + q * h + j)];
        for (int64_t k = 0; k < h; ++k) acc += double{s.h_prev[static_cast<size_t>(r * h + k)]} * s.w[static_cast<size_t>((in + k) * 4 * h + q * h + j)];
        g[q] = acc;
      }
      const size_t e = static_cast<size_t>(r * h + j);
      const double i = Sigmoid(g[0]), ci = std::tanh(g[1]), f = Sigmoid(g[2] + 0.5),
                   o = Sigmoid(g[3]);
      const double cs = ci * i + s.cs_prev[e] * f;
      EXPECT_NEAR(s.i[e], i, 1e-5);
      EXPECT_NEAR(s.ci[e], ci, 1e-5);
      EXPECT_NEAR(s.f[e], f, 1e-5);
      EXPECT_NEAR(s.o[e], o, 1e-5);
      EXPECT_NEAR(s.cs[e], cs, 1e-5);
      EXPECT_NEAR(s.co[e], std::tanh(cs), 1e-5);
      EXPECT_NEAR(s.hout[e], std::tanh(cs) * o, 1e-5);
    }
  }
}

TEST_P(LstmTest, GradientsMatchFiniteDifferences) {
  const auto [b, in, h] = GetParam();
  LstmState<double> s(b, in, h, 21);
  LstmBlockCellOptions options;
  options.forget_bias = 1.0;
  // L = Σ wh ⊙ h + Σ wcs ⊙ cs: h_grad = wh, cs_grad = wcs.
  const auto wh = testing::RandomVector<double>(b * h, 31);
  const auto wcs = testing::RandomVector<double>(b * h, 32);
  auto loss = [&] {
    EXPECT_TRUE(s.Forward(options).ok());
    return testing::Dot(s.hout, wh) + testing::Dot(s.cs, wcs);
  };
  loss();
  const Shape bh{b, h};
  std::vector<double> cs_prev_grad(static_cast<size_t>(b * h)), dgates(static_cast<size_t>(b * 4 * h)),
      x_grad(static_cast<size_t>(b * in)), h_prev_grad(static_cast<size_t>(b * h)),
      w_grad(s.w.size(), 0.0), b_grad(s.bias.size(), 0.0);
  LstmBlockCellGradInputs<double> gin{CView(s.x, {b, in}), CView(s.cs_prev, bh), CView(s.h_prev, bh),
                                      CView(s.w, {in + h, 4 * h}), CView(s.i, bh), CView(s.f, bh),
                                      CView(s.o, bh), CView(s.ci, bh), CView(s.co, bh),
                                      CView(wcs, bh), CView(wh, bh)};
  LstmBlockCellGradOutputs<double> gout{View(cs_prev_grad, bh), View(dgates, {b, 4 * h}),
                                        View(x_grad, {b, in}), View(h_prev_grad, bh),
                                        View(w_grad, {in + h, 4 * h}), View(b_grad, {4 * h})};
  ASSERT_OK(LstmBlockCellGrad(CpuContext(), gin, gout));
  testing::ExpectGradientMatches(s.cs_prev, cs_prev_grad, loss, "cs_prev_grad");
  testing::ExpectGradientMatches(s.h_prev, h_prev_grad, loss, "h_prev_grad");
  testing::ExpectGradientMatches(s.x, x_grad, loss, "x_grad");
  testing::ExpectGradientMatches(s.w, w_grad, loss, "w_grad");
  testing::ExpectGradientMatches(s.bias, b_grad, loss, "b_grad");
  // b_grad is the column sum of dgates (TF's dicfo), and accumulation adds.
  loss();  // the checks leave the forward outputs of a perturbed input behind
  ASSERT_OK(LstmBlockCellGrad(CpuContext(), gin, gout));
  auto w_grad2 = w_grad;
  auto b_grad2 = b_grad;
  gout.w_grad = View(w_grad2, {in + h, 4 * h});
  gout.b_grad = View(b_grad2, {4 * h});
  ASSERT_OK(LstmBlockCellGrad(CpuContext(), gin, gout, /*accumulate_weight_grads=*/true));
  for (size_t k = 0; k < w_grad.size(); ++k) EXPECT_NEAR(w_grad2[k], 2 * w_grad[k], 1e-12);
  for (size_t k = 0; k < b_grad.size(); ++k) EXPECT_NEAR(b_grad2[k], 2 * b_grad[k], 1e-12);
}

INSTANTIATE_TEST_SUITE_P(Shapes, LstmTest,
                         ::testing::Values(std::make_tuple(1, 1, 1), std::make_tuple(3, 5, 4),
                                           std::make_tuple(2, 0, 3), std::make_tuple(5, 7, 6)));

TEST(Lstm, CellClipBoundsTheCellState) {
  LstmState<float> s(4, 3, 5, 41);
  for (float& v : s.cs_prev) v *= 10;  // drive |cs| past the clip
  LstmBlockCellOptions options;
  options.cell_clip = 0.8;
  ASSERT_OK(s.Forward(options));
  bool clipped = false;
  for (size_t k = 0; k < s.cs.size(); ++k) {
    EXPECT_LE(std::abs(s.cs[k]), 0.8f);
    clipped |= std::abs(s.cs[k]) == 0.8f;
    EXPECT_NEAR(s.co[k], std::tanh(s.cs[k]), 1e-6);
  }
  EXPECT_TRUE(clipped);
}

TEST(Lstm, WrongWeightShapeIsInvalidInput) {
  LstmState<float> s(2, 3, 4, 51);
  auto in = s.Inputs();
  std::vector<float> narrow(static_cast<size_t>(7 * 15));
  in.w = CView(narrow, {7, 15});
  const Status st = LstmBlockCell(CpuContext(), in, s.Outputs(), View(s.gates, {2, 16}));
  EXPECT_EQ(st.code(), StatusCode::kInvalidInput);
  EXPECT_NE(st.message().find("w has shape [7,15], expected [7,16]"), std::string::npos)
      << st.message();
}

// The unrolled model reads x and h_prev and writes h where they lie in (B, T, ·) buffers (rows
// T·width apart), and sums the two gradients reaching h as it reads them: the same bits as the
// dense cell on packed copies, with the sum made first (TF's AddN).
TEST(Lstm, StridedRowsAndTheRecurrentGradientTermGiveTheDenseCellsBits) {
  const int64_t b = 3, in = 5, h = 4, steps = 3, step = 1;
  LstmState<float> s(b, in, h, 61);
  ASSERT_OK(s.Forward(LstmBlockCellOptions{}));
  // x and h_prev as step `step` of (b, steps, ·) buffers; h written into another.
  const auto spread = [&](const std::vector<float>& dense, int64_t width) {
    std::vector<float> big(static_cast<size_t>(b * steps * width), 99.0f);
    for (int64_t r = 0; r < b; ++r) {
      for (int64_t c = 0; c < width; ++c) {
        big[static_cast<size_t>((r * steps + step) * width + c)] = dense[static_cast<size_t>(r * width + c)];
      }
    }
    return big;
  };
  const auto x_big = spread(s.x, in), h_prev_big = spread(s.h_prev, h);
  std::vector<float> h_big(static_cast<size_t>(b * steps * h), -5.0f);
  LstmState<float> strided(b, in, h, 61);
  auto ins = strided.Inputs();
  ins.x = TensorView<const float>(x_big.data() + step * in, {b, in});
  ins.x_ld = steps * in;
  ins.h_prev = TensorView<const float>(h_prev_big.data() + step * h, {b, h});
  ins.h_prev_ld = steps * h;
  auto outs = strided.Outputs();
  outs.h = TensorView<float>(h_big.data() + step * h, {b, h});
  outs.h_ld = steps * h;
  ASSERT_OK(LstmBlockCell(CpuContext(), ins, outs, View(strided.gates, {b, 4 * h}), {}));
  EXPECT_EQ(strided.cs, s.cs);
  for (int64_t r = 0; r < b; ++r) {
    for (int64_t t = 0; t < steps; ++t) {
      for (int64_t c = 0; c < h; ++c) {
        const float got = h_big[static_cast<size_t>((r * steps + t) * h + c)];
        EXPECT_EQ(got, t == step ? s.hout[static_cast<size_t>(r * h + c)] : -5.0f);
      }
    }
  }
  // Backward: h_grad strided, plus the recurrent term, against the dense sum.
  const Shape bh{b, h};
  const auto above = testing::RandomVector<float>(b * h, 62), recurrent = testing::RandomVector<float>(b * h, 63);
  const auto cs_grad = testing::RandomVector<float>(b * h, 64);
  std::vector<float> summed(above.size());
  for (size_t k = 0; k < above.size(); ++k) summed[k] = above[k] + recurrent[k];
  const auto above_big = spread(above, h);
  LstmBlockCellGradInputs<float> dense_in{CView(s.x, {b, in}), CView(s.cs_prev, bh), CView(s.h_prev, bh),
                                          CView(s.w, {in + h, 4 * h}), CView(s.i, bh), CView(s.f, bh),
                                          CView(s.o, bh), CView(s.ci, bh), CView(s.co, bh),
                                          CView(cs_grad, bh), CView(summed, bh)};
  LstmBlockCellGradInputs<float> strided_in = dense_in;
  strided_in.h_grad = TensorView<const float>(above_big.data() + step * h, bh);
  strided_in.h_grad_ld = steps * h;
  const auto recurrent_big = spread(recurrent, h);
  strided_in.h_grad_recurrent = TensorView<const float>(recurrent_big.data() + step * h, bh);
  strided_in.h_grad_recurrent_ld = steps * h;
  std::vector<float> dcs1(static_cast<size_t>(b * h)), dcs2(dcs1.size()),
      dg1(static_cast<size_t>(b * 4 * h)), dg2(dg1.size());
  LstmBlockCellGradOutputs<float> out1, out2;
  out1.cs_prev_grad = View(dcs1, bh);
  out1.dgates = View(dg1, {b, 4 * h});
  out2.cs_prev_grad = View(dcs2, bh);
  out2.dgates = View(dg2, {b, 4 * h});
  ASSERT_OK(LstmBlockCellGrad(CpuContext(), dense_in, out1));
  ASSERT_OK(LstmBlockCellGrad(CpuContext(), strided_in, out2));
  EXPECT_EQ(dg2, dg1);
  EXPECT_EQ(dcs2, dcs1);
  // A stride shorter than the row is refused.
  ins.x_ld = in - 1;
  EXPECT_EQ(LstmBlockCell(CpuContext(), ins, outs, View(strided.gates, {b, 4 * h}), {}).code(),
            StatusCode::kInvalidInput);
}

}  // namespace
}  // namespace stepscope::kernels
