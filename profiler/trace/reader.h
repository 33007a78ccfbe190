// Reading any trace stepscope understands, with the format told from content (not only the
// extension) and gzip handled transparently. Every failure names the file and the problem.
//
// The formats are one table (TraceReaders()): each entry names a format, says how its content is
// recognised and reads it. Adding a format is one reader file plus one entry here
// (docs/architecture.md, "Adding a reader").
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "base/status.h"
#include "profiler/trace/trace.h"

namespace stepscope::trace {

enum class DetectedFormat { kStepStats, kChromeJson, kUnknown, kXSpace, kPerfettoProto };

struct TraceReaderEntry {
  DetectedFormat format;
  std::string_view name;         // as `stepscope formats` lists it: "chrome-json", "xspace", ...
  std::string_view description;  // one line
  std::string_view extensions;   // the file names it usually has, for help texts
  // True when the (inflated) content is this format. Sees the whole content, or at least its
  // first 64 KiB.
  bool (*sniff)(std::string_view bytes);
  StatusOr<Trace> (*read)(std::string_view bytes, const std::string& name);
};

// In detection order: the first entry whose sniff accepts the content reads it.
std::span<const TraceReaderEntry> TraceReaders();
const TraceReaderEntry* FindTraceReader(DetectedFormat format);

// Looks at (inflated) content only. Content no entry accepts outright is given to the format it
// fits up to a cut (a truncated file, so its reader names the damage), else kUnknown.
DetectedFormat DetectFormat(std::string_view bytes);

// A file, or a directory holding a profiler run (`plugins/profile/<run>/`: one `.xplane.pb` per
// host, read as one trace with a host track per file).
StatusOr<Trace> ReadTrace(const std::string& path);
// `name` is used in messages (a path, or "<stdin>").
StatusOr<Trace> ReadTraceFromBytes(std::string_view bytes, const std::string& name);

}  // namespace stepscope::trace
