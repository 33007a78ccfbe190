// Gather and the scatters on the CPU. The scatters split the work by column blocks, so
// duplicate ids (rows written twice) never race.
#include "kernels/embedding.h"

#include <algorithm>
#include <cstring>

#include "kernels/shape_check.h"

namespace stepscope::kernels {
namespace internal {

Status CheckRowsOp(const char* op, const Shape& table, const Shape& ids, const Shape& rows) {
  RETURN_IF_ERROR(ExpectRank(op, "table", table, 2));
  RETURN_IF_ERROR(ExpectRank(op, "ids", ids, 1));
  return ExpectShape(op, "rows", rows, Shape{ids[0], table[1]});
}

Status CheckIds(const char* op, const int32_t* ids, int64_t n, int64_t num_rows) {
  for (int64_t k = 0; k < n; ++k) {
    if (ids[k] < 0 || ids[k] >= num_rows) {
      return ShapeError(op, "ids[" + std::to_string(k) + "] = " + std::to_string(ids[k]) +
                                " is not in [0, " + std::to_string(num_rows) + ")");
    }
  }
  return Status::Ok();
}

}  // namespace internal
namespace {

template <typename T>
void ScatterScaled(const CpuContext& ctx, Out<T> table, TensorView<const int32_t> ids,
                   In<T> rows, T scale) {
  const int64_t d = table.dim(1);
  const int64_t n = ids.size();
  const int64_t col_grain = std::max<int64_t>(16, ctx.GrainFor(d, 16));
  ctx.ParallelFor(d, col_grain, [&](int64_t c0, int64_t c1) {
    for (int64_t k = 0; k < n; ++k) {
      T* dst = table.data + static_cast<int64_t>(ids.data[k]) * d;
      const T* src = rows.data + k * d;
      for (int64_t c = c0; c < c1; ++c) dst[c] += scale * src[c];
    }
  });
}

}  // namespace

template <typename T>
Status Gather(const CpuContext& ctx, In<T> params, TensorView<const int32_t> ids, Out<T> out) {
  RETURN_IF_ERROR(internal::CheckRowsOp("Gather", params.shape, ids.shape, out.shape));
  RETURN_IF_ERROR(internal::CheckIds("Gather", ids.data, ids.size(), params.dim(0)));
  const int64_t d = params.dim(1);
  ctx.ParallelFor(ids.size(), ctx.GrainFor(ids.size(), 1 + 8192 / (d + 1)),
                  [&](int64_t k0, int64_t k1) {
                    for (int64_t k = k0; k < k1; ++k) {
                      if (d == 0) continue;
                      std::memcpy(out.data + k * d,
                                  params.data + static_cast<int64_t>(ids.data[k]) * d,
                                  static_cast<size_t>(d) * sizeof(T));
                    }
                  });
  return Status::Ok();
}

template <typename T>
Status ScatterAdd(const CpuContext& ctx, Out<T> dense, TensorView<const int32_t> ids,
                  In<T> values, std::type_identity_t<T> scale) {
  RETURN_IF_ERROR(internal::CheckRowsOp("ScatterAdd", dense.shape, ids.shape, values.shape));
  RETURN_IF_ERROR(internal::CheckIds("ScatterAdd", ids.data, ids.size(), dense.dim(0)));
  ScatterScaled<T>(ctx, dense, ids, values, scale);
  return Status::Ok();
}

template <typename T>
Status ScatterSub(const CpuContext& ctx, Out<T> var, TensorView<const int32_t> ids,
                  In<T> updates, std::type_identity_t<T> scale) {
  RETURN_IF_ERROR(internal::CheckRowsOp("ScatterSub", var.shape, ids.shape, updates.shape));
  RETURN_IF_ERROR(internal::CheckIds("ScatterSub", ids.data, ids.size(), var.dim(0)));
  ScatterScaled<T>(ctx, var, ids, updates, -scale);
  return Status::Ok();
}

#define INSTANTIATE(T)                                                                     \
  template Status Gather<T>(const CpuContext&, In<T>, TensorView<const int32_t>, Out<T>); \
  template Status ScatterAdd<T>(const CpuContext&, Out<T>, TensorView<const int32_t>,     \
                                In<T>, std::type_identity_t<T>);                          \
  template Status ScatterSub<T>(const CpuContext&, Out<T>, TensorView<const int32_t>,     \
                                In<T>, std::type_identity_t<T>);
STEPSCOPE_KERNELS_FOR_CPU_TYPES(INSTANTIATE)
#undef INSTANTIATE

}  // namespace stepscope::kernels
