// MatMul on the CPU: shape checks, then one OpenBLAS GEMM per product.
#include "kernels/matmul.h"

#include "kernels/cpu/blas.h"
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

// TF's MatMulGrad, case by case on the transposes of c = op(a)·op(b):
//   (N,N): da = dc·bᵀ,   db = aᵀ·dc      (T,N): da = b·dcᵀ,   db = a·dc
//   (N,T): da = dc·b,    db = dcᵀ·a      (T,T): da = bᵀ·dcᵀ,  db = dcᵀ·aᵀ
template <typename T>
Status MatMulGrad(const CpuContext& ctx, In<T> a, In<T> b, In<T> dc, Out<T> da, Out<T> db,
                  MatMulOptions options) {
  RETURN_IF_ERROR(internal::CheckMatMul(a.shape, b.shape, dc.shape, options).status());
  const bool ta = options.transpose_a;
  const bool tb = options.transpose_b;
  MatMulOptions o;
  o.accumulate = options.accumulate;
  if (da.present()) {
    RETURN_IF_ERROR(internal::ExpectShape("MatMulGrad", "da", da.shape, a.shape));
    if (!ta) {
      o.transpose_a = false;
      o.transpose_b = !tb;
      RETURN_IF_ERROR(MatMul<T>(ctx, dc, b, da, o));
    } else {
      o.transpose_a = tb;
      o.transpose_b = true;
      RETURN_IF_ERROR(MatMul<T>(ctx, b, dc, da, o));
    }
  }
  if (db.present()) {
    RETURN_IF_ERROR(internal::ExpectShape("MatMulGrad", "db", db.shape, b.shape));
    if (!tb) {
      o.transpose_a = !ta;
      o.transpose_b = false;
      RETURN_IF_ERROR(MatMul<T>(ctx, a, dc, db, o));
    } else {
      o.transpose_a = true;
      o.transpose_b = ta;
      RETURN_IF_ERROR(MatMul<T>(ctx, dc, a, db, o));
    }
  }
  return Status::Ok();
}

#define INSTANTIATE(T)                                                                    \
  template Status MatMul<T>(const CpuContext&, In<T>, In<T>, Out<T>, MatMulOptions);     \
  template Status MatMulGrad<T>(const CpuContext&, In<T>, In<T>, In<T>, Out<T>, Out<T>, \
                                MatMulOptions);
STEPSCOPE_KERNELS_FOR_CPU_TYPES(INSTANTIATE)
#undef INSTANTIATE

}  // namespace stepscope::kernels
