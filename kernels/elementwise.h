// Element-wise ops: BiasAdd/BiasAddGrad, AddN, Add, Mul/MulGrad, Scale, Relu/ReluGrad, and what
// dropout is built of (RandomUniform, AddScalar, Floor, DivideByScalar).
// Shapes must match exactly (no general broadcasting); BiasAdd broadcasts a (C) bias over the
// last dimension (channels last, TF's NHWC / BiasAdd data_format "NHWC").
// The gradient of Add and AddN with respect to each input is the incoming gradient itself and
// the gradient of Scale is Scale by the same factor, so they have no separate grad kernel.
#pragma once

#include <cstdint>
#include <span>
#include <type_traits>

#include "base/status.h"
#include "kernels/cpu_context.h"
#include "kernels/tensor_view.h"

namespace stepscope::kernels {

class CudaContext;

// y(..., C) = x(..., C) + bias(C).
template <typename T>
Status BiasAdd(const CpuContext& ctx, In<T> x, In<T> bias, Out<T> y);
// dbias(C) = sum of dy(..., C) over all but the last dimension.
template <typename T>
Status BiasAddGrad(const CpuContext& ctx, In<T> dy, Out<T> dbias);

// out = sum of inputs (at least one; all of out's shape). out may alias an input.
template <typename T>
Status AddN(const CpuContext& ctx, std::span<const In<T>> inputs, Out<T> out);
// c = a + b.
template <typename T>
Status Add(const CpuContext& ctx, In<T> a, In<T> b, Out<T> c);
// c = a ⊙ b.
template <typename T>
Status Mul(const CpuContext& ctx, In<T> a, In<T> b, Out<T> c);
// da = dc ⊙ b, db = dc ⊙ a (either may be absent).
template <typename T>
Status MulGrad(const CpuContext& ctx, In<T> a, In<T> b, In<T> dc, Out<T> da, Out<T> db);
// y = alpha · x (y may alias x).
template <typename T>
Status Scale(const CpuContext& ctx, In<T> x, std::type_identity_t<T> alpha, Out<T> y);

// y = x + s (TF's Add of a tensor and a scalar).
template <typename T>
Status AddScalar(const CpuContext& ctx, In<T> x, std::type_identity_t<T> s, Out<T> y);
// y = floor(x).
template <typename T>
Status Floor(const CpuContext& ctx, In<T> x, Out<T> y);
// y[k] = the k-th uniform [0, 1) draw of SplitMix64 after `state` (math/random_math.h): the same
// numbers on every device and thread count; the caller advances its state by y.size().
Status RandomUniform(const CpuContext& ctx, uint64_t state, Out<float> y);
// y = x / d (TF's RealDiv by a scalar: a division, which a multiply by 1/d does not round alike).
template <typename T>
Status DivideByScalar(const CpuContext& ctx, In<T> x, std::type_identity_t<T> d, Out<T> y);

// One dropout site of TF 1.x (RandomUniform, Add, Floor, RealDiv, Mul) in one pass, the same
// numbers as those five kernels (math::DropoutMask, DropoutApply): element (r, c) draws the
// k-th uniform after `state`, k = r·cols + c (RandomUniform's dense order); mask = floor(keep + u)
// and y = (x / keep) · mask. x and y may be strided rows (a time step inside a batch); the mask
// is dense (rows, cols). The caller advances its state by rows·cols.
Status FusedDropout(const CpuContext& ctx, uint64_t state, float keep, StridedRows<const float> x,
                    Out<float> mask, StridedRows<float> y);
// Its gradient (TF's Mul then RealDiv): dx = (dy · mask) / keep; dy may be strided rows.
Status FusedDropoutGrad(const CpuContext& ctx, StridedRows<const float> dy, In<float> mask,
                        float keep, Out<float> dx);

// y = max(x, 0).
template <typename T>
Status Relu(const CpuContext& ctx, In<T> x, Out<T> y);
// dx = dy where x > 0, else 0 (x may be Relu's input or its output: same sign pattern).
template <typename T>
Status ReluGrad(const CpuContext& ctx, In<T> dy, In<T> x, Out<T> dx);

Status BiasAdd(const CudaContext& ctx, In<float> x, In<float> bias, Out<float> y);
Status BiasAddGrad(const CudaContext& ctx, In<float> dy, Out<float> dbias);
Status AddN(const CudaContext& ctx, std::span<const In<float>> inputs, Out<float> out);
Status Add(const CudaContext& ctx, In<float> a, In<float> b, Out<float> c);
Status Mul(const CudaContext& ctx, In<float> a, In<float> b, Out<float> c);
Status MulGrad(const CudaContext& ctx, In<float> a, In<float> b, In<float> dc, Out<float> da,
               Out<float> db);
Status Scale(const CudaContext& ctx, In<float> x, float alpha, Out<float> y);
Status AddScalar(const CudaContext& ctx, In<float> x, float s, Out<float> y);
Status Floor(const CudaContext& ctx, In<float> x, Out<float> y);
Status RandomUniform(const CudaContext& ctx, uint64_t state, Out<float> y);
Status DivideByScalar(const CudaContext& ctx, In<float> x, float d, Out<float> y);
Status FusedDropout(const CudaContext& ctx, uint64_t state, float keep, StridedRows<const float> x,
                    Out<float> mask, StridedRows<float> y);
Status FusedDropoutGrad(const CudaContext& ctx, StridedRows<const float> dy, In<float> mask,
                        float keep, Out<float> dx);
Status Relu(const CudaContext& ctx, In<float> x, Out<float> y);
Status ReluGrad(const CudaContext& ctx, In<float> dy, In<float> x, Out<float> dx);

namespace internal {
Status CheckSameShape(const char* op, const Shape& a, const Shape& b);
Status CheckBiasAdd(const Shape& x, const Shape& bias, const Shape& y);
// The views of a fused dropout (or its gradient): `a` and `b` strided rows of one shape, rows
// at least their width apart, and the dense mask of that shape.
Status CheckFusedDropout(const char* op, const StridedRows<const float>& a,
                         const StridedRows<const float>& b, const Shape& mask, float keep);
}  // namespace internal

}  // namespace stepscope::kernels
