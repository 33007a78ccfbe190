// Whole-file reads with gzip inflated transparently and errors naming the file, and the atomic
// writer's temporary file in the target's directory, renamed on Commit, removed otherwise.
#include "base/file_io.h"

#include "base/file_reader.h"

#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace stepscope {

std::string ErrnoText() { return std::strerror(errno); }

bool IsGzip(std::string_view bytes) {
  return bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
         static_cast<unsigned char>(bytes[1]) == 0x8b;
}

bool EndsWith(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

StatusOr<std::string> Gunzip(std::string_view compressed, const std::string& name_for_errors) {
  GzipInflater inflater(name_for_errors);
  std::string out(compressed.size() * 4 + 4096, '\0');
  size_t size = 0;
  while (true) {
    if (size == out.size()) out.resize(out.size() + out.size() / 2);
    ASSIGN_OR_RETURN(const size_t n, inflater.Inflate(compressed, {out.data() + size, out.size() - size}));
    size += n;
    if (compressed.empty() && size < out.size()) break;
  }
  RETURN_IF_ERROR(inflater.Finish());
  out.resize(size);
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
  ASSIGN_OR_RETURN(std::unique_ptr<FileReader> reader, FileReader::Open(path));
  std::string bytes;
  RETURN_IF_ERROR(reader->ReadToEnd(bytes));
  return bytes;
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
