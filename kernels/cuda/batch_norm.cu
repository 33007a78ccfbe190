// CUDA FusedBatchNorm and its gradient: coalesced per-channel column reductions, then an
// element pass; the per-element formulas are the CPU reference's (kernels/math/batch_norm_math.h).
#include "kernels/batch_norm.h"
#include "kernels/cuda/cuda_util.cuh"
#include "kernels/math/batch_norm_math.h"

namespace stepscope::kernels {
namespace {

// Batch statistics as two column reductions (internal::ColumnReduce): Σx gives the mean, then
// Σ(x − mean)² the variance (two passes for accuracy); the second's finish writes the saved and
// running statistics.
struct ColumnOfXFn {
  const float* x;
  int64_t channels;
  __device__ internal::ColumnTerms<1> operator()(int64_t r, int64_t c) const {
    return {{x[r * channels + c]}};
  }
};
struct StoreMeanFn {
  float* saved_mean;
  float rows;
  __device__ void operator()(int64_t c, const internal::ColumnTerms<1>& sum) const {
    saved_mean[c] = sum.v[0] / rows;
  }
};
struct SquaredDeviationFn {
  const float *x, *mean;
  int64_t channels;
  __device__ internal::ColumnTerms<1> operator()(int64_t r, int64_t c) const {
    const float d = x[r * channels + c] - mean[c];
    return {{d * d}};
  }
};
struct StoreStatisticsFn {
  int64_t rows;
  float eps, factor;
  float *running_mean, *running_var, *saved_mean, *saved_inv_std;
  __device__ void operator()(int64_t c, const internal::ColumnTerms<1>& sum) const {
    const float var = sum.v[0] / static_cast<float>(rows);
    const float unbias = rows > 1 ? static_cast<float>(rows) / static_cast<float>(rows - 1) : 1.0f;
    saved_inv_std[c] = math::InvStd(var, eps);
    running_mean[c] = math::RunningAverage(running_mean[c], saved_mean[c], factor);
    running_var[c] = math::RunningAverage(running_var[c], var * unbias, factor);
  }
};

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

// Σdy and Σdy·x̂ per channel (one column reduction) into doffset/dscale.
struct GradTermsFn {
  const float *dy, *x, *mean, *inv_std;
  int64_t channels;
  __device__ internal::ColumnTerms<2> operator()(int64_t r, int64_t c) const {
    const float g = dy[r * channels + c];
    return {{g, g * (x[r * channels + c] - mean[c]) * inv_std[c]}};
  }
};
struct StoreGradSumsFn {
  float *dscale, *doffset;
  __device__ void operator()(int64_t c, const internal::ColumnTerms<2>& sums) const {
    doffset[c] = sums.v[0];
    dscale[c] = sums.v[1];
  }
};

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
    RETURN_IF_ERROR(internal::ColumnReduce<1>(ctx, rows, c, ColumnOfXFn{a.x.data, c},
                                              StoreMeanFn{a.saved_mean.data,
                                                          static_cast<float>(rows)}));
    RETURN_IF_ERROR(internal::ColumnReduce<1>(
        ctx, rows, c, SquaredDeviationFn{a.x.data, a.saved_mean.data, c},
        StoreStatisticsFn{rows, eps, static_cast<float>(options.exponential_avg_factor),
                          a.running_mean.data, a.running_var.data, a.saved_mean.data,
                          a.saved_inv_std.data}));
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
  RETURN_IF_ERROR(internal::ColumnReduce<2>(
      ctx, rows, c, GradTermsFn{a.dy.data, a.x.data, a.saved_mean.data, a.saved_inv_std.data, c},
      StoreGradSumsFn{a.dscale.data, a.doffset.data}));
  return internal::ForEach(
      ctx, a.x.size(),
      BatchNormDxFn{a.dy.data, a.x.data, a.saved_mean.data, a.saved_inv_std.data, a.scale.data,
                    a.doffset.data, a.dscale.data, a.dx.data, c, static_cast<float>(rows),
                    options.is_training});
}

}  // namespace stepscope::kernels
