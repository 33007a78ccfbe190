// Element-wise ops on the CPU: flat threaded loops over the shared scalar formulas.
#include "kernels/elementwise.h"

#include <string>
#include <vector>

#include "kernels/math/elementwise_math.h"
#include "kernels/math/random_math.h"
#include "kernels/shape_check.h"

namespace stepscope::kernels {
namespace internal {

Status CheckSameShape(const char* op, const Shape& a, const Shape& b) {
  if (a == b) return Status::Ok();
  return ShapeError(op, "shapes differ: " + a.ToString() + " vs " + b.ToString());
}

Status CheckBiasAdd(const Shape& x, const Shape& bias, const Shape& y) {
  if (x.rank < 1) return ShapeError("BiasAdd", "x must have rank >= 1, got " + x.ToString());
  RETURN_IF_ERROR(ExpectShape("BiasAdd", "bias", bias, Shape{x[x.rank - 1]}));
  return CheckSameShape("BiasAdd", x, y);
}

Status CheckFusedDropout(const char* op, const StridedRows<const float>& a,
                         const StridedRows<const float>& b, const Shape& mask, float keep) {
  if (!(keep > 0.0f && keep <= 1.0f)) {
    return ShapeError(op, "keep_prob " + std::to_string(keep) + " is not in (0, 1]");
  }
  RETURN_IF_ERROR(CheckSameShape(op, a.shape(), b.shape()));
  RETURN_IF_ERROR(ExpectShape(op, "mask", mask, a.shape()));
  if (a.ld < a.cols || b.ld < b.cols) {
    return ShapeError(op, "rows closer together than their width (" + std::to_string(a.ld) +
                              ", " + std::to_string(b.ld) + " for " + std::to_string(a.cols) +
                              " columns)");
  }
  return Status::Ok();
}

}  // namespace internal
namespace {

constexpr int64_t kElementGrain = 1 << 14;  // below this, a thread hand-off costs more

// Runs fn(i) for i in [0, n) on the context's threads.
template <typename Fn>
void ForEachIndex(const CpuContext& ctx, int64_t n, Fn fn) {
  ctx.ParallelFor(n, ctx.GrainFor(n, kElementGrain), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) fn(i);
  });
}

}  // namespace

template <typename T>
Status BiasAdd(const CpuContext& ctx, In<T> x, In<T> bias, Out<T> y) {
  RETURN_IF_ERROR(internal::CheckBiasAdd(x.shape, bias.shape, y.shape));
  const int64_t c = bias.size();
  if (c == 0) return Status::Ok();
  const int64_t rows = x.size() / c;
  ctx.ParallelFor(rows, ctx.GrainFor(rows, kElementGrain / c + 1), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const T* xr = x.data + r * c;
      T* yr = y.data + r * c;
      for (int64_t j = 0; j < c; ++j) yr[j] = xr[j] + bias.data[j];
    }
  });
  return Status::Ok();
}

// Per chunk of rows a partial column sum, then the partials in chunk order (deterministic).
template <typename T>
Status BiasAddGrad(const CpuContext& ctx, In<T> dy, Out<T> dbias) {
  if (dy.rank() < 1) return internal::ShapeError("BiasAddGrad", "dy must have rank >= 1");
  const int64_t c = dy.dim(dy.rank() - 1);
  RETURN_IF_ERROR(internal::ExpectShape("BiasAddGrad", "dbias", dbias.shape, Shape{c}));
  if (c == 0) return Status::Ok();
  const int64_t rows = dy.size() / c;
  const int64_t grain = 256;
  const int64_t chunks = (rows + grain - 1) / grain;
  std::vector<double> partial(static_cast<size_t>(chunks * c), 0.0);
  ctx.ParallelFor(rows, grain, [&](int64_t r0, int64_t r1) {
    double* p = partial.data() + (r0 / grain) * c;
    for (int64_t r = r0; r < r1; ++r) {
      const T* row = dy.data + r * c;
      for (int64_t j = 0; j < c; ++j) p[j] += static_cast<double>(row[j]);
    }
  });
  for (int64_t j = 0; j < c; ++j) {
    double sum = 0;
    for (int64_t k = 0; k < chunks; ++k) sum += partial[static_cast<size_t>(k * c + j)];
    dbias.data[j] = static_cast<T>(sum);
  }
  return Status::Ok();
}

