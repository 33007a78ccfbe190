// FusedBatchNorm on the CPU: per-channel reductions as fixed-size row chunks with double
// partials (deterministic on any thread count), then a threaded element pass.
#include "kernels/batch_norm.h"

#include <vector>

#include "kernels/math/batch_norm_math.h"
#include "kernels/shape_check.h"

namespace stepscope::kernels {
namespace internal {

template <typename T>
StatusOr<int64_t> CheckBatchNorm(const BatchNormArgs<T>& a) {
  constexpr const char* kOp = "FusedBatchNorm";
  if (a.x.rank() < 2) return ShapeError(kOp, "x must have rank >= 2, got " + a.x.shape.ToString());
  const int64_t c = a.x.dim(a.x.rank() - 1);
  const Shape ch{c};
  RETURN_IF_ERROR(ExpectShape(kOp, "scale", a.scale.shape, ch));
  RETURN_IF_ERROR(ExpectShape(kOp, "offset", a.offset.shape, ch));
  RETURN_IF_ERROR(ExpectShape(kOp, "running_mean", a.running_mean.shape, ch));
  RETURN_IF_ERROR(ExpectShape(kOp, "running_var", a.running_var.shape, ch));
  RETURN_IF_ERROR(ExpectShape(kOp, "y", a.y.shape, a.x.shape));
  RETURN_IF_ERROR(ExpectShape(kOp, "saved_mean", a.saved_mean.shape, ch));
  RETURN_IF_ERROR(ExpectShape(kOp, "saved_inv_std", a.saved_inv_std.shape, ch));
  return c;
}

template <typename T>
StatusOr<int64_t> CheckBatchNormGrad(const BatchNormGradArgs<T>& a) {
  constexpr const char* kOp = "FusedBatchNormGrad";
  if (a.x.rank() < 2) return ShapeError(kOp, "x must have rank >= 2, got " + a.x.shape.ToString());
  const int64_t c = a.x.dim(a.x.rank() - 1);
  const Shape ch{c};
  RETURN_IF_ERROR(ExpectShape(kOp, "dy", a.dy.shape, a.x.shape));
  RETURN_IF_ERROR(ExpectShape(kOp, "dx", a.dx.shape, a.x.shape));
  RETURN_IF_ERROR(ExpectShape(kOp, "scale", a.scale.shape, ch));
  RETURN_IF_ERROR(ExpectShape(kOp, "saved_mean", a.saved_mean.shape, ch));
  RETURN_IF_ERROR(ExpectShape(kOp, "saved_inv_std", a.saved_inv_std.shape, ch));
  RETURN_IF_ERROR(ExpectShape(kOp, "dscale", a.dscale.shape, ch));
  RETURN_IF_ERROR(ExpectShape(kOp, "doffset", a.doffset.shape, ch));
  return c;
}

}  // namespace internal
namespace {

constexpr int64_t kRowGrain = 512;

// Per channel, Σ over rows of fn(row_pointer, channel) → `sums` (C doubles per output).
// fn writes `outputs_per_channel` values into acc[channel * outputs + k].
template <typename Fn>
void ReduceRows(const CpuContext& ctx, int64_t rows, int64_t c, int outputs, Fn fn,
                std::vector<double>& sums) {
  const int64_t chunks = (rows + kRowGrain - 1) / kRowGrain;
  const int64_t width = c * outputs;
  std::vector<double> partial(static_cast<size_t>(chunks * width), 0.0);
  ctx.ParallelFor(rows, kRowGrain, [&](int64_t r0, int64_t r1) {
    double* acc = partial.data() + (r0 / kRowGrain) * width;
    for (int64_t r = r0; r < r1; ++r) fn(r, acc);
  });
  sums.assign(static_cast<size_t>(width), 0.0);
  for (int64_t k = 0; k < chunks; ++k) {
    for (int64_t j = 0; j < width; ++j) sums[static_cast<size_t>(j)] += partial[static_cast<size_t>(k * width + j)];
  }
}

}  // namespace

template <typename T>
Status FusedBatchNorm(const CpuContext& ctx, const BatchNormArgs<T>& a,
                      const BatchNormOptions& options) {
  ASSIGN_OR_RETURN(const int64_t c, internal::CheckBatchNorm(a));
  if (c == 0) return Status::Ok();
  const int64_t rows = a.x.size() / c;
  const double eps = options.epsilon;
  std::vector<double> mean(static_cast<size_t>(c)), inv_std(static_cast<size_t>(c));
  if (options.is_training) {
    if (rows == 0) return internal::ShapeError("FusedBatchNorm", "training needs at least one row");
    std::vector<double> sums;
    ReduceRows(ctx, rows, c, 1, [&](int64_t r, double* acc) {
      const T* x = a.x.data + r * c;
      for (int64_t j = 0; j < c; ++j) acc[j] += static_cast<double>(x[j]);
    }, sums);
    for (int64_t j = 0; j < c; ++j) mean[static_cast<size_t>(j)] = sums[static_cast<size_t>(j)] / static_cast<double>(rows);
    ReduceRows(ctx, rows, c, 1, [&](int64_t r, double* acc) {
      const T* x = a.x.data + r * c;
      for (int64_t j = 0; j < c; ++j) {
        const double d = static_cast<double>(x[j]) - mean[static_cast<size_t>(j)];
        acc[j] += d * d;
      }
    }, sums);
    const double factor = options.exponential_avg_factor;
    const double unbias = rows > 1 ? static_cast<double>(rows) / static_cast<double>(rows - 1) : 1.0;
    for (int64_t j = 0; j < c; ++j) {
      const size_t s = static_cast<size_t>(j);
      const double var = sums[s] / static_cast<double>(rows);
      inv_std[s] = math::InvStd(var, eps);
      a.running_mean.data[j] = static_cast<T>(math::RunningAverage<double>(
          static_cast<double>(a.running_mean.data[j]), mean[s], factor));
      a.running_var.data[j] = static_cast<T>(math::RunningAverage<double>(
          static_cast<double>(a.running_var.data[j]), var * unbias, factor));
    }
  } else {
    for (int64_t j = 0; j < c; ++j) {
      const size_t s = static_cast<size_t>(j);
      mean[s] = static_cast<double>(a.running_mean.data[j]);
      inv_std[s] = math::InvStd(static_cast<double>(a.running_var.data[j]), eps);
    }
  }
  std::vector<T> mean_t(static_cast<size_t>(c)), inv_std_t(static_cast<size_t>(c));
  for (int64_t j = 0; j < c; ++j) {
    const size_t s = static_cast<size_t>(j);
    mean_t[s] = static_cast<T>(mean[s]);
    inv_std_t[s] = static_cast<T>(inv_std[s]);
    a.saved_mean.data[j] = mean_t[s];
    a.saved_inv_std.data[j] = inv_std_t[s];
  }
  ctx.ParallelFor(rows, kRowGrain, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const T* x = a.x.data + r * c;
      T* y = a.y.data + r * c;
      for (int64_t j = 0; j < c; ++j) {
        const size_t s = static_cast<size_t>(j);
        y[j] = math::BatchNormForward<T>(x[j], mean_t[s], inv_std_t[s], a.scale.data[j],
                                         a.offset.data[j]);
      }
    }
  });
  return Status::Ok();
}

