// LSTMBlockCell on the CPU: the gate GEMMs on OpenBLAS, the per-unit math threaded over rows.
#include "kernels/lstm.h"

#include <string>

#include "kernels/cpu/blas.h"
#include "kernels/math/lstm_math.h"
#include "kernels/shape_check.h"

namespace stepscope::kernels {
namespace internal {

template <typename T>
StatusOr<LstmDims> CheckLstmBlockCell(const LstmBlockCellInputs<T>& in,
                                      const LstmBlockCellOutputs<T>& out, const Shape& gates) {
  constexpr const char* kOp = "LSTMBlockCell";
  RETURN_IF_ERROR(ExpectRank(kOp, "x", in.x.shape, 2));
  RETURN_IF_ERROR(ExpectRank(kOp, "cs_prev", in.cs_prev.shape, 2));
  const int64_t b = in.x.dim(0), i = in.x.dim(1), h = in.cs_prev.dim(1);
  const Shape bh{b, h};
  RETURN_IF_ERROR(ExpectShape(kOp, "cs_prev", in.cs_prev.shape, bh));
  RETURN_IF_ERROR(ExpectShape(kOp, "h_prev", in.h_prev.shape, bh));
  RETURN_IF_ERROR(ExpectShape(kOp, "w", in.w.shape, Shape{i + h, 4 * h}));
  RETURN_IF_ERROR(ExpectShape(kOp, "b", in.b.shape, Shape{4 * h}));
  for (const auto& [name, view] : {std::pair{"i", out.i}, {"cs", out.cs}, {"f", out.f},
                                   {"o", out.o}, {"ci", out.ci}, {"co", out.co}, {"h", out.h}}) {
    RETURN_IF_ERROR(ExpectShape(kOp, name, view.shape, bh));
  }
  RETURN_IF_ERROR(ExpectShape(kOp, "gates workspace", gates, Shape{b, 4 * h}));
  RETURN_IF_ERROR(ExpectRowStride(kOp, "x", in.x_ld, i));
  RETURN_IF_ERROR(ExpectRowStride(kOp, "h_prev", in.h_prev_ld, h));
  RETURN_IF_ERROR(ExpectRowStride(kOp, "h", out.h_ld, h));
  return LstmDims{b, i, h};
}

template <typename T>
StatusOr<LstmDims> CheckLstmBlockCellGrad(const LstmBlockCellGradInputs<T>& in,
                                          const LstmBlockCellGradOutputs<T>& out) {
  constexpr const char* kOp = "LSTMBlockCellGrad";
  RETURN_IF_ERROR(ExpectRank(kOp, "x", in.x.shape, 2));
  RETURN_IF_ERROR(ExpectRank(kOp, "cs_prev", in.cs_prev.shape, 2));
  const int64_t b = in.x.dim(0), i = in.x.dim(1), h = in.cs_prev.dim(1);
  const Shape bh{b, h};
  for (const auto& [name, view] :
       {std::pair{"cs_prev", in.cs_prev}, {"h_prev", in.h_prev}, {"i", in.i}, {"f", in.f},
        {"o", in.o}, {"ci", in.ci}, {"co", in.co}, {"cs_grad", in.cs_grad},
        {"h_grad", in.h_grad}}) {
    RETURN_IF_ERROR(ExpectShape(kOp, name, view.shape, bh));
  }
  if (in.h_grad_recurrent.present()) {
    RETURN_IF_ERROR(ExpectShape(kOp, "h_grad_recurrent", in.h_grad_recurrent.shape, bh));
  }
  RETURN_IF_ERROR(ExpectRowStride(kOp, "h_grad", in.h_grad_ld, h));
  RETURN_IF_ERROR(ExpectRowStride(kOp, "h_grad_recurrent", in.h_grad_recurrent_ld, h));
  RETURN_IF_ERROR(ExpectShape(kOp, "w", in.w.shape, Shape{i + h, 4 * h}));
  RETURN_IF_ERROR(ExpectShape(kOp, "cs_prev_grad", out.cs_prev_grad.shape, bh));
  RETURN_IF_ERROR(ExpectShape(kOp, "dgates", out.dgates.shape, Shape{b, 4 * h}));
  if (out.x_grad.present()) RETURN_IF_ERROR(ExpectShape(kOp, "x_grad", out.x_grad.shape, Shape{b, i}));
  if (out.h_prev_grad.present()) {
    RETURN_IF_ERROR(ExpectShape(kOp, "h_prev_grad", out.h_prev_grad.shape, bh));
  }
  if (out.w_grad.present()) {
    RETURN_IF_ERROR(ExpectShape(kOp, "w_grad", out.w_grad.shape, Shape{i + h, 4 * h}));
  }
  if (out.b_grad.present()) RETURN_IF_ERROR(ExpectShape(kOp, "b_grad", out.b_grad.shape, Shape{4 * h}));
  return LstmDims{b, i, h};
}

}  // namespace internal

template <typename T>
Status LstmBlockCell(const CpuContext& ctx, const LstmBlockCellInputs<T>& in,
                     const LstmBlockCellOutputs<T>& out, Out<T> gates,
                     const LstmBlockCellOptions& options) {
  ASSIGN_OR_RETURN(const internal::LstmDims d, internal::CheckLstmBlockCell(in, out, gates.shape));
  const int64_t g4 = 4 * d.hidden;
  // gates (B,4H) = x (B,I) · w[0:I] + h_prev (B,H) · w[I:I+H]
  internal::Gemm<T>(false, false, d.batch, g4, d.input, T(1), in.x.data,
                    in.x_ld > 0 ? in.x_ld : d.input, in.w.data, g4, T(0), gates.data, g4);
  internal::Gemm<T>(false, false, d.batch, g4, d.hidden, T(1), in.h_prev.data,
                    in.h_prev_ld > 0 ? in.h_prev_ld : d.hidden, in.w.data + d.input * g4, g4, T(1),
                    gates.data, g4);
  const int64_t h_ld = out.h_ld > 0 ? out.h_ld : d.hidden;
  const T forget_bias = static_cast<T>(options.forget_bias);
  const T cell_clip = static_cast<T>(options.cell_clip);
  const int64_t h = d.hidden;
  ctx.ParallelFor(d.batch, ctx.GrainFor(d.batch, 1 + 4096 / (h + 1)), [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      const T* g = gates.data + b * g4;
      for (int64_t j = 0; j < h; ++j) {
        const int64_t k = b * h + j;
        const math::LstmCellValues<T> v = math::LstmCellForward<T>(
            g[j] + in.b.data[j], g[h + j] + in.b.data[h + j], g[2 * h + j] + in.b.data[2 * h + j],
            g[3 * h + j] + in.b.data[3 * h + j], in.cs_prev.data[k], forget_bias, cell_clip);
        out.i.data[k] = v.i;
        out.cs.data[k] = v.cs;
        out.f.data[k] = v.f;
        out.o.data[k] = v.o;
        out.ci.data[k] = v.ci;
        out.co.data[k] = v.co;
        out.h.data[b * h_ld + j] = v.h;
      }
    }
  });
  return Status::Ok();
}

