// MatMulGrad as two MatMuls: the case analysis on the transposes lives here once, for the CPU
// and the CUDA implementation alike; each passes its own MatMul as `multiply`.
#pragma once

#include "kernels/matmul.h"
#include "kernels/shape_check.h"

namespace stepscope::kernels::internal {

// TF's MatMulGrad, case by case on the transposes of c = op(a)·op(b):
//   (N,N): da = dc·bᵀ,   db = aᵀ·dc      (T,N): da = b·dcᵀ,   db = a·dc
//   (N,T): da = dc·b,    db = dcᵀ·a      (T,T): da = bᵀ·dcᵀ,  db = dcᵀ·aᵀ
// `multiply(x, y, z, options)` computes z = op(x)·op(y) on the caller's device.
template <typename T, typename Multiply>
Status MatMulGradByMatMuls(Multiply multiply, In<T> a, In<T> b, In<T> dc, Out<T> da, Out<T> db,
                           MatMulOptions options) {
  RETURN_IF_ERROR(CheckMatMul(a.shape, b.shape, dc.shape, options).status());
  const bool ta = options.transpose_a;
  const bool tb = options.transpose_b;
  MatMulOptions o;
  o.accumulate = options.accumulate;
  if (da.present()) {
    RETURN_IF_ERROR(ExpectShape("MatMulGrad", "da", da.shape, a.shape));
    if (!ta) {
      o.transpose_a = false;
      o.transpose_b = !tb;
      RETURN_IF_ERROR(multiply(dc, b, da, o));
    } else {
      o.transpose_a = tb;
      o.transpose_b = true;
      RETURN_IF_ERROR(multiply(b, dc, da, o));
    }
  }
  if (db.present()) {
    RETURN_IF_ERROR(ExpectShape("MatMulGrad", "db", db.shape, b.shape));
    if (!tb) {
      o.transpose_a = !ta;
      o.transpose_b = false;
      RETURN_IF_ERROR(multiply(a, dc, db, o));
    } else {
      o.transpose_a = true;
      o.transpose_b = ta;
      RETURN_IF_ERROR(multiply(dc, a, db, o));
    }
  }
  return Status::Ok();
}

}  // namespace stepscope::kernels::internal
