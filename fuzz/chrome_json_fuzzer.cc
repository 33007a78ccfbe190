// libFuzzer target: Chrome/Kineto JSON import (streaming reader, salvage of damaged input), then
// every analysis on what it read. The input is read twice: in the default pieces, and in pieces
// of 64 bytes, where every event crosses a piece boundary. Seeds: fuzz/corpus/json.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz/fuzz_analyses.h"
#include "profiler/trace/chrome_json_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto trace = stepscope::trace::ReadChromeJson(bytes, "fuzz.json");
  if (trace.ok()) stepscope::fuzz::RunAnalyses(*trace);
  auto in_pieces = stepscope::trace::ReadChromeJson(bytes, "fuzz.json", stepscope::trace::ChromeJsonReadOptions{64});
  if (in_pieces.ok()) stepscope::fuzz::RunAnalyses(*in_pieces);
  return 0;
}
