// CUDA convolutions, LSTM cells and GEMMs against the CPU reference, at small shapes and at the
// real layer shapes of the two reference models (ResNet-50, PTB LSTM small/medium), plus the
// launch paths only large sizes take: the grid-stride loop and convolutions split into slabs.
// Tolerances and NaN-filled outputs: tests/kernels/cuda_test_util.h.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "kernels/conv2d.h"
#include "kernels/cuda/cuda_context.h"
#include "kernels/elementwise.h"
#include "kernels/lstm.h"
#include "kernels/matmul.h"
#include "kernels/pad.h"
#include "kernels/pooling.h"
#include "kernels/softmax_xent.h"
#include "tests/kernels/cuda_test_util.h"
#include "tests/kernels/test_util.h"

namespace stepscope::kernels {
namespace {

using testing::CView;
using testing::DeviceVector;
using testing::ExpectClose;
using testing::ExpectExact;
using testing::kElementwiseTol;
using testing::kReductionTol;
using testing::NaNs;
using testing::RandomVector;
using testing::View;

class CudaLayerShapesTest : public testing::CudaKernelsTest {
 protected:
  // Conv2D, Conv2DBackpropInput, and Conv2DBackpropFilter both overwriting and adding to random
  // values, against the CPU.
  void ExpectConvMatchesCpu(const Shape& in_shape, const Shape& f_shape, const Conv2DOptions& o,
                            const std::string& name) {
    auto g = ComputeConv2DGeometry(in_shape, f_shape, o);
    ASSERT_TRUE(g.ok()) << g.status().message();
    const Shape out_shape = g->output_shape();
    const int64_t in_n = in_shape.num_elements(), f_n = f_shape.num_elements(),
                  out_n = out_shape.num_elements();
    const auto x = RandomVector<float>(in_n, 1), f = RandomVector<float>(f_n, 2),
               dy = RandomVector<float>(out_n, 3), df_start = RandomVector<float>(f_n, 4);
    std::vector<float> y(static_cast<size_t>(out_n)), dx(static_cast<size_t>(in_n)),
        df(static_cast<size_t>(f_n));
    auto df_acc = df_start;
    ASSERT_OK(Conv2D(cpu_, CView(x, in_shape), CView(f, f_shape), View(y, out_shape), o));
    ASSERT_OK(Conv2DBackpropInput(cpu_, CView(f, f_shape), CView(dy, out_shape), View(dx, in_shape), o));
    ASSERT_OK(Conv2DBackpropFilter(cpu_, CView(x, in_shape), CView(dy, out_shape), View(df, f_shape), o));
    ASSERT_OK(Conv2DBackpropFilter(cpu_, CView(x, in_shape), CView(dy, out_shape), View(df_acc, f_shape), o, true));
    DeviceVector<float> gx(x), gf(f), gdy(dy), gy(NaNs(out_n)), gdx(NaNs(in_n)), gdf(NaNs(f_n)),
        gdf_acc(df_start);
    ASSERT_OK(Conv2D(*ctx_, gx.cview(in_shape), gf.cview(f_shape), gy.view(out_shape), o));
    ASSERT_OK(Conv2DBackpropInput(*ctx_, gf.cview(f_shape), gdy.cview(out_shape), gdx.view(in_shape), o));
    ASSERT_OK(Conv2DBackpropFilter(*ctx_, gx.cview(in_shape), gdy.cview(out_shape), gdf.view(f_shape), o));
    ASSERT_OK(Conv2DBackpropFilter(*ctx_, gx.cview(in_shape), gdy.cview(out_shape), gdf_acc.view(f_shape), o, true));
    Sync();
    ExpectClose(gy.ToHost(), y, kReductionTol, "Conv2D " + name);
    ExpectClose(gdx.ToHost(), dx, kReductionTol, "Conv2DBackpropInput " + name);
    ExpectClose(gdf.ToHost(), df, kReductionTol, "Conv2DBackpropFilter " + name);
    ExpectClose(gdf_acc.ToHost(), df_acc, kReductionTol, "Conv2DBackpropFilter accumulate " + name);
  }

