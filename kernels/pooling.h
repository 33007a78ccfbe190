// MaxPool / MaxPoolGrad and global average pooling (Mean over H, W) / its gradient, NHWC.
// MaxPool padding is VALID or SAME (padded positions never win); MaxPoolGrad sends each output
// gradient to the first maximum of its window in row-major window order (TF's CPU rule) and
// sums where windows overlap.
#pragma once

#include "base/status.h"
#include "kernels/conv2d.h"  // Padding
#include "kernels/cpu_context.h"
#include "kernels/math/pooling_math.h"
#include "kernels/tensor_view.h"

namespace stepscope::kernels {

class CudaContext;

struct Pool2DOptions {
  int window_h = 1, window_w = 1;
  int stride_h = 1, stride_w = 1;
  Padding padding = Padding::kValid;  // kValid or kSame
};

// The resolved pooling geometry, in Conv2DGeometry's terms (k_* is the window, out_c = in_c).
StatusOr<Conv2DGeometry> ComputePool2DGeometry(const Shape& input, const Pool2DOptions& options);

// y (N,OH,OW,C) = max over each window of x (N,H,W,C).
template <typename T>
Status MaxPool(const CpuContext& ctx, In<T> x, Out<T> y, const Pool2DOptions& options);
// dx (x's shape) from x and dy (N,OH,OW,C).
template <typename T>
Status MaxPoolGrad(const CpuContext& ctx, In<T> x, In<T> dy, Out<T> dx,
                   const Pool2DOptions& options);

// y (N,C) = mean of x (N,H,W,C) over H and W.
template <typename T>
Status GlobalAvgPool(const CpuContext& ctx, In<T> x, Out<T> y);
// dx (N,H,W,C) = dy (N,C) / (H·W), broadcast.
template <typename T>
Status GlobalAvgPoolGrad(const CpuContext& ctx, In<T> dy, Out<T> dx);

Status MaxPool(const CudaContext& ctx, In<float> x, Out<float> y, const Pool2DOptions& options);
Status MaxPoolGrad(const CudaContext& ctx, In<float> x, In<float> dy, Out<float> dx,
                   const Pool2DOptions& options);
Status GlobalAvgPool(const CudaContext& ctx, In<float> x, Out<float> y);
Status GlobalAvgPoolGrad(const CudaContext& ctx, In<float> dy, Out<float> dx);

namespace internal {
math::PoolWindow ToPoolWindow(const Conv2DGeometry& g);
Status CheckGlobalAvgPool(const Shape& x, const Shape& y);
}  // namespace internal

}  // namespace stepscope::kernels
