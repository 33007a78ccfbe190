// Conv2D and its two gradients on the CPU: im2col over slabs of output rows, one OpenBLAS GEMM
// per slab (or, for strided BackpropInput, GEMM + a gather-form col2im over slabs of whole
// images). The column matrix of a slab is (rows, K) with rows = consecutive (n, oh, ow) output
// positions and K = KH·KW·C in HWIO order, so the HWIO filter is its (K, OC) factor and the
// NHWC output its (rows, OC) product, with no transposes.
#include "kernels/conv2d.h"

#include <algorithm>
#include <cstring>
#include <memory>

#include "kernels/cpu/blas.h"
#include "kernels/math/conv_math.h"
#include "kernels/shape_check.h"

namespace stepscope::kernels {

StatusOr<Conv2DGeometry> ComputeConv2DGeometry(const Shape& input, const Shape& filter,
                                               const Conv2DOptions& options) {
  constexpr const char* kOp = "Conv2D";
  RETURN_IF_ERROR(internal::ExpectRank(kOp, "input (N,H,W,C)", input, 4));
  RETURN_IF_ERROR(internal::ExpectRank(kOp, "filter (KH,KW,C,OC)", filter, 4));
  if (filter[2] != input[3]) {
    return internal::ShapeError(kOp, "filter " + filter.ToString() + " expects " +
                                         std::to_string(filter[2]) + " input channels, input " +
                                         input.ToString() + " has " + std::to_string(input[3]));
  }
  if (options.stride_h < 1 || options.stride_w < 1) {
    return internal::ShapeError(kOp, "strides must be >= 1");
  }
  if (filter[0] < 1 || filter[1] < 1) return internal::ShapeError(kOp, "empty filter window");
  Conv2DGeometry g;
  g.batch = input[0];
  g.in_h = input[1];
  g.in_w = input[2];
  g.in_c = input[3];
  g.k_h = filter[0];
  g.k_w = filter[1];
  g.out_c = filter[3];
  g.stride_h = options.stride_h;
  g.stride_w = options.stride_w;
  switch (options.padding) {
    case Padding::kValid:
      g.out_h = math::ValidOutputSize(g.in_h, g.k_h, g.stride_h);
      g.out_w = math::ValidOutputSize(g.in_w, g.k_w, g.stride_w);
      break;
    case Padding::kSame:
      g.out_h = math::SameOutputSize(g.in_h, g.stride_h);
      g.out_w = math::SameOutputSize(g.in_w, g.stride_w);
      g.pad_top = math::SamePadBefore(g.in_h, g.k_h, g.stride_h);
      g.pad_left = math::SamePadBefore(g.in_w, g.k_w, g.stride_w);
      break;
    case Padding::kExplicit:
      if (options.pad_top < 0 || options.pad_bottom < 0 || options.pad_left < 0 ||
          options.pad_right < 0) {
        return internal::ShapeError(kOp, "explicit padding must be >= 0");
      }
      g.out_h = math::ExplicitOutputSize(g.in_h, g.k_h, g.stride_h, options.pad_top,
                                         options.pad_bottom);
      g.out_w = math::ExplicitOutputSize(g.in_w, g.k_w, g.stride_w, options.pad_left,
                                         options.pad_right);
      g.pad_top = options.pad_top;
      g.pad_left = options.pad_left;
      break;
  }
  return g;
}

namespace internal {
Status CheckConvShape(const char* op, const char* name, const Shape& actual,
                      const Shape& expected) {
  return ExpectShape(op, name, actual, expected);
}
}  // namespace internal

namespace {

// Column matrices hold about this many entries per slab (4 MiB of floats, ≈1800 output rows of
// a 3×3×64 patch). A slab that stays in the L2/L3 caches while its GEMM reads it runs the
// ResNet-50 3×3 shapes 10-20% faster than whole-image or whole-batch slabs; much smaller slabs
// lose to the per-call cost of the threaded GEMM.
constexpr int64_t kColumnBudget = int64_t{1} << 20;
// Never fewer rows than this per slab (unless there are fewer): a huge patch (K) would
// otherwise give GEMMs too thin to run near peak.
constexpr int64_t kMinSlabRows = 256;

bool IsPointwise(const Conv2DGeometry& g) {
  return g.k_h == 1 && g.k_w == 1 && g.stride_h == 1 && g.stride_w == 1 && g.pad_top == 0 &&
         g.pad_left == 0 && g.out_h == g.in_h && g.out_w == g.in_w;
}

// Scratch (a slab's column matrix, a rearranged filter), left uninitialised: its producer
// writes every entry, and zero-filling megabytes per call costs as much as a third of the
// convolution.
template <typename T>
class ScratchBuffer {
 public:
  explicit ScratchBuffer(int64_t n) : data_(new T[static_cast<size_t>(std::max<int64_t>(n, 1))]) {}
  T* data() { return data_.get(); }

