// Our CPU kernels against TensorFlow's, on the fixtures in tests/data/kernels (written by
// scripts/fixtures/make_kernel_fixtures.py): LSTMBlockCell/Grad and Conv2D → FusedBatchNorm
// forward and backward. Each fixture states its tolerance.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/batch_norm.h"
#include "kernels/conv2d.h"
#include "kernels/lstm.h"
#include "tests/kernels/test_util.h"

namespace stepscope::kernels {
namespace {

using testing::CView;
using testing::View;

struct Fixture {
  std::map<std::string, std::string> attrs;
  std::map<std::string, std::pair<Shape, std::vector<float>>> tensors;
  double atol = 0, rtol = 0;

  const std::vector<float>& values(const std::string& name) const { return tensors.at(name).second; }
  Shape shape(const std::string& name) const { return tensors.at(name).first; }
  double attr(const std::string& name) const { return std::stod(attrs.at(name)); }
  void Expect(const std::vector<float>& ours, const std::string& name) const {
    SCOPED_TRACE(name);
    ASSERT_TRUE(tensors.count(name)) << name;
    testing::ExpectAllNear(ours, values(name), atol, rtol, name);
  }
};

// Parses the format described in make_kernel_fixtures.py; fails the test on malformed input.
Fixture Load(const std::string& file) {
  Fixture fx;
  const std::string path = std::string(STEPSCOPE_TEST_DATA) + "/kernels/" + file;
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "cannot open " << path;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ls(line);
    std::string kind, name;
    ls >> kind;
    if (kind == "attr") {
      std::string value;
      ls >> name >> value;
      fx.attrs[name] = value;
    } else if (kind == "tolerance") {
      ls >> fx.atol >> fx.rtol;
    } else if (kind == "tensor") {
      int rank = 0;
      ls >> name >> rank;
      Shape shape;
      shape.rank = rank;
      for (int d = 0; d < rank; ++d) ls >> shape.dims[static_cast<size_t>(d)];
      std::string data;
      std::getline(in, data);
      std::istringstream ds(data);
      std::vector<float> v;
      for (float x; ds >> x;) v.push_back(x);
      EXPECT_EQ(static_cast<int64_t>(v.size()), shape.num_elements()) << path << ": " << name;
      fx.tensors[name] = {shape, std::move(v)};
    } else {
      ADD_FAILURE() << path << ": unknown line kind '" << kind << "'";
    }
  }
  EXPECT_GT(fx.atol + fx.rtol, 0.0) << path << " states no tolerance";
  return fx;
}

TEST(TensorFlowFixture, LstmBlockCellForwardAndBackward) {
  const Fixture fx = Load("lstm_block_cell.txt");
  ASSERT_FALSE(fx.tensors.empty());
  const Shape xs = fx.shape("x"), bh = fx.shape("cs_prev");
  const int64_t b = xs[0], in = xs[1], h = bh[1];
  LstmBlockCellOptions options;
  options.forget_bias = fx.attr("forget_bias");
  options.cell_clip = fx.attr("cell_clip");
  std::vector<std::vector<float>> out(7, std::vector<float>(static_cast<size_t>(b * h)));
  std::vector<float> gates(static_cast<size_t>(b * 4 * h));
  const LstmBlockCellInputs<float> ins{CView(fx.values("x"), xs), CView(fx.values("cs_prev"), bh),
                                       CView(fx.values("h_prev"), bh), CView(fx.values("w"), fx.shape("w")),
                                       CView(fx.values("b"), fx.shape("b"))};
  ThreadPool pool(2);
  CpuContext ctx(&pool);
  ASSERT_OK(LstmBlockCell(ctx, ins,
                          LstmBlockCellOutputs<float>{View(out[0], bh), View(out[1], bh), View(out[2], bh),
                                                      View(out[3], bh), View(out[4], bh), View(out[5], bh),
                                                      View(out[6], bh)},
                          View(gates, {b, 4 * h}), options));
  const char* names[] = {"i", "cs", "f", "o", "ci", "co", "h"};
  for (size_t k = 0; k < 7; ++k) fx.Expect(out[k], names[k]);

  std::vector<float> cs_prev_grad(static_cast<size_t>(b * h)), dgates(gates.size()),
      x_grad(static_cast<size_t>(b * in)), h_prev_grad(static_cast<size_t>(b * h)),
      w_grad(fx.values("w").size()), b_grad(fx.values("b").size());
  // Gradient from TF's own forward outputs, as LSTMBlockCellGrad receives them.
  const LstmBlockCellGradInputs<float> gin{ins.x, ins.cs_prev, ins.h_prev, ins.w,
                                           CView(fx.values("i"), bh), CView(fx.values("f"), bh),
                                           CView(fx.values("o"), bh), CView(fx.values("ci"), bh),
                                           CView(fx.values("co"), bh), CView(fx.values("cs_grad"), bh),
                                           CView(fx.values("h_grad"), bh)};
  ASSERT_OK(LstmBlockCellGrad(ctx, gin,
                              LstmBlockCellGradOutputs<float>{
                                  View(cs_prev_grad, bh), View(dgates, {b, 4 * h}), View(x_grad, {b, in}),
                                  View(h_prev_grad, bh), View(w_grad, fx.shape("w")), View(b_grad, fx.shape("b"))}));
  fx.Expect(cs_prev_grad, "cs_prev_grad");
  fx.Expect(dgates, "dicfo");
  fx.Expect(x_grad, "x_grad");
  fx.Expect(h_prev_grad, "h_prev_grad");
  fx.Expect(w_grad, "w_grad");
  fx.Expect(b_grad, "b_grad");
}

class ConvBatchNormFixture : public ::testing::TestWithParam<std::string> {};

TEST_P(ConvBatchNormFixture, ForwardAndBackwardMatchTensorFlow) {
  const Fixture fx = Load(GetParam());
  ASSERT_FALSE(fx.tensors.empty());
  Conv2DOptions co;
  co.stride_h = static_cast<int>(fx.attr("stride_h"));
  co.stride_w = static_cast<int>(fx.attr("stride_w"));
  const std::string padding = fx.attrs.at("padding");
  co.padding = padding == "SAME" ? Padding::kSame : padding == "VALID" ? Padding::kValid : Padding::kExplicit;
  if (co.padding == Padding::kExplicit) {
    co.pad_top = static_cast<int>(fx.attr("pad_top"));
    co.pad_bottom = static_cast<int>(fx.attr("pad_bottom"));
    co.pad_left = static_cast<int>(fx.attr("pad_left"));
    co.pad_right = static_cast<int>(fx.attr("pad_right"));
  }
  const Shape xs = fx.shape("x"), fs = fx.shape("filter"), ys = fx.shape("conv_y");
  const int64_t c = fs[3];
  ThreadPool pool(2);
  CpuContext ctx(&pool);

  std::vector<float> conv_y(static_cast<size_t>(ys.num_elements()));
  ASSERT_OK(Conv2D(ctx, CView(fx.values("x"), xs), CView(fx.values("filter"), fs), View(conv_y, ys), co));
  fx.Expect(conv_y, "conv_y");

  BatchNormOptions bo;
  bo.epsilon = fx.attr("epsilon");
  bo.exponential_avg_factor = fx.attr("exponential_avg_factor");
  std::vector<float> rm = fx.values("running_mean"), rv = fx.values("running_var");
  std::vector<float> bn_y(conv_y.size()), saved_mean(static_cast<size_t>(c)), saved_inv_std(static_cast<size_t>(c));
  ASSERT_OK(FusedBatchNorm<float>(ctx, {CView(conv_y, ys), CView(fx.values("scale"), {c}), CView(fx.values("offset"), {c}),
                                        View(rm, {c}), View(rv, {c}), View(bn_y, ys), View(saved_mean, {c}),
                                        View(saved_inv_std, {c})}, bo));
  fx.Expect(bn_y, "bn_y");
  fx.Expect(rm, "new_running_mean");
  fx.Expect(rv, "new_running_var");

  std::vector<float> dconv_y(conv_y.size()), dscale(static_cast<size_t>(c)), doffset(static_cast<size_t>(c));
  ASSERT_OK(FusedBatchNormGrad<float>(ctx, {CView(fx.values("dy"), ys), CView(conv_y, ys), CView(fx.values("scale"), {c}),
                                            CView(saved_mean, {c}), CView(saved_inv_std, {c}), View(dconv_y, ys),
                                            View(dscale, {c}), View(doffset, {c})}, bo));
  fx.Expect(dconv_y, "dconv_y");
  fx.Expect(dscale, "dscale");
  fx.Expect(doffset, "doffset");

  std::vector<float> dx(fx.values("x").size()), dfilter(fx.values("filter").size());
  ASSERT_OK(Conv2DBackpropInput(ctx, CView(fx.values("filter"), fs), CView(dconv_y, ys), View(dx, xs), co));
  ASSERT_OK(Conv2DBackpropFilter(ctx, CView(fx.values("x"), xs), CView(dconv_y, ys), View(dfilter, fs), co));
  fx.Expect(dx, "dx");
  fx.Expect(dfilter, "dfilter");

  // Inference mode from the original running statistics.
  BatchNormOptions inf = bo;
  inf.is_training = false;
  std::vector<float> rm0 = fx.values("running_mean"), rv0 = fx.values("running_var");
  std::vector<float> y_inf(conv_y.size());
  ASSERT_OK(FusedBatchNorm<float>(ctx, {CView(conv_y, ys), CView(fx.values("scale"), {c}), CView(fx.values("offset"), {c}),
                                        View(rm0, {c}), View(rv0, {c}), View(y_inf, ys), View(saved_mean, {c}),
                                        View(saved_inv_std, {c})}, inf));
  fx.Expect(y_inf, "bn_inference_y");
  ASSERT_OK(FusedBatchNormGrad<float>(ctx, {CView(fx.values("dy"), ys), CView(conv_y, ys), CView(fx.values("scale"), {c}),
                                            CView(saved_mean, {c}), CView(saved_inv_std, {c}), View(dconv_y, ys),
                                            View(dscale, {c}), View(doffset, {c})}, inf));
  fx.Expect(dconv_y, "dconv_y_inference");
  fx.Expect(dscale, "dscale_inference");
  fx.Expect(doffset, "doffset_inference");
}

INSTANTIATE_TEST_SUITE_P(Cases, ConvBatchNormFixture,
                         ::testing::Values("conv_bn_same_s2.txt", "conv_bn_explicit_s21.txt",
                                           "conv_bn_valid_1x1.txt"),
                         [](const auto& param_info) {
                           std::string n = param_info.param;
                           return n.substr(8, n.size() - 12);
                         });

}  // namespace
}  // namespace stepscope::kernels
