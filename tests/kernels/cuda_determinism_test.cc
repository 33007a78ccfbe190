// Reruns of the CUDA kernels whose sums once depended on thread timing (float atomics) must give
// the same bits: replicas of a data-parallel run apply the same update only if each computes the
// same global norm and the same embedding update. Each op runs kRuns times from the same inputs
// at sizes where many blocks or threads add into one value, and is also checked against the CPU.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "kernels/embedding.h"
#include "kernels/optimizers.h"
#include "kernels/pooling.h"
#include "tests/kernels/cuda_test_util.h"
#include "tests/kernels/test_util.h"

namespace stepscope::kernels {
namespace {

using testing::CView;
using testing::DeviceVector;
using testing::ExpectClose;
using testing::ExpectExact;
using testing::ExpectSameBits;
using testing::kDoubleSumTol;
using testing::kElementwiseTol;
using testing::NaNs;
using testing::RandomVector;
using testing::View;

constexpr int kRuns = 5;

class CudaDeterminismTest : public testing::CudaKernelsTest {};

TEST_F(CudaDeterminismTest, L2LossAndGlobalNormAreBitIdentical) {
  // 3M elements: 92 chunks, whose partials once met in one float atomic.
  const int64_t n = 3'000'001;
  const auto x = RandomVector<float>(n, 1, -2, 2), y = RandomVector<float>(1000, 2),
             z = RandomVector<float>(7, 3);
  float loss = 0, norm = 0;
  std::vector<In<float>> cpu_in = {CView(x, {n}), CView(y, {1000}), CView(z, {7})};
  ASSERT_OK(L2Loss(cpu_, CView(x, {n}), Out<float>(&loss, {})));
  ASSERT_OK(GlobalNorm(cpu_, std::span<const In<float>>(cpu_in), Out<float>(&norm, {})));
  DeviceVector<float> gx(x), gy(y), gz(z);
  std::vector<In<float>> gpu_in = {gx.cview({n}), gy.cview({1000}), gz.cview({7})};
  std::vector<float> first_loss, first_norm;
  for (int run = 0; run < kRuns; ++run) {
    DeviceVector<float> gloss(NaNs(1)), gnorm(NaNs(1));
    ASSERT_OK(L2Loss(*ctx_, gx.cview({n}), gloss.view({})));
    ASSERT_OK(GlobalNorm(*ctx_, std::span<const In<float>>(gpu_in), gnorm.view({})));
    Sync();
    const auto l = gloss.ToHost(), g = gnorm.ToHost();
    if (run == 0) {
      first_loss = l;
      first_norm = g;
      ExpectClose(l, {loss}, kDoubleSumTol, "L2Loss 3M");
      ExpectClose(g, {norm}, kDoubleSumTol, "GlobalNorm 3M + 1000 + 7");
    } else {
      ExpectSameBits(l, first_loss, "L2Loss run " + std::to_string(run));
      ExpectSameBits(g, first_norm, "GlobalNorm run " + std::to_string(run));
    }
  }
}

// Clipping scales by the global norm: replicas that clip the same gradients must agree.
TEST_F(CudaDeterminismTest, ClipByGlobalNormIsBitIdentical) {
  const auto a = RandomVector<float>(2'000'000, 4), b = RandomVector<float>(650 * 4, 5);
  std::vector<float> first_a, first_b;
  for (int run = 0; run < kRuns; ++run) {
    DeviceVector<float> ga(a), gb(b), gnorm(NaNs(1));
    std::vector<TensorView<float>> t = {ga.view({2'000'000}), gb.view({650 * 4})};
    ASSERT_OK(ClipByGlobalNorm(*ctx_, std::span<const TensorView<float>>(t), 5.0f, gnorm.view({})));
    Sync();
    if (run == 0) {
      first_a = ga.ToHost();
      first_b = gb.ToHost();
      auto ca = a, cb = b;
      float norm = 0;
      std::vector<TensorView<float>> ct = {View(ca, {2'000'000}), View(cb, {650 * 4})};
      ASSERT_OK(ClipByGlobalNorm(cpu_, std::span<const TensorView<float>>(ct), 5.0f, Out<float>(&norm, {})));
      ExpectClose(first_a, ca, kElementwiseTol, "ClipByGlobalNorm 2M");
      ExpectClose(first_b, cb, kElementwiseTol, "ClipByGlobalNorm 2600");
    } else {
      ExpectSameBits(ga.ToHost(), first_a, "ClipByGlobalNorm a run " + std::to_string(run));
      ExpectSameBits(gb.ToHost(), first_b, "ClipByGlobalNorm b run " + std::to_string(run));
    }
  }
}

// An embedding update with 5000 ids over 40 rows (about 125 additions per element) and a scale
// whose products round, so any change of order shows.
TEST_F(CudaDeterminismTest, ScatterWithManyRepeatedIdsIsBitIdentical) {
  const int64_t rows = 40, dim = 256, count = 5000;
  std::vector<int32_t> ids(static_cast<size_t>(count));
  for (int64_t k = 0; k < count; ++k) ids[static_cast<size_t>(k)] = static_cast<int32_t>((k * 7919) % rows);
  const auto updates = RandomVector<float>(count * dim, 6), var = RandomVector<float>(rows * dim, 7);
  DeviceVector<int32_t> gids(ids);
  DeviceVector<float> gupdates(updates);
  auto cpu_var = var, cpu_dense = var;
  ASSERT_OK(ScatterSub(cpu_, View(cpu_var, {rows, dim}), CView(ids, {count}), CView(updates, {count, dim}), 0.3f));
  ASSERT_OK(ScatterAdd(cpu_, View(cpu_dense, {rows, dim}), CView(ids, {count}), CView(updates, {count, dim}), 0.3f));
  std::vector<float> first_var, first_dense;
  for (int run = 0; run < kRuns; ++run) {
    DeviceVector<float> gvar(var), gdense(var);
    ASSERT_OK(ScatterSub(*ctx_, gvar.view({rows, dim}), gids.cview({count}), gupdates.cview({count, dim}), 0.3f));
    ASSERT_OK(ScatterAdd(*ctx_, gdense.view({rows, dim}), gids.cview({count}), gupdates.cview({count, dim}), 0.3f));
    Sync();
    if (run == 0) {
      first_var = gvar.ToHost();
      first_dense = gdense.ToHost();
      ExpectClose(first_var, cpu_var, kElementwiseTol, "ScatterSub 5000 ids over 40 rows");
      ExpectClose(first_dense, cpu_dense, kElementwiseTol, "ScatterAdd 5000 ids over 40 rows");
    } else {
      ExpectSameBits(gvar.ToHost(), first_var, "ScatterSub run " + std::to_string(run));
      ExpectSameBits(gdense.ToHost(), first_dense, "ScatterAdd run " + std::to_string(run));
    }
  }
}

// Overlapping 3×3/2 windows send up to four gradients to one input.
TEST_F(CudaDeterminismTest, MaxPoolGradIsBitIdentical) {
  const Shape in_shape{8, 57, 57, 64};
  Pool2DOptions po;
  po.window_h = po.window_w = 3;
  po.stride_h = po.stride_w = 2;
  po.padding = Padding::kSame;
  auto pg = ComputePool2DGeometry(in_shape, po);
  ASSERT_TRUE(pg.ok());
  const Shape out_shape = pg->output_shape();
  auto x = RandomVector<float>(in_shape.num_elements(), 8);
  for (float& v : x) v = std::round(v * 20);
  const auto dy = RandomVector<float>(out_shape.num_elements(), 9);
  std::vector<float> dx(x.size());
  ASSERT_OK(MaxPoolGrad(cpu_, CView(x, in_shape), CView(dy, out_shape), View(dx, in_shape), po));
  DeviceVector<float> gx(x), gdy(dy);
  std::vector<float> first;
  for (int run = 0; run < kRuns; ++run) {
    DeviceVector<float> gdx(NaNs(in_shape.num_elements()));
    ASSERT_OK(MaxPoolGrad(*ctx_, gx.cview(in_shape), gdy.cview(out_shape), gdx.view(in_shape), po));
    Sync();
    if (run == 0) {
      first = gdx.ToHost();
      ExpectExact(first, dx, "MaxPoolGrad 8x57x57x64");
    } else {
      ExpectSameBits(gdx.ToHost(), first, "MaxPoolGrad run " + std::to_string(run));
    }
  }
}

}  // namespace
}  // namespace stepscope::kernels