  // LstmBlockCell, then LstmBlockCellGrad from the CPU's forward values, against the CPU.
  // Weights are uniform in ±2/sqrt(I + H), about PTB's init for its sizes, so that the gates
  // do not saturate.
  void ExpectLstmCellMatchesCpu(int64_t b, int64_t in, int64_t h,
                                const LstmBlockCellOptions& options, bool accumulate,
                                const std::string& name) {
    const Shape bh{b, h}, bx{b, in}, bg{b, 4 * h}, ws{in + h, 4 * h}, bs{4 * h};
    const double w_range = 2 / std::sqrt(static_cast<double>(in + h));
    const auto x = RandomVector<float>(b * in, 1), cs_prev = RandomVector<float>(b * h, 2),
               h_prev = RandomVector<float>(b * h, 3),
               w = RandomVector<float>((in + h) * 4 * h, 4, -w_range, w_range),
               bias = RandomVector<float>(4 * h, 5), cs_grad = RandomVector<float>(b * h, 6),
               h_grad = RandomVector<float>(b * h, 7);
    const char* names[7] = {"i", "cs", "f", "o", "ci", "co", "h"};
    std::vector<std::vector<float>> out(7, std::vector<float>(static_cast<size_t>(b * h)));
    std::vector<float> gates(static_cast<size_t>(b * 4 * h));
    LstmBlockCellOutputs<float> co{View(out[0], bh), View(out[1], bh), View(out[2], bh), View(out[3], bh),
                                   View(out[4], bh), View(out[5], bh), View(out[6], bh)};
    LstmBlockCellInputs<float> ci{CView(x, bx), CView(cs_prev, bh), CView(h_prev, bh), CView(w, ws), CView(bias, bs)};
    ASSERT_OK(LstmBlockCell(cpu_, ci, co, View(gates, bg), options));

    DeviceVector<float> gx(x), gcs(cs_prev), gh(h_prev), gw(w), gbias(bias), ggates(NaNs(b * 4 * h));
    std::vector<std::unique_ptr<DeviceVector<float>>> gout;
    for (int k = 0; k < 7; ++k) gout.push_back(std::make_unique<DeviceVector<float>>(NaNs(b * h)));
    LstmBlockCellOutputs<float> go{gout[0]->view(bh), gout[1]->view(bh), gout[2]->view(bh), gout[3]->view(bh),
                                   gout[4]->view(bh), gout[5]->view(bh), gout[6]->view(bh)};
    LstmBlockCellInputs<float> gi{gx.cview(bx), gcs.cview(bh), gh.cview(bh), gw.cview(ws), gbias.cview(bs)};
    ASSERT_OK(LstmBlockCell(*ctx_, gi, go, ggates.view(bg), options));
    Sync();
    for (size_t k = 0; k < 7; ++k) {
      ExpectClose(gout[k]->ToHost(), out[k], kReductionTol, "LstmBlockCell " + std::string(names[k]) + " " + name);
    }

    // The gradient, from the CPU's forward values on both devices.
    auto w_grad = accumulate ? RandomVector<float>((in + h) * 4 * h, 8)
                             : std::vector<float>(static_cast<size_t>((in + h) * 4 * h));
    auto b_grad = accumulate ? RandomVector<float>(4 * h, 9) : std::vector<float>(static_cast<size_t>(4 * h));
    const auto w_grad_start = w_grad, b_grad_start = b_grad;
    std::vector<float> cs_prev_grad(static_cast<size_t>(b * h)), dgates(gates.size()),
        x_grad(x.size()), h_prev_grad(static_cast<size_t>(b * h));
    LstmBlockCellGradInputs<float> cgi{ci.x, ci.cs_prev, ci.h_prev, ci.w, co.i, co.f, co.o, co.ci, co.co,
                                       CView(cs_grad, bh), CView(h_grad, bh)};
    ASSERT_OK(LstmBlockCellGrad(cpu_, cgi, {View(cs_prev_grad, bh), View(dgates, bg), View(x_grad, bx),
                                            View(h_prev_grad, bh), View(w_grad, ws), View(b_grad, bs)}, accumulate));
    std::vector<std::unique_ptr<DeviceVector<float>>> gfwd;
    for (size_t k = 0; k < 7; ++k) gfwd.push_back(std::make_unique<DeviceVector<float>>(out[k]));
    DeviceVector<float> gcsg(cs_grad), ghg(h_grad), g_cs_prev_grad(NaNs(b * h)), g_dgates(NaNs(b * 4 * h)),
        g_x_grad(NaNs(b * in)), g_h_prev_grad(NaNs(b * h)),
        g_w_grad(accumulate ? w_grad_start : NaNs((in + h) * 4 * h)), g_b_grad(accumulate ? b_grad_start : NaNs(4 * h));
    // Forward outputs in LstmBlockCellOutputs order: i, cs, f, o, ci, co, h.
    LstmBlockCellGradInputs<float> ggi{gi.x, gi.cs_prev, gi.h_prev, gi.w, gfwd[0]->cview(bh), gfwd[2]->cview(bh),
                                       gfwd[3]->cview(bh), gfwd[4]->cview(bh), gfwd[5]->cview(bh),
                                       gcsg.cview(bh), ghg.cview(bh)};
    ASSERT_OK(LstmBlockCellGrad(*ctx_, ggi, {g_cs_prev_grad.view(bh), g_dgates.view(bg), g_x_grad.view(bx),
                                             g_h_prev_grad.view(bh), g_w_grad.view(ws), g_b_grad.view(bs)}, accumulate));
    Sync();
    const std::string suffix = " " + name;
    ExpectClose(g_cs_prev_grad.ToHost(), cs_prev_grad, kElementwiseTol, "LstmBlockCellGrad cs_prev_grad" + suffix);
    ExpectClose(g_dgates.ToHost(), dgates, kElementwiseTol, "LstmBlockCellGrad dgates" + suffix);
    ExpectClose(g_x_grad.ToHost(), x_grad, kReductionTol, "LstmBlockCellGrad x_grad" + suffix);
    ExpectClose(g_h_prev_grad.ToHost(), h_prev_grad, kReductionTol, "LstmBlockCellGrad h_prev_grad" + suffix);
    ExpectClose(g_w_grad.ToHost(), w_grad, kReductionTol, "LstmBlockCellGrad w_grad" + suffix);
    ExpectClose(g_b_grad.ToHost(), b_grad, kReductionTol, "LstmBlockCellGrad b_grad" + suffix);
  }
};

Conv2DOptions ConvOptions(int stride, Padding padding) {
  Conv2DOptions o;
  o.stride_h = o.stride_w = stride;
  o.padding = padding;
  return o;
}

TEST_F(CudaLayerShapesTest, SmallConvolutionsMatchCpu) {
  ExpectConvMatchesCpu({2, 7, 6, 3}, {3, 3, 3, 4}, ConvOptions(2, Padding::kSame), "3x3/2 SAME small");
  ExpectConvMatchesCpu({2, 7, 6, 3}, {2, 3, 3, 5}, ConvOptions(1, Padding::kValid), "2x3/1 VALID small");
  Conv2DOptions o;
  o.padding = Padding::kExplicit;
  o.stride_h = 2;
  o.pad_top = 1;
  o.pad_bottom = 2;
  o.pad_left = 0;
  o.pad_right = 1;
  ExpectConvMatchesCpu({3, 8, 7, 2}, {3, 2, 2, 3}, o, "3x2 explicit small");
}

// The CUDA convolutions run im2col + GEMM over slabs of whole images, as many images as keep the
// column matrix within 2^24 entries (kernels/cuda/conv2d.cu): one image here has
// 48·48 · 3·3·320 = 6,635,520 entries, so a slab holds 2 images and the batch of 5 takes three
// slabs (2, 2, 1), the last one short. BackpropFilter adds the slabs up.
TEST_F(CudaLayerShapesTest, ConvolutionSplitIntoSlabsMatchesCpu) {
  ExpectConvMatchesCpu({5, 48, 48, 320}, {3, 3, 320, 8}, ConvOptions(1, Padding::kSame), "3 slabs");
}

// ResNet-50's stem as the model builds it (trainer/models/resnet_model.cc): conv1_pad (3 each
// side), conv1 7×7/2 VALID 3 → 64 on 224×224, then pool1_pad (1) and pool1 3×3/2 VALID.
TEST_F(CudaLayerShapesTest, ResNetStemMatchesCpu) {
  const Shape image{1, 224, 224, 3};
  Paddings conv_pad;
  conv_pad.before = {0, 3, 3, 0};
  conv_pad.after = {0, 3, 3, 0};
  const Shape padded = conv_pad.PaddedShape(image);
  const auto x = RandomVector<float>(image.num_elements(), 11);
  const auto dpadded = RandomVector<float>(padded.num_elements(), 12);
  std::vector<float> xp(static_cast<size_t>(padded.num_elements())), dx(x.size());
  DeviceVector<float> gx(x), gdpadded(dpadded), gxp(NaNs(padded.num_elements())), gdx(NaNs(image.num_elements()));
  ASSERT_OK(Pad(cpu_, CView(x, image), conv_pad, View(xp, padded)));
  ASSERT_OK(PadGrad(cpu_, CView(dpadded, padded), conv_pad, View(dx, image)));
  ASSERT_OK(Pad(*ctx_, gx.cview(image), conv_pad, gxp.view(padded)));
  ASSERT_OK(PadGrad(*ctx_, gdpadded.cview(padded), conv_pad, gdx.view(image)));
  Sync();
  ExpectExact(gxp.ToHost(), xp, "Pad conv1_pad");
  ExpectExact(gdx.ToHost(), dx, "PadGrad conv1_pad");

  ExpectConvMatchesCpu(padded, {7, 7, 3, 64}, ConvOptions(2, Padding::kValid), "ResNet conv1 7x7/2");

  // pool1 on the (padded) conv1 output, 114×114×64 → 56×56×64; ties included.
  const Shape pool_in{1, 114, 114, 64};
  Pool2DOptions po;
  po.window_h = po.window_w = 3;
  po.stride_h = po.stride_w = 2;
  po.padding = Padding::kValid;
  auto pg = ComputePool2DGeometry(pool_in, po);
  ASSERT_TRUE(pg.ok());
  const Shape pool_out = pg->output_shape();
  auto v = RandomVector<float>(pool_in.num_elements(), 13);
  for (float& e : v) e = std::round(e * 50);
  const auto dy = RandomVector<float>(pool_out.num_elements(), 14);
  std::vector<float> y(dy.size()), dv(v.size());
  ASSERT_OK(MaxPool(cpu_, CView(v, pool_in), View(y, pool_out), po));
  ASSERT_OK(MaxPoolGrad(cpu_, CView(v, pool_in), CView(dy, pool_out), View(dv, pool_in), po));
  DeviceVector<float> gv(v), gdy(dy), gy(NaNs(pool_out.num_elements())), gdv(NaNs(pool_in.num_elements()));
  ASSERT_OK(MaxPool(*ctx_, gv.cview(pool_in), gy.view(pool_out), po));
  ASSERT_OK(MaxPoolGrad(*ctx_, gv.cview(pool_in), gdy.cview(pool_out), gdv.view(pool_in), po));
  Sync();
  ExpectExact(gy.ToHost(), y, "MaxPool ResNet pool1");
  ExpectExact(gdv.ToHost(), dv, "MaxPoolGrad ResNet pool1");
}

// A bottleneck block of ResNet-50's stage 4 (14×14): the 3×3 SAME conv 256 → 256, the 1×1
// convs 1024 → 256 (a plain GEMM on the CPU) and the stride-2 projection shortcut 512 → 1024.
TEST_F(CudaLayerShapesTest, ResNetBottleneckConvolutionsMatchCpu) {
  ExpectConvMatchesCpu({2, 14, 14, 256}, {3, 3, 256, 256}, ConvOptions(1, Padding::kSame), "ResNet 3x3 256");
  ExpectConvMatchesCpu({2, 14, 14, 1024}, {1, 1, 1024, 256}, ConvOptions(1, Padding::kValid), "ResNet 1x1 1024->256");
  ExpectConvMatchesCpu({2, 28, 28, 512}, {1, 1, 512, 1024}, ConvOptions(2, Padding::kValid), "ResNet 1x1/2 512->1024");
}

TEST_F(CudaLayerShapesTest, SmallLstmCellMatchesCpu) {
  LstmBlockCellOptions o;
  ExpectLstmCellMatchesCpu(5, 7, 6, o, false, "small");
  o.cell_clip = 0.5;
  ExpectLstmCellMatchesCpu(5, 7, 6, o, true, "small clipped, accumulating");
}

// The PTB models' cells: batch 20, input = hidden = 200 (small) and 650 (medium), forget_bias 0;
// the weight gradients also as the time loop sums them (accumulate).
TEST_F(CudaLayerShapesTest, PtbLstmCellsMatchCpu) {
  LstmBlockCellOptions o;
  o.forget_bias = 0;
  for (const int64_t h : {200, 650}) {
    for (const bool accumulate : {false, true}) {
      ExpectLstmCellMatchesCpu(20, h, h, o, accumulate,
                               "PTB " + std::to_string(h) + (accumulate ? ", accumulating" : ""));
    }
  }
}

// The PTB medium softmax layer for 20 rows: logits = h · w + b over a 10000-word vocabulary, the
// cross-entropy, and the GEMM gradients.
TEST_F(CudaLayerShapesTest, PtbSoftmaxLayerMatchesCpu) {
  const int64_t rows = 20, hidden = 650, vocab = 10000;
  const Shape hs{rows, hidden}, ws{hidden, vocab}, ls{rows, vocab};
  const auto h = RandomVector<float>(rows * hidden, 1),
             w = RandomVector<float>(hidden * vocab, 2, -0.05, 0.05),
             bias = RandomVector<float>(vocab, 3, -0.05, 0.05);
  std::vector<int32_t> labels(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) labels[static_cast<size_t>(r)] = static_cast<int32_t>((r * 997 + 13) % vocab);
  std::vector<float> product(static_cast<size_t>(rows * vocab)), logits(product.size()), loss(static_cast<size_t>(rows)),
      backprop(product.size()), dh(h.size()), dw(w.size());
  ASSERT_OK(MatMul(cpu_, CView(h, hs), CView(w, ws), View(product, ls)));
  ASSERT_OK(BiasAdd(cpu_, CView(product, ls), CView(bias, {vocab}), View(logits, ls)));
  ASSERT_OK(SparseSoftmaxCrossEntropyWithLogits(cpu_, CView(logits, ls), CView(labels, {rows}),
                                                View(loss, {rows}), View(backprop, ls)));
  ASSERT_OK(MatMulGrad(cpu_, CView(h, hs), CView(w, ws), CView(backprop, ls), View(dh, hs), View(dw, ws)));

  DeviceVector<float> gh(h), gw(w), gbias(bias), gproduct(NaNs(rows * vocab)), glogits_cpu(logits),
      gloss(NaNs(rows)), gbackprop(NaNs(rows * vocab)), gbackprop_cpu(backprop), gdh(NaNs(rows * hidden)),
      gdw(NaNs(hidden * vocab));
  DeviceVector<int32_t> glabels(labels);
  ASSERT_OK(MatMul(*ctx_, gh.cview(hs), gw.cview(ws), gproduct.view(ls)));
  // Each step from the CPU's input, so each op is measured alone.
  ASSERT_OK(SparseSoftmaxCrossEntropyWithLogits(*ctx_, glogits_cpu.cview(ls), glabels.cview({rows}),
                                                gloss.view({rows}), gbackprop.view(ls)));
  ASSERT_OK(MatMulGrad(*ctx_, gh.cview(hs), gw.cview(ws), gbackprop_cpu.cview(ls), gdh.view(hs), gdw.view(ws)));
  Sync();
  ExpectClose(gproduct.ToHost(), product, kReductionTol, "MatMul PTB softmax 20x650x10000");
  ExpectClose(gloss.ToHost(), loss, kReductionTol, "SparseSoftmaxCrossEntropyWithLogits PTB loss");
  ExpectClose(gbackprop.ToHost(), backprop, kReductionTol, "SparseSoftmaxCrossEntropyWithLogits PTB backprop");
  ExpectClose(gdh.ToHost(), dh, kReductionTol, "MatMulGrad PTB softmax dh");
  ExpectClose(gdw.ToHost(), dw, kReductionTol, "MatMulGrad PTB softmax dw");
}

// More elements than the capped grid has threads (65535 blocks × 256): the grid-stride loop
// must reach the tail.
TEST_F(CudaLayerShapesTest, GridStrideLoopCoversLargeTensors) {
  const int64_t n = 17'000'000;
  static_assert(17'000'000 > int64_t{65535} * 256);
  const Shape s{n};
  const auto a = RandomVector<float>(n, 1), b = RandomVector<float>(n, 2);
  std::vector<float> c(static_cast<size_t>(n));
  ASSERT_OK(Add(cpu_, CView(a, s), CView(b, s), View(c, s)));
  DeviceVector<float> ga(a), gb(b), gc(NaNs(n));
  ASSERT_OK(Add(*ctx_, ga.cview(s), gb.cview(s), gc.view(s)));
  Sync();
  ExpectExact(gc.ToHost(), c, "Add 17M elements");
}

}  // namespace
}  // namespace stepscope::kernels
