// SparseSoftmaxCrossEntropyWithLogits on the CPU: one row per task; the row sums accumulate in
// double (the reference may be more accurate than the GPU's float; tests bound the gap).
#include "kernels/softmax_xent.h"

#include "kernels/math/softmax_xent_math.h"
#include "kernels/shape_check.h"

namespace stepscope::kernels {
namespace internal {

Status CheckSoftmaxXent(const Shape& logits, const Shape& labels, const Shape& loss,
                        const Shape& backprop) {
  constexpr const char* kOp = "SparseSoftmaxCrossEntropyWithLogits";
  RETURN_IF_ERROR(ExpectRank(kOp, "logits", logits, 2));
  RETURN_IF_ERROR(ExpectShape(kOp, "labels", labels, Shape{logits[0]}));
  RETURN_IF_ERROR(ExpectShape(kOp, "loss", loss, Shape{logits[0]}));
  RETURN_IF_ERROR(ExpectShape(kOp, "backprop", backprop, logits));
  if (logits[1] == 0 && logits[0] > 0) return ShapeError(kOp, "logits have no classes");
  return Status::Ok();
}

}  // namespace internal

template <typename T>
Status SparseSoftmaxCrossEntropyWithLogits(const CpuContext& ctx, In<T> logits,
                                           TensorView<const int32_t> labels, Out<T> loss,
                                           Out<T> backprop) {
  RETURN_IF_ERROR(
      internal::CheckSoftmaxXent(logits.shape, labels.shape, loss.shape, backprop.shape));
  const int64_t rows = logits.dim(0), classes = logits.dim(1);
  for (int64_t b = 0; b < rows; ++b) {
    if (labels.data[b] < 0 || labels.data[b] >= classes) {
      return internal::ShapeError(
          "SparseSoftmaxCrossEntropyWithLogits",
          "labels[" + std::to_string(b) + "] = " + std::to_string(labels.data[b]) +
              " is not in [0, " + std::to_string(classes) + ")");
    }
  }
  ctx.ParallelFor(rows, ctx.GrainFor(rows, 1 + 16384 / (classes + 1)), [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      const T* x = logits.data + b * classes;
      T* bp = backprop.data + b * classes;
      T row_max = x[0];
      for (int64_t c = 1; c < classes; ++c) row_max = x[c] > row_max ? x[c] : row_max;
      // One exp per class: keep exp(x - max) in the backprop row between the two passes.
      double sum = 0;
      for (int64_t c = 0; c < classes; ++c) {
        bp[c] = math::Exp(x[c] - row_max);
        sum += static_cast<double>(bp[c]);
      }
      const int32_t label = labels.data[b];
      loss.data[b] = static_cast<T>(math::XentLoss<double>(sum, static_cast<double>(x[label]),
                                                           static_cast<double>(row_max)));
      const T sum_t = static_cast<T>(sum);
      for (int64_t c = 0; c < classes; ++c) {
        bp[c] = math::XentBackpropFromExp<T>(bp[c], sum_t, c == label);
      }
    }
  });
  return Status::Ok();
}

template <typename T>
Status SparseSoftmaxCrossEntropyGrad(const CpuContext& ctx, In<T> backprop, In<T> dloss,
                                     Out<T> dlogits) {
  constexpr const char* kOp = "SparseSoftmaxCrossEntropyGrad";
  RETURN_IF_ERROR(internal::ExpectRank(kOp, "backprop", backprop.shape, 2));
  RETURN_IF_ERROR(internal::ExpectShape(kOp, "dloss", dloss.shape, Shape{backprop.dim(0)}));
  RETURN_IF_ERROR(internal::ExpectShape(kOp, "dlogits", dlogits.shape, backprop.shape));
  const int64_t rows = backprop.dim(0), classes = backprop.dim(1);
  ctx.ParallelFor(rows, ctx.GrainFor(rows, 1 + 16384 / (classes + 1)), [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      for (int64_t c = 0; c < classes; ++c) {
        dlogits.data[b * classes + c] = dloss.data[b] * backprop.data[b * classes + c];
      }
    }
  });
  return Status::Ok();
}

#define INSTANTIATE(T)                                                                     \
  template Status SparseSoftmaxCrossEntropyWithLogits<T>(                                  \
      const CpuContext&, In<T>, TensorView<const int32_t>, Out<T>, Out<T>);                \
  template Status SparseSoftmaxCrossEntropyGrad<T>(const CpuContext&, In<T>, In<T>, Out<T>);
STEPSCOPE_KERNELS_FOR_CPU_TYPES(INSTANTIATE)
#undef INSTANTIATE

}  // namespace stepscope::kernels
