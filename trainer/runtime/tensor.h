// Tensors of the trainer: a dtype, a row-major shape and a reference-counted buffer that came
// from one device's allocator (so its allocation id, allocator name and sizes are known to the
// profiler). Copying a Tensor shares the buffer; the last reference returns it to the allocator.
// A tensor may also be a view into another's buffer (RowsView): what TF's StridedSlice, Split,
// Slice and ConcatV2 of an unrolled LSTM hand on, a matrix whose rows lie a stride apart, read and
// written where it lies instead of copied.
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

  // The same buffer seen with another shape of as many elements (TF's Reshape); dense only.
  StatusOr<Tensor> Reshaped(const Shape& shape) const;

  // `rows` rows of `cols` elements of this (dense) tensor's buffer, `row_stride` elements apart
  // from element `offset`: a (rows, cols) tensor sharing the buffer, no copy. kInvalidInput
  // when a row would lie outside the tensor or rows overlap.
  StatusOr<Tensor> RowsView(int64_t offset, int64_t rows, int64_t cols, int64_t row_stride) const;
  // Whether the elements are contiguous in row-major order (every tensor but a strided view).
  bool dense() const { return row_stride_ == 0; }
  // Elements from the start of its buffer to the first one (0 but for a view).
  int64_t offset() const { return offset_; }

  // The first element (a view's own, not its buffer's).
  template <typename T>
  T* data() const {
    STEPSCOPE_CHECK(DTypeOf<T>() == dtype_ && buffer_ != nullptr);
    return static_cast<T*>(buffer_->data()) + offset_;
  }
  // Dense views for kernels; a strided view is read with rows() (a kernel that does not take
  // a stride must not get one).
  template <typename T>
  kernels::Out<T> view() const {
    STEPSCOPE_CHECK(dense());
    return {data<T>(), shape_};
  }
  // Inputs for kernels: In<T> is a non-deduced context, so spell the element type.
  template <typename T>
  kernels::TensorView<const T> in() const {
    STEPSCOPE_CHECK(dense());
    return {data<T>(), shape_};
  }
  // A rank-2 tensor, dense or a strided view, as rows for the kernels that take a stride.
  template <typename T>
  kernels::StridedRows<T> rows() const {
    STEPSCOPE_CHECK(shape_.rank == 2);
    return {data<T>(), shape_[0], shape_[1], dense() ? shape_[1] : row_stride_};
  }
  template <typename T>
  kernels::StridedRows<const T> in_rows() const { return rows<T>(); }

  // "float [20,200]" for messages.
  std::string DebugString() const;

 private:
  DType dtype_ = DType::kFloat32;
  Shape shape_;
  int64_t offset_ = 0;      // elements before the first one in the buffer
  int64_t row_stride_ = 0;  // 0: dense; else a view's rows are this many elements apart
  std::shared_ptr<TensorBuffer> buffer_;
};

}  // namespace stepscope::runtime
