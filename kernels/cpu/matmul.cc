// MatMul on the CPU: shape checks, then one OpenBLAS GEMM per product.
#include "kernels/matmul.h"

#include "kernels/cpu/blas.h"
#include "kernels/matmul_grad.h"
#include "kernels/shape_check.h"

namespace stepscope::kernels {
namespace internal {

StatusOr<GemmDims> CheckMatMul(const Shape& a, const Shape& b, const Shape& c,
                               const MatMulOptions& options) {
  RETURN_IF_ERROR(ExpectRank("MatMul", "a", a, 2));
  RETURN_IF_ERROR(ExpectRank("MatMul", "b", b, 2));
  const int64_t m = options.transpose_a ? a[1] : a[0];
  const int64_t k = options.transpose_a ? a[0] : a[1];
  const int64_t kb = options.transpose_b ? b[1] : b[0];
  const int64_t n = options.transpose_b ? b[0] : b[1];
  if (k != kb) {
    return ShapeError("MatMul", "inner dimensions differ: a " + a.ToString() +
                                    (options.transpose_a ? "^T" : "") + " · b " + b.ToString() +
                                    (options.transpose_b ? "^T" : ""));
  }
  RETURN_IF_ERROR(ExpectShape("MatMul", "c", c, Shape{m, n}));
  return GemmDims{m, n, k};
}

}  // namespace internal

template <typename T>
Status MatMul(const CpuContext& /*ctx*/, In<T> a, In<T> b, Out<T> c, MatMulOptions options) {
  ASSIGN_OR_RETURN(const internal::GemmDims dims,
                   internal::CheckMatMul(a.shape, b.shape, c.shape, options));
  internal::Gemm<T>(options.transpose_a, options.transpose_b, dims.m, dims.n, dims.k, T(1),
                    a.data, a.dim(1), b.data, b.dim(1), options.accumulate ? T(1) : T(0),
                    c.data, dims.n);
  return Status::Ok();
}

template <typename T>
Status MatMulStrided(const CpuContext& /*ctx*/, StridedRows<const std::type_identity_t<T>> a,
                     StridedRows<const std::type_identity_t<T>> b, StridedRows<T> c,
                     MatMulOptions options) {
  ASSIGN_OR_RETURN(const internal::GemmDims dims, internal::CheckMatMulStrided<T>(a, b, c, options));
  internal::Gemm<T>(options.transpose_a, options.transpose_b, dims.m, dims.n, dims.k, T(1), a.data,
                    a.ld, b.data, b.ld, options.accumulate ? T(1) : T(0), c.data, c.ld);
  return Status::Ok();
}

template <typename T>
Status MatMulGrad(const CpuContext& ctx, In<T> a, In<T> b, In<T> dc, Out<T> da, Out<T> db,
                  MatMulOptions options) {
  auto multiply = [&](In<T> x, In<T> y, Out<T> z, MatMulOptions o) {
    return MatMul<T>(ctx, x, y, z, o);
  };
  return internal::MatMulGradByMatMuls<T>(multiply, a, b, dc, da, db, options);
}

#define INSTANTIATE(T)                                                                    \
  template Status MatMul<T>(const CpuContext&, In<T>, In<T>, Out<T>, MatMulOptions);     \
  template Status MatMulStrided<T>(const CpuContext&, StridedRows<const T>,               \
                                   StridedRows<const T>, StridedRows<T>, MatMulOptions);  \
  template Status MatMulGrad<T>(const CpuContext&, In<T>, In<T>, In<T>, Out<T>, Out<T>, \
                                MatMulOptions);
STEPSCOPE_KERNELS_FOR_CPU_TYPES(INSTANTIATE)
#undef INSTANTIATE

}  // namespace stepscope::kernels
