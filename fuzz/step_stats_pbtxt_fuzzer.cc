// libFuzzer target: text-format RunMetadata/StepStats through the generic reader (format
// detection included), then every analysis. Seeds: fuzz/corpus/pbtxt.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz/fuzz_analyses.h"
#include "profiler/formats/reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto trace = stepscope::trace::ReadTraceFromBytes(bytes, "fuzz.pbtxt");
  if (trace.ok()) stepscope::fuzz::RunAnalyses(*trace);
  return 0;
}
