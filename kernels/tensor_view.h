// Tensor views for the kernels: a pointer and a dense row-major shape, nothing owned.
//
// Every kernel takes its inputs as `In<T>` (a view of const T) and its outputs as `Out<T>`,
// and returns a Status: a shape that does not fit the op is the caller's bad input
// (kInvalidInput with both shapes in the message), never a crash. The element type is deduced
// from the outputs only (`In<T>` is a non-deduced context), so a mutable view converts to a
// const one at the call site. Memory is host memory for the CPU kernels and device memory for
// the CUDA ones; the view does not say which (the context argument does).
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <type_traits>

#include "base/check.h"

namespace stepscope::kernels {

inline constexpr int kMaxRank = 4;

// A row-major shape of rank 0 (a scalar) to kMaxRank.
struct Shape {
  int rank = 0;
  std::array<int64_t, kMaxRank> dims{};

  Shape() = default;
  Shape(std::initializer_list<int64_t> d) : rank(static_cast<int>(d.size())) {
    STEPSCOPE_CHECK(d.size() <= static_cast<size_t>(kMaxRank));
    int i = 0;
    for (int64_t v : d) dims[i++] = v;
  }

  int64_t operator[](int i) const { return dims[static_cast<size_t>(i)]; }
  int64_t num_elements() const {
    int64_t n = 1;
    for (int i = 0; i < rank; ++i) n *= dims[static_cast<size_t>(i)];
    return n;
  }
  bool operator==(const Shape& other) const {
    if (rank != other.rank) return false;
    for (int i = 0; i < rank; ++i) {
      if (dims[static_cast<size_t>(i)] != other.dims[static_cast<size_t>(i)]) return false;
    }
    return true;
  }
  // "[2,3,4]"; "[]" for a scalar.
  std::string ToString() const {
    std::string s = "[";
    for (int i = 0; i < rank; ++i) {
      if (i) s += ",";
      s += std::to_string(dims[static_cast<size_t>(i)]);
    }
    return s + "]";
  }
};

template <typename T>
struct TensorView {
  T* data = nullptr;
  Shape shape;

  TensorView() = default;
  TensorView(T* d, Shape s) : data(d), shape(s) {}
  // A view of T converts to a view of const T.
  template <typename U>
    requires(std::is_same_v<const U, T> && !std::is_same_v<U, T>)
  TensorView(const TensorView<U>& other) : data(other.data), shape(other.shape) {}  // NOLINT

  int64_t size() const { return shape.num_elements(); }
  int64_t dim(int i) const { return shape[i]; }
  int rank() const { return shape.rank; }
  // An absent optional output/input (e.g. a gradient nobody asked for).
  bool present() const { return data != nullptr; }
};

// A (rows, cols) matrix whose rows lie `ld` elements apart (ld >= cols) inside a larger buffer:
// BLAS's and cuBLAS's leading dimension. A time step of a (B, T, H) batch (rows T·H apart) or
// one half of an [x, h] concatenation is read and written where it lies, instead of copied out.
template <typename T>
struct StridedRows {
  T* data = nullptr;
  int64_t rows = 0, cols = 0, ld = 0;

  StridedRows() = default;
  StridedRows(T* d, int64_t r, int64_t c, int64_t l) : data(d), rows(r), cols(c), ld(l) {}
  // A dense rank-2 view: rows one row apart.
  StridedRows(const TensorView<T>& dense)  // NOLINT: a dense matrix is strided rows
      : data(dense.data), rows(dense.shape[0]), cols(dense.shape[1]), ld(dense.shape[1]) {
    STEPSCOPE_CHECK(dense.shape.rank == 2);
  }
  // Strided rows of T convert to strided rows of const T.
  template <typename U>
    requires(std::is_same_v<const U, T> && !std::is_same_v<U, T>)
  StridedRows(const StridedRows<U>& other)  // NOLINT
      : data(other.data), rows(other.rows), cols(other.cols), ld(other.ld) {}
  template <typename U>
    requires(std::is_same_v<const U, T> && !std::is_same_v<U, T>)
  StridedRows(const TensorView<U>& dense)  // NOLINT
      : StridedRows(TensorView<T>(dense)) {}

  Shape shape() const { return Shape{rows, cols}; }
  bool dense() const { return ld == cols; }
};

// Inputs: never used for deduction, so TensorView<float> converts to In<float> at call sites.
template <typename T>
using In = TensorView<const std::type_identity_t<T>>;
template <typename T>
using Out = TensorView<T>;

// The element types the CPU reference is built for: float is what models run in, double is
// what finite-difference gradient tests run in.
#define STEPSCOPE_KERNELS_FOR_CPU_TYPES(X) \
  X(float)                                 \
  X(double)

}  // namespace stepscope::kernels
