// CUDA Conv2D (+ both gradients), FusedBatchNorm (+ grad), MaxPool (+ grad), global average
// pooling (+ grad) and Pad (+ grad). Convolutions are im2col/col2im kernels around cuBLAS
// GEMMs over slabs of whole images, exactly as the CPU reference (kernels/cpu/conv2d.cc).
#include <algorithm>

#include "kernels/batch_norm.h"
#include "kernels/conv2d.h"
#include "kernels/cuda/cuda_util.cuh"
#include "kernels/math/batch_norm_math.h"
#include "kernels/math/conv_math.h"
#include "kernels/math/pooling_math.h"
#include "kernels/pad.h"
#include "kernels/pooling.h"

namespace stepscope::kernels {
namespace {

// Device-side copy of the geometry (plain integers).
struct ConvGeom {
  int64_t in_h, in_w, in_c, k_h, k_w, out_c, out_h, out_w, stride_h, stride_w, pad_top, pad_left;
};
ConvGeom ToGeom(const Conv2DGeometry& g) {
  return {g.in_h, g.in_w, g.in_c, g.k_h, g.k_w, g.out_c, g.out_h, g.out_w,
          g.stride_h, g.stride_w, g.pad_top, g.pad_left};
}

constexpr int64_t kColumnBudget = int64_t{1} << 24;  // column entries per slab (64 MiB)

struct Im2ColFn {
  ConvGeom g;
  const float* input;  // at the slab's first image
  float* col;
  int64_t k;
  __device__ void operator()(int64_t e) const {
    const int64_t r = e / k, q = e % k;
    const int64_t c = q % g.in_c, kw = (q / g.in_c) % g.k_w, kh = q / (g.in_c * g.k_w);
    const int64_t ow = r % g.out_w, oh = (r / g.out_w) % g.out_h, n = r / (g.out_w * g.out_h);
    const int64_t ih = math::InputCoord(oh, kh, g.stride_h, g.pad_top);
    const int64_t iw = math::InputCoord(ow, kw, g.stride_w, g.pad_left);
    col[e] = (ih < 0 || ih >= g.in_h || iw < 0 || iw >= g.in_w)
                 ? 0.0f
                 : input[((n * g.in_h + ih) * g.in_w + iw) * g.in_c + c];
  }
};

// One thread per input element: the sum of the column entries that read it.
struct Col2ImFn {
  ConvGeom g;
  const float* col;
  float* input;  // at the slab's first image
  int64_t k;
  __device__ void operator()(int64_t e) const {
    const int64_t c = e % g.in_c, iw = (e / g.in_c) % g.in_w, ih = (e / (g.in_c * g.in_w)) % g.in_h,
                  n = e / (g.in_c * g.in_w * g.in_h);
    float sum = 0;
    for (int64_t kh = 0; kh < g.k_h; ++kh) {
      const int64_t oh = math::OutputForTap(ih, kh, g.stride_h, g.pad_top, g.out_h);
      if (oh < 0) continue;
      for (int64_t kw = 0; kw < g.k_w; ++kw) {
        const int64_t ow = math::OutputForTap(iw, kw, g.stride_w, g.pad_left, g.out_w);
        if (ow < 0) continue;
        sum += col[((n * g.out_h + oh) * g.out_w + ow) * k + (kh * g.k_w + kw) * g.in_c + c];
      }
    }
    input[e] = sum;
  }
};

int64_t ImagesPerSlab(const Conv2DGeometry& g) {
  const int64_t per_image = std::max<int64_t>(1, g.out_h * g.out_w * g.k_h * g.k_w * g.in_c);
  return std::clamp<int64_t>(kColumnBudget / per_image, 1, std::max<int64_t>(g.batch, 1));
}

}  // namespace

Status Conv2D(const CudaContext& ctx, In<float> input, In<float> filter, Out<float> output,
              const Conv2DOptions& options) {
  ASSIGN_OR_RETURN(const Conv2DGeometry g, ComputeConv2DGeometry(input.shape, filter.shape, options));
  RETURN_IF_ERROR(internal::CheckConvShape("Conv2D", "output", output.shape, g.output_shape()));
  if (output.size() == 0) return Status::Ok();
  const int64_t k = g.k_h * g.k_w * g.in_c, rows_per_image = g.out_h * g.out_w;
  const int64_t slab = ImagesPerSlab(g);
  internal::DeviceScratch col;
  RETURN_IF_ERROR(col.Allocate(ctx, static_cast<size_t>(slab * rows_per_image * k) * sizeof(float)));
  for (int64_t n0 = 0; n0 < g.batch; n0 += slab) {
    const int64_t images = std::min(slab, g.batch - n0);
    RETURN_IF_ERROR(internal::ForEach(
        ctx, images * rows_per_image * k,
        Im2ColFn{ToGeom(g), input.data + n0 * g.in_h * g.in_w * g.in_c, col.as<float>(), k}));
    RETURN_IF_ERROR(internal::RowMajorSgemm(ctx, false, false, images * rows_per_image, g.out_c,
                                            k, 1.0f, col.as<float>(), k, filter.data, g.out_c,
                                            0.0f, output.data + n0 * rows_per_image * g.out_c,
                                            g.out_c));
  }
  return Status::Ok();
}

Status Conv2DBackpropInput(const CudaContext& ctx, In<float> filter, In<float> dout,
                           Out<float> dinput, const Conv2DOptions& options) {
  ASSIGN_OR_RETURN(const Conv2DGeometry g, ComputeConv2DGeometry(dinput.shape, filter.shape, options));
  RETURN_IF_ERROR(internal::CheckConvShape("Conv2DBackpropInput", "dout", dout.shape, g.output_shape()));
  if (dinput.size() == 0) return Status::Ok();
  const int64_t k = g.k_h * g.k_w * g.in_c, rows_per_image = g.out_h * g.out_w;
  const int64_t slab = ImagesPerSlab(g);
  internal::DeviceScratch col;
  RETURN_IF_ERROR(col.Allocate(ctx, static_cast<size_t>(slab * rows_per_image * k) * sizeof(float)));
  for (int64_t n0 = 0; n0 < g.batch; n0 += slab) {
    const int64_t images = std::min(slab, g.batch - n0);
    RETURN_IF_ERROR(internal::RowMajorSgemm(ctx, false, true, images * rows_per_image, k, g.out_c,
                                            1.0f, dout.data + n0 * rows_per_image * g.out_c,
                                            g.out_c, filter.data, g.out_c, 0.0f, col.as<float>(), k));
    RETURN_IF_ERROR(internal::ForEach(
        ctx, images * g.in_h * g.in_w * g.in_c,
        Col2ImFn{ToGeom(g), col.as<float>(), dinput.data + n0 * g.in_h * g.in_w * g.in_c, k}));
  }
  return Status::Ok();
}

Status Conv2DBackpropFilter(const CudaContext& ctx, In<float> input, In<float> dout,
                            Out<float> dfilter, const Conv2DOptions& options, bool accumulate) {
  ASSIGN_OR_RETURN(const Conv2DGeometry g, ComputeConv2DGeometry(input.shape, dfilter.shape, options));
  RETURN_IF_ERROR(internal::CheckConvShape("Conv2DBackpropFilter", "dout", dout.shape, g.output_shape()));
  const int64_t k = g.k_h * g.k_w * g.in_c, rows_per_image = g.out_h * g.out_w;
  if (g.batch == 0 || rows_per_image == 0) {
    if (!accumulate && dfilter.size() > 0) {
      STEPSCOPE_CUDA_CHECK(cudaMemsetAsync(dfilter.data, 0, static_cast<size_t>(dfilter.size()) * sizeof(float), ctx.stream()));
    }
    return Status::Ok();
  }
  const int64_t slab = ImagesPerSlab(g);
  internal::DeviceScratch col;
  RETURN_IF_ERROR(col.Allocate(ctx, static_cast<size_t>(slab * rows_per_image * k) * sizeof(float)));
  for (int64_t n0 = 0; n0 < g.batch; n0 += slab) {
    const int64_t images = std::min(slab, g.batch - n0);
    RETURN_IF_ERROR(internal::ForEach(
        ctx, images * rows_per_image * k,
        Im2ColFn{ToGeom(g), input.data + n0 * g.in_h * g.in_w * g.in_c, col.as<float>(), k}));
    RETURN_IF_ERROR(internal::RowMajorSgemm(
        ctx, true, false, k, g.out_c, images * rows_per_image, 1.0f, col.as<float>(), k,
        dout.data + n0 * rows_per_image * g.out_c, g.out_c, (n0 > 0 || accumulate) ? 1.0f : 0.0f,
        dfilter.data, g.out_c));
  }
  return Status::Ok();
}

// ---- FusedBatchNorm ------------------------------------------------------------------------

namespace {

// One block per channel: Σx, then Σ(x − mean)² (two passes for accuracy), then the saved and
// running statistics.
__global__ void BatchNormStatsKernel(const float* x, int64_t rows, int64_t channels, float eps,
                                     float factor, float* running_mean, float* running_var,
                                     float* saved_mean, float* saved_inv_std) {
  __shared__ float shared[internal::kThreads];
  const int64_t c = blockIdx.x;
  float s = 0;
  for (int64_t r = threadIdx.x; r < rows; r += blockDim.x) s += x[r * channels + c];
  const float mean = internal::BlockSum(s, shared) / static_cast<float>(rows);
  float v = 0;
  for (int64_t r = threadIdx.x; r < rows; r += blockDim.x) {
    const float d = x[r * channels + c] - mean;
    v += d * d;
  }
  const float var = internal::BlockSum(v, shared) / static_cast<float>(rows);
  if (threadIdx.x == 0) {
    const float unbias = rows > 1 ? static_cast<float>(rows) / static_cast<float>(rows - 1) : 1.0f;
    saved_mean[c] = mean;
    saved_inv_std[c] = math::InvStd(var, eps);
    running_mean[c] = math::RunningAverage(running_mean[c], mean, factor);
    running_var[c] = math::RunningAverage(running_var[c], var * unbias, factor);
  }
}

struct InferenceStatsFn {
  const float *running_mean, *running_var;
  float *saved_mean, *saved_inv_std;
  float eps;
  __device__ void operator()(int64_t c) const {
    saved_mean[c] = running_mean[c];
    saved_inv_std[c] = math::InvStd(running_var[c], eps);
  }
};

struct BatchNormForwardFn {
  const float *x, *mean, *inv_std, *scale, *offset;
  float* y;
  int64_t channels;
  __device__ void operator()(int64_t e) const {
    const int64_t c = e % channels;
    y[e] = math::BatchNormForward(x[e], mean[c], inv_std[c], scale[c], offset[c]);
  }
};

// One block per channel: Σdy and Σdy·x̂ into dscale/doffset.
__global__ void BatchNormGradSumsKernel(const float* dy, const float* x, const float* mean,
                                        const float* inv_std, int64_t rows, int64_t channels,
                                        float* dscale, float* doffset) {
  __shared__ float shared[internal::kThreads];
  const int64_t c = blockIdx.x;
  float sdy = 0, sdyx = 0;
  for (int64_t r = threadIdx.x; r < rows; r += blockDim.x) {
    const float g = dy[r * channels + c];
    sdy += g;
    sdyx += g * (x[r * channels + c] - mean[c]) * inv_std[c];
  }
  sdy = internal::BlockSum(sdy, shared);
  sdyx = internal::BlockSum(sdyx, shared);
  if (threadIdx.x == 0) {
    doffset[c] = sdy;
    dscale[c] = sdyx;
  }
}

struct BatchNormDxFn {
  const float *dy, *x, *mean, *inv_std, *scale, *sum_dy, *sum_dy_xhat;
  float* dx;
  int64_t channels;
  float rows;
  bool training;
  __device__ void operator()(int64_t e) const {
    const int64_t c = e % channels;
    dx[e] = training ? math::BatchNormTrainingDx(dy[e], x[e], mean[c], inv_std[c], scale[c],
                                                 sum_dy[c], sum_dy_xhat[c], rows)
                     : math::BatchNormInferenceDx(dy[e], inv_std[c], scale[c]);
  }
};

}  // namespace

Status FusedBatchNorm(const CudaContext& ctx, const BatchNormArgs<float>& a,
                      const BatchNormOptions& options) {
  ASSIGN_OR_RETURN(const int64_t c, internal::CheckBatchNorm(a));
  if (c == 0) return Status::Ok();
  const int64_t rows = a.x.size() / c;
  const float eps = static_cast<float>(options.epsilon);
  if (options.is_training) {
    if (rows == 0) return internal::ShapeError("FusedBatchNorm", "training needs at least one row");
    STEPSCOPE_CUDA_LAUNCH(BatchNormStatsKernel, static_cast<unsigned int>(c), internal::kThreads,
                          0, ctx.stream(), a.x.data, rows, c, eps,
                          static_cast<float>(options.exponential_avg_factor),
                          a.running_mean.data, a.running_var.data, a.saved_mean.data,
                          a.saved_inv_std.data);
  } else {
    RETURN_IF_ERROR(internal::ForEach(ctx, c,
                                      InferenceStatsFn{a.running_mean.data, a.running_var.data,
                                                       a.saved_mean.data, a.saved_inv_std.data,
                                                       eps}));
  }
  return internal::ForEach(ctx, a.x.size(),
                           BatchNormForwardFn{a.x.data, a.saved_mean.data, a.saved_inv_std.data,
                                              a.scale.data, a.offset.data, a.y.data, c});
}

Status FusedBatchNormGrad(const CudaContext& ctx, const BatchNormGradArgs<float>& a,
                          const BatchNormOptions& options) {
  ASSIGN_OR_RETURN(const int64_t c, internal::CheckBatchNormGrad(a));
  if (c == 0) return Status::Ok();
  const int64_t rows = a.x.size() / c;
  STEPSCOPE_CUDA_LAUNCH(BatchNormGradSumsKernel, static_cast<unsigned int>(c), internal::kThreads,
                        0, ctx.stream(), a.dy.data, a.x.data, a.saved_mean.data,
                        a.saved_inv_std.data, rows, c, a.dscale.data, a.doffset.data);
  return internal::ForEach(
      ctx, a.x.size(),
      BatchNormDxFn{a.dy.data, a.x.data, a.saved_mean.data, a.saved_inv_std.data, a.scale.data,
                    a.doffset.data, a.dscale.data, a.dx.data, c, static_cast<float>(rows),
                    options.is_training});
}

// ---- Pooling ---------------------------------------------------------------------------

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

// ---- Pad ------------------------------------------------------------------------------

namespace {

struct Pad4 {
  int64_t in[4], out[4], before[4];
};

Pad4 ToRank4(const Shape& x, const Paddings& p) {
  Pad4 r{};
  const int lead = 4 - x.rank;
  for (int i = 0; i < 4; ++i) {
    if (i < lead) {
      r.in[i] = r.out[i] = 1;
      r.before[i] = 0;
    } else {
      const size_t s = static_cast<size_t>(i - lead);
      r.in[i] = x.dims[s];
      r.before[i] = p.before[s];
      r.out[i] = x.dims[s] + p.before[s] + p.after[s];
    }
  }
  return r;
}

struct PadFn {
  Pad4 p;
  const float* x;
  float* y;
  float value;
  __device__ void operator()(int64_t e) const {
    int64_t rem = e, src = 0, stride = 1;
    bool inside = true;
    for (int d = 3; d >= 0; --d) {
      const int64_t i = rem % p.out[d] - p.before[d];
      rem /= p.out[d];
      inside = inside && i >= 0 && i < p.in[d];
      src += i * stride;
      stride *= p.in[d];
    }
    y[e] = inside ? x[src] : value;
  }
};

struct PadGradFn {
  Pad4 p;
  const float* dy;
  float* dx;
  __device__ void operator()(int64_t e) const {
    int64_t rem = e, src = 0, stride = 1;
    for (int d = 3; d >= 0; --d) {
      const int64_t i = rem % p.in[d];
      rem /= p.in[d];
      src += (i + p.before[d]) * stride;
      stride *= p.out[d];
    }
    dx[e] = dy[src];
  }
};

}  // namespace

Status Pad(const CudaContext& ctx, In<float> x, const Paddings& paddings, Out<float> y,
           float value) {
  RETURN_IF_ERROR(internal::CheckPad(x.shape, paddings, y.shape));
  return internal::ForEach(ctx, y.size(), PadFn{ToRank4(x.shape, paddings), x.data, y.data, value});
}

Status PadGrad(const CudaContext& ctx, In<float> dy, const Paddings& paddings, Out<float> dx) {
  RETURN_IF_ERROR(internal::CheckPad(dx.shape, paddings, dy.shape));
  return internal::ForEach(ctx, dx.size(), PadGradFn{ToRank4(dx.shape, paddings), dy.data, dx.data});
}

}  // namespace stepscope::kernels
