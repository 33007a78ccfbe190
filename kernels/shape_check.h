// Shape validation shared by the CPU and CUDA entry points: each op checks its views here
// first and reports a mismatch as kInvalidInput naming the op, the argument and both shapes.
#pragma once

#include <string>

#include "base/status.h"
#include "kernels/tensor_view.h"

namespace stepscope::kernels::internal {

inline Status ShapeError(const char* op, const std::string& what) {
  return InvalidInput(std::string(op) + ": " + what);
}

inline Status ExpectRank(const char* op, const char* name, const Shape& shape, int rank) {
  if (shape.rank == rank) return Status::Ok();
  return ShapeError(op, std::string(name) + " must have rank " + std::to_string(rank) +
                            ", got shape " + shape.ToString());
}

inline Status ExpectShape(const char* op, const char* name, const Shape& shape,
                          const Shape& expected) {
  if (shape == expected) return Status::Ok();
  return ShapeError(op, std::string(name) + " has shape " + shape.ToString() + ", expected " +
                            expected.ToString());
}

// A row stride of strided rows: 0 (dense) or at least the row's width.
inline Status ExpectRowStride(const char* op, const char* name, int64_t ld, int64_t cols) {
  if (ld == 0 || ld >= cols) return Status::Ok();
  return ShapeError(op, std::string(name) + "'s rows are " + std::to_string(ld) +
                            " elements apart, fewer than its " + std::to_string(cols) + " columns");
}

}  // namespace stepscope::kernels::internal
