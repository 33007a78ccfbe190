// Chrome trace JSON export, the Perfetto-ready flavour (the other flavour, what TensorFlow's
// timeline.py writes, is tf_timeline/tf_timeline_writer.h): what a user wants in Perfetto today:
// one process per device (named "<host> <device>", sorted host then device), one thread per lane
// (streams, executor threads, overlap lanes) with names and sort indices; no partial overlaps on
// any tid; the GPU aggregate lanes de-duplicated; allocator counters from the recorded curve;
// flows whose endpoints lie strictly inside their slices (launch flows as Kineto's `ac2g`, with
// the work's correlation id on both ends' args, so the file reads back with the same launch
// links); memcpy bytes and bandwidth in args; times rebased on the trace start (ns precision kept
// as µs with three decimals). Compact.
#pragma once

#include <string>

#include "profiler/trace/trace.h"

namespace stepscope::trace {

std::string ExportPerfettoJson(const Trace& trace);

}  // namespace stepscope::trace
