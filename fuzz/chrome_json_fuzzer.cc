// libFuzzer target: Chrome/Kineto JSON import (streaming reader, salvage of damaged input), then
// every analysis on what it read. The input is read twice: as the CLI reads by default (a cut or
// damage is an error), and as --allow-truncated reads, in pieces of 64 bytes, where every event
// crosses a piece boundary and damage is salvaged. Seeds: fuzz/corpus/json.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "fuzz/fuzz_analyses.h"
#include "profiler/formats/chrome_json/chrome_json_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto trace = stepscope::trace::ReadChromeJson(bytes, "fuzz.json");
  if (trace.ok()) stepscope::fuzz::RunAnalyses(*trace);
  stepscope::trace::Truncation cut;
  stepscope::trace::ChromeJsonReadOptions salvage{64};
  salvage.allow_truncated = true;
  salvage.truncation = &cut;
  auto in_pieces = stepscope::trace::ReadChromeJson(bytes, "fuzz.json", salvage);
  if (in_pieces.ok()) stepscope::fuzz::RunAnalyses(*in_pieces);
  // What reads whole by default reads whole, with no cut, when cuts are accepted.
  if (trace.ok() && (!in_pieces.ok() || !cut.file.empty())) std::abort();
  return 0;
}
