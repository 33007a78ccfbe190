// FusedBatchNorm and FusedBatchNormGrad over the last (channel) dimension of x (N,H,W,C) or
// any rank ≥ 2 with channels last, as TF's FusedBatchNormV3 in NHWC.
//
// Training: per channel over the R = N·H·W rows, mean = Σx/R, var = Σ(x − mean)²/R (biased, used
// to normalise), y = scale·(x − mean)/sqrt(var + ε) + offset; the running statistics are
// updated in place with TF's rule: running = (1 − f)·running + f·batch, where the variance
// put there is the unbiased var·R/(R − 1) and f = exponential_avg_factor (1 replaces them; Keras
// momentum 0.99 is f = 0.01). saved_mean/saved_inv_std (1/sqrt(var + ε)) keep what the gradient
// needs. Inference: y uses the running statistics, which are not changed; saved_* are set from
// them.
// Statistics accumulate in double on the CPU.
#pragma once

#include "base/status.h"
#include "kernels/cpu_context.h"
#include "kernels/tensor_view.h"

namespace stepscope::kernels {

class CudaContext;

struct BatchNormOptions {
  double epsilon = 1e-3;  // Keras' BatchNormalization default (TF's op defaults to 1e-4)
  double exponential_avg_factor = 1.0;
  bool is_training = true;
};

template <typename T>
struct BatchNormArgs {
  In<T> x;                  // (..., C)
  In<T> scale, offset;      // (C)
  Out<T> running_mean;      // (C): read; updated in training
  Out<T> running_var;       // (C): read; updated in training
  Out<T> y;                 // x's shape
  Out<T> saved_mean;        // (C)
  Out<T> saved_inv_std;     // (C)
};

template <typename T>
Status FusedBatchNorm(const CpuContext& ctx, const BatchNormArgs<T>& args,
                      const BatchNormOptions& options);

template <typename T>
struct BatchNormGradArgs {
  In<T> dy, x;                      // (..., C)
  In<T> scale;                      // (C)
  In<T> saved_mean, saved_inv_std;  // (C), from the forward
  Out<T> dx;                        // x's shape
  Out<T> dscale, doffset;           // (C)
};

// Training: dx = scale·inv_std/R · (R·dy − Σdy − x̂·Σ(dy·x̂)); inference: dx = scale·inv_std·dy.
// Both: dscale = Σ dy·x̂, doffset = Σ dy with x̂ = (x − mean)·inv_std.
template <typename T>
Status FusedBatchNormGrad(const CpuContext& ctx, const BatchNormGradArgs<T>& args,
                          const BatchNormOptions& options);

Status FusedBatchNorm(const CudaContext& ctx, const BatchNormArgs<float>& args,
                      const BatchNormOptions& options);
Status FusedBatchNormGrad(const CudaContext& ctx, const BatchNormGradArgs<float>& args,
                          const BatchNormOptions& options);

namespace internal {
// Returns the channel count.
template <typename T>
StatusOr<int64_t> CheckBatchNorm(const BatchNormArgs<T>& args);
template <typename T>
StatusOr<int64_t> CheckBatchNormGrad(const BatchNormGradArgs<T>& args);
}  // namespace internal

}  // namespace stepscope::kernels