template <typename T>
Status LstmBlockCellGrad(const CpuContext& ctx, const LstmBlockCellGradInputs<T>& in,
                         const LstmBlockCellGradOutputs<T>& out, bool accumulate_weight_grads) {
  ASSIGN_OR_RETURN(const internal::LstmDims d, internal::CheckLstmBlockCellGrad(in, out));
  const int64_t h = d.hidden;
  const int64_t g4 = 4 * h;
  const int64_t h_grad_ld = in.h_grad_ld > 0 ? in.h_grad_ld : h;
  const int64_t recurrent_ld = in.h_grad_recurrent_ld > 0 ? in.h_grad_recurrent_ld : h;
  const T* const recurrent = in.h_grad_recurrent.data;
  ctx.ParallelFor(d.batch, ctx.GrainFor(d.batch, 1 + 4096 / (h + 1)), [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      T* dg = out.dgates.data + b * g4;
      for (int64_t j = 0; j < h; ++j) {
        const int64_t k = b * h + j;
        const math::LstmCellGradValues<T> g = math::LstmCellBackward<T>(
            in.i.data[k], in.f.data[k], in.o.data[k], in.ci.data[k], in.co.data[k],
            in.cs_prev.data[k], in.cs_grad.data[k],
            math::LstmHGrad(in.h_grad.data[b * h_grad_ld + j], recurrent, b * recurrent_ld + j));
        dg[j] = g.di;
        dg[h + j] = g.dci;
        dg[2 * h + j] = g.df;
        dg[3 * h + j] = g.do_;
        out.cs_prev_grad.data[k] = g.cs_prev_grad;
      }
    }
  });
  const T* w_h = in.w.data + d.input * g4;
  // [x_grad, h_prev_grad] = dgates · wᵀ, split by rows of w.
  if (out.x_grad.present()) {
    internal::Gemm<T>(false, true, d.batch, d.input, g4, T(1), out.dgates.data, g4, in.w.data, g4,
                      T(0), out.x_grad.data, d.input);
  }
  if (out.h_prev_grad.present()) {
    internal::Gemm<T>(false, true, d.batch, h, g4, T(1), out.dgates.data, g4, w_h, g4, T(0),
                      out.h_prev_grad.data, h);
  }
  const T beta = accumulate_weight_grads ? T(1) : T(0);
  // w_grad = [x, h_prev]ᵀ · dgates.
  if (out.w_grad.present()) {
    internal::Gemm<T>(true, false, d.input, g4, d.batch, T(1), in.x.data, d.input,
                      out.dgates.data, g4, beta, out.w_grad.data, g4);
    internal::Gemm<T>(true, false, h, g4, d.batch, T(1), in.h_prev.data, h, out.dgates.data, g4,
                      beta, out.w_grad.data + d.input * g4, g4);
  }
  if (out.b_grad.present()) {
    for (int64_t j = 0; j < g4; ++j) {
      T sum = 0;
      for (int64_t b = 0; b < d.batch; ++b) sum += out.dgates.data[b * g4 + j];
      out.b_grad.data[j] = accumulate_weight_grads ? out.b_grad.data[j] + sum : sum;
    }
  }
  return Status::Ok();
}

#define INSTANTIATE(T)                                                                          \
  template Status LstmBlockCell<T>(const CpuContext&, const LstmBlockCellInputs<T>&,           \
                                   const LstmBlockCellOutputs<T>&, Out<T>,                     \
                                   const LstmBlockCellOptions&);                               \
  template Status LstmBlockCellGrad<T>(const CpuContext&, const LstmBlockCellGradInputs<T>&,   \
                                       const LstmBlockCellGradOutputs<T>&, bool);              \
  template StatusOr<internal::LstmDims> internal::CheckLstmBlockCell<T>(                       \
      const LstmBlockCellInputs<T>&, const LstmBlockCellOutputs<T>&, const Shape&);            \
  template StatusOr<internal::LstmDims> internal::CheckLstmBlockCellGrad<T>(                   \
      const LstmBlockCellGradInputs<T>&, const LstmBlockCellGradOutputs<T>&);
STEPSCOPE_KERNELS_FOR_CPU_TYPES(INSTANTIATE)
#undef INSTANTIATE

}  // namespace stepscope::kernels