template <typename T>
Status AddN(const CpuContext& ctx, std::span<const In<T>> inputs, Out<T> out) {
  if (inputs.empty()) return internal::ShapeError("AddN", "needs at least one input");
  for (const In<T>& in : inputs) RETURN_IF_ERROR(internal::CheckSameShape("AddN", in.shape, out.shape));
  ForEachIndex(ctx, out.size(), [&](int64_t i) {
    T sum = inputs[0].data[i];
    for (size_t k = 1; k < inputs.size(); ++k) sum += inputs[k].data[i];
    out.data[i] = sum;
  });
  return Status::Ok();
}

template <typename T>
Status Add(const CpuContext& ctx, In<T> a, In<T> b, Out<T> c) {
  RETURN_IF_ERROR(internal::CheckSameShape("Add", a.shape, b.shape));
  RETURN_IF_ERROR(internal::CheckSameShape("Add", a.shape, c.shape));
  ForEachIndex(ctx, c.size(), [&](int64_t i) { c.data[i] = a.data[i] + b.data[i]; });
  return Status::Ok();
}

template <typename T>
Status Mul(const CpuContext& ctx, In<T> a, In<T> b, Out<T> c) {
  RETURN_IF_ERROR(internal::CheckSameShape("Mul", a.shape, b.shape));
  RETURN_IF_ERROR(internal::CheckSameShape("Mul", a.shape, c.shape));
  ForEachIndex(ctx, c.size(), [&](int64_t i) { c.data[i] = a.data[i] * b.data[i]; });
  return Status::Ok();
}

template <typename T>
Status MulGrad(const CpuContext& ctx, In<T> a, In<T> b, In<T> dc, Out<T> da, Out<T> db) {
  RETURN_IF_ERROR(internal::CheckSameShape("MulGrad", a.shape, b.shape));
  RETURN_IF_ERROR(internal::CheckSameShape("MulGrad", a.shape, dc.shape));
  if (da.present()) RETURN_IF_ERROR(internal::CheckSameShape("MulGrad", a.shape, da.shape));
  if (db.present()) RETURN_IF_ERROR(internal::CheckSameShape("MulGrad", a.shape, db.shape));
  ForEachIndex(ctx, dc.size(), [&](int64_t i) {
    const T g = dc.data[i];
    const T av = a.data[i];
    const T bv = b.data[i];
    if (da.present()) da.data[i] = g * bv;
    if (db.present()) db.data[i] = g * av;
  });
  return Status::Ok();
}

template <typename T>
Status Scale(const CpuContext& ctx, In<T> x, std::type_identity_t<T> alpha, Out<T> y) {
  RETURN_IF_ERROR(internal::CheckSameShape("Scale", x.shape, y.shape));
  ForEachIndex(ctx, y.size(), [&](int64_t i) { y.data[i] = alpha * x.data[i]; });
  return Status::Ok();
}

template <typename T>
Status AddScalar(const CpuContext& ctx, In<T> x, std::type_identity_t<T> s, Out<T> y) {
  RETURN_IF_ERROR(internal::CheckSameShape("AddScalar", x.shape, y.shape));
  ForEachIndex(ctx, y.size(), [&](int64_t i) { y.data[i] = s + x.data[i]; });
  return Status::Ok();
}

template <typename T>
Status Floor(const CpuContext& ctx, In<T> x, Out<T> y) {
  RETURN_IF_ERROR(internal::CheckSameShape("Floor", x.shape, y.shape));
  ForEachIndex(ctx, y.size(), [&](int64_t i) { y.data[i] = math::Floor(x.data[i]); });
  return Status::Ok();
}

Status RandomUniform(const CpuContext& ctx, uint64_t state, Out<float> y) {
  ForEachIndex(ctx, y.size(), [&](int64_t i) {
    y.data[i] = math::SplitMixUniform24(state, static_cast<uint64_t>(i));
  });
  return Status::Ok();
}

