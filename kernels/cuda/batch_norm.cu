// CUDA FusedBatchNorm and its gradient: one block per channel for the reductions, then an
// element pass; the per-element formulas are the CPU reference's (kernels/math/batch_norm_math.h).
#include "kernels/batch_norm.h"
#include "kernels/cuda/cuda_util.cuh"
#include "kernels/math/batch_norm_math.h"

namespace stepscope::kernels {
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

}  // namespace stepscope::kernels
