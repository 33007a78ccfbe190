#include "profiler/trace/reader.h"

#include <cctype>

#include "base/file_reader.h"
#include "profiler/trace/chrome_json_reader.h"
#include "profiler/trace/step_stats_import.h"
#include "profiler/trace/step_stats_io.h"

namespace stepscope::trace {

DetectedFormat DetectFormat(std::string_view bytes) {
  size_t i = 0;
  // Skip a UTF-8 byte order mark and leading whitespace.
  if (bytes.substr(0, 3) == "\xEF\xBB\xBF") i = 3;
  while (i < bytes.size() && std::isspace(static_cast<unsigned char>(bytes[i]))) ++i;
  if (i < bytes.size() && (bytes[i] == '{' || bytes[i] == '[')) return DetectedFormat::kChromeJson;
  if (i == bytes.size()) return DetectedFormat::kUnknown;
  return DetectedFormat::kStepStats;
}

StatusOr<Trace> ReadTraceFromBytes(std::string_view bytes, const std::string& name) {
  if (bytes.empty()) return InvalidInput(name + ": file is empty");
  switch (DetectFormat(bytes)) {
    case DetectedFormat::kChromeJson:
      return ReadChromeJson(bytes, name);
    case DetectedFormat::kUnknown:
      return InvalidInput(name + ": holds only whitespace; expected a trace");
    case DetectedFormat::kStepStats:
      break;
  }
  ASSIGN_OR_RETURN(ParsedStepStats parsed, ParseStepStats(bytes, name));
  return ImportRunMetadata(std::move(parsed.run_metadata), parsed.format, name, parsed.stats);
}

StatusOr<Trace> ReadTrace(const std::string& path) {
  ASSIGN_OR_RETURN(std::unique_ptr<FileReader> reader, FileReader::Open(path));
  // The first bytes tell the format: JSON streams from here, step stats are read whole.
  std::string bytes(size_t{64} << 10, '\0');
  ASSIGN_OR_RETURN(const size_t got, reader->Read({bytes.data(), bytes.size()}));
  bytes.resize(got);
  if (bytes.empty()) return InvalidInput(path + ": file is empty");
  if (DetectFormat(bytes) == DetectedFormat::kChromeJson) return ReadChromeJson(*reader, bytes);
  RETURN_IF_ERROR(reader->ReadToEnd(bytes));
  return ReadTraceFromBytes(bytes, path);
}

}  // namespace stepscope::trace
