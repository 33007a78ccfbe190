// libFuzzer target: Perfetto protobuf import (packets, interned data per sequence, clock
// snapshots, begin/end nesting, flows, counters), then every analysis on what it read, and our
// export of it read back. Seeds: fuzz/corpus/pftrace.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz/fuzz_analyses.h"
#include "profiler/formats/perfetto/perfetto_proto.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto trace = stepscope::trace::ReadPerfettoProto(bytes, "fuzz.pftrace");
  if (!trace.ok()) return 0;
  stepscope::fuzz::RunAnalyses(*trace);
  auto back = stepscope::trace::ReadPerfettoProto(stepscope::trace::ExportPerfettoProto(*trace), "again.pftrace");
  if (!back.ok()) __builtin_trap();  // our own output must read back
  return 0;
}
