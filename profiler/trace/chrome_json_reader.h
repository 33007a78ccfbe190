// Chrome Trace Event Format import (array or {"traceEvents": [...]}), including what TensorFlow's
// timeline.py and the PyTorch profiler (Kineto) write: X and B/E slices, M metadata, C counters,
// s/t/f flows (ac2g launch links), Kineto categories mapped to slice kinds.
// pid -> host/process track, tid -> lane track. Partially overlapping slices on one tid are
// moved to overlap lanes by TraceBuilder and counted.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"
#include "profiler/trace/trace.h"

namespace stepscope::trace {

StatusOr<Trace> ReadChromeJson(std::string_view bytes, const std::string& name);

}  // namespace stepscope::trace
