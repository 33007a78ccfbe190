// libFuzzer target: binary RunMetadata/StepStats parsing and import, then every analysis.
// Seeds: fuzz/corpus/pb.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz/fuzz_analyses.h"
#include "profiler/trace/step_stats_import.h"
#include "profiler/trace/step_stats_io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  if (stepscope::trace::LooksLikeTextProto(bytes)) return 0;  // the pbtxt fuzzer covers text
  auto parsed = stepscope::trace::ParseStepStats(bytes, "fuzz.pb");
  if (!parsed.ok()) return 0;
  const auto trace = stepscope::trace::ImportRunMetadata(std::move(parsed->run_metadata), parsed->format,
                                                         "fuzz.pb", parsed->stats);
  stepscope::fuzz::RunAnalyses(trace);
  return 0;
}
