// File input and output shared by every module: whole-file reads with transparent gzip (a piece
// at a time: file_reader.h), and atomic writes (temp file in the target's directory, renamed on
// Commit) so that a failed or interrupted run never leaves a half-written output behind.
#pragma once

#include <cstdio>
#include <string>
#include <string_view>

#include "base/status.h"

namespace stepscope {

// Reads the whole file. Fails with kNotFound for a missing path and kInvalidInput for a
// directory or an empty file (callers that accept empty files use ReadFileAllowEmpty).
// When the content starts with the gzip magic it is inflated; a corrupt or truncated gzip
// stream is kInvalidInput naming the file.
StatusOr<std::string> ReadFile(const std::string& path);
StatusOr<std::string> ReadFileAllowEmpty(const std::string& path);

bool IsGzip(std::string_view bytes);
StatusOr<std::string> Gunzip(std::string_view compressed, const std::string& name_for_errors);
StatusOr<std::string> Gzip(std::string_view plain);

bool EndsWith(std::string_view text, std::string_view suffix);

// strerror(errno), for the message of a failed system call.
std::string ErrnoText();

// Writes to `<path>.tmp.<pid>` and renames onto `path` in Commit(). If Commit() is never
// reached (error, early return) the destructor removes the temp file: nothing partial remains.
class AtomicFileWriter {
 public:
  explicit AtomicFileWriter(std::string path);
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  Status Open();
  Status Write(std::string_view bytes);
  Status Commit();  // flush, fsync-free close, rename
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::string temp_path_;
  std::FILE* file_ = nullptr;
  bool committed_ = false;
};

// One-shot convenience: the content lands at `path` completely or not at all.
// With `gzip` the bytes are compressed first.
Status WriteFileAtomically(const std::string& path, std::string_view bytes, bool gzip = false);

}  // namespace stepscope
