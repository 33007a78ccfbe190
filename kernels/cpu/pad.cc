// Pad and PadGrad on the CPU. Shapes of rank < 4 are handled as rank 4 with leading 1s, and
// the work is threaded over rows of the last dimension.
#include "kernels/pad.h"

#include <algorithm>

#include "kernels/shape_check.h"

namespace stepscope::kernels {

Shape Paddings::PaddedShape(const Shape& input) const {
  Shape out = input;
  for (int i = 0; i < input.rank; ++i) {
    const size_t s = static_cast<size_t>(i);
    out.dims[s] = input.dims[s] + before[s] + after[s];
  }
  return out;
}

namespace internal {
Status CheckPad(const Shape& x, const Paddings& paddings, const Shape& y) {
  for (int i = 0; i < kMaxRank; ++i) {
    const size_t s = static_cast<size_t>(i);
    if (paddings.before[s] < 0 || paddings.after[s] < 0) {
      return ShapeError("Pad", "paddings must be >= 0 (dimension " + std::to_string(i) + ")");
    }
    if (i >= x.rank && (paddings.before[s] != 0 || paddings.after[s] != 0)) {
      return ShapeError("Pad", "padding given for dimension " + std::to_string(i) +
                                   " of a rank-" + std::to_string(x.rank) + " tensor");
    }
  }
  return ExpectShape("Pad", "y", y, paddings.PaddedShape(x));
}
}  // namespace internal

namespace {

struct Pad4 {
  std::array<int64_t, 4> in{}, out{}, before{};
};

Pad4 ToRank4(const Shape& x, const Paddings& p) {
  Pad4 r;
  const int lead = 4 - x.rank;
  for (int i = 0; i < 4; ++i) {
    const size_t s = static_cast<size_t>(i);
    if (i < lead) {
      r.in[s] = r.out[s] = 1;
    } else {
      const size_t src = static_cast<size_t>(i - lead);
      r.in[s] = x.dims[src];
      r.before[s] = p.before[src];
      r.out[s] = x.dims[src] + p.before[src] + p.after[src];
    }
  }
  return r;
}

}  // namespace

template <typename T>
Status Pad(const CpuContext& ctx, In<T> x, const Paddings& paddings, Out<T> y,
           std::type_identity_t<T> value) {
  RETURN_IF_ERROR(internal::CheckPad(x.shape, paddings, y.shape));
  if (x.rank() == 0) {
    y.data[0] = x.data[0];
    return Status::Ok();
  }
  const Pad4 p = ToRank4(x.shape, paddings);
  const int64_t out_rows = p.out[0] * p.out[1] * p.out[2];
  ctx.ParallelFor(out_rows, ctx.GrainFor(out_rows, 64), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t o2 = r % p.out[2], o1 = (r / p.out[2]) % p.out[1], o0 = r / (p.out[2] * p.out[1]);
      const int64_t i0 = o0 - p.before[0], i1 = o1 - p.before[1], i2 = o2 - p.before[2];
      T* dst = y.data + r * p.out[3];
      const bool inside = i0 >= 0 && i0 < p.in[0] && i1 >= 0 && i1 < p.in[1] && i2 >= 0 &&
                          i2 < p.in[2];
      if (!inside) {
        std::fill(dst, dst + p.out[3], value);
        continue;
      }
      const T* src = x.data + ((i0 * p.in[1] + i1) * p.in[2] + i2) * p.in[3];
      std::fill(dst, dst + p.before[3], value);
      std::copy(src, src + p.in[3], dst + p.before[3]);
      std::fill(dst + p.before[3] + p.in[3], dst + p.out[3], value);
    }
  });
  return Status::Ok();
}

template <typename T>
Status PadGrad(const CpuContext& ctx, In<T> dy, const Paddings& paddings, Out<T> dx) {
  RETURN_IF_ERROR(internal::CheckPad(dx.shape, paddings, dy.shape));
  if (dx.rank() == 0) {
    dx.data[0] = dy.data[0];
    return Status::Ok();
  }
  const Pad4 p = ToRank4(dx.shape, paddings);
  const int64_t in_rows = p.in[0] * p.in[1] * p.in[2];
  ctx.ParallelFor(in_rows, ctx.GrainFor(in_rows, 64), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t i2 = r % p.in[2], i1 = (r / p.in[2]) % p.in[1], i0 = r / (p.in[2] * p.in[1]);
      const T* src = dy.data +
                     (((i0 + p.before[0]) * p.out[1] + i1 + p.before[1]) * p.out[2] + i2 +
                      p.before[2]) * p.out[3] + p.before[3];
      std::copy(src, src + p.in[3], dx.data + r * p.in[3]);
    }
  });
  return Status::Ok();
}

#define INSTANTIATE(T)                                                                      \
  template Status Pad<T>(const CpuContext&, In<T>, const Paddings&, Out<T>,                \
                         std::type_identity_t<T>);                                         \
  template Status PadGrad<T>(const CpuContext&, In<T>, const Paddings&, Out<T>);
STEPSCOPE_KERNELS_FOR_CPU_TYPES(INSTANTIATE)
#undef INSTANTIATE

}  // namespace stepscope::kernels
