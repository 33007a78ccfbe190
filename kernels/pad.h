// Pad (constant) and its gradient (the slice of dy that covers the input), any rank ≤ 4.
#pragma once

#include <array>
#include <cstdint>
#include <type_traits>

#include "base/status.h"
#include "kernels/cpu_context.h"
#include "kernels/tensor_view.h"

namespace stepscope::kernels {

class CudaContext;

// Elements added before and after each dimension (TF's `paddings` rows); non-negative.
struct Paddings {
  std::array<int64_t, kMaxRank> before{};
  std::array<int64_t, kMaxRank> after{};

  Shape PaddedShape(const Shape& input) const;
};

// y = x surrounded by `value`; y's shape is paddings.PaddedShape(x.shape).
template <typename T>
Status Pad(const CpuContext& ctx, In<T> x, const Paddings& paddings, Out<T> y,
           std::type_identity_t<T> value = 0);
// dx = the part of dy that Pad copied x to.
template <typename T>
Status PadGrad(const CpuContext& ctx, In<T> dy, const Paddings& paddings, Out<T> dx);

Status Pad(const CudaContext& ctx, In<float> x, const Paddings& paddings, Out<float> y,
           float value = 0);
Status PadGrad(const CudaContext& ctx, In<float> dy, const Paddings& paddings, Out<float> dx);

namespace internal {
Status CheckPad(const Shape& x, const Paddings& paddings, const Shape& y);
}  // namespace internal

}  // namespace stepscope::kernels