template <typename T>
Status FusedBatchNormGrad(const CpuContext& ctx, const BatchNormGradArgs<T>& a,
                          const BatchNormOptions& options) {
  ASSIGN_OR_RETURN(const int64_t c, internal::CheckBatchNormGrad(a));
  if (c == 0) return Status::Ok();
  const int64_t rows = a.x.size() / c;
  // sums[2j] = Σ dy, sums[2j+1] = Σ dy·x̂
  std::vector<double> sums;
  ReduceRows(ctx, rows, c, 2, [&](int64_t r, double* acc) {
    const T* x = a.x.data + r * c;
    const T* dy = a.dy.data + r * c;
    for (int64_t j = 0; j < c; ++j) {
      const double xhat = (static_cast<double>(x[j]) - static_cast<double>(a.saved_mean.data[j])) *
                          static_cast<double>(a.saved_inv_std.data[j]);
      acc[2 * j] += static_cast<double>(dy[j]);
      acc[2 * j + 1] += static_cast<double>(dy[j]) * xhat;
    }
  }, sums);
  std::vector<T> sum_dy(static_cast<size_t>(c)), sum_dy_xhat(static_cast<size_t>(c));
  for (int64_t j = 0; j < c; ++j) {
    const size_t s = static_cast<size_t>(j);
    sum_dy[s] = static_cast<T>(sums[2 * s]);
    sum_dy_xhat[s] = static_cast<T>(sums[2 * s + 1]);
    a.doffset.data[j] = sum_dy[s];
    a.dscale.data[j] = sum_dy_xhat[s];
  }
  const T rows_t = static_cast<T>(rows);
  const bool training = options.is_training;
  ctx.ParallelFor(rows, kRowGrain, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const T* x = a.x.data + r * c;
      const T* dy = a.dy.data + r * c;
      T* dx = a.dx.data + r * c;
      for (int64_t j = 0; j < c; ++j) {
        const size_t s = static_cast<size_t>(j);
        dx[j] = training ? math::BatchNormTrainingDx<T>(dy[j], x[j], a.saved_mean.data[j],
                                                        a.saved_inv_std.data[j], a.scale.data[j],
                                                        sum_dy[s], sum_dy_xhat[s], rows_t)
                         : math::BatchNormInferenceDx<T>(dy[j], a.saved_inv_std.data[j],
                                                         a.scale.data[j]);
      }
    }
  });
  return Status::Ok();
}

#define INSTANTIATE(T)                                                                     \
  template Status FusedBatchNorm<T>(const CpuContext&, const BatchNormArgs<T>&,            \
                                    const BatchNormOptions&);                              \
  template Status FusedBatchNormGrad<T>(const CpuContext&, const BatchNormGradArgs<T>&,    \
                                        const BatchNormOptions&);                          \
  template StatusOr<int64_t> internal::CheckBatchNorm<T>(const BatchNormArgs<T>&);         \
  template StatusOr<int64_t> internal::CheckBatchNormGrad<T>(const BatchNormGradArgs<T>&);
STEPSCOPE_KERNELS_FOR_CPU_TYPES(INSTANTIATE)
#undef INSTANTIATE

}  // namespace stepscope::kernels
