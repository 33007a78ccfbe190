// Reading any trace stepscope understands, with the format told from content (not only the
// extension) and gzip handled transparently. Every failure names the file and the problem.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"
#include "profiler/trace/trace.h"

namespace stepscope::trace {

enum class DetectedFormat { kStepStats, kChromeJson, kUnknown };

// Looks at (inflated) content only.
DetectedFormat DetectFormat(std::string_view bytes);

StatusOr<Trace> ReadTrace(const std::string& path);
// `name` is used in messages (a path, or "<stdin>").
StatusOr<Trace> ReadTraceFromBytes(std::string_view bytes, const std::string& name);

}  // namespace stepscope::trace
