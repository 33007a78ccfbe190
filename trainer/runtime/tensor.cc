// Allocating tensors from a device allocator, reshaping them (sharing the buffer), describing them.
#include "trainer/runtime/tensor.h"

#include <string>

namespace stepscope::runtime {

StatusOr<Tensor> Tensor::Allocate(Allocator& allocator, DType dtype, const Shape& shape) {
  for (int i = 0; i < shape.rank; ++i) {
    if (shape[i] < 0) return InvalidInput("negative dimension in tensor shape " + shape.ToString());
  }
  const int64_t bytes = shape.num_elements() * DTypeSize(dtype);
  ASSIGN_OR_RETURN(void* data, allocator.Allocate(static_cast<size_t>(bytes)));
  Tensor tensor;
  tensor.dtype_ = dtype;
  tensor.shape_ = shape;
  tensor.buffer_ = std::make_shared<TensorBuffer>(&allocator, data, bytes);
  return tensor;
}

StatusOr<Tensor> Tensor::Reshaped(const Shape& shape) const {
  if (!dense()) return InvalidInput("cannot reshape a strided view " + DebugString());
  if (shape.num_elements() != num_elements()) {
    return InvalidInput("cannot reshape " + DebugString() + " to " + shape.ToString());
  }
  Tensor tensor = *this;
  tensor.shape_ = shape;
  return tensor;
}

StatusOr<Tensor> Tensor::RowsView(int64_t offset, int64_t rows, int64_t cols,
                                  int64_t row_stride) const {
  const bool fits = !empty() && dense() && offset >= 0 && rows >= 0 && cols >= 0 &&
                    (rows <= 1 || row_stride >= cols) &&
                    (rows == 0 || offset + (rows - 1) * row_stride + cols <= num_elements());
  if (!fits) {
    return InvalidInput("a view of " + std::to_string(rows) + " rows of " + std::to_string(cols) +
                        " elements " + std::to_string(row_stride) + " apart from element " +
                        std::to_string(offset) + " does not fit in " + DebugString());
  }
  Tensor view = *this;
  view.shape_ = Shape{rows, cols};
  view.offset_ = offset_ + offset;
  view.row_stride_ = (rows <= 1 || row_stride == cols) ? 0 : row_stride;
  return view;
}

std::string Tensor::DebugString() const {
  return std::string(dtype_ == DType::kFloat32 ? "float " : "int32 ") + shape_.ToString();
}

}  // namespace stepscope::runtime
