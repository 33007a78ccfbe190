#include "base/file_io.h"

#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace stepscope {
namespace {

std::string ErrnoText() { return std::strerror(errno); }

StatusOr<std::string> ReadRaw(const std::string& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) {
    if (errno == ENOENT) return NotFound(path + ": no such file");
    return IoError(path + ": " + ErrnoText());
  }
  if (S_ISDIR(info.st_mode)) return InvalidInput(path + ": is a directory, expected a file");
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) {
    return InvalidInput(path + ": cannot open for reading: " + ErrnoText());
  }
  std::string bytes;
  bytes.resize(static_cast<size_t>(info.st_size));
  size_t got = bytes.empty() ? 0 : std::fread(bytes.data(), 1, bytes.size(), file);
  // Files whose size stat does not know (pipes, /proc) are read to the end in chunks.
  char chunk[1 << 16];
  size_t more;
  bytes.resize(got);
  while ((more = std::fread(chunk, 1, sizeof chunk, file)) > 0) bytes.append(chunk, more);
  const bool failed = std::ferror(file) != 0;
  std::fclose(file);
  if (failed) return IoError(path + ": read failed: " + ErrnoText());
  return bytes;
}

}  // namespace

bool IsGzip(std::string_view bytes) {
  return bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
         static_cast<unsigned char>(bytes[1]) == 0x8b;
}

bool EndsWith(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

StatusOr<size_t> GunzipInto(std::string_view compressed, const std::string& name_for_errors,
                            size_t size_hint,
                            const std::function<std::span<char>(size_t, size_t)>& grow) {
  z_stream stream{};
  if (inflateInit2(&stream, 16 + MAX_WBITS) != Z_OK) return Internal("zlib init failed");
  const auto* input = reinterpret_cast<const Bytef*>(compressed.data());
  stream.next_in = const_cast<Bytef*>(input);
  std::span<char> out = grow(0, std::max<size_t>(size_hint, 4096));
  size_t produced = 0;
  int rc = Z_OK;
  while (true) {
    // zlib counts in 32 bits: hand it the input, and room, at most 4 GiB at a time.
    const size_t consumed = static_cast<size_t>(stream.next_in - input);
    if (stream.avail_in == 0 && consumed < compressed.size()) {
      stream.avail_in = static_cast<uInt>(std::min<size_t>(compressed.size() - consumed, UINT32_MAX));
    }
    if (produced >= out.size()) out = grow(produced, out.size() + out.size() / 2);
    const size_t room = std::min<size_t>(out.size() - produced, UINT32_MAX);
    stream.next_out = reinterpret_cast<Bytef*>(out.data() + produced);
    stream.avail_out = static_cast<uInt>(room);
    rc = inflate(&stream, Z_NO_FLUSH);
    produced += room - stream.avail_out;
    if (rc == Z_STREAM_END) {
      // Concatenated gzip members are legal; continue with the next one if any bytes remain.
      if (stream.avail_in == 0) break;
      if (inflateReset(&stream) != Z_OK) break;
      continue;
    }
    if (rc == Z_OK) continue;
    if (rc == Z_BUF_ERROR && stream.avail_in == 0) break;  // input ended mid-stream
    if (rc == Z_BUF_ERROR) continue;
    break;
  }
  inflateEnd(&stream);
  if (rc != Z_STREAM_END) {
    return InvalidInput(name_for_errors + ": gzip data is " +
                        (rc == Z_BUF_ERROR ? std::string("truncated") : "corrupt") +
                        " (inflated " + std::to_string(produced) + " bytes before the error)");
  }
  return produced;
}

StatusOr<std::string> Gunzip(std::string_view compressed, const std::string& name_for_errors) {
  std::string out;
  ASSIGN_OR_RETURN(const size_t produced,
                   GunzipInto(compressed, name_for_errors, compressed.size() * 4 + 4096,
                              [&out](size_t /*written*/, size_t at_least) {
                                out.resize(at_least);  // keeps what was written
                                return std::span<char>(out);
                              }));
  out.resize(produced);
  return out;
}

StatusOr<std::string> Gzip(std::string_view plain) {
  z_stream stream{};
  if (deflateInit2(&stream, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 16 + MAX_WBITS, 8,
                   Z_DEFAULT_STRATEGY) != Z_OK) {
    return Internal("zlib deflate init failed");
  }
  std::string out;
  out.resize(deflateBound(&stream, plain.size()) + 64);
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(plain.data()));
  stream.avail_in = static_cast<uInt>(plain.size());
  stream.next_out = reinterpret_cast<Bytef*>(out.data());
  stream.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&stream, Z_FINISH);
  out.resize(stream.total_out);
  deflateEnd(&stream);
  if (rc != Z_STREAM_END) return Internal("gzip compression failed");
  return out;
}

StatusOr<std::string> ReadFileAllowEmpty(const std::string& path) {
  StatusOr<std::string> raw = ReadRaw(path);
  if (!raw.ok() || !IsGzip(raw.value())) return raw;
  return Gunzip(raw.value(), path);
}

StatusOr<std::string> ReadFile(const std::string& path) {
  ASSIGN_OR_RETURN(std::string bytes, ReadFileAllowEmpty(path));
  if (bytes.empty()) return InvalidInput(path + ": file is empty");
  return bytes;
}

AtomicFileWriter::AtomicFileWriter(std::string path)
    : path_(std::move(path)), temp_path_(path_ + ".tmp." + std::to_string(::getpid())) {}

AtomicFileWriter::~AtomicFileWriter() {
  if (file_ != nullptr) std::fclose(file_);
  if (!committed_) std::remove(temp_path_.c_str());
}

Status AtomicFileWriter::Open() {
  struct stat info {};
  if (::stat(path_.c_str(), &info) == 0 && S_ISDIR(info.st_mode)) {
    return InvalidInput(path_ + ": is a directory, expected an output file path");
  }
  file_ = std::fopen(temp_path_.c_str(), "wb");
  if (file_ == nullptr) return IoError(path_ + ": cannot create output: " + ErrnoText());
  return Status::Ok();
}

Status AtomicFileWriter::Write(std::string_view bytes) {
  if (file_ == nullptr) return Internal(path_ + ": write before open");
  if (!bytes.empty() && std::fwrite(bytes.data(), 1, bytes.size(), file_) != bytes.size()) {
    return IoError(path_ + ": write failed: " + ErrnoText());
  }
  return Status::Ok();
}

Status AtomicFileWriter::Commit() {
  if (file_ == nullptr) return Internal(path_ + ": commit before open");
  const bool close_failed = std::fclose(file_) != 0;
  file_ = nullptr;
  if (close_failed) return IoError(path_ + ": closing output failed: " + ErrnoText());
  if (std::rename(temp_path_.c_str(), path_.c_str()) != 0) {
    return IoError(path_ + ": rename from temp file failed: " + ErrnoText());
  }
  committed_ = true;
  return Status::Ok();
}

Status WriteFileAtomically(const std::string& path, std::string_view bytes, bool gzip) {
  AtomicFileWriter writer(path);
  RETURN_IF_ERROR(writer.Open());
  if (gzip) {
    ASSIGN_OR_RETURN(std::string compressed, Gzip(bytes));
    RETURN_IF_ERROR(writer.Write(compressed));
  } else {
    RETURN_IF_ERROR(writer.Write(bytes));
  }
  return writer.Commit();
}

}  // namespace stepscope
