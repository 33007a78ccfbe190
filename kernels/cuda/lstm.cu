// CUDA LSTMBlockCell / LSTMBlockCellGrad: cuBLAS for the gate GEMMs, one thread per hidden
// unit for the shared per-element math (kernels/math/lstm_math.h).
#include "kernels/cuda/cuda_util.cuh"
#include "kernels/lstm.h"
#include "kernels/math/lstm_math.h"

namespace stepscope::kernels {
namespace {

struct LstmForwardFn {
  const float *gates, *bias, *cs_prev;
  float *i, *cs, *f, *o, *ci, *co, *h;
  int64_t hidden, h_ld;
  float forget_bias, cell_clip;
  __device__ void operator()(int64_t k) const {
    const int64_t b = k / hidden, j = k % hidden;
    const float* g = gates + b * 4 * hidden;
    const math::LstmCellValues<float> v = math::LstmCellForward<float>(
        g[j] + bias[j], g[hidden + j] + bias[hidden + j], g[2 * hidden + j] + bias[2 * hidden + j],
        g[3 * hidden + j] + bias[3 * hidden + j], cs_prev[k], forget_bias, cell_clip);
    i[k] = v.i;
    cs[k] = v.cs;
    f[k] = v.f;
    o[k] = v.o;
    ci[k] = v.ci;
    co[k] = v.co;
    h[b * h_ld + j] = v.h;
  }
};

struct LstmBackwardFn {
  const float *i, *f, *o, *ci, *co, *cs_prev, *cs_grad, *h_grad, *h_grad_recurrent;
  float *dgates, *cs_prev_grad;
  int64_t hidden, h_grad_ld, recurrent_ld;
  __device__ void operator()(int64_t k) const {
    const int64_t b = k / hidden, j = k % hidden;
    const math::LstmCellGradValues<float> g = math::LstmCellBackward<float>(
        i[k], f[k], o[k], ci[k], co[k], cs_prev[k], cs_grad[k],
        math::LstmHGrad(h_grad[b * h_grad_ld + j], h_grad_recurrent, b * recurrent_ld + j));
    float* dg = dgates + b * 4 * hidden;
    dg[j] = g.di;
    dg[hidden + j] = g.dci;
    dg[2 * hidden + j] = g.df;
    dg[3 * hidden + j] = g.do_;
    cs_prev_grad[k] = g.cs_prev_grad;
  }
};

}  // namespace

Status LstmBlockCell(const CudaContext& ctx, const LstmBlockCellInputs<float>& in,
                     const LstmBlockCellOutputs<float>& out, Out<float> gates,
                     const LstmBlockCellOptions& options) {
  ASSIGN_OR_RETURN(const internal::LstmDims d, internal::CheckLstmBlockCell(in, out, gates.shape));
  const int64_t g4 = 4 * d.hidden;
  RETURN_IF_ERROR(internal::RowMajorSgemm(ctx, false, false, d.batch, g4, d.input, 1.0f, in.x.data,
                                          in.x_ld > 0 ? in.x_ld : d.input, in.w.data, g4, 0.0f,
                                          gates.data, g4));
  RETURN_IF_ERROR(internal::RowMajorSgemm(ctx, false, false, d.batch, g4, d.hidden, 1.0f,
                                          in.h_prev.data, in.h_prev_ld > 0 ? in.h_prev_ld : d.hidden,
                                          in.w.data + d.input * g4, g4, 1.0f, gates.data, g4));
  return internal::ForEach(
      ctx, d.batch * d.hidden,
      LstmForwardFn{gates.data, in.b.data, in.cs_prev.data, out.i.data, out.cs.data, out.f.data,
                    out.o.data, out.ci.data, out.co.data, out.h.data, d.hidden,
                    out.h_ld > 0 ? out.h_ld : d.hidden, static_cast<float>(options.forget_bias), static_cast<float>(options.cell_clip)});
}

Status LstmBlockCellGrad(const CudaContext& ctx, const LstmBlockCellGradInputs<float>& in,
                         const LstmBlockCellGradOutputs<float>& out,
                         bool accumulate_weight_grads) {
  ASSIGN_OR_RETURN(const internal::LstmDims d, internal::CheckLstmBlockCellGrad(in, out));
  const int64_t h = d.hidden, g4 = 4 * h;
  RETURN_IF_ERROR(internal::ForEach(
      ctx, d.batch * h,
      LstmBackwardFn{in.i.data, in.f.data, in.o.data, in.ci.data, in.co.data, in.cs_prev.data,
                     in.cs_grad.data, in.h_grad.data, in.h_grad_recurrent.data, out.dgates.data,
                     out.cs_prev_grad.data, h, in.h_grad_ld > 0 ? in.h_grad_ld : h,
                     in.h_grad_recurrent_ld > 0 ? in.h_grad_recurrent_ld : h}));
  const float* w_h = in.w.data + d.input * g4;
  if (out.x_grad.present()) {
    RETURN_IF_ERROR(internal::RowMajorSgemm(ctx, false, true, d.batch, d.input, g4, 1.0f,
                                            out.dgates.data, g4, in.w.data, g4, 0.0f,
                                            out.x_grad.data, d.input));
  }
  if (out.h_prev_grad.present()) {
    RETURN_IF_ERROR(internal::RowMajorSgemm(ctx, false, true, d.batch, h, g4, 1.0f,
                                            out.dgates.data, g4, w_h, g4, 0.0f,
                                            out.h_prev_grad.data, h));
  }
  const float beta = accumulate_weight_grads ? 1.0f : 0.0f;
  if (out.w_grad.present()) {
    RETURN_IF_ERROR(internal::RowMajorSgemm(ctx, true, false, d.input, g4, d.batch, 1.0f,
                                            in.x.data, d.input, out.dgates.data, g4, beta,
                                            out.w_grad.data, g4));
    RETURN_IF_ERROR(internal::RowMajorSgemm(ctx, true, false, h, g4, d.batch, 1.0f,
                                            in.h_prev.data, h, out.dgates.data, g4, beta,
                                            out.w_grad.data + d.input * g4, g4));
  }
  if (out.b_grad.present()) {
    RETURN_IF_ERROR(internal::ColumnSum(ctx, out.dgates.data, d.batch, g4, out.b_grad.data,
                                        accumulate_weight_grads));
  }
  return Status::Ok();
}

}  // namespace stepscope::kernels
