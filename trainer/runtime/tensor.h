// Tensors of the trainer: a dtype, a row-major shape and a reference-counted buffer that came
// from one device's allocator (so its allocation id, allocator name and sizes are known to the
// profiler). Copying a Tensor shares the buffer; the last reference returns it to the allocator.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "base/status.h"
#include "kernels/tensor_view.h"
#include "trainer/runtime/allocator.h"

namespace stepscope::runtime {

using kernels::Shape;

enum class DType : uint8_t { kFloat32, kInt32 };

// Bytes per element (both dtypes happen to be 4 wide; a new dtype adds its case).
constexpr int64_t DTypeSize(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return sizeof(float);
    case DType::kInt32: return sizeof(int32_t);
  }
  return 0;  // not a DType
}

template <typename T>
constexpr DType DTypeOf();
template <>
constexpr DType DTypeOf<float>() { return DType::kFloat32; }
template <>
constexpr DType DTypeOf<int32_t>() { return DType::kInt32; }

// Owns one allocation; returns it to its allocator when the last Tensor lets go.
class TensorBuffer {
 public:
  TensorBuffer(Allocator* allocator, void* data, int64_t requested_bytes)
      : allocator_(allocator), data_(data), requested_bytes_(requested_bytes) {}
  ~TensorBuffer() { allocator_->Deallocate(data_); }
  TensorBuffer(const TensorBuffer&) = delete;
  TensorBuffer& operator=(const TensorBuffer&) = delete;

  void* data() const { return data_; }
  const Allocator& allocator() const { return *allocator_; }
  int64_t requested_bytes() const { return requested_bytes_; }

 private:
  Allocator* allocator_;
  void* data_;
  int64_t requested_bytes_;
};

class Tensor {
 public:
  Tensor() = default;  // an empty tensor (no buffer)

  // Allocates shape.num_elements() elements from `allocator` (contents uninitialised).
  static StatusOr<Tensor> Allocate(Allocator& allocator, DType dtype, const Shape& shape);

  bool empty() const { return buffer_ == nullptr; }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t num_elements() const { return shape_.num_elements(); }
  int64_t bytes() const { return num_elements() * DTypeSize(dtype_); }
  const TensorBuffer* buffer() const { return buffer_.get(); }

  // The same buffer seen with another shape of as many elements (TF's Reshape).
  StatusOr<Tensor> Reshaped(const Shape& shape) const;

  template <typename T>
  T* data() const {
    STEPSCOPE_CHECK(DTypeOf<T>() == dtype_ && buffer_ != nullptr);
    return static_cast<T*>(buffer_->data());
  }
  template <typename T>
  kernels::Out<T> view() const { return {data<T>(), shape_}; }
  // Inputs for kernels: In<T> is a non-deduced context, so spell the element type.
  template <typename T>
  kernels::TensorView<const T> in() const { return {data<T>(), shape_}; }

  // "float [20,200]" for messages.
  std::string DebugString() const;

 private:
  DType dtype_ = DType::kFloat32;
  Shape shape_;
  std::shared_ptr<TensorBuffer> buffer_;
};

}  // namespace stepscope::runtime
