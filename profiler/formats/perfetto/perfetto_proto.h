// Perfetto's native protobuf trace (docs/formats.md §7): a `Trace` of `TracePacket`s with the
// field numbers of google/perfetto's protos/perfetto/trace/, written and read by hand.
//
// Writing (ExportPerfettoProto): TrackDescriptors first (sequence 1) for every track of the
// Trace: host (rank) -> process track, device -> child track, each lane (executor thread, GPU
// stream, overlap lane) its own child track, so overlapping work is never dropped; counter
// tracks (UNIT_SIZE_BYTES, values as deltas in their unit) for allocator curves. Then one packet
// sequence per host: its first packet clears incremental state, sets the defaults (the busiest
// lane, the sequence clock) and holds a ClockSnapshot that puts the sequence clock (id 64,
// incremental, in the unit dividing all the sequence's times; 0 = the trace's epoch) on REALTIME
// and BOOTTIME, so every rank of a merged trace (already aligned by merge) lands on one
// timeline; then the events of all the host's lanes and counters in time order:
// TYPE_SLICE_BEGIN/END TrackEvents with names, categories (the slice kind), debug annotations for
// the arguments (node name, kernel geometry, copy bytes, a label's inputs as an array,
// free-form args) and flow ids (dataflow, launch -> kernel). Text used more than once on the
// sequence is interned, the rest inline. Every slice is kept except TensorFlow's GPU aggregate
// repeats (/stream:all, /memcpy: duplicate() slices, as in the chrome flavour), so reading the
// file back gives the same slices as the source's non-duplicate ones.
//
// Reading (ReadPerfettoProto): our own files and other TrackEvent traces (the Perfetto SDK's):
// track descriptors, interned data per sequence, clock snapshots (sequence clocks and
// incremental clocks, with units), slice begin/end, instants, counters (incremental ones too),
// flows, debug annotations (arrays joined by ", "). Packets of other data sources are skipped
// and counted. Damage is kInvalidInput naming the file and the byte offset.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "base/file_reader.h"
#include "base/status.h"
#include "profiler/trace/trace.h"

namespace stepscope::trace {

std::string ExportPerfettoProto(const Trace& trace);

StatusOr<Trace> ReadPerfettoProto(std::string_view bytes, const std::string& name);

struct PerfettoStreamOptions {
  // > 0: a preview of a big file, the packets whole within its first `preview_bytes` (import stat
  // `perfetto_preview_bytes_read`); a file within them is read whole, as without.
  int64_t preview_bytes = 0;
  // Told the bytes read so far after each piece; false stops the read (kCancelled).
  std::function<bool(int64_t)> on_progress;
  size_t chunk_bytes = size_t{64} << 20;  // packets are read in pieces of about this many bytes
};
// The same from a file, its whole packets a piece at a time (a multi-gigabyte trace is never held
// whole); `bytes` are the first bytes already read from it.
StatusOr<Trace> ReadPerfettoProto(FileReader& file, std::string bytes, const std::string& name,
                                  const PerfettoStreamOptions& options = {});

}  // namespace stepscope::trace