 private:
  std::unique_ptr<T[]> data_;
};

int64_t PatchSize(const Conv2DGeometry& g) { return g.k_h * g.k_w * g.in_c; }

int64_t OutputRows(const Conv2DGeometry& g) { return g.batch * g.out_h * g.out_w; }

// Output rows per im2col slab; slabs may start and end inside an image.
int64_t RowsPerSlab(const Conv2DGeometry& g) {
  const int64_t rows = OutputRows(g);
  return std::clamp<int64_t>(kColumnBudget / std::max<int64_t>(PatchSize(g), 1),
                             std::min(kMinSlabRows, rows), std::max<int64_t>(rows, 1));
}

// Whole images per col2im slab (the gather reads every patch of an image).
int64_t ImagesPerSlab(const Conv2DGeometry& g) {
  const int64_t per_image = std::max<int64_t>(1, g.out_h * g.out_w * PatchSize(g));
  return std::clamp<int64_t>(kColumnBudget / per_image, 1, std::max<int64_t>(g.batch, 1));
}

// col (rows, K) from output rows [row0, row0 + rows) (row = (n·OH + oh)·OW + ow).
template <typename T>
void Im2Col(const CpuContext& ctx, const Conv2DGeometry& g, const T* input, int64_t row0,
            int64_t rows, T* col) {
  const int64_t k = PatchSize(g);
  const size_t channel_bytes = static_cast<size_t>(g.in_c) * sizeof(T);
  ctx.ParallelFor(rows, ctx.GrainFor(rows, 1 + 16384 / (k + 1)), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t out_row = row0 + r;
      const int64_t ow = out_row % g.out_w;
      const int64_t oh = (out_row / g.out_w) % g.out_h;
      const int64_t n = out_row / (g.out_w * g.out_h);
      T* dst = col + r * k;
      for (int64_t kh = 0; kh < g.k_h; ++kh) {
        const int64_t ih = math::InputCoord(oh, kh, g.stride_h, g.pad_top);
        for (int64_t kw = 0; kw < g.k_w; ++kw, dst += g.in_c) {
          const int64_t iw = math::InputCoord(ow, kw, g.stride_w, g.pad_left);
          if (ih < 0 || ih >= g.in_h || iw < 0 || iw >= g.in_w) {
            std::fill(dst, dst + g.in_c, T(0));
          } else {
            std::memcpy(dst, input + ((n * g.in_h + ih) * g.in_w + iw) * g.in_c, channel_bytes);
          }
        }
      }
    }
  });
}

// dst (cols, rows) (+)= src (rows, cols)ᵀ, in cache-sized tiles, threaded over tile rows of dst.
template <typename T>
void TransposeInto(const CpuContext& ctx, const T* src, int64_t rows, int64_t cols, bool add,
                   T* dst) {
  constexpr int64_t kTile = 32;
  const int64_t tile_rows = (cols + kTile - 1) / kTile;
  ctx.ParallelFor(tile_rows, ctx.GrainFor(tile_rows, 1), [&](int64_t t0, int64_t t1) {
    for (int64_t c0 = t0 * kTile; c0 < std::min(cols, t1 * kTile); c0 += kTile) {
      const int64_t c1 = std::min(cols, c0 + kTile);
      for (int64_t r0 = 0; r0 < rows; r0 += kTile) {
        const int64_t r1 = std::min(rows, r0 + kTile);
        for (int64_t c = c0; c < c1; ++c) {
          T* out = dst + c * rows;
          for (int64_t r = r0; r < r1; ++r) out[r] = (add ? out[r] : T(0)) + src[r * cols + c];
        }
      }
    }
  });
}

