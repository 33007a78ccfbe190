// Reading any trace stepscope understands, with the format told from content (not only the
// extension) and gzip handled transparently. Every failure names the file and the problem.
//
// The formats are one table (TraceReaders()): each entry names a format, says which file names it
// has, how its content is recognised and how it is read (whole, streamed, or a directory of its
// files as one trace). Everything that lists or tells formats apart (detection, streaming reads,
// directories and globs in inputs.h, the CLI's help and `stepscope formats`, the viewer's file
// filter) goes through it: adding a format is one folder under profiler/formats plus one entry
// (docs/architecture.md, "Adding a reader").
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/file_reader.h"
#include "base/status.h"
#include "profiler/trace/trace.h"
#include "profiler/trace/truncation.h"

namespace stepscope::trace {

enum class DetectedFormat { kStepStats, kChromeJson, kUnknown, kXSpace, kPerfettoProto };

// What a streaming read is told (ReadTraceOptions, as it applies to the one file).
struct StreamReadOptions {
  std::function<bool(int64_t bytes_read)> on_progress;  // empty: nobody asked
  int64_t preview_bytes = 0;
  Truncation* truncation = nullptr;  // non-null: read a cut file up to the cut, described here
};

struct TraceReaderEntry {
  DetectedFormat format;
  std::string_view name;         // as `stepscope formats` lists it: "chrome-json", "xspace", ...
  std::string_view description;  // one line
  // The file names it has: space-separated endings, a trailing "(.gz)" meaning each gzipped too
  // (".pb .pbtxt (.gz)"). Shown as is in help texts; directories and globs take the files whose
  // names end so (TraceReaderForFileName), the viewer's file dialog offers them (TraceFilePatterns).
  std::string_view extensions;
  // True when the (inflated) content is this format. Sees the whole content, or at least its
  // first 64 KiB.
  bool (*sniff)(std::string_view bytes);
  StatusOr<Trace> (*read)(std::string_view bytes, const std::string& name);
  // Formats read a piece at a time (a file of many gigabytes is never held whole, a preview is
  // possible): reads `file` on from `head`, its first bytes. Null: the file is read whole.
  StatusOr<Trace> (*read_stream)(FileReader& file, std::string head, const StreamReadOptions& options) = nullptr;
  // Formats whose files in one directory are one trace (a profiler run: one file per host):
  // reads them (sorted by name) as one. Null: each file is a trace of its own.
  StatusOr<Trace> (*read_run)(const std::vector<std::string>& files) = nullptr;
};

// In detection order: the first entry whose sniff accepts the content reads it.
std::span<const TraceReaderEntry> TraceReaders();
const TraceReaderEntry* FindTraceReader(DetectedFormat format);

// True when `extensions` (a TraceReaderEntry's or TraceWriterEntry's) names an ending of
// `file_name`.
bool MatchesExtensions(std::string_view extensions, std::string_view file_name);
// The reader whose extensions `file_name` ends with (the longest match: `x.xplane.pb` is XSpace's,
// not step stats' `.pb`), or null.
const TraceReaderEntry* TraceReaderForFileName(std::string_view file_name);
// "*.json", "*.json.gz", ...: every reader's file names as glob patterns, in table order.
std::vector<std::string> TraceFilePatterns();

// Looks at (inflated) content only. Content no entry accepts outright is given to the format it
// fits up to a cut (a truncated file, so its reader names the damage), else kUnknown.
DetectedFormat DetectFormat(std::string_view bytes);

// How far a read has come: content bytes (inflated), and the file's bytes read from disk of its
// size there (compressed, for gzip), for a progress bar.
struct ReadProgress {
  int64_t bytes_read = 0;
  int64_t disk_bytes_read = 0;
  int64_t disk_bytes = 0;
};

struct ReadTraceOptions {
  // Told the progress as the file streams (Chrome JSON: after each piece; other formats: once
  // read whole); returning false stops the read, which returns kCancelled.
  std::function<bool(const ReadProgress&)> on_progress;
  // A preview of a big Chrome JSON or Perfetto protobuf file: only its first `preview_bytes`
  // (the events, or the packets, read whole before them; import stat `json_preview_bytes_read`
  // or `perfetto_preview_bytes_read`). Other formats have no preview: kUnavailable, before they
  // are read.
  int64_t preview_bytes = 0;
  // A file cut short (or a gzip stream that ends early) is kInvalidInput naming the file and the
  // byte offset of the cut. With this set (or while an AllowTruncatedScope lives on the calling
  // thread), a Chrome JSON file is read up to the cut instead and `truncation`, when given, says
  // where; the protobuf formats are read whole or not at all either way.
  bool allow_truncated = false;
  Truncation* truncation = nullptr;
};

// A file, or a directory holding a profiler run (`plugins/profile/<run>/`: one `.xplane.pb` per
// host, read as one trace with a host track per file).
StatusOr<Trace> ReadTrace(const std::string& path, const ReadTraceOptions& options = {});
// `name` is used in messages (a path, or "<stdin>").
StatusOr<Trace> ReadTraceFromBytes(std::string_view bytes, const std::string& name);

}  // namespace stepscope::trace
