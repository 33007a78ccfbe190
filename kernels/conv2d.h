// Conv2D, Conv2DBackpropInput and Conv2DBackpropFilter.
//
// Layout: NHWC input/output and HWIO filter (TF's defaults; TF's CPU kernels also support
// only NHWC). NCHW is not supported: a model in NCHW transposes at its boundary. Dilation is 1.
// Padding: VALID, SAME (TF's rule: out = ceil(in / stride), the odd padding pixel goes to the
// bottom/right) or explicit per-side amounts.
//
// CPU: im2col over bounded slabs of output rows (a slab may cross images) + one GEMM per slab
// (sgemm); BackpropFilter accumulates dfilterᵀ = doutᵀ·col over the whole batch. BackpropInput
// with stride 1 is the forward convolution of dout with the flipped filter; with other strides
// it is GEMM + col2im, written as a gather (each input pixel sums the patches that read it) so
// threads never write the same element. A 1×1 stride-1 unpadded convolution is a plain GEMM.
// CUDA: the same im2col/col2im as kernels + cuBLAS.
#pragma once

#include "base/status.h"
#include "kernels/cpu_context.h"
#include "kernels/tensor_view.h"

namespace stepscope::kernels {

class CudaContext;

enum class Padding { kValid, kSame, kExplicit };

struct Conv2DOptions {
  int stride_h = 1;
  int stride_w = 1;
  Padding padding = Padding::kValid;
  int pad_top = 0, pad_bottom = 0, pad_left = 0, pad_right = 0;  // kExplicit only
};

// The resolved geometry of one convolution.
struct Conv2DGeometry {
  int64_t batch = 0, in_h = 0, in_w = 0, in_c = 0;
  int64_t k_h = 0, k_w = 0, out_c = 0;
  int64_t out_h = 0, out_w = 0;
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_top = 0, pad_left = 0;  // bottom/right padding is implied by out_h/out_w

  Shape input_shape() const { return {batch, in_h, in_w, in_c}; }
  Shape filter_shape() const { return {k_h, k_w, in_c, out_c}; }
  Shape output_shape() const { return {batch, out_h, out_w, out_c}; }
  // Multiply-adds of the forward pass (each of the two backward passes has as many).
  int64_t macs() const { return batch * out_h * out_w * out_c * k_h * k_w * in_c; }
};

// input (N,H,W,C) and filter (KH,KW,C,OC) → geometry, or bad input.
StatusOr<Conv2DGeometry> ComputeConv2DGeometry(const Shape& input, const Shape& filter,
                                               const Conv2DOptions& options);

// output (N,OH,OW,OC) = conv(input (N,H,W,C), filter (KH,KW,C,OC)).
template <typename T>
Status Conv2D(const CpuContext& ctx, In<T> input, In<T> filter, Out<T> output,
              const Conv2DOptions& options);
// dinput (N,H,W,C; its shape names the input's) from dout (N,OH,OW,OC).
template <typename T>
Status Conv2DBackpropInput(const CpuContext& ctx, In<T> filter, In<T> dout, Out<T> dinput,
                           const Conv2DOptions& options);
// dfilter (KH,KW,C,OC) from input and dout; added to with `accumulate`.
template <typename T>
Status Conv2DBackpropFilter(const CpuContext& ctx, In<T> input, In<T> dout, Out<T> dfilter,
                            const Conv2DOptions& options, bool accumulate = false);

Status Conv2D(const CudaContext& ctx, In<float> input, In<float> filter, Out<float> output,
              const Conv2DOptions& options);
Status Conv2DBackpropInput(const CudaContext& ctx, In<float> filter, In<float> dout,
                           Out<float> dinput, const Conv2DOptions& options);
Status Conv2DBackpropFilter(const CudaContext& ctx, In<float> input, In<float> dout,
                            Out<float> dfilter, const Conv2DOptions& options,
                            bool accumulate = false);

namespace internal {
// Checks the output/gradient shape against the geometry.
Status CheckConvShape(const char* op, const char* name, const Shape& actual,
                      const Shape& expected);
}  // namespace internal

}  // namespace stepscope::kernels