// input images [n0, n0 + images) = Σ of the col entries that read each pixel (a gather, so
// threads split the pixels without write conflicts).
template <typename T>
void Col2Im(const CpuContext& ctx, const Conv2DGeometry& g, const T* col, int64_t n0,
            int64_t images, T* input) {
  const int64_t k = PatchSize(g);
  const int64_t pixel_rows = images * g.in_h;  // (image, ih) pairs
  ctx.ParallelFor(pixel_rows, ctx.GrainFor(pixel_rows, 1), [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      const int64_t ih = p % g.in_h;
      const int64_t img = p / g.in_h;
      T* dst_row = input + ((n0 + img) * g.in_h + ih) * g.in_w * g.in_c;
      std::fill(dst_row, dst_row + g.in_w * g.in_c, T(0));
      for (int64_t kh = 0; kh < g.k_h; ++kh) {
        const int64_t oh = math::OutputForTap(ih, kh, g.stride_h, g.pad_top, g.out_h);
        if (oh < 0) continue;
        for (int64_t iw = 0; iw < g.in_w; ++iw) {
          T* dst = dst_row + iw * g.in_c;
          for (int64_t kw = 0; kw < g.k_w; ++kw) {
            const int64_t ow = math::OutputForTap(iw, kw, g.stride_w, g.pad_left, g.out_w);
            if (ow < 0) continue;
            const T* src = col + ((img * g.out_h + oh) * g.out_w + ow) * k +
                           (kh * g.k_w + kw) * g.in_c;
            for (int64_t c = 0; c < g.in_c; ++c) dst[c] += src[c];
          }
        }
      }
    }
  });
}

}  // namespace

template <typename T>
Status Conv2D(const CpuContext& ctx, In<T> input, In<T> filter, Out<T> output,
              const Conv2DOptions& options) {
  ASSIGN_OR_RETURN(const Conv2DGeometry g,
                   ComputeConv2DGeometry(input.shape, filter.shape, options));
  RETURN_IF_ERROR(internal::CheckConvShape("Conv2D", "output", output.shape, g.output_shape()));
  if (output.size() == 0) return Status::Ok();
  const int64_t k = PatchSize(g);
  if (IsPointwise(g)) {
    internal::Gemm<T>(false, false, g.batch * g.in_h * g.in_w, g.out_c, g.in_c, T(1), input.data,
                      g.in_c, filter.data, g.out_c, T(0), output.data, g.out_c);
    return Status::Ok();
  }
  const int64_t total_rows = OutputRows(g);
  const int64_t slab = RowsPerSlab(g);
  ScratchBuffer<T> col(slab * k);
  for (int64_t r0 = 0; r0 < total_rows; r0 += slab) {
    const int64_t rows = std::min(slab, total_rows - r0);
    Im2Col(ctx, g, input.data, r0, rows, col.data());
    // output rows (rows, OC) = col (rows, K) · filter (K, OC)
    internal::Gemm<T>(false, false, rows, g.out_c, k, T(1), col.data(), k, filter.data, g.out_c,
                      T(0), output.data + r0 * g.out_c, g.out_c);
  }
  return Status::Ok();
}

template <typename T>
Status Conv2DBackpropInput(const CpuContext& ctx, In<T> filter, In<T> dout, Out<T> dinput,
                           const Conv2DOptions& options) {
  ASSIGN_OR_RETURN(const Conv2DGeometry g,
                   ComputeConv2DGeometry(dinput.shape, filter.shape, options));
  RETURN_IF_ERROR(
      internal::CheckConvShape("Conv2DBackpropInput", "dout", dout.shape, g.output_shape()));
  if (dinput.size() == 0) return Status::Ok();
  const int64_t k = PatchSize(g);
  if (IsPointwise(g)) {
    internal::Gemm<T>(false, true, g.batch * g.in_h * g.in_w, g.in_c, g.out_c, T(1), dout.data,
                      g.out_c, filter.data, g.out_c, T(0), dinput.data, g.in_c);
    return Status::Ok();
  }
  // Stride 1: dinput is the forward convolution of dout with the spatially flipped, in/out-
  // transposed filter and the complementary padding. Its GEMM has K = KH·KW·OC instead of OC,
  // which OpenBLAS runs much closer to peak than the col2im route's thin K.
  if (g.stride_h == 1 && g.stride_w == 1) {
    const int64_t pt = g.k_h - 1 - g.pad_top, pl = g.k_w - 1 - g.pad_left;
    const int64_t pb = g.in_h - 1 + g.k_h - g.out_h - pt;
    const int64_t pr = g.in_w - 1 + g.k_w - g.out_w - pl;
    if (pt >= 0 && pl >= 0 && pb >= 0 && pr >= 0 && std::max({pt, pl, pb, pr}) <= INT32_MAX) {
      // flipped[kh, kw] (OC, C) = filter[KH-1-kh, KW-1-kw] (C, OC)ᵀ, tap by tap.
      ScratchBuffer<T> flipped(filter.size());
      const int64_t taps = g.k_h * g.k_w, tap_size = g.in_c * g.out_c;
      for (int64_t tap = 0; tap < taps; ++tap) {
        TransposeInto(ctx, filter.data + (taps - 1 - tap) * tap_size, g.in_c, g.out_c,
                      /*add=*/false, flipped.data() + tap * tap_size);
      }
      Conv2DOptions full;
      full.padding = Padding::kExplicit;
      full.pad_top = static_cast<int>(pt);
      full.pad_bottom = static_cast<int>(pb);
      full.pad_left = static_cast<int>(pl);
      full.pad_right = static_cast<int>(pr);
      return Conv2D<T>(ctx, dout, In<T>(flipped.data(), {g.k_h, g.k_w, g.out_c, g.in_c}), dinput,
                       full);
    }
  }
  const int64_t slab = ImagesPerSlab(g);
  const int64_t rows_per_image = g.out_h * g.out_w;
  ScratchBuffer<T> col(slab * rows_per_image * k);
  for (int64_t n0 = 0; n0 < g.batch; n0 += slab) {
    const int64_t images = std::min(slab, g.batch - n0);
    // dcol (rows, K) = dout (rows, OC) · filterᵀ (OC, K)
    internal::Gemm<T>(false, true, images * rows_per_image, k, g.out_c, T(1),
                      dout.data + n0 * rows_per_image * g.out_c, g.out_c, filter.data, g.out_c,
                      T(0), col.data(), k);
    Col2Im(ctx, g, col.data(), n0, images, dinput.data);
  }
  return Status::Ok();
}

