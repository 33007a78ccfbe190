// Telling binary protobuf trace formats apart by their field structure (docs/formats.md §6-§8).
// RunMetadata, a bare StepStats, an XSpace and a Perfetto Trace all begin with field 1 as a
// length-delimited message; what differs is what is inside. The sniffer walks the first
// kSniffWindow bytes against each format's schema (field numbers, wire types, nested messages a
// few levels down, strings that must be text) and names the format whose schema the bytes fit.
// A message cut by the window's end counts as fitting so far.
#pragma once

#include <cstddef>
#include <string_view>

namespace stepscope::trace {

enum class ProtoFormat { kStepStats, kXSpace, kPerfettoTrace, kNone };

inline constexpr size_t kSniffWindow = size_t{64} << 10;

// Checked in this order: step stats (RunMetadata or bare StepStats), XSpace, Perfetto Trace.
ProtoFormat SniffProtobuf(std::string_view bytes);

// `cut`: the content is taken as cut short (a message running past the end fits so far), to
// name the format of a truncated file.
bool FitsStepStats(std::string_view bytes, bool cut = false);
bool FitsXSpace(std::string_view bytes, bool cut = false);
bool FitsPerfettoTrace(std::string_view bytes, bool cut = false);

}  // namespace stepscope::trace
