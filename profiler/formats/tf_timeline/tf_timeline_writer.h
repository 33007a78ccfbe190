// The Chrome JSON TensorFlow's timeline.py writes: the events it emits with show_dataflow and
// show_memory (docs/formats.md §2), for users comparing with what TensorFlow gave them. Needs a
// step stats source (kInvalidInput otherwise).
#pragma once

#include <string>

#include "base/status.h"
#include "profiler/trace/trace.h"

namespace stepscope::trace {

StatusOr<std::string> ExportTfTimelineJson(const Trace& trace);

}  // namespace stepscope::trace