template <typename T>
Status Conv2DBackpropFilter(const CpuContext& ctx, In<T> input, In<T> dout, Out<T> dfilter,
                            const Conv2DOptions& options, bool accumulate) {
  ASSIGN_OR_RETURN(const Conv2DGeometry g,
                   ComputeConv2DGeometry(input.shape, dfilter.shape, options));
  RETURN_IF_ERROR(
      internal::CheckConvShape("Conv2DBackpropFilter", "dout", dout.shape, g.output_shape()));
  const int64_t k = PatchSize(g);
  if (IsPointwise(g)) {
    internal::Gemm<T>(true, false, g.in_c, g.out_c, g.batch * g.in_h * g.in_w, T(1), input.data,
                      g.in_c, dout.data, g.out_c, accumulate ? T(1) : T(0), dfilter.data,
                      g.out_c);
    return Status::Ok();
  }
  const int64_t total_rows = OutputRows(g);
  if (total_rows == 0) {
    if (!accumulate) std::fill(dfilter.data, dfilter.data + dfilter.size(), T(0));
    return Status::Ok();
  }
  // One reduction over all output rows of the batch, slab by slab with beta = 1, into dfilterᵀ
  // (OC, K) = doutᵀ (OC, rows) · col (rows, K): OpenBLAS runs this orientation of the long-K
  // product ≈15% faster than colᵀ · dout (K, OC). One transpose at the end gives HWIO.
  const int64_t slab = RowsPerSlab(g);
  ScratchBuffer<T> col(slab * k);
  ScratchBuffer<T> dfilter_t(g.out_c * k);  // the first GEMM runs with beta = 0
  for (int64_t r0 = 0; r0 < total_rows; r0 += slab) {
    const int64_t rows = std::min(slab, total_rows - r0);
    Im2Col(ctx, g, input.data, r0, rows, col.data());
    internal::Gemm<T>(true, false, g.out_c, k, rows, T(1), dout.data + r0 * g.out_c, g.out_c,
                      col.data(), k, r0 > 0 ? T(1) : T(0), dfilter_t.data(), k);
  }
  TransposeInto(ctx, dfilter_t.data(), g.out_c, k, accumulate, dfilter.data);
  return Status::Ok();
}

#define INSTANTIATE(T)                                                                         \
  template Status Conv2D<T>(const CpuContext&, In<T>, In<T>, Out<T>, const Conv2DOptions&);   \
  template Status Conv2DBackpropInput<T>(const CpuContext&, In<T>, In<T>, Out<T>,             \
                                         const Conv2DOptions&);                               \
  template Status Conv2DBackpropFilter<T>(const CpuContext&, In<T>, In<T>, Out<T>,            \
                                          const Conv2DOptions&, bool);
STEPSCOPE_KERNELS_FOR_CPU_TYPES(INSTANTIATE)
#undef INSTANTIATE

}  // namespace stepscope::kernels
