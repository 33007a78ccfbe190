#include "profiler/trace/padded_bytes.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "base/check.h"
#include "base/file_io.h"

namespace stepscope::trace {
namespace {

constexpr size_t kHugePage = size_t{2} << 20;

// Buffers of many megabytes come from mmap, page-aligned: ask for huge pages so that filling
// them takes one fault per 2 MB instead of per 4 KB.
char* Allocate(size_t bytes) {
  if (bytes >= 4 * kHugePage) {
    const size_t rounded = (bytes + kHugePage - 1) / kHugePage * kHugePage;
    void* memory = std::aligned_alloc(kHugePage, rounded);
    STEPSCOPE_CHECK(memory != nullptr);
#ifdef MADV_HUGEPAGE
    ::madvise(memory, rounded, MADV_HUGEPAGE);
#endif
    return static_cast<char*>(memory);
  }
  char* memory = static_cast<char*>(std::malloc(bytes));
  STEPSCOPE_CHECK(memory != nullptr);
  return memory;
}

std::string ErrnoText() { return std::strerror(errno); }

class FileCloser {
 public:
  explicit FileCloser(int fd) : fd_(fd) {}
  ~FileCloser() { ::close(fd_); }
  FileCloser(const FileCloser&) = delete;
  FileCloser& operator=(const FileCloser&) = delete;

 private:
  int fd_;
};

// The gzip trailer's ISIZE: the inflated size modulo 2^32 of the last member (a good first
// guess for the buffer; growth handles the rest).
size_t GzipSizeHint(std::string_view compressed) {
  if (compressed.size() < 18) return compressed.size() * 4;
  const auto* tail = reinterpret_cast<const unsigned char*>(compressed.data() + compressed.size() - 4);
  const size_t isize = size_t{tail[0]} | size_t{tail[1]} << 8 | size_t{tail[2]} << 16 | size_t{tail[3]} << 24;
  return std::max(isize, compressed.size());
}

}  // namespace

PaddedBytes::~PaddedBytes() { std::free(data_); }

PaddedBytes::PaddedBytes(PaddedBytes&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      capacity_(std::exchange(other.capacity_, 0)) {}

PaddedBytes& PaddedBytes::operator=(PaddedBytes&& other) noexcept {
  if (this != &other) {
    std::free(data_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    capacity_ = std::exchange(other.capacity_, 0);
  }
  return *this;
}

void PaddedBytes::Reserve(size_t size) {
  if (size + kPadding <= capacity_) return;
  const size_t capacity = std::max(size + kPadding, capacity_ + capacity_ / 2);
  char* grown = Allocate(capacity);
  if (size_ > 0) std::memcpy(grown, data_, size_);
  std::free(data_);
  data_ = grown;
  capacity_ = capacity;
}

void PaddedBytes::Resize(size_t size) {
  Reserve(size);
  size_ = size;
  std::memset(data_ + size_, 0, kPadding);
}

PaddedBytes PaddedBytes::Copy(std::string_view bytes) {
  PaddedBytes out;
  out.Resize(bytes.size());
  if (!bytes.empty()) std::memcpy(out.data_, bytes.data(), bytes.size());
  return out;
}

StatusOr<PaddedBytes> PaddedBytes::ReadFile(const std::string& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) {
    if (errno == ENOENT) return NotFound(path + ": no such file");
    return IoError(path + ": " + ErrnoText());
  }
  if (S_ISDIR(info.st_mode)) return InvalidInput(path + ": is a directory, expected a file");
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return InvalidInput(path + ": cannot open for reading: " + ErrnoText());
  FileCloser closer(fd);
  PaddedBytes raw;
  raw.Reserve(static_cast<size_t>(std::max<off_t>(info.st_size, 0)));
  // Read to the end whatever stat said (pipes and /proc files report 0).
  while (true) {
    if (raw.size_ + kPadding + 4096 > raw.capacity_) raw.Reserve(raw.size_ + (1 << 16));
    const size_t room = raw.capacity_ - kPadding - raw.size_;
    const ssize_t got = ::read(fd, raw.data_ + raw.size_, room);
    if (got < 0) {
      if (errno == EINTR) continue;
      return IoError(path + ": read failed: " + ErrnoText());
    }
    if (got == 0) break;
    raw.size_ += static_cast<size_t>(got);
  }
  raw.Resize(raw.size_);
  if (!IsGzip(raw.view())) return raw;

  // Inflate straight into the padded buffer.
  PaddedBytes out;
  ASSIGN_OR_RETURN(const size_t inflated,
                   GunzipInto(raw.view(), path, GzipSizeHint(raw.view()),
                              [&out](size_t written, size_t at_least) {
                                out.size_ = written;  // what Reserve keeps
                                out.Reserve(at_least);
                                return std::span<char>(out.data_, out.capacity_ - kPadding);
                              }));
  out.Resize(inflated);
  return out;
}

}  // namespace stepscope::trace
