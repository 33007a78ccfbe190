// CUDA MaxPool and global average pooling, with their gradients (one thread per output
// element; MaxPoolGrad gathers, so no atomics).
#include "kernels/cuda/cuda_util.cuh"
#include "kernels/math/pooling_math.h"
#include "kernels/pooling.h"

namespace stepscope::kernels {
namespace {

struct MaxPoolFn {
  math::PoolWindow w;
  const float* x;
  float* y;
  int64_t out_h, out_w;
  __device__ void operator()(int64_t e) const {
    const int64_t c = e % w.channels, ow = (e / w.channels) % out_w,
                  oh = (e / (w.channels * out_w)) % out_h, n = e / (w.channels * out_w * out_h);
    y[e] = x[math::MaxPoolArgMax(w, x, n, oh, ow, c)];
  }
};

// One thread per dx element gathers from the windows that chose it (overlapping windows would
// otherwise race or need atomics, whose order varies from run to run).
struct MaxPoolGradFn {
  math::PoolWindow w;
  const float *x, *dy;
  float* dx;
  int64_t out_h, out_w;
  __device__ void operator()(int64_t e) const {
    const int64_t c = e % w.channels, iw = (e / w.channels) % w.in_w,
                  ih = (e / (w.channels * w.in_w)) % w.in_h,
                  n = e / (w.channels * w.in_w * w.in_h);
    dx[e] = math::MaxPoolGradAt(w, x, dy, out_h, out_w, n, ih, iw, c);
  }
};

struct GlobalAvgPoolFn {
  const float* x;
  float* y;
  int64_t hw, channels;
  __device__ void operator()(int64_t e) const {
    const int64_t n = e / channels, c = e % channels;
    float s = 0;
    for (int64_t p = 0; p < hw; ++p) s += x[(n * hw + p) * channels + c];
    y[e] = hw > 0 ? s / static_cast<float>(hw) : 0.0f;
  }
};

struct GlobalAvgPoolGradFn {
  const float* dy;
  float* dx;
  int64_t hw, channels;
  __device__ void operator()(int64_t e) const {
    const int64_t c = e % channels, n = e / (channels * hw);
    dx[e] = dy[n * channels + c] / static_cast<float>(hw);
  }
};

}  // namespace

Status MaxPool(const CudaContext& ctx, In<float> x, Out<float> y, const Pool2DOptions& options) {
  ASSIGN_OR_RETURN(const Conv2DGeometry g, ComputePool2DGeometry(x.shape, options));
  RETURN_IF_ERROR(internal::ExpectShape("MaxPool", "y", y.shape, g.output_shape()));
  return internal::ForEach(ctx, y.size(),
                           MaxPoolFn{internal::ToPoolWindow(g), x.data, y.data, g.out_h, g.out_w});
}

Status MaxPoolGrad(const CudaContext& ctx, In<float> x, In<float> dy, Out<float> dx,
                   const Pool2DOptions& options) {
  ASSIGN_OR_RETURN(const Conv2DGeometry g, ComputePool2DGeometry(x.shape, options));
  RETURN_IF_ERROR(internal::ExpectShape("MaxPoolGrad", "dy", dy.shape, g.output_shape()));
  RETURN_IF_ERROR(internal::ExpectShape("MaxPoolGrad", "dx", dx.shape, x.shape));
  return internal::ForEach(ctx, dx.size(),
                           MaxPoolGradFn{internal::ToPoolWindow(g), x.data, dy.data, dx.data,
                                         g.out_h, g.out_w});
}

Status GlobalAvgPool(const CudaContext& ctx, In<float> x, Out<float> y) {
  RETURN_IF_ERROR(internal::CheckGlobalAvgPool(x.shape, y.shape));
  return internal::ForEach(ctx, y.size(),
                           GlobalAvgPoolFn{x.data, y.data, x.dim(1) * x.dim(2), x.dim(3)});
}

Status GlobalAvgPoolGrad(const CudaContext& ctx, In<float> dy, Out<float> dx) {
  RETURN_IF_ERROR(internal::CheckGlobalAvgPool(dx.shape, dy.shape));
  return internal::ForEach(ctx, dx.size(),
                           GlobalAvgPoolGradFn{dy.data, dx.data, dx.dim(1) * dx.dim(2), dx.dim(3)});
}

}  // namespace stepscope::kernels
