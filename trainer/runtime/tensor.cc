// Allocating tensors from a device allocator, reshaping them (sharing the buffer), describing them.
#include "trainer/runtime/tensor.h"

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
  if (shape.num_elements() != num_elements()) {
    return InvalidInput("cannot reshape " + DebugString() + " to " + shape.ToString());
  }
  Tensor tensor = *this;
  tensor.shape_ = shape;
  return tensor;
}

std::string Tensor::DebugString() const {
  return std::string(dtype_ == DType::kFloat32 ? "float " : "int32 ") + shape_.ToString();
}

}  // namespace stepscope::runtime
