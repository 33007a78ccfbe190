// CUDA Gather / ScatterAdd / ScatterSub and SparseSoftmaxCrossEntropyWithLogits.
// Ids and labels live on the device, so they are not range-checked on the host: as TF's GPU
// kernels do, an out-of-range id gathers a zero row and is skipped by the scatters, and an
// out-of-range label gives a NaN loss/backprop row.
#include <math_constants.h>

#include "kernels/cuda/cuda_util.cuh"
#include "kernels/embedding.h"
#include "kernels/math/embedding_math.h"
#include "kernels/math/softmax_xent_math.h"
#include "kernels/softmax_xent.h"

namespace stepscope::kernels {
namespace {

struct GatherFn {
  const float* params;
  const int32_t* ids;
  float* out;
  int64_t rows, dim;
  __device__ void operator()(int64_t e) const {
    const int64_t n = e / dim, d = e % dim;
    const int64_t id = ids[n];
    out[e] = (id >= 0 && id < rows) ? params[id * dim + d] : 0.0f;
  }
};

// The scatters add the rows of a repeated id in position order (kernels/math/embedding_math.h)
// in two passes: one thread per position links it to the next position holding the same id and
// marks the first; then one thread per (first position, column) adds the whole chain into the
// table, so no two threads write one element and nothing depends on thread timing. The links
// cost O(N) comparisons per position, cheap for the N ≤ a few thousand ids of a batch (a sort
// would pay off only for far longer id lists).
struct LinkOccurrencesFn {
  const int32_t* ids;
  int64_t count;
  int64_t* next;
  uint8_t* is_first;
  __device__ void operator()(int64_t n) const {
    next[n] = math::NextOccurrence(ids, count, n);
    is_first[n] = math::IsFirstOccurrence(ids, n) ? 1 : 0;
  }
};

struct ScatterChainFn {
  float* table;
  const int32_t* ids;
  const int64_t* next;
  const uint8_t* is_first;
  const float* values;
  int64_t rows, dim;
  float scale;
  __device__ void operator()(int64_t e) const {
    const int64_t n = e / dim, d = e % dim;
    if (!is_first[n]) return;
    const int64_t id = ids[n];
    if (id < 0 || id >= rows) return;
    float* dst = table + id * dim + d;
    *dst = math::AddAlongChain(*dst, next, n, values, dim, d, scale);
  }
};

// One block per row: max, Σ exp(x − max), then loss and backprop from the shared formulas.
__global__ void SoftmaxXentKernel(const float* logits, const int32_t* labels, int64_t classes,
                                  float* loss, float* backprop) {
  __shared__ float shared[internal::kThreads];
  const int64_t row = blockIdx.x;
  const float* x = logits + row * classes;
  float* bp = backprop + row * classes;
  const int32_t label = labels[row];
  float m = -CUDART_INF_F;
  for (int64_t c = threadIdx.x; c < classes; c += blockDim.x) m = fmaxf(m, x[c]);
  m = internal::BlockMax(m, shared);
  float s = 0;
  for (int64_t c = threadIdx.x; c < classes; c += blockDim.x) s += math::Exp(x[c] - m);
  s = internal::BlockSum(s, shared);
  const bool valid = label >= 0 && label < classes;
  if (threadIdx.x == 0) loss[row] = valid ? math::XentLoss(s, x[label], m) : CUDART_NAN_F;
  for (int64_t c = threadIdx.x; c < classes; c += blockDim.x) {
    bp[c] = valid ? math::XentBackprop(x[c], m, s, c == label) : CUDART_NAN_F;
  }
}

struct XentGradFn {
  const float *backprop, *dloss;
  float* dlogits;
  int64_t classes;
  __device__ void operator()(int64_t e) const { dlogits[e] = dloss[e / classes] * backprop[e]; }
};

Status Scatter(const CudaContext& ctx, const char* op, Out<float> table,
               TensorView<const int32_t> ids, In<float> values, float scale) {
  RETURN_IF_ERROR(internal::CheckRowsOp(op, table.shape, ids.shape, values.shape));
  const int64_t count = ids.size();
  if (values.size() == 0) return Status::Ok();
  // next (count int64) then is_first (count bytes).
  internal::DeviceScratch links;
  RETURN_IF_ERROR(links.Allocate(ctx, static_cast<size_t>(count) * (sizeof(int64_t) + 1)));
  int64_t* next = links.as<int64_t>();
  uint8_t* is_first = reinterpret_cast<uint8_t*>(next + count);
  RETURN_IF_ERROR(
      internal::ForEach(ctx, count, LinkOccurrencesFn{ids.data, count, next, is_first}));
  return internal::ForEach(ctx, values.size(),
                           ScatterChainFn{table.data, ids.data, next, is_first, values.data,
                                          table.dim(0), table.dim(1), scale});
}

}  // namespace

Status Gather(const CudaContext& ctx, In<float> params, TensorView<const int32_t> ids,
              Out<float> out) {
  RETURN_IF_ERROR(internal::CheckRowsOp("Gather", params.shape, ids.shape, out.shape));
  return internal::ForEach(ctx, out.size(),
                           GatherFn{params.data, ids.data, out.data, params.dim(0), params.dim(1)});
}

Status ScatterAdd(const CudaContext& ctx, Out<float> dense, TensorView<const int32_t> ids,
                  In<float> values, float scale) {
  return Scatter(ctx, "ScatterAdd", dense, ids, values, scale);
}

Status ScatterSub(const CudaContext& ctx, Out<float> var, TensorView<const int32_t> ids,
                  In<float> updates, float scale) {
  return Scatter(ctx, "ScatterSub", var, ids, updates, -scale);
}

Status SparseSoftmaxCrossEntropyWithLogits(const CudaContext& ctx, In<float> logits,
                                           TensorView<const int32_t> labels, Out<float> loss,
                                           Out<float> backprop) {
  RETURN_IF_ERROR(
      internal::CheckSoftmaxXent(logits.shape, labels.shape, loss.shape, backprop.shape));
  const int64_t rows = logits.dim(0);
  if (rows == 0) return Status::Ok();
  STEPSCOPE_CUDA_LAUNCH(SoftmaxXentKernel, static_cast<unsigned int>(rows), internal::kThreads,
                        0, ctx.stream(), logits.data, labels.data, logits.dim(1), loss.data,
                        backprop.data);
  return Status::Ok();
}

Status SparseSoftmaxCrossEntropyGrad(const CudaContext& ctx, In<float> backprop, In<float> dloss,
                                     Out<float> dlogits) {
  constexpr const char* kOp = "SparseSoftmaxCrossEntropyGrad";
  RETURN_IF_ERROR(internal::ExpectRank(kOp, "backprop", backprop.shape, 2));
  RETURN_IF_ERROR(internal::ExpectShape(kOp, "dloss", dloss.shape, Shape{backprop.dim(0)}));
  RETURN_IF_ERROR(internal::ExpectShape(kOp, "dlogits", dlogits.shape, backprop.shape));
  if (backprop.dim(1) == 0) return Status::Ok();
  return internal::ForEach(ctx, dlogits.size(),
                           XentGradFn{backprop.data, dloss.data, dlogits.data, backprop.dim(1)});
}

}  // namespace stepscope::kernels
