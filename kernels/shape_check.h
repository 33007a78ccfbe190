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

}  // namespace stepscope::kernels::internal
