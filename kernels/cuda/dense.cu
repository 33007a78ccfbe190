// CUDA: MatMul (cuBLAS), the element-wise ops, L2Loss/global-norm clipping and the updates.
// The per-element formulas come from the same math headers as the CPU reference, and the sums
// of squares use its fixed chunking (kernels/math/reduce_math.h): no atomics, same bits on
// every run and every replica.
#include <algorithm>

#include "kernels/cuda/cuda_util.cuh"
#include "kernels/elementwise.h"
#include "kernels/math/elementwise_math.h"
#include "kernels/math/optimizer_math.h"
#include "kernels/math/random_math.h"
#include "kernels/math/reduce_math.h"
#include "kernels/matmul.h"
#include "kernels/matmul_grad.h"
#include "kernels/optimizers.h"
#include "kernels/shape_check.h"

namespace stepscope::kernels {

using internal::ForEach;

Status MatMul(const CudaContext& ctx, In<float> a, In<float> b, Out<float> c,
              MatMulOptions options) {
  ASSIGN_OR_RETURN(const internal::GemmDims d,
                   internal::CheckMatMul(a.shape, b.shape, c.shape, options));
  return internal::RowMajorSgemm(ctx, options.transpose_a, options.transpose_b, d.m, d.n, d.k,
                                 1.0f, a.data, a.dim(1), b.data, b.dim(1),
                                 options.accumulate ? 1.0f : 0.0f, c.data, d.n);
}

Status MatMulStrided(const CudaContext& ctx, StridedRows<const float> a, StridedRows<const float> b,
                     StridedRows<float> c, MatMulOptions options) {
  ASSIGN_OR_RETURN(const internal::GemmDims d,
                   internal::CheckMatMulStrided<float>(a, b, c, options));
  return internal::RowMajorSgemm(ctx, options.transpose_a, options.transpose_b, d.m, d.n, d.k,
                                 1.0f, a.data, a.ld, b.data, b.ld,
                                 options.accumulate ? 1.0f : 0.0f, c.data, c.ld);
}

Status MatMulGrad(const CudaContext& ctx, In<float> a, In<float> b, In<float> dc, Out<float> da,
                  Out<float> db, MatMulOptions options) {
  auto multiply = [&](In<float> x, In<float> y, Out<float> z, MatMulOptions o) {
    return MatMul(ctx, x, y, z, o);
  };
  return internal::MatMulGradByMatMuls<float>(multiply, a, b, dc, da, db, options);
}

namespace {

struct BiasAddFn {
  const float* x;
  const float* bias;
  float* y;
  int64_t c;
  __device__ void operator()(int64_t i) const { y[i] = x[i] + bias[i % c]; }
};

constexpr int kMaxAddNInputs = 16;
struct AddNFn {
  const float* in[kMaxAddNInputs];
  int count;
  bool accumulate;  // add to out (a later batch of inputs)
  float* out;
  __device__ void operator()(int64_t i) const {
    float s = accumulate ? out[i] : 0.0f;
    for (int k = 0; k < count; ++k) s += in[k][i];
    out[i] = s;
  }
};

struct AddFn {
  const float *a, *b;
  float* c;
  __device__ void operator()(int64_t i) const { c[i] = a[i] + b[i]; }
};
struct MulFn {
  const float *a, *b;
  float* c;
  __device__ void operator()(int64_t i) const { c[i] = a[i] * b[i]; }
};
struct MulGradFn {
  const float *a, *b, *dc;
  float *da, *db;
  __device__ void operator()(int64_t i) const {
    if (da != nullptr) da[i] = dc[i] * b[i];
    if (db != nullptr) db[i] = dc[i] * a[i];
  }
};
struct ScaleFn {
  const float* x;
  float alpha;
  float* y;
  __device__ void operator()(int64_t i) const { y[i] = alpha * x[i]; }
};
struct AddScalarFn {
  const float* x;
  float s;
  float* y;
  __device__ void operator()(int64_t i) const { y[i] = s + x[i]; }
};
struct FloorFn {
  const float* x;
  float* y;
  __device__ void operator()(int64_t i) const { y[i] = math::Floor(x[i]); }
};
struct RandomUniformFn {
  uint64_t state;
  float* y;
  __device__ void operator()(int64_t i) const {
    y[i] = math::SplitMixUniform24(state, static_cast<uint64_t>(i));
  }
};
struct FusedDropoutFn {
  uint64_t state;
  float keep;
  const float* x;
  int64_t x_ld;
  float* mask;
  float* y;
  int64_t y_ld, cols;
  __device__ void operator()(int64_t k) const {
    const int64_t r = k / cols, c = k % cols;
    const float m = math::DropoutMask(keep, math::SplitMixUniform24(state, static_cast<uint64_t>(k)));
    mask[k] = m;
    y[r * y_ld + c] = math::DropoutApply(x[r * x_ld + c], keep, m);
  }
};
struct FusedDropoutGradFn {
  const float* dy;
  int64_t dy_ld, cols;
  const float* mask;
  float keep;
  float* dx;
  __device__ void operator()(int64_t k) const {
    dx[k] = math::DropoutGrad(dy[(k / cols) * dy_ld + k % cols], mask[k], keep);
  }
};
struct DivideByScalarFn {
  const float* x;
  float d;
  float* y;
  __device__ void operator()(int64_t i) const { y[i] = x[i] / d; }
};
struct ReluFn {
  const float* x;
  float* y;
  __device__ void operator()(int64_t i) const { y[i] = math::Relu(x[i]); }
};
struct ReluGradFn {
  const float *dy, *x;
  float* dx;
  __device__ void operator()(int64_t i) const { dx[i] = math::ReluGrad(dy[i], x[i]); }
};

}  // namespace

Status BiasAdd(const CudaContext& ctx, In<float> x, In<float> bias, Out<float> y) {
  RETURN_IF_ERROR(internal::CheckBiasAdd(x.shape, bias.shape, y.shape));
  if (bias.size() == 0) return Status::Ok();
  return ForEach(ctx, y.size(), BiasAddFn{x.data, bias.data, y.data, bias.size()});
}

Status BiasAddGrad(const CudaContext& ctx, In<float> dy, Out<float> dbias) {
  if (dy.rank() < 1) return internal::ShapeError("BiasAddGrad", "dy must have rank >= 1");
  const int64_t c = dy.dim(dy.rank() - 1);
  RETURN_IF_ERROR(internal::ExpectShape("BiasAddGrad", "dbias", dbias.shape, Shape{c}));
  if (c == 0) return Status::Ok();
  return internal::ColumnSum(ctx, dy.data, dy.size() / c, c, dbias.data, false);
}

// Inputs go in batches of kMaxAddNInputs; `out` may alias one of the first batch's inputs.
Status AddN(const CudaContext& ctx, std::span<const In<float>> inputs, Out<float> out) {
  if (inputs.empty()) return internal::ShapeError("AddN", "needs at least one input");
  for (const In<float>& in : inputs) {
    RETURN_IF_ERROR(internal::CheckSameShape("AddN", in.shape, out.shape));
  }
  for (size_t first = 0; first < inputs.size(); first += kMaxAddNInputs) {
    AddNFn fn{};
    fn.count = static_cast<int>(std::min<size_t>(kMaxAddNInputs, inputs.size() - first));
    for (int k = 0; k < fn.count; ++k) fn.in[k] = inputs[first + static_cast<size_t>(k)].data;
    fn.accumulate = first > 0;
    fn.out = out.data;
    RETURN_IF_ERROR(ForEach(ctx, out.size(), fn));
  }
  return Status::Ok();
}

Status Add(const CudaContext& ctx, In<float> a, In<float> b, Out<float> c) {
  RETURN_IF_ERROR(internal::CheckSameShape("Add", a.shape, b.shape));
  RETURN_IF_ERROR(internal::CheckSameShape("Add", a.shape, c.shape));
  return ForEach(ctx, c.size(), AddFn{a.data, b.data, c.data});
}

Status Mul(const CudaContext& ctx, In<float> a, In<float> b, Out<float> c) {
  RETURN_IF_ERROR(internal::CheckSameShape("Mul", a.shape, b.shape));
  RETURN_IF_ERROR(internal::CheckSameShape("Mul", a.shape, c.shape));
  return ForEach(ctx, c.size(), MulFn{a.data, b.data, c.data});
}

Status MulGrad(const CudaContext& ctx, In<float> a, In<float> b, In<float> dc, Out<float> da,
               Out<float> db) {
  RETURN_IF_ERROR(internal::CheckSameShape("MulGrad", a.shape, b.shape));
  RETURN_IF_ERROR(internal::CheckSameShape("MulGrad", a.shape, dc.shape));
  if (da.present()) RETURN_IF_ERROR(internal::CheckSameShape("MulGrad", a.shape, da.shape));
  if (db.present()) RETURN_IF_ERROR(internal::CheckSameShape("MulGrad", a.shape, db.shape));
  return ForEach(ctx, dc.size(), MulGradFn{a.data, b.data, dc.data, da.data, db.data});
}

Status Scale(const CudaContext& ctx, In<float> x, float alpha, Out<float> y) {
  RETURN_IF_ERROR(internal::CheckSameShape("Scale", x.shape, y.shape));
  return ForEach(ctx, y.size(), ScaleFn{x.data, alpha, y.data});
}

Status AddScalar(const CudaContext& ctx, In<float> x, float s, Out<float> y) {
  RETURN_IF_ERROR(internal::CheckSameShape("AddScalar", x.shape, y.shape));
  return ForEach(ctx, y.size(), AddScalarFn{x.data, s, y.data});
}

Status Floor(const CudaContext& ctx, In<float> x, Out<float> y) {
  RETURN_IF_ERROR(internal::CheckSameShape("Floor", x.shape, y.shape));
  return ForEach(ctx, y.size(), FloorFn{x.data, y.data});
}

Status RandomUniform(const CudaContext& ctx, uint64_t state, Out<float> y) {
  return ForEach(ctx, y.size(), RandomUniformFn{state, y.data});
}

Status FusedDropout(const CudaContext& ctx, uint64_t state, float keep, StridedRows<const float> x,
                    Out<float> mask, StridedRows<float> y) {
  RETURN_IF_ERROR(internal::CheckFusedDropout("Dropout", x, y, mask.shape, keep));
  if (x.cols == 0) return Status::Ok();
  return ForEach(ctx, x.rows * x.cols,
                 FusedDropoutFn{state, keep, x.data, x.ld, mask.data, y.data, y.ld, x.cols});
}

Status FusedDropoutGrad(const CudaContext& ctx, StridedRows<const float> dy, In<float> mask,
                        float keep, Out<float> dx) {
  RETURN_IF_ERROR(internal::ExpectRank("DropoutGrad", "dx", dx.shape, 2));
  RETURN_IF_ERROR(internal::CheckFusedDropout("DropoutGrad", dy, StridedRows<const float>(dx),
                                              mask.shape, keep));
  if (dy.cols == 0) return Status::Ok();
  return ForEach(ctx, dy.rows * dy.cols,
                 FusedDropoutGradFn{dy.data, dy.ld, dy.cols, mask.data, keep, dx.data});
}

Status DivideByScalar(const CudaContext& ctx, In<float> x, float d, Out<float> y) {
  RETURN_IF_ERROR(internal::CheckSameShape("DivideByScalar", x.shape, y.shape));
  return ForEach(ctx, y.size(), DivideByScalarFn{x.data, d, y.data});
}

Status Relu(const CudaContext& ctx, In<float> x, Out<float> y) {
  RETURN_IF_ERROR(internal::CheckSameShape("Relu", x.shape, y.shape));
  return ForEach(ctx, y.size(), ReluFn{x.data, y.data});
}

Status ReluGrad(const CudaContext& ctx, In<float> dy, In<float> x, Out<float> dx) {
  RETURN_IF_ERROR(internal::CheckSameShape("ReluGrad", dy.shape, x.shape));
  RETURN_IF_ERROR(internal::CheckSameShape("ReluGrad", dy.shape, dx.shape));
  return ForEach(ctx, dx.size(), ReluGradFn{dy.data, x.data, dx.data});
}

// ---- L2Loss, global norm, updates -------------------------------------------------------

namespace {

// partials[chunk] = Σ x² over one chunk (kernels/math/reduce_math.h), in double; one block per
// chunk, so the grid and the order of the additions depend on n alone (no atomics).
__global__ void SquareChunkSumsKernel(const float* x, int64_t n, double* partials) {
  __shared__ double shared[internal::kThreads];
  const int64_t chunk = blockIdx.x;
  const int64_t end = math::SumChunkEnd(chunk, n);
  double s = 0;
  for (int64_t i = math::SumChunkBegin(chunk) + threadIdx.x; i < end; i += blockDim.x) {
    s += math::SquareAsDouble(x[i]);
  }
  s = internal::BlockSum(s, shared);
  if (threadIdx.x == 0) partials[chunk] = s;
}

// out = Σ partials · scale, or its square root, by one block in a fixed order.
__global__ void FinishSquareSumKernel(const double* partials, int64_t count, double scale,
                                      bool take_sqrt, float* out) {
  __shared__ double shared[internal::kThreads];
  double s = 0;
  for (int64_t i = threadIdx.x; i < count; i += blockDim.x) s += partials[i];
  s = internal::BlockSum(s, shared);
  if (threadIdx.x == 0) {
    const double total = s * scale;
    out[0] = static_cast<float>(take_sqrt ? math::Sqrt(total) : total);
  }
}

struct L2LossGradFn {
  const float *x, *dloss;
  float* dx;
  __device__ void operator()(int64_t i) const { dx[i] = dloss[0] * x[i]; }
};
struct ClipFn {
  float* t;
  const float* norm;
  float clip_norm;
  __device__ void operator()(int64_t i) const { t[i] *= math::ClipScale(norm[0], clip_norm); }
};
struct ClipByNormFn {
  const float *x, *norm;
  float clip_norm;
  float* y;
  __device__ void operator()(int64_t i) const { y[i] = x[i] * math::ClipScale(norm[0], clip_norm); }
};
struct SgdFn {
  float* var;
  float lr;
  const float* grad;
  __device__ void operator()(int64_t i) const {
    var[i] = math::GradientDescent(var[i], lr, grad[i]);
  }
};
struct MomentumFn {
  float *var, *accum;
  float lr;
  const float* grad;
  float momentum, weight_decay;
  bool nesterov;
  __device__ void operator()(int64_t i) const {
    var[i] = math::Momentum(var[i], &accum[i], lr, grad[i], momentum, weight_decay, nesterov);
  }
};

Status ExpectScalar(const char* op, const char* name, const Shape& shape) {
  if (shape.num_elements() == 1) return Status::Ok();
  return internal::ShapeError(op, std::string(name) + " must be a scalar, got " + shape.ToString());
}

// The partials of `tensors`, one run of math::SumChunkCount(size) per tensor, into `partials`.
Status SquareChunkSums(const CudaContext& ctx, std::span<const In<float>> tensors,
                       double* partials) {
  int64_t offset = 0;
  for (const In<float>& t : tensors) {
    const int64_t chunks = math::SumChunkCount(t.size());
    if (chunks == 0) continue;
    STEPSCOPE_CUDA_LAUNCH(SquareChunkSumsKernel, static_cast<unsigned int>(chunks),
                          internal::kThreads, 0, ctx.stream(), t.data, t.size(),
                          partials + offset);
    offset += chunks;
  }
  return Status::Ok();
}

// out = (Σ over tensors of Σ x²) · scale, or its square root.
Status SumOfSquares(const CudaContext& ctx, std::span<const In<float>> tensors, double scale,
                    bool take_sqrt, float* out) {
  int64_t chunks = 0;
  for (const In<float>& t : tensors) chunks += math::SumChunkCount(t.size());
  internal::DeviceScratch partials;
  RETURN_IF_ERROR(partials.Allocate(ctx, static_cast<size_t>(chunks) * sizeof(double)));
  RETURN_IF_ERROR(SquareChunkSums(ctx, tensors, partials.as<double>()));
  STEPSCOPE_CUDA_LAUNCH(FinishSquareSumKernel, 1, internal::kThreads, 0, ctx.stream(),
                        partials.as<double>(), chunks, scale, take_sqrt, out);
  return Status::Ok();
}

}  // namespace

Status L2Loss(const CudaContext& ctx, In<float> x, Out<float> loss) {
  RETURN_IF_ERROR(ExpectScalar("L2Loss", "loss", loss.shape));
  return SumOfSquares(ctx, std::span<const In<float>>(&x, 1), 0.5, false, loss.data);
}

Status L2LossGrad(const CudaContext& ctx, In<float> x, In<float> dloss, Out<float> dx) {
  RETURN_IF_ERROR(ExpectScalar("L2LossGrad", "dloss", dloss.shape));
  RETURN_IF_ERROR(internal::ExpectShape("L2LossGrad", "dx", dx.shape, x.shape));
  return ForEach(ctx, x.size(), L2LossGradFn{x.data, dloss.data, dx.data});
}

Status GlobalNorm(const CudaContext& ctx, std::span<const In<float>> tensors, Out<float> norm) {
  RETURN_IF_ERROR(ExpectScalar("GlobalNorm", "norm", norm.shape));
  return SumOfSquares(ctx, tensors, 1.0, true, norm.data);
}

Status ClipByGlobalNorm(const CudaContext& ctx, std::span<const TensorView<float>> tensors,
                        float clip_norm, Out<float> global_norm) {
  if (!(clip_norm > 0.0f)) return internal::ShapeError("ClipByGlobalNorm", "clip_norm must be > 0");
  std::vector<In<float>> inputs(tensors.begin(), tensors.end());
  RETURN_IF_ERROR(GlobalNorm(ctx, std::span<const In<float>>(inputs), global_norm));
  for (const TensorView<float>& t : tensors) {
    RETURN_IF_ERROR(ForEach(ctx, t.size(), ClipFn{t.data, global_norm.data, clip_norm}));
  }
  return Status::Ok();
}

Status ClipByNorm(const CudaContext& ctx, In<float> x, In<float> global_norm, float clip_norm,
                  Out<float> y) {
  RETURN_IF_ERROR(ExpectScalar("ClipByNorm", "global_norm", global_norm.shape));
  RETURN_IF_ERROR(internal::ExpectShape("ClipByNorm", "y", y.shape, x.shape));
  if (!(clip_norm > 0.0f)) return internal::ShapeError("ClipByNorm", "clip_norm must be > 0");
  return ForEach(ctx, y.size(), ClipByNormFn{x.data, global_norm.data, clip_norm, y.data});
}

Status ApplyGradientDescent(const CudaContext& ctx, Out<float> var, float lr, In<float> grad) {
  RETURN_IF_ERROR(internal::ExpectShape("ApplyGradientDescent", "grad", grad.shape, var.shape));
  return ForEach(ctx, var.size(), SgdFn{var.data, lr, grad.data});
}

Status ApplyMomentum(const CudaContext& ctx, Out<float> var, Out<float> accum, float lr,
                     In<float> grad, const MomentumOptions& options) {
  RETURN_IF_ERROR(internal::ExpectShape("ApplyMomentum", "grad", grad.shape, var.shape));
  RETURN_IF_ERROR(internal::ExpectShape("ApplyMomentum", "accum", accum.shape, var.shape));
  return ForEach(ctx, var.size(),
                 MomentumFn{var.data, accum.data, lr, grad.data,
                            static_cast<float>(options.momentum),
                            static_cast<float>(options.weight_decay), options.use_nesterov});
}

}  // namespace stepscope::kernels
