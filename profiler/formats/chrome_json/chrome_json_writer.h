// Chrome trace JSON export, two flavours:
//  - kPerfetto (default): what a user wants in Perfetto today: one process per device (named
//    "<host> <device>", sorted host then device), one thread per lane (streams, executor
//    threads, overlap lanes) with names and sort indices; no partial overlaps on any tid; the
//    GPU aggregate lanes de-duplicated; allocator counters from the recorded curve; flows whose
//    endpoints lie strictly inside their slices (launch flows as Kineto's `ac2g`, with the work's
//    correlation id on both ends' args, so the file reads back with the same launch links);
//    memcpy bytes and bandwidth in args; times
//    rebased on the trace start (ns precision kept as µs with three decimals). Compact.
//  - kTfTimeline: the events TensorFlow's timeline.py emits with show_dataflow and show_memory
//    (docs/formats.md §2), for users comparing with what TensorFlow gave them. Needs a
//    step stats source.
#pragma once

#include <string>

#include "base/status.h"
#include "profiler/trace/trace.h"

namespace stepscope::trace {

enum class ChromeFlavour { kPerfetto, kTfTimeline };

StatusOr<std::string> ExportChromeJson(const Trace& trace, ChromeFlavour flavour);

std::string ExportPerfettoJson(const Trace& trace);
StatusOr<std::string> ExportTfTimelineJson(const Trace& trace);

}  // namespace stepscope::trace
