// Embedding lookup (GatherV2 on axis 0), its gradient, and the scatter updates that apply it.
// The gradient of Gather is sparse, as in TF: IndexedSlices(values = dout, indices = ids), one
// row per looked-up id (duplicates included), with nothing to compute. ScatterAdd turns it into
// a dense gradient; ScatterSub applies it to the variable (sparse SGD: updates = lr · dout).
// ids are int32; an id outside [0, V) is the caller's bad input (TF's CPU behaviour), and the
// scatters accumulate duplicate ids.
#pragma once

#include <cstdint>
#include <type_traits>

#include "base/status.h"
#include "kernels/cpu_context.h"
#include "kernels/tensor_view.h"

namespace stepscope::kernels {

class CudaContext;

// out(N, D) = params[ids[n], :];   params (V, D), ids (N).
template <typename T>
Status Gather(const CpuContext& ctx, In<T> params, TensorView<const int32_t> ids, Out<T> out);

// dense(V, D)[ids[n], :] += scale · values(N, D)[n, :]. Zero `dense` first for GatherV2's
// dense gradient.
template <typename T>
Status ScatterAdd(const CpuContext& ctx, Out<T> dense, TensorView<const int32_t> ids,
                  In<T> values, std::type_identity_t<T> scale = 1);

// var(V, D)[ids[n], :] -= scale · updates(N, D)[n, :] (TF ScatterSub with scale 1).
template <typename T>
Status ScatterSub(const CpuContext& ctx, Out<T> var, TensorView<const int32_t> ids,
                  In<T> updates, std::type_identity_t<T> scale = 1);

Status Gather(const CudaContext& ctx, In<float> params, TensorView<const int32_t> ids,
              Out<float> out);
Status ScatterAdd(const CudaContext& ctx, Out<float> dense, TensorView<const int32_t> ids,
                  In<float> values, float scale = 1);
Status ScatterSub(const CudaContext& ctx, Out<float> var, TensorView<const int32_t> ids,
                  In<float> updates, float scale = 1);

namespace internal {
// Checks shapes (table (V,D), ids (N), rows (N,D)) for Gather and the scatters.
Status CheckRowsOp(const char* op, const Shape& table, const Shape& ids, const Shape& rows);
// Host-side id range check (CPU kernels; the CUDA kernels flag bad ids on the device).
Status CheckIds(const char* op, const int32_t* ids, int64_t n, int64_t num_rows);
}  // namespace internal

}  // namespace stepscope::kernels
