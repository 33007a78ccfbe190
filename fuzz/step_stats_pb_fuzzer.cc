// libFuzzer target: binary RunMetadata/StepStats read as `stepscope` reads it (straight from the
// wire, or by protobuf where the wire scan declines the input), then every analysis. What the
// wire scan takes must give the protobuf path's Trace: a difference aborts.
// Seeds: fuzz/corpus/pb.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "fuzz/fuzz_analyses.h"
#include "profiler/formats/step_stats/step_stats_import.h"
#include "profiler/formats/step_stats/step_stats_io.h"
#include "profiler/formats/step_stats/step_stats_payload.h"
#include "stepscope/tf/run_metadata.pb.h"

namespace {

using namespace stepscope::trace;

bool SameSlices(const Trace& a, const Trace& b) {
  if (a.slices().size() != b.slices().size() || a.tracks().size() != b.tracks().size() ||
      a.flows().size() != b.flows().size() || a.counters().size() != b.counters().size() ||
      a.strings().size() != b.strings().size() || a.epoch_ns() != b.epoch_ns() ||
      a.import_stats().counts() != b.import_stats().counts()) {
    return false;
  }
  for (size_t s = 0; s < a.slices().size(); ++s) {
    const Slice& x = a.slices()[s];
    const Slice& y = b.slices()[s];
    if (x.start_ns != y.start_ns || x.dur_ns != y.dur_ns || x.track != y.track ||
        a.slice_name(x) != b.slice_name(y) || a.slice_op_type(x) != b.slice_op_type(y) || x.depth != y.depth ||
        x.kind != y.kind || x.flags != y.flags) {
      return false;
    }
  }
  for (size_t f = 0; f < a.flows().size(); ++f) {
    if (a.flows()[f].from_slice != b.flows()[f].from_slice || a.flows()[f].to_slice != b.flows()[f].to_slice) return false;
  }
  for (size_t c = 0; c < a.counters().size(); ++c) {
    if (a.counters()[c].ts_ns != b.counters()[c].ts_ns || a.counters()[c].values != b.counters()[c].values) return false;
  }
  const auto x = LoadRunMetadata(a);
  const auto y = LoadRunMetadata(b);
  return x != nullptr && y != nullptr &&
         SerializeRunMetadata(*x, StepStatsEncoding::kBinary).value() ==
             SerializeRunMetadata(*y, StepStatsEncoding::kBinary).value();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  if (LooksLikeTextProto(bytes)) return 0;  // the pbtxt fuzzer covers text
  std::optional<Trace> wire = ImportBinaryStepStats(bytes, "fuzz.pb");
  auto parsed = ParseStepStats(bytes, "fuzz.pb");
  if (!parsed.ok()) {
    if (wire.has_value()) std::abort();  // the scan took what protobuf refuses
    return 0;
  }
  const Trace trace = ImportRunMetadata(std::move(parsed->run_metadata), parsed->format, "fuzz.pb", parsed->stats);
  if (wire.has_value() && !SameSlices(*wire, trace)) std::abort();
  stepscope::fuzz::RunAnalyses(wire.has_value() ? *wire : trace);
  return 0;
}
