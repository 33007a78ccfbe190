// CUDA Conv2D and its two gradients: im2col/col2im kernels around cuBLAS GEMMs over slabs of
// whole images, as the CPU reference (kernels/cpu/conv2d.cc); 1x1 convolutions with stride 1
// (two thirds of ResNet-50's) need no columns and run as one GEMM on the tensors.
#include <algorithm>

#include "kernels/conv2d.h"
#include "kernels/cuda/cuda_util.cuh"
#include "kernels/math/conv_math.h"

namespace stepscope::kernels {
namespace {

// Device-side copy of the geometry in index type I: 32-bit wherever the slab's tensors fit
// (FitsInt32), since im2col/col2im are bound by their index divisions and 64-bit division costs
// several times more on the GPU.
template <typename I>
struct ConvGeom {
  I in_h, in_w, in_c, k_h, k_w, out_c, out_h, out_w, stride_h, stride_w, pad_top, pad_left;
};
template <typename I>
ConvGeom<I> ToGeom(const Conv2DGeometry& g) {
  return {static_cast<I>(g.in_h),     static_cast<I>(g.in_w),     static_cast<I>(g.in_c),
          static_cast<I>(g.k_h),      static_cast<I>(g.k_w),      static_cast<I>(g.out_c),
          static_cast<I>(g.out_h),    static_cast<I>(g.out_w),    static_cast<I>(g.stride_h),
          static_cast<I>(g.stride_w), static_cast<I>(g.pad_top), static_cast<I>(g.pad_left)};
}

constexpr int64_t kColumnBudget = int64_t{1} << 24;  // column entries per slab (64 MiB)

template <typename I>
struct Im2ColFn {
  ConvGeom<I> g;
  const float* input;  // at the slab's first image
  float* col;
  I k;
  __device__ void operator()(int64_t index) const {
    const I e = static_cast<I>(index);
    const I r = e / k, q = e % k;
    const I c = q % g.in_c, kw = (q / g.in_c) % g.k_w, kh = q / (g.in_c * g.k_w);
    const I ow = r % g.out_w, oh = (r / g.out_w) % g.out_h, n = r / (g.out_w * g.out_h);
    const I ih = math::InputCoord(oh, kh, g.stride_h, g.pad_top);
    const I iw = math::InputCoord(ow, kw, g.stride_w, g.pad_left);
    col[e] = (ih < 0 || ih >= g.in_h || iw < 0 || iw >= g.in_w)
                 ? 0.0f
                 : input[((n * g.in_h + ih) * g.in_w + iw) * g.in_c + c];
  }
};

// One thread per input element: the sum of the column entries that read it.
template <typename I>
struct Col2ImFn {
  ConvGeom<I> g;
  const float* col;
  float* input;  // at the slab's first image
  I k;
  __device__ void operator()(int64_t index) const {
    const I e = static_cast<I>(index);
    const I c = e % g.in_c, iw = (e / g.in_c) % g.in_w, ih = (e / (g.in_c * g.in_w)) % g.in_h,
            n = e / (g.in_c * g.in_w * g.in_h);
    float sum = 0;
    for (I kh = 0; kh < g.k_h; ++kh) {
      const I oh = math::OutputForTap(ih, kh, g.stride_h, g.pad_top, g.out_h);
      if (oh < 0) continue;
      for (I kw = 0; kw < g.k_w; ++kw) {
        const I ow = math::OutputForTap(iw, kw, g.stride_w, g.pad_left, g.out_w);
        if (ow < 0) continue;
        sum += col[((n * g.out_h + oh) * g.out_w + ow) * k + (kh * g.k_w + kw) * g.in_c + c];
      }
    }
    input[e] = sum;
  }
};

int64_t ImagesPerSlab(const Conv2DGeometry& g) {
  const int64_t per_image = std::max<int64_t>(1, g.out_h * g.out_w * g.k_h * g.k_w * g.in_c);
  return std::clamp<int64_t>(kColumnBudget / per_image, 1, std::max<int64_t>(g.batch, 1));
}

// Whether every index of `images` images' columns and input fits 32 bits.
bool FitsInt32(const Conv2DGeometry& g, int64_t images) {
  const int64_t col = images * g.out_h * g.out_w * g.k_h * g.k_w * g.in_c;
  const int64_t in = images * g.in_h * g.in_w * g.in_c;
  return std::max(col, in) < (int64_t{1} << 31);
}

// The columns of `images` images from `input` (at the first of them), 32-bit math where it fits.
Status Im2Col(const CudaContext& ctx, const Conv2DGeometry& g, const float* input, int64_t images,
              float* col) {
  const int64_t k = g.k_h * g.k_w * g.in_c, n = images * g.out_h * g.out_w * k;
  if (FitsInt32(g, images)) {
    return internal::ForEach(ctx, n, Im2ColFn<int32_t>{ToGeom<int32_t>(g), input, col,
                                                       static_cast<int32_t>(k)});
  }
  return internal::ForEach(ctx, n, Im2ColFn<int64_t>{ToGeom<int64_t>(g), input, col, k});
}

Status Col2Im(const CudaContext& ctx, const Conv2DGeometry& g, const float* col, int64_t images,
              float* input) {
  const int64_t k = g.k_h * g.k_w * g.in_c, n = images * g.in_h * g.in_w * g.in_c;
  if (FitsInt32(g, images)) {
    return internal::ForEach(ctx, n, Col2ImFn<int32_t>{ToGeom<int32_t>(g), col, input,
                                                       static_cast<int32_t>(k)});
  }
  return internal::ForEach(ctx, n, Col2ImFn<int64_t>{ToGeom<int64_t>(g), col, input, k});
}

// A 1x1 convolution with stride 1 and no padding reads each input pixel once: its columns are
// the input itself (rows = pixels, k = channels), so the GEMMs run on the tensors directly, over
// the whole batch, with no column buffer.
bool ColumnsAreInput(const Conv2DGeometry& g) {
  return g.k_h == 1 && g.k_w == 1 && g.stride_h == 1 && g.stride_w == 1 && g.pad_top == 0 &&
         g.pad_left == 0 && g.out_h == g.in_h && g.out_w == g.in_w;
}

}  // namespace

Status Conv2D(const CudaContext& ctx, In<float> input, In<float> filter, Out<float> output,
              const Conv2DOptions& options) {
  ASSIGN_OR_RETURN(const Conv2DGeometry g, ComputeConv2DGeometry(input.shape, filter.shape, options));
  RETURN_IF_ERROR(internal::CheckConvShape("Conv2D", "output", output.shape, g.output_shape()));
  if (output.size() == 0) return Status::Ok();
  const int64_t k = g.k_h * g.k_w * g.in_c, rows_per_image = g.out_h * g.out_w;
  if (ColumnsAreInput(g)) {
    return internal::RowMajorSgemm(ctx, false, false, g.batch * rows_per_image, g.out_c, k, 1.0f,
                                   input.data, k, filter.data, g.out_c, 0.0f, output.data,
                                   g.out_c);
  }
  const int64_t slab = ImagesPerSlab(g);
  internal::DeviceScratch col;
  RETURN_IF_ERROR(col.Allocate(ctx, static_cast<size_t>(slab * rows_per_image * k) * sizeof(float)));
  for (int64_t n0 = 0; n0 < g.batch; n0 += slab) {
    const int64_t images = std::min(slab, g.batch - n0);
    RETURN_IF_ERROR(
        Im2Col(ctx, g, input.data + n0 * g.in_h * g.in_w * g.in_c, images, col.as<float>()));
    RETURN_IF_ERROR(internal::RowMajorSgemm(ctx, false, false, images * rows_per_image, g.out_c,
                                            k, 1.0f, col.as<float>(), k, filter.data, g.out_c,
                                            0.0f, output.data + n0 * rows_per_image * g.out_c,
                                            g.out_c));
  }
  return Status::Ok();
}

Status Conv2DBackpropInput(const CudaContext& ctx, In<float> filter, In<float> dout,
                           Out<float> dinput, const Conv2DOptions& options) {
  ASSIGN_OR_RETURN(const Conv2DGeometry g, ComputeConv2DGeometry(dinput.shape, filter.shape, options));
  RETURN_IF_ERROR(internal::CheckConvShape("Conv2DBackpropInput", "dout", dout.shape, g.output_shape()));
  if (dinput.size() == 0) return Status::Ok();
  const int64_t k = g.k_h * g.k_w * g.in_c, rows_per_image = g.out_h * g.out_w;
  if (ColumnsAreInput(g)) {
    return internal::RowMajorSgemm(ctx, false, true, g.batch * rows_per_image, k, g.out_c, 1.0f,
                                   dout.data, g.out_c, filter.data, g.out_c, 0.0f, dinput.data,
                                   k);
  }
  const int64_t slab = ImagesPerSlab(g);
  internal::DeviceScratch col;
  RETURN_IF_ERROR(col.Allocate(ctx, static_cast<size_t>(slab * rows_per_image * k) * sizeof(float)));
  for (int64_t n0 = 0; n0 < g.batch; n0 += slab) {
    const int64_t images = std::min(slab, g.batch - n0);
    RETURN_IF_ERROR(internal::RowMajorSgemm(ctx, false, true, images * rows_per_image, k, g.out_c,
                                            1.0f, dout.data + n0 * rows_per_image * g.out_c,
                                            g.out_c, filter.data, g.out_c, 0.0f, col.as<float>(), k));
    RETURN_IF_ERROR(
        Col2Im(ctx, g, col.as<float>(), images, dinput.data + n0 * g.in_h * g.in_w * g.in_c));
  }
  return Status::Ok();
}

Status Conv2DBackpropFilter(const CudaContext& ctx, In<float> input, In<float> dout,
                            Out<float> dfilter, const Conv2DOptions& options, bool accumulate) {
  ASSIGN_OR_RETURN(const Conv2DGeometry g, ComputeConv2DGeometry(input.shape, dfilter.shape, options));
  RETURN_IF_ERROR(internal::CheckConvShape("Conv2DBackpropFilter", "dout", dout.shape, g.output_shape()));
  const int64_t k = g.k_h * g.k_w * g.in_c, rows_per_image = g.out_h * g.out_w;
  if (g.batch == 0 || rows_per_image == 0) {
    if (!accumulate && dfilter.size() > 0) {
      STEPSCOPE_CUDA_CHECK(cudaMemsetAsync(dfilter.data, 0, static_cast<size_t>(dfilter.size()) * sizeof(float), ctx.stream()));
    }
    return Status::Ok();
  }
  if (ColumnsAreInput(g)) {
    return internal::RowMajorSgemm(ctx, true, false, k, g.out_c, g.batch * rows_per_image, 1.0f,
                                   input.data, k, dout.data, g.out_c, accumulate ? 1.0f : 0.0f,
                                   dfilter.data, g.out_c);
  }
  const int64_t slab = ImagesPerSlab(g);
  internal::DeviceScratch col;
  RETURN_IF_ERROR(col.Allocate(ctx, static_cast<size_t>(slab * rows_per_image * k) * sizeof(float)));
  for (int64_t n0 = 0; n0 < g.batch; n0 += slab) {
    const int64_t images = std::min(slab, g.batch - n0);
    RETURN_IF_ERROR(
        Im2Col(ctx, g, input.data + n0 * g.in_h * g.in_w * g.in_c, images, col.as<float>()));
    RETURN_IF_ERROR(internal::RowMajorSgemm(
        ctx, true, false, k, g.out_c, images * rows_per_image, 1.0f, col.as<float>(), k,
        dout.data + n0 * rows_per_image * g.out_c, g.out_c, (n0 > 0 || accumulate) ? 1.0f : 0.0f,
        dfilter.data, g.out_c));
  }
  return Status::Ok();
}

}  // namespace stepscope::kernels
