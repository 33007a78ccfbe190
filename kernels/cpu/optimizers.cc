// L2Loss, global-norm clipping and the parameter updates on the CPU. Sums of squares reduce
// over fixed chunks with double partials (kernels/math/reduce_math.h, shared with the CUDA
// kernels), so the result does not depend on the thread count.
#include "kernels/optimizers.h"

#include <vector>

#include "kernels/math/optimizer_math.h"
#include "kernels/math/reduce_math.h"
#include "kernels/shape_check.h"

namespace stepscope::kernels {
namespace {

constexpr int64_t kUpdateGrain = 1 << 14;

template <typename T>
double SumOfSquares(const CpuContext& ctx, const T* x, int64_t n) {
  std::vector<double> partial(static_cast<size_t>(math::SumChunkCount(n)), 0.0);
  ctx.ParallelFor(n, math::kSumChunk, [&](int64_t b, int64_t e) {
    double sum = 0;
    for (int64_t i = b; i < e; ++i) sum += math::SquareAsDouble(x[i]);
    partial[static_cast<size_t>(b / math::kSumChunk)] = sum;
  });
  double total = 0;
  for (double p : partial) total += p;
  return total;
}

Status ExpectScalar(const char* op, const char* name, const Shape& shape) {
  if (shape.num_elements() == 1) return Status::Ok();
  return internal::ShapeError(op, std::string(name) + " must be a scalar, got " + shape.ToString());
}

}  // namespace

template <typename T>
Status L2Loss(const CpuContext& ctx, In<T> x, Out<T> loss) {
  RETURN_IF_ERROR(ExpectScalar("L2Loss", "loss", loss.shape));
  loss.data[0] = static_cast<T>(SumOfSquares(ctx, x.data, x.size()) / 2);
  return Status::Ok();
}

template <typename T>
Status L2LossGrad(const CpuContext& ctx, In<T> x, In<T> dloss, Out<T> dx) {
  RETURN_IF_ERROR(ExpectScalar("L2LossGrad", "dloss", dloss.shape));
  RETURN_IF_ERROR(internal::ExpectShape("L2LossGrad", "dx", dx.shape, x.shape));
  const T g = dloss.data[0];
  ctx.ParallelFor(x.size(), kUpdateGrain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) dx.data[i] = g * x.data[i];
  });
  return Status::Ok();
}

template <typename T>
Status GlobalNorm(const CpuContext& ctx, std::span<const In<T>> tensors, Out<T> norm) {
  RETURN_IF_ERROR(ExpectScalar("GlobalNorm", "norm", norm.shape));
  double total = 0;
  for (const In<T>& t : tensors) total += SumOfSquares(ctx, t.data, t.size());
  norm.data[0] = static_cast<T>(math::Sqrt(total));
  return Status::Ok();
}

template <typename T>
Status ClipByGlobalNorm(const CpuContext& ctx,
                        std::span<const TensorView<std::type_identity_t<T>>> tensors,
                        std::type_identity_t<T> clip_norm, Out<T> global_norm) {
  RETURN_IF_ERROR(ExpectScalar("ClipByGlobalNorm", "global_norm", global_norm.shape));
  if (!(clip_norm > T(0))) {
    return internal::ShapeError("ClipByGlobalNorm", "clip_norm must be > 0");
  }
  double total = 0;
  for (const TensorView<T>& t : tensors) total += SumOfSquares<T>(ctx, t.data, t.size());
  const T norm = static_cast<T>(math::Sqrt(total));
  global_norm.data[0] = norm;
  const T scale = math::ClipScale(norm, clip_norm);
  for (const TensorView<T>& t : tensors) {
    ctx.ParallelFor(t.size(), kUpdateGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) t.data[i] *= scale;
    });
  }
  return Status::Ok();
}

template <typename T>
Status ClipByNorm(const CpuContext& ctx, In<T> x, In<T> global_norm,
                  std::type_identity_t<T> clip_norm, Out<T> y) {
  RETURN_IF_ERROR(ExpectScalar("ClipByNorm", "global_norm", global_norm.shape));
  RETURN_IF_ERROR(internal::ExpectShape("ClipByNorm", "y", y.shape, x.shape));
  if (!(clip_norm > T(0))) return internal::ShapeError("ClipByNorm", "clip_norm must be > 0");
  const T scale = math::ClipScale(global_norm.data[0], clip_norm);
  ctx.ParallelFor(x.size(), kUpdateGrain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) y.data[i] = x.data[i] * scale;
  });
  return Status::Ok();
}

template <typename T>
Status ApplyGradientDescent(const CpuContext& ctx, Out<T> var, std::type_identity_t<T> lr,
                            In<T> grad) {
  RETURN_IF_ERROR(internal::ExpectShape("ApplyGradientDescent", "grad", grad.shape, var.shape));
  ctx.ParallelFor(var.size(), kUpdateGrain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) var.data[i] = math::GradientDescent(var.data[i], lr, grad.data[i]);
  });
  return Status::Ok();
}

template <typename T>
Status ApplyMomentum(const CpuContext& ctx, Out<T> var, Out<T> accum, std::type_identity_t<T> lr,
                     In<T> grad, const MomentumOptions& options) {
  RETURN_IF_ERROR(internal::ExpectShape("ApplyMomentum", "grad", grad.shape, var.shape));
  RETURN_IF_ERROR(internal::ExpectShape("ApplyMomentum", "accum", accum.shape, var.shape));
  const T momentum = static_cast<T>(options.momentum);
  const T wd = static_cast<T>(options.weight_decay);
  ctx.ParallelFor(var.size(), kUpdateGrain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      var.data[i] = math::Momentum(var.data[i], &accum.data[i], lr, grad.data[i], momentum, wd,
                                   options.use_nesterov);
    }
  });
  return Status::Ok();
}

#define INSTANTIATE(T)                                                                      \
  template Status L2Loss<T>(const CpuContext&, In<T>, Out<T>);                             \
  template Status L2LossGrad<T>(const CpuContext&, In<T>, In<T>, Out<T>);                  \
  template Status GlobalNorm<T>(const CpuContext&, std::span<const In<T>>, Out<T>);        \
  template Status ClipByGlobalNorm<T>(const CpuContext&, std::span<const TensorView<T>>,   \
                                      std::type_identity_t<T>, Out<T>);                    \
  template Status ClipByNorm<T>(const CpuContext&, In<T>, In<T>, std::type_identity_t<T>,    \
                                Out<T>);                                                    \
  template Status ApplyGradientDescent<T>(const CpuContext&, Out<T>, std::type_identity_t<T>, \
                                          In<T>);                                          \
  template Status ApplyMomentum<T>(const CpuContext&, Out<T>, Out<T>, std::type_identity_t<T>, \
                                   In<T>, const MomentumOptions&);
STEPSCOPE_KERNELS_FOR_CPU_TYPES(INSTANTIATE)
#undef INSTANTIATE

}  // namespace stepscope::kernels
