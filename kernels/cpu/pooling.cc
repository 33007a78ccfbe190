// MaxPool and global average pooling on the CPU, threaded over images (and output rows).
#include "kernels/pooling.h"

#include <algorithm>

#include "kernels/math/pooling_math.h"
#include "kernels/shape_check.h"

namespace stepscope::kernels {

StatusOr<Conv2DGeometry> ComputePool2DGeometry(const Shape& input, const Pool2DOptions& options) {
  constexpr const char* kOp = "MaxPool";
  RETURN_IF_ERROR(internal::ExpectRank(kOp, "x (N,H,W,C)", input, 4));
  if (options.window_h < 1 || options.window_w < 1 || options.stride_h < 1 ||
      options.stride_w < 1) {
    return internal::ShapeError(kOp, "window and strides must be >= 1");
  }
  if (options.padding == Padding::kExplicit) {
    return internal::ShapeError(kOp, "padding must be VALID or SAME");
  }
  Conv2DOptions conv;
  conv.stride_h = options.stride_h;
  conv.stride_w = options.stride_w;
  conv.padding = options.padding;
  return ComputeConv2DGeometry(input, Shape{options.window_h, options.window_w, input[3], input[3]},
                               conv);
}

namespace internal {
math::PoolWindow ToPoolWindow(const Conv2DGeometry& g) {
  return {g.in_h, g.in_w, g.in_c, g.k_h, g.k_w, g.stride_h, g.stride_w, g.pad_top, g.pad_left};
}
}  // namespace internal

template <typename T>
Status MaxPool(const CpuContext& ctx, In<T> x, Out<T> y, const Pool2DOptions& options) {
  ASSIGN_OR_RETURN(const Conv2DGeometry g, ComputePool2DGeometry(x.shape, options));
  RETURN_IF_ERROR(internal::ExpectShape("MaxPool", "y", y.shape, g.output_shape()));
  const math::PoolWindow win = internal::ToPoolWindow(g);
  const int64_t out_rows = g.batch * g.out_h;
  ctx.ParallelFor(out_rows, ctx.GrainFor(out_rows, 1), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t n = r / g.out_h, oh = r % g.out_h;
      for (int64_t ow = 0; ow < g.out_w; ++ow) {
        T* dst = y.data + ((n * g.out_h + oh) * g.out_w + ow) * g.in_c;
        for (int64_t c = 0; c < g.in_c; ++c) dst[c] = x.data[math::MaxPoolArgMax(win, x.data, n, oh, ow, c)];
      }
    }
  });
  return Status::Ok();
}

template <typename T>
Status MaxPoolGrad(const CpuContext& ctx, In<T> x, In<T> dy, Out<T> dx,
                   const Pool2DOptions& options) {
  ASSIGN_OR_RETURN(const Conv2DGeometry g, ComputePool2DGeometry(x.shape, options));
  RETURN_IF_ERROR(internal::ExpectShape("MaxPoolGrad", "dy", dy.shape, g.output_shape()));
  RETURN_IF_ERROR(internal::ExpectShape("MaxPoolGrad", "dx", dx.shape, x.shape));
  // Windows overlap, so the scatter is split by image: images never share pixels.
  const math::PoolWindow win = internal::ToPoolWindow(g);
  const int64_t image_size = g.in_h * g.in_w * g.in_c;
  ctx.ParallelFor(g.batch, 1, [&](int64_t n0, int64_t n1) {
    for (int64_t n = n0; n < n1; ++n) {
      std::fill(dx.data + n * image_size, dx.data + (n + 1) * image_size, T(0));
      for (int64_t oh = 0; oh < g.out_h; ++oh) {
        for (int64_t ow = 0; ow < g.out_w; ++ow) {
          const T* src = dy.data + ((n * g.out_h + oh) * g.out_w + ow) * g.in_c;
          for (int64_t c = 0; c < g.in_c; ++c) {
            dx.data[math::MaxPoolArgMax(win, x.data, n, oh, ow, c)] += src[c];
          }
        }
      }
    }
  });
  return Status::Ok();
}

namespace internal {
Status CheckGlobalAvgPool(const Shape& x, const Shape& y) {
  RETURN_IF_ERROR(ExpectRank("GlobalAvgPool", "x (N,H,W,C)", x, 4));
  return ExpectShape("GlobalAvgPool", "y", y, Shape{x[0], x[3]});
}
}  // namespace internal

template <typename T>
Status GlobalAvgPool(const CpuContext& ctx, In<T> x, Out<T> y) {
  RETURN_IF_ERROR(internal::CheckGlobalAvgPool(x.shape, y.shape));
  const int64_t hw = x.dim(1) * x.dim(2), c = x.dim(3);
  ctx.ParallelFor(x.dim(0), 1, [&](int64_t n0, int64_t n1) {
    for (int64_t n = n0; n < n1; ++n) {
      for (int64_t j = 0; j < c; ++j) {
        double sum = 0;
        for (int64_t p = 0; p < hw; ++p) sum += static_cast<double>(x.data[(n * hw + p) * c + j]);
        y.data[n * c + j] = hw > 0 ? static_cast<T>(sum / static_cast<double>(hw)) : T(0);
      }
    }
  });
  return Status::Ok();
}

template <typename T>
Status GlobalAvgPoolGrad(const CpuContext& ctx, In<T> dy, Out<T> dx) {
  RETURN_IF_ERROR(internal::CheckGlobalAvgPool(dx.shape, dy.shape));
  const int64_t hw = dx.dim(1) * dx.dim(2), c = dx.dim(3);
  const T inv = hw > 0 ? T(1) / static_cast<T>(hw) : T(0);
  ctx.ParallelFor(dx.dim(0), 1, [&](int64_t n0, int64_t n1) {
    for (int64_t n = n0; n < n1; ++n) {
      for (int64_t p = 0; p < hw; ++p) {
        for (int64_t j = 0; j < c; ++j) dx.data[(n * hw + p) * c + j] = dy.data[n * c + j] * inv;
      }
    }
  });
  return Status::Ok();
}

#define INSTANTIATE(T)                                                                      \
  template Status MaxPool<T>(const CpuContext&, In<T>, Out<T>, const Pool2DOptions&);      \
  template Status MaxPoolGrad<T>(const CpuContext&, In<T>, In<T>, Out<T>,                  \
                                 const Pool2DOptions&);                                    \
  template Status GlobalAvgPool<T>(const CpuContext&, In<T>, Out<T>);                      \
  template Status GlobalAvgPoolGrad<T>(const CpuContext&, In<T>, Out<T>);
STEPSCOPE_KERNELS_FOR_CPU_TYPES(INSTANTIATE)
#undef INSTANTIATE

}  // namespace stepscope::kernels
