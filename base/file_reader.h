// Reading a file front to back in pieces, inflating gzip on the fly, so that a reader can
// stream a multi-gigabyte trace through a buffer of a few megabytes.
#pragma once

#include <zlib.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "base/status.h"

namespace stepscope {

// Incremental gzip inflate. Concatenated members are inflated one after another, as gzip(1)
// does; damage is kInvalidInput naming the file.
class GzipInflater {
 public:
  explicit GzipInflater(std::string name_for_errors);
  ~GzipInflater();
  GzipInflater(const GzipInflater&) = delete;
  GzipInflater& operator=(const GzipInflater&) = delete;

  // Inflates from `input` into `out` until `out` is full or `input` is used up; consumed input
  // is removed from the front of `input`. Returns the bytes written.
  StatusOr<size_t> Inflate(std::string_view& input, std::span<char> out);
  // Once all input was given: "truncated" unless the last member ended.
  Status Finish() const;
  int64_t inflated() const { return inflated_; }

 private:
  Status Corrupt() const;

  std::string name_;
  z_stream stream_{};
  bool initialized_ = false;
  bool member_ended_ = false;
  bool started_ = false;  // some input was given
  int64_t inflated_ = 0;
};

// A regular file's content in pieces, gzip inflated when it starts with the gzip magic.
class FileReader {
 public:
  // kNotFound for a missing path; kInvalidInput for a directory or a file that cannot be opened.
  static StatusOr<std::unique_ptr<FileReader>> Open(const std::string& path);
  ~FileReader();
  FileReader(const FileReader&) = delete;
  FileReader& operator=(const FileReader&) = delete;

  // Fills `out` as far as the file goes; returns the bytes written, less than out.size() only
  // at the end. Read errors are kIoError, corrupt or cut gzip kInvalidInput, naming the file.
  StatusOr<size_t> Read(std::span<char> out);
  // Appends the rest of the file to `out`.
  Status ReadToEnd(std::string& out);

  // From now on a gzip stream cut short ends the content instead of failing, for readers that
  // keep what came before the cut; cut_short() then tells whether it happened.
  void AcceptCutGzip() { accept_cut_gzip_ = true; }
  bool cut_short() const { return cut_short_; }

  const std::string& path() const { return path_; }
  // Size on disk as stat reports it (0 for pipes); a hint, not a promise.
  int64_t size_on_disk() const { return size_on_disk_; }
  // Bytes read from disk so far (compressed ones for gzip), against size_on_disk() for progress.
  int64_t disk_bytes_read() const { return disk_bytes_read_; }
  // Content bytes (inflated ones for gzip) Read has returned so far.
  int64_t bytes_read() const { return bytes_read_; }

 private:
  FileReader(std::string path, int fd, int64_t size_on_disk);
  // Reads raw bytes into `out`; 0 at the end of the file.
  StatusOr<size_t> ReadRaw(std::span<char> out);

  std::string path_;
  int fd_ = -1;
  int64_t size_on_disk_ = 0;
  int64_t disk_bytes_read_ = 0;
  int64_t bytes_read_ = 0;
  bool sniffed_ = false;  // the first bytes were looked at for the gzip magic
  std::unique_ptr<char[]> raw_;  // compressed bytes waiting for inflate (or the sniffed prefix)
  size_t raw_capacity_ = 0;
  std::string_view pending_;  // unconsumed part of raw_
  bool raw_ended_ = false;
  std::unique_ptr<GzipInflater> inflater_;  // set for gzip files
  bool accept_cut_gzip_ = false;
  bool cut_short_ = false;
};

}  // namespace stepscope
