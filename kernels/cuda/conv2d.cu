// CUDA Conv2D and its two gradients: im2col/col2im kernels around cuBLAS GEMMs over slabs of
// whole images, exactly as the CPU reference (kernels/cpu/conv2d.cc).
#include <algorithm>

#include "kernels/conv2d.h"
#include "kernels/cuda/cuda_util.cuh"
#include "kernels/math/conv_math.h"

namespace stepscope::kernels {
namespace {

// Device-side copy of the geometry (plain integers).
struct ConvGeom {
  int64_t in_h, in_w, in_c, k_h, k_w, out_c, out_h, out_w, stride_h, stride_w, pad_top, pad_left;
};
ConvGeom ToGeom(const Conv2DGeometry& g) {
  return {g.in_h, g.in_w, g.in_c, g.k_h, g.k_w, g.out_c, g.out_h, g.out_w,
          g.stride_h, g.stride_w, g.pad_top, g.pad_left};
}

constexpr int64_t kColumnBudget = int64_t{1} << 24;  // column entries per slab (64 MiB)

struct Im2ColFn {
  ConvGeom g;
  const float* input;  // at the slab's first image
  float* col;
  int64_t k;
  __device__ void operator()(int64_t e) const {
    const int64_t r = e / k, q = e % k;
    const int64_t c = q % g.in_c, kw = (q / g.in_c) % g.k_w, kh = q / (g.in_c * g.k_w);
    const int64_t ow = r % g.out_w, oh = (r / g.out_w) % g.out_h, n = r / (g.out_w * g.out_h);
    const int64_t ih = math::InputCoord(oh, kh, g.stride_h, g.pad_top);
    const int64_t iw = math::InputCoord(ow, kw, g.stride_w, g.pad_left);
    col[e] = (ih < 0 || ih >= g.in_h || iw < 0 || iw >= g.in_w)
                 ? 0.0f
                 : input[((n * g.in_h + ih) * g.in_w + iw) * g.in_c + c];
  }
};

// One thread per input element: the sum of the column entries that read it.
struct Col2ImFn {
  ConvGeom g;
  const float* col;
  float* input;  // at the slab's first image
  int64_t k;
  __device__ void operator()(int64_t e) const {
    const int64_t c = e % g.in_c, iw = (e / g.in_c) % g.in_w, ih = (e / (g.in_c * g.in_w)) % g.in_h,
                  n = e / (g.in_c * g.in_w * g.in_h);
    float sum = 0;
    for (int64_t kh = 0; kh < g.k_h; ++kh) {
      const int64_t oh = math::OutputForTap(ih, kh, g.stride_h, g.pad_top, g.out_h);
      if (oh < 0) continue;
      for (int64_t kw = 0; kw < g.k_w; ++kw) {
        const int64_t ow = math::OutputForTap(iw, kw, g.stride_w, g.pad_left, g.out_w);
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

}  // namespace

Status Conv2D(const CudaContext& ctx, In<float> input, In<float> filter, Out<float> output,
              const Conv2DOptions& options) {
  ASSIGN_OR_RETURN(const Conv2DGeometry g, ComputeConv2DGeometry(input.shape, filter.shape, options));
  RETURN_IF_ERROR(internal::CheckConvShape("Conv2D", "output", output.shape, g.output_shape()));
  if (output.size() == 0) return Status::Ok();
  const int64_t k = g.k_h * g.k_w * g.in_c, rows_per_image = g.out_h * g.out_w;
  const int64_t slab = ImagesPerSlab(g);
  internal::DeviceScratch col;
  RETURN_IF_ERROR(col.Allocate(ctx, static_cast<size_t>(slab * rows_per_image * k) * sizeof(float)));
  for (int64_t n0 = 0; n0 < g.batch; n0 += slab) {
    const int64_t images = std::min(slab, g.batch - n0);
    RETURN_IF_ERROR(internal::ForEach(
        ctx, images * rows_per_image * k,
        Im2ColFn{ToGeom(g), input.data + n0 * g.in_h * g.in_w * g.in_c, col.as<float>(), k}));
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
  const int64_t slab = ImagesPerSlab(g);
  internal::DeviceScratch col;
  RETURN_IF_ERROR(col.Allocate(ctx, static_cast<size_t>(slab * rows_per_image * k) * sizeof(float)));
  for (int64_t n0 = 0; n0 < g.batch; n0 += slab) {
    const int64_t images = std::min(slab, g.batch - n0);
    RETURN_IF_ERROR(internal::RowMajorSgemm(ctx, false, true, images * rows_per_image, k, g.out_c,
                                            1.0f, dout.data + n0 * rows_per_image * g.out_c,
                                            g.out_c, filter.data, g.out_c, 0.0f, col.as<float>(), k));
    RETURN_IF_ERROR(internal::ForEach(
        ctx, images * g.in_h * g.in_w * g.in_c,
        Col2ImFn{ToGeom(g), col.as<float>(), dinput.data + n0 * g.in_h * g.in_w * g.in_c, k}));
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
  const int64_t slab = ImagesPerSlab(g);
  internal::DeviceScratch col;
  RETURN_IF_ERROR(col.Allocate(ctx, static_cast<size_t>(slab * rows_per_image * k) * sizeof(float)));
  for (int64_t n0 = 0; n0 < g.batch; n0 += slab) {
    const int64_t images = std::min(slab, g.batch - n0);
    RETURN_IF_ERROR(internal::ForEach(
        ctx, images * rows_per_image * k,
        Im2ColFn{ToGeom(g), input.data + n0 * g.in_h * g.in_w * g.in_c, col.as<float>(), k}));
    RETURN_IF_ERROR(internal::RowMajorSgemm(
        ctx, true, false, k, g.out_c, images * rows_per_image, 1.0f, col.as<float>(), k,
        dout.data + n0 * rows_per_image * g.out_c, g.out_c, (n0 > 0 || accumulate) ? 1.0f : 0.0f,
        dfilter.data, g.out_c));
  }
  return Status::Ok();
}

}  // namespace stepscope::kernels
