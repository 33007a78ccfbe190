// A growable array of trivially copyable values in one anonymous mapping of its own, for the
// few arrays that hold a value per slice of a trace (10^8 of them and more):
// - growth remaps the pages (mremap) instead of copying them into a new block;
// - freeing unmaps, and ShrinkToFit unmaps the pages past the end, so the memory leaves the
//   process at once.
// New elements are value-initialised; T's value-initialised form must be all zero bytes (what a
// fresh page holds), which lets growth skip writing them.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <new>
#include <type_traits>
#include <utility>

namespace stepscope {

template <typename T>
class MappedArray {
  static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>);

 public:
  using value_type = T;
  using iterator = T*;
  using const_iterator = const T*;

  MappedArray() = default;
  explicit MappedArray(size_t count) { resize(count); }
  MappedArray(MappedArray&& other) noexcept { swap(other); }
  MappedArray& operator=(MappedArray&& other) noexcept {
    MappedArray(std::move(other)).swap(*this);
    return *this;
  }
  MappedArray(const MappedArray&) = delete;
  MappedArray& operator=(const MappedArray&) = delete;
  ~MappedArray() { Unmap(); }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  size_t capacity() const { return mapped_bytes_ / sizeof(T); }
  T* data() { return data_; }
  const T* data() const { return data_; }
  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }
  T* begin() { return data_; }
  T* end() { return data_ + size_; }
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }
  T& front() { return data_[0]; }
  T& back() { return data_[size_ - 1]; }
  const T& front() const { return data_[0]; }
  const T& back() const { return data_[size_ - 1]; }

  void reserve(size_t count) {
    if (count > capacity()) Remap(count);
  }
  void resize(size_t count) {
    if (count > capacity()) Remap(std::max(count, capacity() + capacity() / 2));
    // Up to the mapping's high-water mark the pages may hold old values; past it they are fresh
    // (zero), which is T{}.
    if (count > size_ && size_ < written_) {
      const size_t stale_end = std::min(count, written_);
      for (size_t i = size_; i < stale_end; ++i) data_[i] = T{};
    }
    size_ = count;
    written_ = std::max(written_, size_);
  }
  void push_back(const T& value) {
    if (size_ == capacity()) Remap(std::max<size_t>(capacity() * 2, PageBytes() / sizeof(T)));
    data_[size_++] = value;
    written_ = std::max(written_, size_);
  }
  void clear() { size_ = 0; }
  void swap(MappedArray& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(size_, other.size_);
    std::swap(written_, other.written_);
    std::swap(mapped_bytes_, other.mapped_bytes_);
  }

  void pop_back() { --size_; }
  // Hands the pages past the last value back to the system: the mapping shrinks where it is, no
  // copy (a big table consumed from its back shrinks as it goes).
  void ShrinkToFit() {
    if (data_ == nullptr) return;
    const size_t keep = RoundUpToPage(size_ * sizeof(T));
    if (keep == 0) return Unmap();
    if (keep < mapped_bytes_) {
      munmap(reinterpret_cast<unsigned char*>(data_) + keep, mapped_bytes_ - keep);
      mapped_bytes_ = keep;
      written_ = std::min(written_, capacity());
    }
  }

 private:
  static size_t PageBytes() {
    static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    return page;
  }
  static size_t RoundUpToPage(size_t bytes) {
    const size_t page = PageBytes();
    return (bytes + page - 1) / page * page;
  }

  void Remap(size_t count) {
    const size_t bytes = RoundUpToPage(count * sizeof(T));
    void* memory = data_ == nullptr
                       ? mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
                       : mremap(data_, mapped_bytes_, bytes, MREMAP_MAYMOVE);
    if (memory == MAP_FAILED) throw std::bad_alloc();
    data_ = static_cast<T*>(memory);
    mapped_bytes_ = bytes;
  }

  void Unmap() {
    if (data_ != nullptr) munmap(data_, mapped_bytes_);
    data_ = nullptr;
    size_ = written_ = mapped_bytes_ = 0;
  }

  T* data_ = nullptr;
  size_t size_ = 0;
  size_t written_ = 0;       // high-water mark of size_: values past it were never written
  size_t mapped_bytes_ = 0;  // a whole number of pages
};

}  // namespace stepscope
