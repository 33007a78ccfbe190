// Perfetto's native protobuf trace (docs/formats.md §7): a `Trace` of `TracePacket`s with the
// field numbers of google/perfetto's protos/perfetto/trace/, written and read by hand.
//
// Writing (ExportPerfettoProto): one packet sequence per host (process), each starting with a
// ClockSnapshot that puts its sequence clock (id 64, ns from the trace's epoch) on REALTIME and
// BOOTTIME (a multi-rank trace, already aligned by merge, gets one sequence and snapshot per
// rank); TrackDescriptors for every track of the Trace: host -> process track, device -> child
// track, each lane (executor thread, GPU stream, overlap lane) its own child track, so
// overlapping work is never dropped; counter tracks (UNIT_SIZE_BYTES) for allocator curves;
// TYPE_SLICE_BEGIN/END TrackEvents with interned names, categories (the slice kind), debug
// annotations for the arguments (node name, kernel geometry, copy bytes, free-form args) and
// flow ids (dataflow, launch -> kernel). Every slice is kept except TensorFlow's GPU aggregate
// repeats (/stream:all, /memcpy: duplicate() slices, as in the chrome flavour), so reading the
// file back gives the same slices as the source's non-duplicate ones.
//
// Reading (ReadPerfettoProto): our own files and other TrackEvent traces (the Perfetto SDK's):
// track descriptors, interned data per sequence, clock snapshots (sequence clocks and
// incremental clocks), slice begin/end, instants, counters, flows, debug annotations. Packets of
// other data sources are skipped and counted. Damage is kInvalidInput naming the file and the
// byte offset.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"
#include "profiler/trace/trace.h"

namespace stepscope::trace {

std::string ExportPerfettoProto(const Trace& trace);

StatusOr<Trace> ReadPerfettoProto(std::string_view bytes, const std::string& name);

}  // namespace stepscope::trace
