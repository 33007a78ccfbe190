// CUDA kernels against the CPU reference, op by op at small shapes. Without a GPU (our build
// machines) the device tests skip with a message; the call-checking and the no-device error
// path are tested everywhere. Tolerances and NaN-filled outputs: tests/kernels/cuda_test_util.h.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kernels/batch_norm.h"
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
#include "tests/kernels/cuda_test_util.h"
#include "tests/kernels/test_util.h"

namespace stepscope::kernels {
namespace {

using testing::CudaKernelsTest;
using testing::CView;
using testing::DeviceVector;
using testing::ExpectClose;
using testing::ExpectExact;
using testing::kDoubleSumTol;
using testing::kElementwiseTol;
using testing::kReductionTol;
using testing::NaNs;
using testing::RandomVector;
using testing::View;

Status FailingCall() {
  STEPSCOPE_CUDA_CHECK(cudaSetDevice(-7));
  return Status::Ok();
}

TEST(CudaCheck, FailureKeepsCallTextAndLocation) {
  const Status s = FailingCall();
  // The failed call leaves its error pending in this thread: clear it, so that no later call of
  // this thread meets it.
  (void)cudaGetLastError();
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

// A failed call leaves a (non-sticky) error pending in its thread, e.g. a caching allocator's
// out-of-memory before it frees and retries; the next launch must not report it as its own.
TEST_F(CudaKernelsTest, LaunchAfterAnEarlierFailedCallSucceeds) {
  const Shape s{1000};
  const auto a = RandomVector<float>(1000, 1), b = RandomVector<float>(1000, 2);
  std::vector<float> expected(1000);
  ASSERT_OK(Add(cpu_, CView(a, s), CView(b, s), View(expected, s)));
  DeviceVector<float> ga(a), gb(b), gc(NaNs(1000)), gd(NaNs(1000));
  EXPECT_NE(cudaSetDevice(-7), cudaSuccess);
  ASSERT_OK(Add(*ctx_, ga.cview(s), gb.cview(s), gc.view(s)));
  void* huge = nullptr;
  EXPECT_NE(cudaMalloc(&huge, size_t{1} << 62), cudaSuccess);
  ASSERT_OK(Add(*ctx_, ga.cview(s), gb.cview(s), gd.view(s)));
  Sync();
  ExpectExact(gc.ToHost(), expected, "Add after a failed cudaSetDevice");
  ExpectExact(gd.ToHost(), expected, "Add after a failed cudaMalloc");
}

// c = op(a)·op(b) and both gradients, overwriting NaN or adding to random values.
TEST_F(CudaKernelsTest, MatMulAndGradMatchCpu) {
  for (const bool accumulate : {false, true}) {
    for (const bool ta : {false, true}) {
      for (const bool tb : {false, true}) {
        const int64_t m = 17, n = 5, k = 9;
        const MatMulOptions o{ta, tb, accumulate};
        const Shape sa = ta ? Shape{k, m} : Shape{m, k}, sb = tb ? Shape{n, k} : Shape{k, n};
        const auto a = RandomVector<float>(m * k, 1), b = RandomVector<float>(k * n, 2),
                   dc = RandomVector<float>(m * n, 3);
        auto c = RandomVector<float>(m * n, 4), da = RandomVector<float>(m * k, 5),
             db = RandomVector<float>(k * n, 6);
        DeviceVector<float> ga(a), gb(b), gdc(dc), gc(accumulate ? c : NaNs(m * n)),
            gda(accumulate ? da : NaNs(m * k)), gdb(accumulate ? db : NaNs(k * n));
        ASSERT_OK(MatMul(cpu_, CView(a, sa), CView(b, sb), View(c, {m, n}), o));
        ASSERT_OK(MatMulGrad(cpu_, CView(a, sa), CView(b, sb), CView(dc, {m, n}), View(da, sa), View(db, sb), o));
        ASSERT_OK(MatMul(*ctx_, ga.cview(sa), gb.cview(sb), gc.view({m, n}), o));
        ASSERT_OK(MatMulGrad(*ctx_, ga.cview(sa), gb.cview(sb), gdc.cview({m, n}), gda.view(sa), gdb.view(sb), o));
        Sync();
        const std::string name = std::string(ta ? "T" : "N") + (tb ? "T" : "N") + (accumulate ? " accumulate" : "");
        ExpectClose(gc.ToHost(), c, kReductionTol, "MatMul " + name);
        ExpectClose(gda.ToHost(), da, kReductionTol, "MatMulGrad da " + name);
        ExpectClose(gdb.ToHost(), db, kReductionTol, "MatMulGrad db " + name);
      }
    }
  }
}

TEST_F(CudaKernelsTest, ElementwiseMatchCpu) {
  const Shape s{6, 7};
  const auto x = RandomVector<float>(42, 1), y = RandomVector<float>(42, 2),
             bias = RandomVector<float>(7, 3);
  DeviceVector<float> gx(x), gy(y), gb(bias);
  std::vector<float> out(42), out2(42);

  auto run_unary = [&](const std::string& op, auto cpu_op, auto gpu_op) {
    DeviceVector<float> gout(NaNs(42));
    ASSERT_OK(cpu_op(View(out, s)));
    ASSERT_OK(gpu_op(gout.view(s)));
    Sync();
    ExpectExact(gout.ToHost(), out, op);
  };
  run_unary("BiasAdd", [&](Out<float> o) { return BiasAdd(cpu_, CView(x, s), CView(bias, {7}), o); },
            [&](Out<float> o) { return BiasAdd(*ctx_, gx.cview(s), gb.cview({7}), o); });
  run_unary("Add", [&](Out<float> o) { return Add(cpu_, CView(x, s), CView(y, s), o); },
            [&](Out<float> o) { return Add(*ctx_, gx.cview(s), gy.cview(s), o); });
  run_unary("Mul", [&](Out<float> o) { return Mul(cpu_, CView(x, s), CView(y, s), o); },
            [&](Out<float> o) { return Mul(*ctx_, gx.cview(s), gy.cview(s), o); });
  run_unary("Scale", [&](Out<float> o) { return Scale(cpu_, CView(x, s), -0.37f, o); },
            [&](Out<float> o) { return Scale(*ctx_, gx.cview(s), -0.37f, o); });
  run_unary("Relu", [&](Out<float> o) { return Relu(cpu_, CView(x, s), o); },
            [&](Out<float> o) { return Relu(*ctx_, gx.cview(s), o); });
  run_unary("ReluGrad", [&](Out<float> o) { return ReluGrad(cpu_, CView(y, s), CView(x, s), o); },
            [&](Out<float> o) { return ReluGrad(*ctx_, gy.cview(s), gx.cview(s), o); });

  std::vector<float> dbias(7);
  DeviceVector<float> gdb(NaNs(7));
  ASSERT_OK(BiasAddGrad(cpu_, CView(x, s), View(dbias, {7})));
  ASSERT_OK(BiasAddGrad(*ctx_, gx.cview(s), gdb.view({7})));
  Sync();
  ExpectClose(gdb.ToHost(), dbias, kReductionTol, "BiasAddGrad");

  DeviceVector<float> gda(NaNs(42)), gdb2(NaNs(42)), gda_only(NaNs(42));
  ASSERT_OK(MulGrad(cpu_, CView(x, s), CView(y, s), CView(x, s), View(out, s), View(out2, s)));
  ASSERT_OK(MulGrad(*ctx_, gx.cview(s), gy.cview(s), gx.cview(s), gda.view(s), gdb2.view(s)));
  ASSERT_OK(MulGrad(*ctx_, gx.cview(s), gy.cview(s), gx.cview(s), gda_only.view(s), Out<float>()));
  Sync();
  ExpectExact(gda.ToHost(), out, "MulGrad da");
  ExpectExact(gdb2.ToHost(), out2, "MulGrad db");
  ExpectExact(gda_only.ToHost(), out, "MulGrad da without db");
}

// AddN adds one input after the other, as the CPU does, also across its batches of 16 device
// pointers: the sums are exact matches.
TEST_F(CudaKernelsTest, AddNMatchesCpuForFewAndManyInputs) {
  const Shape s{5, 31};
  for (const int count : {3, 16, 37}) {
    std::vector<std::vector<float>> host;
    std::vector<std::unique_ptr<DeviceVector<float>>> device;
    std::vector<In<float>> cpu_in, gpu_in;
    for (int k = 0; k < count; ++k) {
      host.push_back(RandomVector<float>(s.num_elements(), 100 + static_cast<uint32_t>(k)));
      device.push_back(std::make_unique<DeviceVector<float>>(host.back()));
    }
    for (int k = 0; k < count; ++k) {
      cpu_in.push_back(CView(host[static_cast<size_t>(k)], s));
      gpu_in.push_back(device[static_cast<size_t>(k)]->cview(s));
    }
    std::vector<float> out(static_cast<size_t>(s.num_elements()));
    DeviceVector<float> gout(NaNs(s.num_elements()));
    ASSERT_OK(AddN(cpu_, std::span<const In<float>>(cpu_in), View(out, s)));
    ASSERT_OK(AddN(*ctx_, std::span<const In<float>>(gpu_in), gout.view(s)));
    Sync();
    ExpectExact(gout.ToHost(), out, "AddN of " + std::to_string(count));
  }
}

TEST_F(CudaKernelsTest, DropoutScalarOpsMatchCpuExactly) {
  const Shape s{5, 9};
  const auto x = RandomVector<float>(45, 4, -3, 3);
  DeviceVector<float> gx(x), g1(NaNs(45)), g2(NaNs(45)), g3(NaNs(45));
  std::vector<float> add(45), floor(45), div(45);
  ASSERT_OK(AddScalar(cpu_, CView(x, s), 0.7f, View(add, s)));
  ASSERT_OK(Floor(cpu_, CView(x, s), View(floor, s)));
  ASSERT_OK(DivideByScalar(cpu_, CView(x, s), 0.35f, View(div, s)));
  ASSERT_OK(AddScalar(*ctx_, gx.cview(s), 0.7f, g1.view(s)));
  ASSERT_OK(Floor(*ctx_, gx.cview(s), g2.view(s)));
  ASSERT_OK(DivideByScalar(*ctx_, gx.cview(s), 0.35f, g3.view(s)));
  Sync();
  ExpectExact(g1.ToHost(), add, "AddScalar");
  ExpectExact(g2.ToHost(), floor, "Floor");
  ExpectExact(g3.ToHost(), div, "DivideByScalar (IEEE division on both)");
}

// Dropout's random numbers: the same bits as the CPU's for the same state, past 2^32 elements'
// worth of state increments (the counter wraps in 64 bits alike).
TEST_F(CudaKernelsTest, RandomUniformMatchesCpuExactly) {
  for (const uint64_t state : {uint64_t{0}, uint64_t{0xFFFFFFFFFFFFFF00ull}, uint64_t{12345}}) {
    const Shape s{20, 650};  // a PTB medium dropout site
    std::vector<float> cpu(13000);
    DeviceVector<float> gpu(NaNs(13000));
    ASSERT_OK(RandomUniform(cpu_, state, View(cpu, s)));
    ASSERT_OK(RandomUniform(*ctx_, state, gpu.view(s)));
    Sync();
    ExpectExact(gpu.ToHost(), cpu, "RandomUniform");
  }
}

TEST_F(CudaKernelsTest, EmbeddingOpsMatchCpu) {
  const int64_t rows = 10, dim = 4;
  const auto params = RandomVector<float>(rows * dim, 1);
  const std::vector<int32_t> ids = {3, 3, 9, 0, 5, 3, 9};
  const int64_t n = static_cast<int64_t>(ids.size());
  const auto values = RandomVector<float>(n * dim, 2);
  DeviceVector<float> gp(params), gvalues(values), gout(NaNs(n * dim));
  DeviceVector<int32_t> gids(ids);
  std::vector<float> out(static_cast<size_t>(n * dim));
  ASSERT_OK(Gather(cpu_, CView(params, {rows, dim}), CView(ids, {n}), View(out, {n, dim})));
  ASSERT_OK(Gather(*ctx_, gp.cview({rows, dim}), gids.cview({n}), gout.view({n, dim})));
  Sync();
  ExpectExact(gout.ToHost(), out, "Gather");

  // The scatters add into the table: both start from the same random one. With scale 1 or 0.5
  // every product is exact, so the same order of additions gives the same values; 0.3 leaves
  // the device free to fuse the multiply-add.
  for (const auto& [scale, label] : {std::pair{1.0f, "1"}, {0.5f, "0.5"}, {0.3f, "0.3"}}) {
    const bool exact = scale != 0.3f;
    const std::string suffix = std::string(" scale ") + label;
    auto dense = RandomVector<float>(rows * dim, 3), var = RandomVector<float>(rows * dim, 4);
    DeviceVector<float> gdense(dense), gvar(var);
    ASSERT_OK(ScatterAdd(cpu_, View(dense, {rows, dim}), CView(ids, {n}), CView(values, {n, dim}), scale));
    ASSERT_OK(ScatterSub(cpu_, View(var, {rows, dim}), CView(ids, {n}), CView(values, {n, dim}), scale));
    ASSERT_OK(ScatterAdd(*ctx_, gdense.view({rows, dim}), gids.cview({n}), gvalues.cview({n, dim}), scale));
    ASSERT_OK(ScatterSub(*ctx_, gvar.view({rows, dim}), gids.cview({n}), gvalues.cview({n, dim}), scale));
    Sync();
    if (exact) {
      ExpectExact(gdense.ToHost(), dense, "ScatterAdd" + suffix);
      ExpectExact(gvar.ToHost(), var, "ScatterSub" + suffix);
    } else {
      ExpectClose(gdense.ToHost(), dense, kElementwiseTol, "ScatterAdd" + suffix);
      ExpectClose(gvar.ToHost(), var, kElementwiseTol, "ScatterSub" + suffix);
    }
  }
}

TEST_F(CudaKernelsTest, SoftmaxXentAndGradMatchCpu) {
  const int64_t b = 3, c = 1000;
  const auto logits = RandomVector<float>(b * c, 3, -5, 5);
  const std::vector<int32_t> labels = {0, 999, 500};
  std::vector<float> loss(3), backprop(static_cast<size_t>(b * c));
  ASSERT_OK(SparseSoftmaxCrossEntropyWithLogits(cpu_, CView(logits, {b, c}), CView(labels, {b}),
                                                View(loss, {b}), View(backprop, {b, c})));
  DeviceVector<float> gl(logits), gloss(NaNs(b)), gbp(NaNs(b * c));
  DeviceVector<int32_t> glab(labels);
  ASSERT_OK(SparseSoftmaxCrossEntropyWithLogits(*ctx_, gl.cview({b, c}), glab.cview({b}), gloss.view({b}), gbp.view({b, c})));
  Sync();
  ExpectClose(gloss.ToHost(), loss, kReductionTol, "SparseSoftmaxCrossEntropyWithLogits loss");
  ExpectClose(gbp.ToHost(), backprop, kReductionTol, "SparseSoftmaxCrossEntropyWithLogits backprop");

  // The gradient from the CPU's backprop on both sides: one product per element.
  const auto dloss = RandomVector<float>(b, 4);
  std::vector<float> dlogits(backprop.size());
  DeviceVector<float> gbp_cpu(backprop), gdloss(dloss), gdlogits(NaNs(b * c));
  ASSERT_OK(SparseSoftmaxCrossEntropyGrad(cpu_, CView(backprop, {b, c}), CView(dloss, {b}), View(dlogits, {b, c})));
  ASSERT_OK(SparseSoftmaxCrossEntropyGrad(*ctx_, gbp_cpu.cview({b, c}), gdloss.cview({b}), gdlogits.view({b, c})));
  Sync();
  ExpectExact(gdlogits.ToHost(), dlogits, "SparseSoftmaxCrossEntropyGrad");
}

// Training and inference, over more rows (N·H·W = 480) than a block has threads, on inputs far
// from zero mean; the running statistics start random (read, and updated in training).
TEST_F(CudaKernelsTest, BatchNormMatchesCpu) {
  const Shape s{4, 12, 10, 16};
  const int64_t c = 16;
  const auto x = RandomVector<float>(s.num_elements(), 1, 2, 4), dy = RandomVector<float>(s.num_elements(), 2),
             scale = RandomVector<float>(c, 3, 0.5, 1.5), offset = RandomVector<float>(c, 4);
  for (const bool training : {true, false}) {
    const std::string mode = training ? " training" : " inference";
    BatchNormOptions o;
    o.exponential_avg_factor = 0.1;
    o.is_training = training;
    auto rm = RandomVector<float>(c, 5), rv = RandomVector<float>(c, 6, 0.5, 1.5);
    const auto rm_start = rm, rv_start = rv;
    std::vector<float> y(x.size()), sm(static_cast<size_t>(c)), sis(static_cast<size_t>(c));
    DeviceVector<float> gx(x), gscale(scale), goffset(offset), grm(rm), grv(rv), gy(NaNs(s.num_elements())),
        gsm(NaNs(c)), gsis(NaNs(c));
    ASSERT_OK(FusedBatchNorm<float>(cpu_, {CView(x, s), CView(scale, {c}), CView(offset, {c}), View(rm, {c}), View(rv, {c}),
                                           View(y, s), View(sm, {c}), View(sis, {c})}, o));
    ASSERT_OK(FusedBatchNorm(*ctx_, {gx.cview(s), gscale.cview({c}), goffset.cview({c}), grm.view({c}), grv.view({c}),
                                     gy.view(s), gsm.view({c}), gsis.view({c})}, o));
    Sync();
    const double tol = training ? kReductionTol : kElementwiseTol;
    ExpectClose(gy.ToHost(), y, tol, "FusedBatchNorm y" + mode);
    ExpectClose(gsm.ToHost(), sm, tol, "FusedBatchNorm saved_mean" + mode);
    ExpectClose(gsis.ToHost(), sis, tol, "FusedBatchNorm saved_inv_std" + mode);
    ExpectClose(grm.ToHost(), rm, tol, "FusedBatchNorm running_mean" + mode);
    ExpectClose(grv.ToHost(), rv, tol, "FusedBatchNorm running_var" + mode);
    if (!training) {
      ExpectExact(grm.ToHost(), rm_start, "FusedBatchNorm running_mean unchanged in inference");
      ExpectExact(grv.ToHost(), rv_start, "FusedBatchNorm running_var unchanged in inference");
    }

    // The gradient from the CPU's saved statistics on both sides.
    std::vector<float> dx(x.size()), dscale(static_cast<size_t>(c)), doffset(static_cast<size_t>(c));
    DeviceVector<float> gdy(dy), gsm_cpu(sm), gsis_cpu(sis), gdx(NaNs(s.num_elements())), gdscale(NaNs(c)),
        gdoffset(NaNs(c));
    ASSERT_OK(FusedBatchNormGrad<float>(cpu_, {CView(dy, s), CView(x, s), CView(scale, {c}), CView(sm, {c}), CView(sis, {c}),
                                               View(dx, s), View(dscale, {c}), View(doffset, {c})}, o));
    ASSERT_OK(FusedBatchNormGrad(*ctx_, {gdy.cview(s), gx.cview(s), gscale.cview({c}), gsm_cpu.cview({c}), gsis_cpu.cview({c}),
                                         gdx.view(s), gdscale.view({c}), gdoffset.view({c})}, o));
    Sync();
    ExpectClose(gdx.ToHost(), dx, training ? kReductionTol : kElementwiseTol, "FusedBatchNormGrad dx" + mode);
    ExpectClose(gdscale.ToHost(), dscale, kReductionTol, "FusedBatchNormGrad dscale" + mode);
    ExpectClose(gdoffset.ToHost(), doffset, kReductionTol, "FusedBatchNormGrad doffset" + mode);
  }
}

// MaxPool 3×3/2 SAME with ties, its gradient (the same additions in the same order as the
// CPU's), global average pooling and Pad, with their gradients.
TEST_F(CudaKernelsTest, PoolingAndPadMatchCpu) {
  const Shape in_shape{2, 7, 6, 3};
  Pool2DOptions po;
  po.window_h = po.window_w = 3;
  po.stride_h = po.stride_w = 2;
  po.padding = Padding::kSame;
  auto pg = ComputePool2DGeometry(in_shape, po);
  ASSERT_TRUE(pg.ok());
  const Shape out_shape = pg->output_shape();
  auto x = RandomVector<float>(in_shape.num_elements(), 6);
  for (float& v : x) v = std::round(v * 3);  // ties: the first maximum must win on both
  const auto dy = RandomVector<float>(out_shape.num_elements(), 7);
  std::vector<float> y(dy.size()), dx(x.size());
  ASSERT_OK(MaxPool(cpu_, CView(x, in_shape), View(y, out_shape), po));
  ASSERT_OK(MaxPoolGrad(cpu_, CView(x, in_shape), CView(dy, out_shape), View(dx, in_shape), po));
  DeviceVector<float> gx(x), gdy(dy), gy(NaNs(out_shape.num_elements())), gdx(NaNs(in_shape.num_elements()));
  ASSERT_OK(MaxPool(*ctx_, gx.cview(in_shape), gy.view(out_shape), po));
  ASSERT_OK(MaxPoolGrad(*ctx_, gx.cview(in_shape), gdy.cview(out_shape), gdx.view(in_shape), po));
  Sync();
  ExpectExact(gy.ToHost(), y, "MaxPool");
  ExpectExact(gdx.ToHost(), dx, "MaxPoolGrad");

  const auto v = RandomVector<float>(in_shape.num_elements(), 8);
  const auto dmean = RandomVector<float>(6, 9);
  std::vector<float> mean(6), dv(v.size());
  DeviceVector<float> gv(v), gdmean(dmean), gmean(NaNs(6)), gdv(NaNs(in_shape.num_elements()));
  ASSERT_OK(GlobalAvgPool(cpu_, CView(v, in_shape), View(mean, {2, 3})));
  ASSERT_OK(GlobalAvgPoolGrad(cpu_, CView(dmean, {2, 3}), View(dv, in_shape)));
  ASSERT_OK(GlobalAvgPool(*ctx_, gv.cview(in_shape), gmean.view({2, 3})));
  ASSERT_OK(GlobalAvgPoolGrad(*ctx_, gdmean.cview({2, 3}), gdv.view(in_shape)));
  Sync();
  ExpectClose(gmean.ToHost(), mean, kReductionTol, "GlobalAvgPool");
  ExpectClose(gdv.ToHost(), dv, kElementwiseTol, "GlobalAvgPoolGrad (division vs product by 1/(H·W))");

  Paddings pads;
  pads.before = {0, 1, 2, 0};
  pads.after = {1, 0, 1, 2};
  const Shape padded = pads.PaddedShape(in_shape);
  const auto dpadded = RandomVector<float>(padded.num_elements(), 10);
  std::vector<float> xp(static_cast<size_t>(padded.num_elements())), dxp(v.size());
  DeviceVector<float> gxp(NaNs(padded.num_elements())), gdpadded(dpadded), gdxp(NaNs(in_shape.num_elements()));
  ASSERT_OK(Pad(cpu_, CView(v, in_shape), pads, View(xp, padded), 0.25f));
  ASSERT_OK(PadGrad(cpu_, CView(dpadded, padded), pads, View(dxp, in_shape)));
  ASSERT_OK(Pad(*ctx_, gv.cview(in_shape), pads, gxp.view(padded), 0.25f));
  ASSERT_OK(PadGrad(*ctx_, gdpadded.cview(padded), pads, gdxp.view(in_shape)));
  Sync();
  ExpectExact(gxp.ToHost(), xp, "Pad");
  ExpectExact(gdxp.ToHost(), dxp, "PadGrad");
}

TEST_F(CudaKernelsTest, LossesAndNormsMatchCpu) {
  const Shape s{70, 33};
  const auto x = RandomVector<float>(s.num_elements(), 1, -2, 2), dloss = RandomVector<float>(1, 2);
  float loss = 0;
  std::vector<float> dx(x.size());
  DeviceVector<float> gx(x), gdloss(dloss), gloss(NaNs(1)), gdx(NaNs(s.num_elements()));
  ASSERT_OK(L2Loss(cpu_, CView(x, s), Out<float>(&loss, {})));
  ASSERT_OK(L2LossGrad(cpu_, CView(x, s), CView(dloss, {}), View(dx, s)));
  ASSERT_OK(L2Loss(*ctx_, gx.cview(s), gloss.view({})));
  ASSERT_OK(L2LossGrad(*ctx_, gx.cview(s), gdloss.cview({}), gdx.view(s)));
  Sync();
  ExpectClose(gloss.ToHost(), {loss}, kDoubleSumTol, "L2Loss");
  ExpectExact(gdx.ToHost(), dx, "L2LossGrad");

  // Three tensors, one empty: the global norm, then clipping to a third of it.
  const auto a = RandomVector<float>(100000, 3), b = RandomVector<float>(37, 4);
  const std::vector<float> empty;
  float norm = 0;
  std::vector<In<float>> cpu_in = {CView(a, {100000}), CView(empty, {0}), CView(b, {37})};
  ASSERT_OK(GlobalNorm(cpu_, std::span<const In<float>>(cpu_in), Out<float>(&norm, {})));
  DeviceVector<float> ga(a), gb(b), gempty(empty), gnorm(NaNs(1));
  std::vector<In<float>> gpu_in = {ga.cview({100000}), gempty.cview({0}), gb.cview({37})};
  ASSERT_OK(GlobalNorm(*ctx_, std::span<const In<float>>(gpu_in), gnorm.view({})));
  Sync();
  ExpectClose(gnorm.ToHost(), {norm}, kDoubleSumTol, "GlobalNorm");

  auto ca = a, cb = b;
  DeviceVector<float> gca(a), gcb(b), gclip_norm(NaNs(1));
  float clip_norm = 0;
  std::vector<TensorView<float>> cpu_t = {View(ca, {100000}), View(cb, {37})};
  std::vector<TensorView<float>> gpu_t = {gca.view({100000}), gcb.view({37})};
  ASSERT_OK(ClipByGlobalNorm(cpu_, std::span<const TensorView<float>>(cpu_t), norm / 3, Out<float>(&clip_norm, {})));
  ASSERT_OK(ClipByGlobalNorm(*ctx_, std::span<const TensorView<float>>(gpu_t), norm / 3, gclip_norm.view({})));
  Sync();
  ExpectClose(gclip_norm.ToHost(), {clip_norm}, kDoubleSumTol, "ClipByGlobalNorm norm");
  ExpectClose(gca.ToHost(), ca, kElementwiseTol, "ClipByGlobalNorm a");
  ExpectClose(gcb.ToHost(), cb, kElementwiseTol, "ClipByGlobalNorm b");
}

// The unrolled LSTM's fused and strided kernels: dropout (mask and output bit for bit, x and y
// as a step's rows inside a (B, T·W) buffer, nothing else written), its gradient, MatMul on
// strided rows, the clip reading the norm in device memory, and LSTMBlockCell(Grad) reading and
// writing strided rows with the recurrent gradient term.
TEST_F(CudaKernelsTest, FusedDropoutAndStridedOpsMatchCpu) {
  const int64_t rows = 20, cols = 650, steps = 3, step = 1, ld = steps * cols;  // PTB medium
  const Shape s{rows, cols}, big{rows, ld};
  const auto x = RandomVector<float>(rows * ld, 7, -3, 3);
  std::vector<float> mask(rows * cols), y(rows * ld, -7.0f), dx(rows * cols);
  DeviceVector<float> gx(x), gmask(NaNs(rows * cols)), gy(std::vector<float>(rows * ld, -7.0f)),
      gdx(NaNs(rows * cols));
  const uint64_t state = 0xFFFFFFFFFFFFFF00ull;
  ASSERT_OK(FusedDropout(cpu_, state, 0.5f, StridedRows<const float>(x.data() + step * cols, rows, cols, ld),
                         View(mask, s), StridedRows<float>(y.data() + step * cols, rows, cols, ld)));
  ASSERT_OK(FusedDropout(*ctx_, state, 0.5f,
                         StridedRows<const float>(gx.cview(big).data + step * cols, rows, cols, ld),
                         gmask.view(s), StridedRows<float>(gy.view(big).data + step * cols, rows, cols, ld)));
  ASSERT_OK(FusedDropoutGrad(cpu_, StridedRows<const float>(x.data() + step * cols, rows, cols, ld),
                             CView(mask, s), 0.5f, View(dx, s)));
  ASSERT_OK(FusedDropoutGrad(*ctx_, StridedRows<const float>(gx.cview(big).data + step * cols, rows, cols, ld),
                             gmask.cview(s), 0.5f, gdx.view(s)));
  Sync();
  ExpectExact(gmask.ToHost(), mask, "FusedDropout mask");
  ExpectExact(gy.ToHost(), y, "FusedDropout output, strided (untouched elements kept)");
  ExpectExact(gdx.ToHost(), dx, "FusedDropoutGrad");

  // dgates (rows, 4·cols' share) · wᵀ into a step's rows, and xᵀ · dgates accumulated.
  const int64_t k = 64, n = 48;
  const auto a = RandomVector<float>(rows * ld, 8), b = RandomVector<float>(n * k, 9);
  auto c = RandomVector<float>(rows * ld, 10);
  DeviceVector<float> ga(a), gb(b), gc(c);
  const MatMulOptions nt{.transpose_b = true, .accumulate = true};
  ASSERT_OK(MatMulStrided(cpu_, StridedRows<const float>(a.data() + step * cols, rows, k, ld),
                          StridedRows<const float>(b.data(), n, k, k),
                          StridedRows<float>(c.data() + step * cols, rows, n, ld), nt));
  ASSERT_OK(MatMulStrided(*ctx_, StridedRows<const float>(ga.cview(big).data + step * cols, rows, k, ld),
                          StridedRows<const float>(gb.cview({n, k}).data, n, k, k),
                          StridedRows<float>(gc.view(big).data + step * cols, rows, n, ld), nt));
  Sync();
  ExpectClose(gc.ToHost(), c, kReductionTol, "MatMulStrided");

  float norm = 7.5f;
  std::vector<float> clipped(rows * cols);
  DeviceVector<float> gnorm(std::vector<float>{norm}), gclipped(NaNs(rows * cols));
  ASSERT_OK(ClipByNorm(cpu_, CView(dx, s), In<float>(&norm, {}), 5.0f, View(clipped, s)));
  ASSERT_OK(ClipByNorm(*ctx_, gdx.cview(s), gnorm.cview({}), 5.0f, gclipped.view(s)));
  Sync();
  ExpectClose(gclipped.ToHost(), clipped, kElementwiseTol, "ClipByNorm");
}

TEST_F(CudaKernelsTest, LstmCellOnStridedRowsMatchesCpu) {
  const int64_t b = 20, h = 200, steps = 4, step = 2, ld = steps * h;  // PTB small
  const Shape bh{b, h}, big{b, ld}, ws{2 * h, 4 * h};
  const auto x = RandomVector<float>(b * ld, 11), h_prev = RandomVector<float>(b * ld, 12);
  const auto cs_prev = RandomVector<float>(b * h, 13), w = RandomVector<float>(2 * h * 4 * h, 14, -0.1, 0.1);
  const auto bias = RandomVector<float>(4 * h, 15);
  std::vector<std::vector<float>> out(6, std::vector<float>(b * h));
  std::vector<float> h_out(b * ld, -5.0f), gates(b * 4 * h);
  DeviceVector<float> gx(x), gh_prev(h_prev), gcs_prev(cs_prev), gw(w), gbias(bias),
      gh_out(std::vector<float>(b * ld, -5.0f)), ggates(NaNs(b * 4 * h));
  std::vector<std::unique_ptr<DeviceVector<float>>> gout;
  for (int i = 0; i < 6; ++i) gout.push_back(std::make_unique<DeviceVector<float>>(NaNs(b * h)));
  LstmBlockCellInputs<float> ci{In<float>(x.data() + step * h, bh), CView(cs_prev, bh),
                                In<float>(h_prev.data() + (step - 1) * h, bh), CView(w, ws), CView(bias, {4 * h})};
  ci.x_ld = ci.h_prev_ld = ld;
  LstmBlockCellOutputs<float> co{View(out[0], bh), View(out[1], bh), View(out[2], bh), View(out[3], bh),
                                 View(out[4], bh), View(out[5], bh), Out<float>(h_out.data() + step * h, bh)};
  co.h_ld = ld;
  LstmBlockCellInputs<float> gi{In<float>(gx.cview(big).data + step * h, bh), gcs_prev.cview(bh),
                                In<float>(gh_prev.cview(big).data + (step - 1) * h, bh), gw.cview(ws),
                                gbias.cview({4 * h})};
  gi.x_ld = gi.h_prev_ld = ld;
  LstmBlockCellOutputs<float> go{gout[0]->view(bh), gout[1]->view(bh), gout[2]->view(bh), gout[3]->view(bh),
                                 gout[4]->view(bh), gout[5]->view(bh), Out<float>(gh_out.view(big).data + step * h, bh)};
  go.h_ld = ld;
  ASSERT_OK(LstmBlockCell(cpu_, ci, co, View(gates, {b, 4 * h}), {}));
  ASSERT_OK(LstmBlockCell(*ctx_, gi, go, ggates.view({b, 4 * h}), {}));
  Sync();
  ExpectClose(gh_out.ToHost(), h_out, kReductionTol, "LSTMBlockCell h, strided");
  ExpectClose(gout[1]->ToHost(), out[1], kReductionTol, "LSTMBlockCell cs");

  // The gradient from the CPU's forward, h's gradient and the recurrent term both strided.
  const auto h_grad = RandomVector<float>(b * ld, 16), recurrent = RandomVector<float>(b * ld, 17);
  const auto cs_grad = RandomVector<float>(b * h, 18);
  DeviceVector<float> gh_grad(h_grad), grecurrent(recurrent), gcs_grad(cs_grad), gi0(out[0]), gf(out[2]),
      go0(out[3]), gci(out[4]), gco(out[5]), gdcs(NaNs(b * h)), gdgates(NaNs(b * 4 * h));
  LstmBlockCellGradInputs<float> cgi{ci.x, ci.cs_prev, ci.h_prev, ci.w, CView(out[0], bh), CView(out[2], bh),
                                     CView(out[3], bh), CView(out[4], bh), CView(out[5], bh),
                                     CView(cs_grad, bh), In<float>(h_grad.data() + step * h, bh)};
  cgi.h_grad_recurrent = In<float>(recurrent.data() + h, bh);
  cgi.h_grad_ld = cgi.h_grad_recurrent_ld = ld;
  LstmBlockCellGradInputs<float> ggi{gi.x, gi.cs_prev, gi.h_prev, gi.w, gi0.cview(bh), gf.cview(bh),
                                     go0.cview(bh), gci.cview(bh), gco.cview(bh), gcs_grad.cview(bh),
                                     In<float>(gh_grad.cview(big).data + step * h, bh)};
  ggi.h_grad_recurrent = In<float>(grecurrent.cview(big).data + h, bh);
  ggi.h_grad_ld = ggi.h_grad_recurrent_ld = ld;
  std::vector<float> dcs(b * h), dgates(b * 4 * h);
  LstmBlockCellGradOutputs<float> cgo, ggo;
  cgo.cs_prev_grad = View(dcs, bh);
  cgo.dgates = View(dgates, {b, 4 * h});
  ggo.cs_prev_grad = gdcs.view(bh);
  ggo.dgates = gdgates.view({b, 4 * h});
  ASSERT_OK(LstmBlockCellGrad(cpu_, cgi, cgo));
  ASSERT_OK(LstmBlockCellGrad(*ctx_, ggi, ggo));
  Sync();
  ExpectClose(gdgates.ToHost(), dgates, kElementwiseTol, "LSTMBlockCellGrad dgates, strided");
  ExpectClose(gdcs.ToHost(), dcs, kElementwiseTol, "LSTMBlockCellGrad cs_prev_grad");
}

// The updates change var (and accum) in place: both start from the same random values.
TEST_F(CudaKernelsTest, UpdatesMatchCpu) {
  const Shape s{1000};
  const auto grad = RandomVector<float>(1000, 3);
  DeviceVector<float> ggrad(grad);
  auto var = RandomVector<float>(1000, 1);
  DeviceVector<float> gvar(var);
  ASSERT_OK(ApplyGradientDescent(cpu_, View(var, s), 0.1f, CView(grad, s)));
  ASSERT_OK(ApplyGradientDescent(*ctx_, gvar.view(s), 0.1f, ggrad.cview(s)));
  Sync();
  ExpectClose(gvar.ToHost(), var, kElementwiseTol, "ApplyGradientDescent");
  for (const bool nesterov : {false, true}) {
    auto mvar = RandomVector<float>(1000, 4), accum = RandomVector<float>(1000, 5);
    DeviceVector<float> gmvar(mvar), gaccum(accum);
    MomentumOptions mo;
    mo.weight_decay = 1e-4;
    mo.use_nesterov = nesterov;
    ASSERT_OK(ApplyMomentum(cpu_, View(mvar, s), View(accum, s), 0.1f, CView(grad, s), mo));
    ASSERT_OK(ApplyMomentum(*ctx_, gmvar.view(s), gaccum.view(s), 0.1f, ggrad.cview(s), mo));
    Sync();
    const std::string name = nesterov ? "ApplyMomentum nesterov" : "ApplyMomentum";
    ExpectClose(gmvar.ToHost(), mvar, kElementwiseTol, name + " var");
    ExpectClose(gaccum.ToHost(), accum, kElementwiseTol, name + " accum");
  }
}

}  // namespace
}  // namespace stepscope::kernels
