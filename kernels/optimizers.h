// Loss terms, gradient clipping and parameter updates:
//   L2Loss(x) = Σx²/2 and its gradient;  GlobalNorm = sqrt(Σ_t Σ t²);
//   ClipByGlobalNorm: t ← t · clip_norm / max(global_norm, clip_norm) (TF's rule);
//   ApplyGradientDescent: var ← var − lr·grad;
//   ApplyMomentum (TF's, plus decoupled-from-loss L2 weight decay folded into the gradient as
//     tf_cnn_benchmarks' loss term would give): g = grad + wd·var; accum ← momentum·accum + g;
//     var ← var − lr·accum, or var − lr·(g + momentum·accum) with Nesterov.
// Clipping and updates are ends of the gradient path and have no gradient of their own.
// The sparse SGD update of embedding rows is ScatterSub (embedding.h).
// Scalar inputs/outputs are rank-0 views in the same memory as the tensors (device memory for
// the CUDA kernels, so nothing waits on the host).
#pragma once

#include <span>
#include <type_traits>

#include "base/status.h"
#include "kernels/cpu_context.h"
#include "kernels/tensor_view.h"

namespace stepscope::kernels {

class CudaContext;

template <typename T>
Status L2Loss(const CpuContext& ctx, In<T> x, Out<T> loss);
// dx = dloss · x (dloss is a scalar view).
template <typename T>
Status L2LossGrad(const CpuContext& ctx, In<T> x, In<T> dloss, Out<T> dx);

template <typename T>
Status GlobalNorm(const CpuContext& ctx, std::span<const In<T>> tensors, Out<T> norm);
// Scales `tensors` in place; writes the norm before clipping to `global_norm`.
template <typename T>
Status ClipByGlobalNorm(const CpuContext& ctx,
                        std::span<const TensorView<std::type_identity_t<T>>> tensors,
                        std::type_identity_t<T> clip_norm, Out<T> global_norm);

// y = x · clip_norm / max(global_norm, clip_norm), the global norm read where GlobalNorm wrote
// it (a scalar view in device memory on a GPU): tf.clip_by_global_norm's multiply with no host
// read between the norm and the clip.
template <typename T>
Status ClipByNorm(const CpuContext& ctx, In<T> x, In<T> global_norm,
                  std::type_identity_t<T> clip_norm, Out<T> y);

template <typename T>
Status ApplyGradientDescent(const CpuContext& ctx, Out<T> var, std::type_identity_t<T> lr,
                            In<T> grad);

struct MomentumOptions {
  double momentum = 0.9;
  double weight_decay = 0.0;
  bool use_nesterov = false;
};
template <typename T>
Status ApplyMomentum(const CpuContext& ctx, Out<T> var, Out<T> accum, std::type_identity_t<T> lr,
                     In<T> grad, const MomentumOptions& options);

Status L2Loss(const CudaContext& ctx, In<float> x, Out<float> loss);
Status L2LossGrad(const CudaContext& ctx, In<float> x, In<float> dloss, Out<float> dx);
Status GlobalNorm(const CudaContext& ctx, std::span<const In<float>> tensors, Out<float> norm);
Status ClipByGlobalNorm(const CudaContext& ctx, std::span<const TensorView<float>> tensors,
                        float clip_norm, Out<float> global_norm);
Status ClipByNorm(const CudaContext& ctx, In<float> x, In<float> global_norm, float clip_norm,
                  Out<float> y);
Status ApplyGradientDescent(const CudaContext& ctx, Out<float> var, float lr, In<float> grad);
Status ApplyMomentum(const CudaContext& ctx, Out<float> var, Out<float> accum, float lr,
                     In<float> grad, const MomentumOptions& options);

}  // namespace stepscope::kernels
