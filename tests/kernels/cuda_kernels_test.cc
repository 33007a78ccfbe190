// CUDA kernels against the CPU reference. Without a GPU (our build machines) the device tests
// skip with a message; the call-checking and the no-device error path are tested everywhere.
#include <gtest/gtest.h>

#include <memory>

#include "kernels/batch_norm.h"
#include "kernels/conv2d.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_context.h"
#include "kernels/elementwise.h"
#include "kernels/embedding.h"
#include "kernels/lstm.h"
#include "kernels/matmul.h"
#include "kernels/optimizers.h"
#include "kernels/pad.h"
#include "kernels/pooling.h"
#include "kernels/softmax_xent.h"
#include "tests/kernels/test_util.h"

namespace stepscope::kernels {
namespace {

using testing::CView;
using testing::View;

Status FailingCall() {
  STEPSCOPE_CUDA_CHECK(cudaSetDevice(-7));
  return Status::Ok();
}

TEST(CudaCheck, FailureKeepsCallTextAndLocation) {
  const Status s = FailingCall();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("cudaSetDevice(-7) failed at "), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("cuda_kernels_test.cc:"), std::string::npos) << s.message();
  const Status oom = internal::CudaCallStatus(cudaErrorMemoryAllocation, "cudaMalloc(&p, n)", "x.cu", 42);
  EXPECT_EQ(oom.code(), StatusCode::kInternal);
  EXPECT_NE(oom.message().find("cudaMalloc(&p, n) failed at x.cu:42: "), std::string::npos);
  EXPECT_NE(oom.message().find("cudaErrorMemoryAllocation"), std::string::npos) << oom.message();
  EXPECT_EQ(internal::CudaCallStatus(cudaErrorNoDevice, "f()", "x.cu", 1).code(), StatusCode::kUnavailable);
  const Status blas = internal::CudaCallStatus(CUBLAS_STATUS_INVALID_VALUE, "cublasSgemm(...)", "y.cu", 3);
  EXPECT_NE(blas.message().find("CUBLAS_STATUS_INVALID_VALUE"), std::string::npos) << blas.message();
}

TEST(CudaContext, CreateReportsAMissingDeviceAsUnavailable) {
  const StatusOr<int> count = CudaDeviceCount();
  auto ctx = CudaContext::Create(0);
  if (count.ok()) {
    EXPECT_TRUE(ctx.ok()) << ctx.status().message();
    EXPECT_EQ(CudaContext::Create(*count).status().code(), StatusCode::kUnavailable);
  } else {
    ASSERT_FALSE(ctx.ok());
    EXPECT_EQ(ctx.status().code(), StatusCode::kUnavailable) << ctx.status().message();
    EXPECT_NE(ctx.status().message().find("cudaGetDeviceCount"), std::string::npos)
        << ctx.status().message();
  }
}

// Device memory holding a copy of a host vector.
template <typename T>
class DeviceVector {
 public:
  explicit DeviceVector(const std::vector<T>& host) : size_(host.size()) {
    EXPECT_EQ(cudaMalloc(reinterpret_cast<void**>(&ptr_), std::max<size_t>(1, size_) * sizeof(T)), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(ptr_, host.data(), size_ * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
  }
  ~DeviceVector() { cudaFree(ptr_); }
  DeviceVector(const DeviceVector&) = delete;
  DeviceVector& operator=(const DeviceVector&) = delete;
  std::vector<T> ToHost() const {
    std::vector<T> host(size_);
    EXPECT_EQ(cudaMemcpy(host.data(), ptr_, size_ * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
    return host;
  }
  TensorView<T> view(Shape s) { return TensorView<T>(ptr_, s); }
  TensorView<const T> cview(Shape s) const { return TensorView<const T>(ptr_, s); }

 private:
  T* ptr_ = nullptr;
  size_t size_;
};

class CudaKernelsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto ctx = CudaContext::Create(0);
    if (!ctx.ok()) GTEST_SKIP() << "no usable CUDA device: " << ctx.status().message();
    ctx_ = std::move(ctx).value();
  }
  void Sync() { ASSERT_OK(ctx_->Synchronize()); }
  std::unique_ptr<CudaContext> ctx_;
  CpuContext cpu_;
};

constexpr double kTol = 1e-4;

TEST_F(CudaKernelsTest, MatMulAndGradMatchCpu) {
  for (const bool ta : {false, true}) {
    for (const bool tb : {false, true}) {
      const int64_t m = 17, n = 5, k = 9;
      const Shape sa = ta ? Shape{k, m} : Shape{m, k}, sb = tb ? Shape{n, k} : Shape{k, n};
      auto a = testing::RandomVector<float>(m * k, 1), b = testing::RandomVector<float>(k * n, 2),
           dc = testing::RandomVector<float>(m * n, 3);
      std::vector<float> c(static_cast<size_t>(m * n)), da(a.size()), db(b.size());
      ASSERT_OK(MatMul(cpu_, CView(a, sa), CView(b, sb), View(c, {m, n}), {ta, tb}));
      ASSERT_OK(MatMulGrad(cpu_, CView(a, sa), CView(b, sb), CView(dc, {m, n}), View(da, sa), View(db, sb), {ta, tb}));
      DeviceVector<float> ga(a), gb(b), gdc(dc), gc(c), gda(da), gdb(db);
      ASSERT_OK(MatMul(*ctx_, ga.cview(sa), gb.cview(sb), gc.view({m, n}), {ta, tb}));
      ASSERT_OK(MatMulGrad(*ctx_, ga.cview(sa), gb.cview(sb), gdc.cview({m, n}), gda.view(sa), gdb.view(sb), {ta, tb}));
      Sync();
      testing::ExpectAllNear(gc.ToHost(), c, kTol, kTol, "c");
      testing::ExpectAllNear(gda.ToHost(), da, kTol, kTol, "da");
      testing::ExpectAllNear(gdb.ToHost(), db, kTol, kTol, "db");
    }
  }
}

TEST_F(CudaKernelsTest, ElementwiseMatchCpu) {
  const Shape s{6, 7};
  auto x = testing::RandomVector<float>(42, 1), y = testing::RandomVector<float>(42, 2),
       bias = testing::RandomVector<float>(7, 3);
  DeviceVector<float> gx(x), gy(y), gb(bias), gout(std::vector<float>(42)), gout2(std::vector<float>(42)),
      gdb(std::vector<float>(7));
  std::vector<float> out(42), out2(42), dbias(7);
  ASSERT_OK(BiasAdd(cpu_, CView(x, s), CView(bias, {7}), View(out, s)));
  ASSERT_OK(BiasAdd(*ctx_, gx.cview(s), gb.cview({7}), gout.view(s)));
  Sync();
  testing::ExpectAllNear(gout.ToHost(), out, kTol, kTol, "BiasAdd");
  ASSERT_OK(BiasAddGrad(cpu_, CView(x, s), View(dbias, {7})));
  ASSERT_OK(BiasAddGrad(*ctx_, gx.cview(s), gdb.view({7})));
  Sync();
  testing::ExpectAllNear(gdb.ToHost(), dbias, kTol, kTol, "BiasAddGrad");
  std::vector<In<float>> cpu_in = {CView(x, s), CView(y, s), CView(x, s)};
  std::vector<In<float>> gpu_in = {gx.cview(s), gy.cview(s), gx.cview(s)};
  ASSERT_OK(AddN(cpu_, std::span<const In<float>>(cpu_in), View(out, s)));
  ASSERT_OK(AddN(*ctx_, std::span<const In<float>>(gpu_in), gout.view(s)));
  Sync();
  testing::ExpectAllNear(gout.ToHost(), out, kTol, kTol, "AddN");
  ASSERT_OK(MulGrad(cpu_, CView(x, s), CView(y, s), CView(x, s), View(out, s), View(out2, s)));
  ASSERT_OK(MulGrad(*ctx_, gx.cview(s), gy.cview(s), gx.cview(s), gout.view(s), gout2.view(s)));
  Sync();
  testing::ExpectAllNear(gout.ToHost(), out, kTol, kTol, "MulGrad da");
  testing::ExpectAllNear(gout2.ToHost(), out2, kTol, kTol, "MulGrad db");
  ASSERT_OK(ReluGrad(cpu_, CView(y, s), CView(x, s), View(out, s)));
  ASSERT_OK(ReluGrad(*ctx_, gy.cview(s), gx.cview(s), gout.view(s)));
  Sync();
  testing::ExpectAllNear(gout.ToHost(), out, 0, 0, "ReluGrad");
}

TEST_F(CudaKernelsTest, DropoutScalarOpsMatchCpuExactly) {
  const Shape s{5, 9};
  auto x = testing::RandomVector<float>(45, 4);
  DeviceVector<float> gx(x), gout(std::vector<float>(45));
  std::vector<float> out(45);
  ASSERT_OK(AddScalar(cpu_, CView(x, s), 0.7f, View(out, s)));
  ASSERT_OK(AddScalar(*ctx_, gx.cview(s), 0.7f, gout.view(s)));
  Sync();
  EXPECT_EQ(gout.ToHost(), out) << "AddScalar";
  ASSERT_OK(Floor(cpu_, CView(x, s), View(out, s)));
  ASSERT_OK(Floor(*ctx_, gx.cview(s), gout.view(s)));
  Sync();
  EXPECT_EQ(gout.ToHost(), out) << "Floor";
  ASSERT_OK(DivideByScalar(cpu_, CView(x, s), 0.35f, View(out, s)));
  ASSERT_OK(DivideByScalar(*ctx_, gx.cview(s), 0.35f, gout.view(s)));
  Sync();
  EXPECT_EQ(gout.ToHost(), out) << "DivideByScalar (IEEE division on both)";
}

TEST_F(CudaKernelsTest, LstmBlockCellMatchesCpu) {
  const int64_t b = 5, in = 7, h = 6;
  const Shape bh{b, h};
  auto x = testing::RandomVector<float>(b * in, 1), cs_prev = testing::RandomVector<float>(b * h, 2),
       h_prev = testing::RandomVector<float>(b * h, 3),
       w = testing::RandomVector<float>((in + h) * 4 * h, 4), bias = testing::RandomVector<float>(4 * h, 5),
       cs_grad = testing::RandomVector<float>(b * h, 6), h_grad = testing::RandomVector<float>(b * h, 7);
  std::vector<std::vector<float>> cpu_out(7, std::vector<float>(static_cast<size_t>(b * h)));
  std::vector<float> gates(static_cast<size_t>(b * 4 * h));
  LstmBlockCellOutputs<float> co{View(cpu_out[0], bh), View(cpu_out[1], bh), View(cpu_out[2], bh),
                                 View(cpu_out[3], bh), View(cpu_out[4], bh), View(cpu_out[5], bh),
                                 View(cpu_out[6], bh)};
  LstmBlockCellInputs<float> ci{CView(x, {b, in}), CView(cs_prev, bh), CView(h_prev, bh),
                                CView(w, {in + h, 4 * h}), CView(bias, {4 * h})};
  ASSERT_OK(LstmBlockCell(cpu_, ci, co, View(gates, {b, 4 * h})));
  DeviceVector<float> gx(x), gcs(cs_prev), gh(h_prev), gw(w), gbias(bias), ggates(gates);
  std::vector<std::unique_ptr<DeviceVector<float>>> gout;
  for (int k = 0; k < 7; ++k) gout.push_back(std::make_unique<DeviceVector<float>>(cpu_out[0]));
  LstmBlockCellOutputs<float> go{gout[0]->view(bh), gout[1]->view(bh), gout[2]->view(bh),
                                 gout[3]->view(bh), gout[4]->view(bh), gout[5]->view(bh),
                                 gout[6]->view(bh)};
  LstmBlockCellInputs<float> gi{gx.cview({b, in}), gcs.cview(bh), gh.cview(bh),
                                gw.cview({in + h, 4 * h}), gbias.cview({4 * h})};
  ASSERT_OK(LstmBlockCell(*ctx_, gi, go, ggates.view({b, 4 * h})));
  Sync();
  for (int k = 0; k < 7; ++k) testing::ExpectAllNear(gout[static_cast<size_t>(k)]->ToHost(), cpu_out[static_cast<size_t>(k)], kTol, kTol, "lstm output " + std::to_string(k));
  // Gradient.
  std::vector<float> cs_prev_grad(static_cast<size_t>(b * h)), dgates(gates.size()), x_grad(x.size()),
      h_prev_grad(static_cast<size_t>(b * h)), w_grad(w.size()), b_grad(bias.size());
  LstmBlockCellGradInputs<float> cgi{ci.x, ci.cs_prev, ci.h_prev, ci.w, co.i, co.f, co.o, co.ci, co.co,
                                     CView(cs_grad, bh), CView(h_grad, bh)};
  ASSERT_OK(LstmBlockCellGrad(cpu_, cgi, {View(cs_prev_grad, bh), View(dgates, {b, 4 * h}), View(x_grad, {b, in}),
                                          View(h_prev_grad, bh), View(w_grad, {in + h, 4 * h}), View(b_grad, {4 * h})}));
  DeviceVector<float> gcsg(cs_grad), ghg(h_grad), g1(cs_prev_grad), g2(dgates), g3(x_grad), g4(h_prev_grad),
      g5(w_grad), g6(b_grad);
  LstmBlockCellGradInputs<float> ggi{gi.x, gi.cs_prev, gi.h_prev, gi.w, go.i, go.f, go.o, go.ci, go.co,
                                     gcsg.cview(bh), ghg.cview(bh)};
  ASSERT_OK(LstmBlockCellGrad(*ctx_, ggi, {g1.view(bh), g2.view({b, 4 * h}), g3.view({b, in}), g4.view(bh),
                                           g5.view({in + h, 4 * h}), g6.view({4 * h})}));
  Sync();
  testing::ExpectAllNear(g1.ToHost(), cs_prev_grad, kTol, kTol, "cs_prev_grad");
  testing::ExpectAllNear(g2.ToHost(), dgates, kTol, kTol, "dgates");
  testing::ExpectAllNear(g3.ToHost(), x_grad, kTol, kTol, "x_grad");
  testing::ExpectAllNear(g4.ToHost(), h_prev_grad, kTol, kTol, "h_prev_grad");
  testing::ExpectAllNear(g5.ToHost(), w_grad, kTol, kTol, "w_grad");
  testing::ExpectAllNear(g6.ToHost(), b_grad, kTol, kTol, "b_grad");
}

TEST_F(CudaKernelsTest, EmbeddingAndSoftmaxXentMatchCpu) {
  auto params = testing::RandomVector<float>(10 * 4, 1);
  const std::vector<int32_t> ids = {3, 3, 9, 0, 5};
  auto rows = testing::RandomVector<float>(5 * 4, 2);
  std::vector<float> out(20), dense(40, 0.0f);
  ASSERT_OK(Gather(cpu_, CView(params, {10, 4}), CView(ids, {5}), View(out, {5, 4})));
  ASSERT_OK(ScatterAdd(cpu_, View(dense, {10, 4}), CView(ids, {5}), CView(rows, {5, 4}), 0.5f));
  DeviceVector<float> gp(params), gout(out), gdense(std::vector<float>(40, 0.0f)), grows(rows);
  DeviceVector<int32_t> gids(ids);
  ASSERT_OK(Gather(*ctx_, gp.cview({10, 4}), gids.cview({5}), gout.view({5, 4})));
  ASSERT_OK(ScatterAdd(*ctx_, gdense.view({10, 4}), gids.cview({5}), grows.cview({5, 4}), 0.5f));
  Sync();
  testing::ExpectAllNear(gout.ToHost(), out, 0, 0, "Gather");
  testing::ExpectAllNear(gdense.ToHost(), dense, kTol, kTol, "ScatterAdd");

  const int64_t b = 3, c = 1000;
  auto logits = testing::RandomVector<float>(b * c, 3, -5, 5);
  const std::vector<int32_t> labels = {0, 999, 500};
  std::vector<float> loss(3), backprop(static_cast<size_t>(b * c));
  ASSERT_OK(SparseSoftmaxCrossEntropyWithLogits(cpu_, CView(logits, {b, c}), CView(labels, {b}), View(loss, {b}), View(backprop, {b, c})));
  DeviceVector<float> gl(logits), gloss(loss), gbp(backprop);
  DeviceVector<int32_t> glab(labels);
  ASSERT_OK(SparseSoftmaxCrossEntropyWithLogits(*ctx_, gl.cview({b, c}), glab.cview({b}), gloss.view({b}), gbp.view({b, c})));
  Sync();
  testing::ExpectAllNear(gloss.ToHost(), loss, kTol, kTol, "loss");
  testing::ExpectAllNear(gbp.ToHost(), backprop, 1e-6, kTol, "backprop");
}

TEST_F(CudaKernelsTest, ConvBatchNormPoolPadMatchCpu) {
  const Shape in_shape{2, 7, 6, 3}, f_shape{3, 3, 3, 4};
  Conv2DOptions o;
  o.stride_h = o.stride_w = 2;
  o.padding = Padding::kSame;
  auto g = ComputeConv2DGeometry(in_shape, f_shape, o);
  ASSERT_TRUE(g.ok());
  const Shape out_shape = g->output_shape();
  auto x = testing::RandomVector<float>(in_shape.num_elements(), 1), f = testing::RandomVector<float>(f_shape.num_elements(), 2),
       dy = testing::RandomVector<float>(out_shape.num_elements(), 3);
  std::vector<float> y(dy.size()), dx(x.size()), df(f.size());
  ASSERT_OK(Conv2D(cpu_, CView(x, in_shape), CView(f, f_shape), View(y, out_shape), o));
  ASSERT_OK(Conv2DBackpropInput(cpu_, CView(f, f_shape), CView(dy, out_shape), View(dx, in_shape), o));
  ASSERT_OK(Conv2DBackpropFilter(cpu_, CView(x, in_shape), CView(dy, out_shape), View(df, f_shape), o));
  DeviceVector<float> gx(x), gf(f), gdy(dy), gy(y), gdx(dx), gdf(df);
  ASSERT_OK(Conv2D(*ctx_, gx.cview(in_shape), gf.cview(f_shape), gy.view(out_shape), o));
  ASSERT_OK(Conv2DBackpropInput(*ctx_, gf.cview(f_shape), gdy.cview(out_shape), gdx.view(in_shape), o));
  ASSERT_OK(Conv2DBackpropFilter(*ctx_, gx.cview(in_shape), gdy.cview(out_shape), gdf.view(f_shape), o));
  Sync();
  testing::ExpectAllNear(gy.ToHost(), y, kTol, kTol, "conv y");
  testing::ExpectAllNear(gdx.ToHost(), dx, kTol, kTol, "conv dx");
  testing::ExpectAllNear(gdf.ToHost(), df, kTol, kTol, "conv dfilter");

  // FusedBatchNorm on the conv output, training, then its gradient.
  const int64_t c = out_shape[3];
  auto scale = testing::RandomVector<float>(c, 4, 0.5, 1.5), offset = testing::RandomVector<float>(c, 5);
  std::vector<float> rm(static_cast<size_t>(c), 0.0f), rv(static_cast<size_t>(c), 1.0f), bn_y(y.size()),
      sm(static_cast<size_t>(c)), sis(static_cast<size_t>(c));
  BatchNormOptions bo;
  bo.exponential_avg_factor = 0.1;
  DeviceVector<float> gscale(scale), goffset(offset), grm(rm), grv(rv), gbn_y(bn_y), gsm(sm), gsis(sis);
  ASSERT_OK(FusedBatchNorm<float>(cpu_, {CView(y, out_shape), CView(scale, {c}), CView(offset, {c}), View(rm, {c}), View(rv, {c}),
                                  View(bn_y, out_shape), View(sm, {c}), View(sis, {c})}, bo));
  ASSERT_OK(FusedBatchNorm(*ctx_, {gy.cview(out_shape), gscale.cview({c}), goffset.cview({c}), grm.view({c}), grv.view({c}),
                                   gbn_y.view(out_shape), gsm.view({c}), gsis.view({c})}, bo));
  Sync();
  testing::ExpectAllNear(gbn_y.ToHost(), bn_y, kTol, kTol, "bn y");
  testing::ExpectAllNear(grv.ToHost(), rv, kTol, kTol, "bn running var");
  std::vector<float> bn_dx(y.size()), dscale(static_cast<size_t>(c)), doffset(static_cast<size_t>(c));
  DeviceVector<float> gbn_dx(bn_dx), gdscale(dscale), gdoffset(doffset);
  ASSERT_OK(FusedBatchNormGrad<float>(cpu_, {CView(dy, out_shape), CView(y, out_shape), CView(scale, {c}), CView(sm, {c}), CView(sis, {c}),
                                      View(bn_dx, out_shape), View(dscale, {c}), View(doffset, {c})}, bo));
  ASSERT_OK(FusedBatchNormGrad(*ctx_, {gdy.cview(out_shape), gy.cview(out_shape), gscale.cview({c}), gsm.cview({c}), gsis.cview({c}),
                                       gbn_dx.view(out_shape), gdscale.view({c}), gdoffset.view({c})}, bo));
  Sync();
  testing::ExpectAllNear(gbn_dx.ToHost(), bn_dx, 1e-3, 1e-3, "bn dx");
  testing::ExpectAllNear(gdscale.ToHost(), dscale, 1e-3, 1e-3, "bn dscale");
  testing::ExpectAllNear(gdoffset.ToHost(), doffset, 1e-4, 1e-4, "bn doffset");

  // MaxPool 3×3/2 SAME on distinct values, its gradient, global average pooling, Pad.
  Pool2DOptions po;
  po.window_h = po.window_w = 3;
  po.stride_h = po.stride_w = 2;
  po.padding = Padding::kSame;
  auto pg = ComputePool2DGeometry(in_shape, po);
  ASSERT_TRUE(pg.ok());
  auto px = testing::DistinctValues<float>(in_shape.num_elements(), 6);
  auto pdy = testing::RandomVector<float>(pg->output_shape().num_elements(), 7);
  std::vector<float> py(pdy.size()), pdx(px.size());
  ASSERT_OK(MaxPool(cpu_, CView(px, in_shape), View(py, pg->output_shape()), po));
  ASSERT_OK(MaxPoolGrad(cpu_, CView(px, in_shape), CView(pdy, pg->output_shape()), View(pdx, in_shape), po));
  DeviceVector<float> gpx(px), gpdy(pdy), gpy(py), gpdx(pdx);
  ASSERT_OK(MaxPool(*ctx_, gpx.cview(in_shape), gpy.view(pg->output_shape()), po));
  ASSERT_OK(MaxPoolGrad(*ctx_, gpx.cview(in_shape), gpdy.cview(pg->output_shape()), gpdx.view(in_shape), po));
  Sync();
  testing::ExpectAllNear(gpy.ToHost(), py, 0, 0, "maxpool y");
  testing::ExpectAllNear(gpdx.ToHost(), pdx, kTol, kTol, "maxpool dx");
  std::vector<float> avg(6);
  DeviceVector<float> gavg(avg);
  ASSERT_OK(GlobalAvgPool(cpu_, CView(x, in_shape), View(avg, {2, 3})));
  ASSERT_OK(GlobalAvgPool(*ctx_, gx.cview(in_shape), gavg.view({2, 3})));
  Sync();
  testing::ExpectAllNear(gavg.ToHost(), avg, kTol, kTol, "global avg pool");
  Paddings pads;
  pads.before = {0, 1, 2, 0};
  pads.after = {1, 0, 1, 0};
  const Shape padded = pads.PaddedShape(in_shape);
  std::vector<float> xp(static_cast<size_t>(padded.num_elements()));
  DeviceVector<float> gxp(xp);
  ASSERT_OK(Pad(cpu_, CView(x, in_shape), pads, View(xp, padded), 0.25f));
  ASSERT_OK(Pad(*ctx_, gx.cview(in_shape), pads, gxp.view(padded), 0.25f));
  Sync();
  testing::ExpectAllNear(gxp.ToHost(), xp, 0, 0, "pad");
}

TEST_F(CudaKernelsTest, OptimizersMatchCpu) {
  auto var = testing::RandomVector<float>(1000, 1), accum = testing::RandomVector<float>(1000, 2),
       grad = testing::RandomVector<float>(1000, 3);
  DeviceVector<float> gvar(var), gaccum(accum), ggrad(grad), gnorm(std::vector<float>(1));
  MomentumOptions mo;
  mo.weight_decay = 1e-4;
  ASSERT_OK(ApplyMomentum(cpu_, View(var, {1000}), View(accum, {1000}), 0.1f, CView(grad, {1000}), mo));
  ASSERT_OK(ApplyMomentum(*ctx_, gvar.view({1000}), gaccum.view({1000}), 0.1f, ggrad.cview({1000}), mo));
  float norm = 0;
  std::vector<TensorView<float>> cpu_t = {View(var, {1000})};
  std::vector<TensorView<float>> gpu_t = {gvar.view({1000})};
  ASSERT_OK(ClipByGlobalNorm(cpu_, std::span<const TensorView<float>>(cpu_t), 1.0f, Out<float>(&norm, {})));
  ASSERT_OK(ClipByGlobalNorm(*ctx_, std::span<const TensorView<float>>(gpu_t), 1.0f, gnorm.view({})));
  Sync();
  testing::ExpectAllNear(gvar.ToHost(), var, 1e-5, 1e-4, "var");
  testing::ExpectAllNear(gaccum.ToHost(), accum, 1e-5, 1e-4, "accum");
  EXPECT_NEAR(gnorm.ToHost()[0], norm, 1e-3);
}

}  // namespace
}  // namespace stepscope::kernels
