// CUDA Pad and PadGrad. Shapes of rank < 4 are handled as rank 4 with leading 1s.
#include "kernels/cuda/cuda_util.cuh"
#include "kernels/pad.h"

namespace stepscope::kernels {
namespace {

struct Pad4 {
  int64_t in[4], out[4], before[4];
};

Pad4 ToRank4(const Shape& x, const Paddings& p) {
  Pad4 r{};
  const int lead = 4 - x.rank;
  for (int i = 0; i < 4; ++i) {
    if (i < lead) {
      r.in[i] = r.out[i] = 1;
      r.before[i] = 0;
    } else {
      const size_t s = static_cast<size_t>(i - lead);
      r.in[i] = x.dims[s];
      r.before[i] = p.before[s];
      r.out[i] = x.dims[s] + p.before[s] + p.after[s];
    }
  }
  return r;
}

struct PadFn {
  Pad4 p;
  const float* x;
  float* y;
  float value;
  __device__ void operator()(int64_t e) const {
    int64_t rem = e, src = 0, stride = 1;
    bool inside = true;
    for (int d = 3; d >= 0; --d) {
      const int64_t i = rem % p.out[d] - p.before[d];
      rem /= p.out[d];
      inside = inside && i >= 0 && i < p.in[d];
      src += i * stride;
      stride *= p.in[d];
    }
    y[e] = inside ? x[src] : value;
  }
};

struct PadGradFn {
  Pad4 p;
  const float* dy;
  float* dx;
  __device__ void operator()(int64_t e) const {
    int64_t rem = e, src = 0, stride = 1;
    for (int d = 3; d >= 0; --d) {
      const int64_t i = rem % p.in[d];
      rem /= p.in[d];
      src += (i + p.before[d]) * stride;
      stride *= p.out[d];
    }
    dx[e] = dy[src];
  }
};

}  // namespace

Status Pad(const CudaContext& ctx, In<float> x, const Paddings& paddings, Out<float> y,
           float value) {
  RETURN_IF_ERROR(internal::CheckPad(x.shape, paddings, y.shape));
  return internal::ForEach(ctx, y.size(), PadFn{ToRank4(x.shape, paddings), x.data, y.data, value});
}

Status PadGrad(const CudaContext& ctx, In<float> dy, const Paddings& paddings, Out<float> dx) {
  RETURN_IF_ERROR(internal::CheckPad(dx.shape, paddings, dy.shape));
  return internal::ForEach(ctx, dx.size(), PadGradFn{ToRank4(dx.shape, paddings), dy.data, dx.data});
}

}  // namespace stepscope::kernels