Status FusedDropout(const CpuContext& ctx, uint64_t state, float keep, StridedRows<const float> x,
                    Out<float> mask, StridedRows<float> y) {
  RETURN_IF_ERROR(internal::CheckFusedDropout("Dropout", x, y, mask.shape, keep));
  const int64_t cols = x.cols;
  ForEachIndex(ctx, x.rows * cols, [&](int64_t k) {
    const int64_t r = k / cols, c = k % cols;
    const float m = math::DropoutMask(keep, math::SplitMixUniform24(state, static_cast<uint64_t>(k)));
    mask.data[k] = m;
    y.data[r * y.ld + c] = math::DropoutApply(x.data[r * x.ld + c], keep, m);
  });
  return Status::Ok();
}

Status FusedDropoutGrad(const CpuContext& ctx, StridedRows<const float> dy, In<float> mask,
                        float keep, Out<float> dx) {
  RETURN_IF_ERROR(internal::ExpectRank("DropoutGrad", "dx", dx.shape, 2));
  RETURN_IF_ERROR(internal::CheckFusedDropout("DropoutGrad", dy, StridedRows<const float>(dx),
                                              mask.shape, keep));
  const int64_t cols = dy.cols;
  ForEachIndex(ctx, dy.rows * cols, [&](int64_t k) {
    dx.data[k] = math::DropoutGrad(dy.data[(k / cols) * dy.ld + k % cols], mask.data[k], keep);
  });
  return Status::Ok();
}

template <typename T>
Status DivideByScalar(const CpuContext& ctx, In<T> x, std::type_identity_t<T> d, Out<T> y) {
  RETURN_IF_ERROR(internal::CheckSameShape("DivideByScalar", x.shape, y.shape));
  ForEachIndex(ctx, y.size(), [&](int64_t i) { y.data[i] = x.data[i] / d; });
  return Status::Ok();
}

template <typename T>
Status Relu(const CpuContext& ctx, In<T> x, Out<T> y) {
  RETURN_IF_ERROR(internal::CheckSameShape("Relu", x.shape, y.shape));
  ForEachIndex(ctx, y.size(), [&](int64_t i) { y.data[i] = math::Relu(x.data[i]); });
  return Status::Ok();
}

template <typename T>
Status ReluGrad(const CpuContext& ctx, In<T> dy, In<T> x, Out<T> dx) {
  RETURN_IF_ERROR(internal::CheckSameShape("ReluGrad", dy.shape, x.shape));
  RETURN_IF_ERROR(internal::CheckSameShape("ReluGrad", dy.shape, dx.shape));
  ForEachIndex(ctx, dx.size(), [&](int64_t i) { dx.data[i] = math::ReluGrad(dy.data[i], x.data[i]); });
  return Status::Ok();
}

#define INSTANTIATE(T)                                                                       \
  template Status BiasAdd<T>(const CpuContext&, In<T>, In<T>, Out<T>);                      \
  template Status BiasAddGrad<T>(const CpuContext&, In<T>, Out<T>);                         \
  template Status AddN<T>(const CpuContext&, std::span<const In<T>>, Out<T>);               \
  template Status Add<T>(const CpuContext&, In<T>, In<T>, Out<T>);                          \
  template Status Mul<T>(const CpuContext&, In<T>, In<T>, Out<T>);                          \
  template Status MulGrad<T>(const CpuContext&, In<T>, In<T>, In<T>, Out<T>, Out<T>);       \
  template Status Scale<T>(const CpuContext&, In<T>, std::type_identity_t<T>, Out<T>);      \
  template Status AddScalar<T>(const CpuContext&, In<T>, std::type_identity_t<T>, Out<T>);  \
  template Status Floor<T>(const CpuContext&, In<T>, Out<T>);                               \
  template Status DivideByScalar<T>(const CpuContext&, In<T>, std::type_identity_t<T>,      \
                                    Out<T>);                                                \
  template Status Relu<T>(const CpuContext&, In<T>, Out<T>);                                \
  template Status ReluGrad<T>(const CpuContext&, In<T>, In<T>, Out<T>);
STEPSCOPE_KERNELS_FOR_CPU_TYPES(INSTANTIATE)
#undef INSTANTIATE

}  // namespace stepscope::kernels
