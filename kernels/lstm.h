// LSTMBlockCell and LSTMBlockCellGrad with TensorFlow's semantics (no peepholes):
//   xh = [x, h_prev]                                  // (B, I+H)
//   [i, ci, f, o] = xh · w + b                        // (B, 4H), gate order i, ci, f, o
//   i = σ(i), ci = tanh(ci), f = σ(f + forget_bias), o = σ(o)
//   cs = ci ⊙ i + cs_prev ⊙ f   (clipped to ±cell_clip when cell_clip > 0)
//   co = tanh(cs), h = co ⊙ o
// The seven outputs (i, cs, f, o, ci, co, h) are what the gradient consumes, as in TF. The gate
// GEMM is two GEMMs (x · w[0:I] and h_prev · w[I:]) so no concatenated copy is made; x, h_prev
// and h may be strided rows (a time step inside a (B, T, ·) batch, read and written where it
// lies: the unrolled model's StridedSlice and ConcatV2 copy nothing).
// The gradient, like TF's, treats the clip as the identity.
#pragma once

#include "base/status.h"
#include "kernels/cpu_context.h"
#include "kernels/tensor_view.h"

namespace stepscope::kernels {

class CudaContext;

struct LstmBlockCellOptions {
  double forget_bias = 1.0;  // TF's default; the PTB model uses 0
  double cell_clip = -1.0;   // <= 0: no clipping (tf.contrib.rnn.LSTMBlockCell's default)
};

template <typename T>
struct LstmBlockCellInputs {
  In<T> x;        // (B, I), its rows x_ld elements apart (0: dense, I)
  In<T> cs_prev;  // (B, H)
  In<T> h_prev;   // (B, H), its rows h_prev_ld elements apart (0: dense, H)
  In<T> w;        // (I + H, 4H)
  In<T> b;        // (4H)
  // Row strides (0: dense): a time step read where it lies in a (B, T, ·) batch with no copy.
  int64_t x_ld = 0, h_prev_ld = 0;
};

template <typename T>
struct LstmBlockCellOutputs {
  Out<T> i, cs, f, o, ci, co, h;  // each (B, H); h's rows h_ld elements apart (0: dense)
  int64_t h_ld = 0;
};

// `gates` is a (B, 4H) workspace for the pre-activations; its contents are undefined after.
template <typename T>
Status LstmBlockCell(const CpuContext& ctx, const LstmBlockCellInputs<T>& in,
                     const LstmBlockCellOutputs<T>& out, Out<T> gates,
                     const LstmBlockCellOptions& options = {});

template <typename T>
struct LstmBlockCellGradInputs {
  In<T> x, cs_prev, h_prev, w;  // the forward's inputs (b is not needed)
  In<T> i, f, o, ci, co;        // the forward's outputs
  In<T> cs_grad;                // (B, H) gradient reaching cs (from the next step's cs_prev_grad)
  In<T> h_grad;                 // (B, H) gradient reaching h, its rows h_grad_ld apart (0: dense)
  // Optional (B, H) second gradient reaching h (from step t + 1), added to h_grad first as TF's
  // AddN of the two does (the same sum, without its own kernel and buffer).
  In<T> h_grad_recurrent;
  int64_t h_grad_ld = 0, h_grad_recurrent_ld = 0;  // row strides (0: dense)
};

template <typename T>
struct LstmBlockCellGradOutputs {
  Out<T> cs_prev_grad;  // (B, H), required
  Out<T> dgates;        // (B, 4H), required: TF's `dicfo`, gate order i, ci, f, o
  Out<T> x_grad;        // (B, I), optional
  Out<T> h_prev_grad;   // (B, H), optional
  Out<T> w_grad;        // (I + H, 4H), optional
  Out<T> b_grad;        // (4H), optional
};

// w_grad and b_grad are overwritten, or added to with `accumulate_weight_grads` (how a time
// loop sums them over steps).
template <typename T>
Status LstmBlockCellGrad(const CpuContext& ctx, const LstmBlockCellGradInputs<T>& in,
                         const LstmBlockCellGradOutputs<T>& out,
                         bool accumulate_weight_grads = false);

Status LstmBlockCell(const CudaContext& ctx, const LstmBlockCellInputs<float>& in,
                     const LstmBlockCellOutputs<float>& out, Out<float> gates,
                     const LstmBlockCellOptions& options = {});
Status LstmBlockCellGrad(const CudaContext& ctx, const LstmBlockCellGradInputs<float>& in,
                         const LstmBlockCellGradOutputs<float>& out,
                         bool accumulate_weight_grads = false);

namespace internal {
struct LstmDims {
  int64_t batch, input, hidden;
};
template <typename T>
StatusOr<LstmDims> CheckLstmBlockCell(const LstmBlockCellInputs<T>& in,
                                      const LstmBlockCellOutputs<T>& out, const Shape& gates);
template <typename T>
StatusOr<LstmDims> CheckLstmBlockCellGrad(const LstmBlockCellGradInputs<T>& in,
                                          const LstmBlockCellGradOutputs<T>& out);
}  // namespace internal

}  // namespace stepscope::kernels
