// Turning the Trace's tables into numpy arrays for the Python module: a view into the trace's
// own memory where its layout allows (a plain field of a plain struct: a strided view, kept alive
// by the Python object that owns the trace), a copy where it does not (the packed Slice's bit
// fields, the Flow's 31-bit target).
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

namespace stepscope::python {

namespace nb = nanobind;

template <typename T>
using Column = nb::ndarray<nb::numpy, const T, nb::ndim<1>>;

// A new array that owns `values` (moved into a capsule that frees them with the array).
template <typename T>
Column<T> OwnedColumn(std::vector<T>&& values) {
  auto* held = new std::vector<T>(std::move(values));
  nb::capsule owner(held, [](void* p) noexcept { delete static_cast<std::vector<T>*>(p); });
  return Column<T>(held->data(), {held->size()}, owner);
}

// A new array of `count` values left uninitialised, to be filled before it is handed out (a
// column of 10^7 values is not zeroed first only to be overwritten).
template <typename T>
struct NewColumn {
  explicit NewColumn(size_t count) : size(count), data(new T[count]) {}
  size_t size;
  std::unique_ptr<T[]> data;
  T& operator[](size_t i) { return data[i]; }
  Column<T> Release() && {
    T* raw = data.release();
    nb::capsule owner(raw, [](void* p) noexcept { delete[] static_cast<T*>(p); });
    return Column<T>(raw, {size}, owner);
  }
};

// A read-only view of one field of every row of `rows` (`count` structs of type Row), kept
// alive by `owner`: no copy. The stride is counted in elements, so the row's size must be a
// multiple of the field's; every struct viewed so is (static_asserts at the call sites' types).
template <typename Row, typename T>
Column<T> FieldView(const Row* rows, size_t count, size_t offset, nb::handle owner) {
  static_assert(sizeof(Row) % sizeof(T) == 0, "a strided view needs rows a whole number of fields long");
  const auto* first = reinterpret_cast<const T*>(reinterpret_cast<const char*>(rows) + offset);
  const int64_t stride = sizeof(Row) / sizeof(T);
  // An empty table still gets a valid pointer (numpy wants one).
  static const T kNone{};
  return Column<T>(count == 0 ? &kNone : first, {count}, owner, {stride});
}

#define STEPSCOPE_FIELD(vec, Row, field, owner) \
  FieldView<Row, decltype(Row::field)>((vec).data(), (vec).size(), offsetof(Row, field), owner)

}  // namespace stepscope::python
