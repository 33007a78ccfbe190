// libFuzzer target: XSpace import (hand-decoded protobuf: offsets, lengths, stats, metadata
// references), then every analysis on what it read, and the Perfetto protobuf export of it read
// back. Seeds: fuzz/corpus/xspace.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz/fuzz_analyses.h"
#include "profiler/formats/perfetto/perfetto_proto.h"
#include "profiler/formats/xspace/xspace_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto trace = stepscope::trace::ReadXSpace(bytes, "fuzz.xplane.pb");
  if (!trace.ok()) return 0;
  stepscope::fuzz::RunAnalyses(*trace);
  auto back = stepscope::trace::ReadPerfettoProto(stepscope::trace::ExportPerfettoProto(*trace), "fuzz.pftrace");
  if (!back.ok()) __builtin_trap();  // our own output must read back
  return 0;
}
