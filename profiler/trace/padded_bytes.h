// A whole input file in one buffer with readable padding after its end, as simdjson's parser
// needs: the file is read (or a .gz inflated) straight into it, so a multi-hundred-megabyte
// JSON trace is never copied a second time. Large buffers are advised for transparent huge
// pages: filling 500 MB in 4 KB pages costs more in page faults than parsing it.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "base/status.h"

namespace stepscope::trace {

class PaddedBytes {
 public:
  static constexpr size_t kPadding = 64;  // >= SIMDJSON_PADDING

  PaddedBytes() = default;
  ~PaddedBytes();
  PaddedBytes(PaddedBytes&& other) noexcept;
  PaddedBytes& operator=(PaddedBytes&& other) noexcept;
  PaddedBytes(const PaddedBytes&) = delete;
  PaddedBytes& operator=(const PaddedBytes&) = delete;

  // The file's content, gzip inflated (same errors as ReadFileAllowEmpty: kNotFound for a
  // missing path, kInvalidInput naming the file for a directory or corrupt/truncated gzip).
  static StatusOr<PaddedBytes> ReadFile(const std::string& path);
  static PaddedBytes Copy(std::string_view bytes);

  char* data() { return data_; }
  const char* data() const { return data_; }
  size_t size() const { return size_; }
  size_t capacity() const { return capacity_; }  // size() + at least kPadding
  std::string_view view() const { return {data_, size_}; }

 private:
  // Grows to hold `size` bytes plus padding, keeping the content.
  void Reserve(size_t size);
  void Resize(size_t size);

  char* data_ = nullptr;
  size_t size_ = 0;
  size_t capacity_ = 0;
};

}  // namespace stepscope::trace
