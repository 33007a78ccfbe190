#include "profiler/trace/reader.h"

#include <cctype>

#include "base/file_io.h"
#include "profiler/trace/chrome_json_reader.h"
#include "profiler/trace/padded_bytes.h"
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
  ASSIGN_OR_RETURN(PaddedBytes bytes, PaddedBytes::ReadFile(path));
  if (bytes.size() == 0) return InvalidInput(path + ": file is empty");
  // JSON is parsed in the buffer it was read into; step stats parse from it as it is.
  if (DetectFormat(bytes.view()) == DetectedFormat::kChromeJson) return ReadChromeJson(std::move(bytes), path);
  return ReadTraceFromBytes(bytes.view(), path);
}

}  // namespace stepscope::trace
