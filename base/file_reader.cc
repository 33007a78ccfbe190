// Front-to-back reads in pieces over a file descriptor, gzip inflated a buffer at a time through
// zlib's stream API, with a gzip stream cut short told apart from a corrupt one.
#include "base/file_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>

#include "base/file_io.h"

namespace stepscope {
namespace {

constexpr size_t kRawBufferBytes = size_t{1} << 20;

}  // namespace

GzipInflater::GzipInflater(std::string name_for_errors) : name_(std::move(name_for_errors)) {}

GzipInflater::~GzipInflater() {
  if (initialized_) inflateEnd(&stream_);
}

Status GzipInflater::Corrupt() const {
  return InvalidInput(name_ + ": gzip data is corrupt (inflated " + std::to_string(inflated_) +
                      " bytes before the error)");
}

StatusOr<size_t> GzipInflater::Inflate(std::string_view& input, std::span<char> out) {
  if (!initialized_) {
    if (inflateInit2(&stream_, 16 + MAX_WBITS) != Z_OK) return Internal("zlib init failed");
    initialized_ = true;
  }
  size_t written = 0;
  while (written < out.size() && !input.empty()) {
    started_ = true;
    if (member_ended_) {
      // More bytes after a member: the next concatenated member.
      if (inflateReset(&stream_) != Z_OK) return Corrupt();
      member_ended_ = false;
    }
    // zlib counts in 32 bits: at most 4 GiB of input and room at a time.
    const auto in_size = static_cast<uInt>(std::min<size_t>(input.size(), UINT_MAX));
    const auto room = static_cast<uInt>(std::min<size_t>(out.size() - written, UINT_MAX));
    stream_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(input.data()));
    stream_.avail_in = in_size;
    stream_.next_out = reinterpret_cast<Bytef*>(out.data() + written);
    stream_.avail_out = room;
    const int rc = inflate(&stream_, Z_NO_FLUSH);
    const size_t consumed = in_size - stream_.avail_in;
    const size_t produced = room - stream_.avail_out;
    input.remove_prefix(consumed);
    written += produced;
    inflated_ += static_cast<int64_t>(produced);
    if (rc == Z_STREAM_END) {
      member_ended_ = true;
    } else if ((rc != Z_OK && rc != Z_BUF_ERROR) || (consumed == 0 && produced == 0)) {
      return Corrupt();
    }
  }
  return written;
}

Status GzipInflater::Finish() const {
  if (member_ended_) return Status::Ok();
  return InvalidInput(name_ + ": gzip data is truncated (inflated " + std::to_string(inflated_) +
                      " bytes before the error)");
}

FileReader::FileReader(std::string path, int fd, int64_t size_on_disk)
    : path_(std::move(path)), fd_(fd), size_on_disk_(size_on_disk) {}

FileReader::~FileReader() {
  if (fd_ >= 0) ::close(fd_);
}

StatusOr<std::unique_ptr<FileReader>> FileReader::Open(const std::string& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) {
    if (errno == ENOENT) return NotFound(path + ": no such file");
    return IoError(path + ": " + ErrnoText());
  }
  if (S_ISDIR(info.st_mode)) return InvalidInput(path + ": is a directory, expected a file");
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return InvalidInput(path + ": cannot open for reading: " + ErrnoText());
  return std::unique_ptr<FileReader>(new FileReader(path, fd, std::max<int64_t>(info.st_size, 0)));
}

StatusOr<size_t> FileReader::ReadRaw(std::span<char> out) {
  while (true) {
    const ssize_t got = ::read(fd_, out.data(), out.size());
    if (got >= 0) {
      disk_bytes_read_ += got;
      return static_cast<size_t>(got);
    }
    if (errno != EINTR) return IoError(path_ + ": read failed: " + ErrnoText());
  }
}

StatusOr<size_t> FileReader::Read(std::span<char> out) {
  if (!sniffed_) {
    // The first bytes decide between plain and gzip.
    sniffed_ = true;
    raw_capacity_ = kRawBufferBytes;
    raw_ = std::make_unique<char[]>(raw_capacity_);
    size_t got = 0;
    while (got < 2 && !raw_ended_) {
      ASSIGN_OR_RETURN(const size_t n, ReadRaw({raw_.get() + got, raw_capacity_ - got}));
      raw_ended_ = n == 0;
      got += n;
    }
    pending_ = {raw_.get(), got};
    if (IsGzip(pending_)) inflater_ = std::make_unique<GzipInflater>(path_);
  }
  size_t written = 0;
  if (inflater_ == nullptr) {
    // Plain: the sniffed bytes first, then straight from the file into `out`.
    const size_t take = std::min(pending_.size(), out.size());
    if (take > 0) std::memcpy(out.data(), pending_.data(), take);
    pending_.remove_prefix(take);
    written = take;
    while (written < out.size() && !raw_ended_) {
      ASSIGN_OR_RETURN(const size_t n, ReadRaw(out.subspan(written)));
      raw_ended_ = n == 0;
      written += n;
    }
    bytes_read_ += static_cast<int64_t>(written);
    return written;
  }
  while (written < out.size()) {
    if (pending_.empty() && !raw_ended_) {
      ASSIGN_OR_RETURN(const size_t n, ReadRaw({raw_.get(), raw_capacity_}));
      raw_ended_ = n == 0;
      pending_ = {raw_.get(), n};
    }
    ASSIGN_OR_RETURN(const size_t produced, inflater_->Inflate(pending_, out.subspan(written)));
    written += produced;
    if (pending_.empty() && raw_ended_) {
      if (written < out.size() && !cut_short_) {
        Status finished = inflater_->Finish();
        if (!finished.ok() && !accept_cut_gzip_) return finished;
        cut_short_ = !finished.ok();
      }
      break;
    }
  }
  bytes_read_ += static_cast<int64_t>(written);
  return written;
}

Status FileReader::ReadToEnd(std::string& out) {
  size_t size = out.size();
  out.resize(std::max(out.size() + 4096, static_cast<size_t>(size_on_disk_) + 1));
  while (true) {
    if (size == out.size()) out.resize(out.size() + out.size() / 2);
    ASSIGN_OR_RETURN(const size_t n, Read({out.data() + size, out.size() - size}));
    size += n;
    if (size < out.size()) break;  // a short read is the end
  }
  out.resize(size);
  return Status::Ok();
}

}  // namespace stepscope
