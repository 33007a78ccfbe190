// Trace library throughput on the real PTB LSTM step: load text, load binary, export each Chrome
// flavour, and the UTF-8 check of text imports. Reports MB/s (bytes of input read, or of JSON
// written) and events/s (node stats).
// Run: build/release/tests/trace/stepscope_trace_benchmark
#include <benchmark/benchmark.h>

#include "base/file_io.h"
#include "profiler/trace/chrome_writer.h"
#include "profiler/trace/proto_utf8.h"
#include "profiler/trace/reader.h"
#include "profiler/trace/step_stats_io.h"
#include "profiler/trace/writer.h"
#include "stepscope/tf/run_metadata.pb.h"

namespace stepscope::trace {
namespace {

const std::string& SampleText() {
  static const std::string text =
      ReadFile(std::string(STEPSCOPE_TEST_DATA) + "/ptb_lstm_tf1_gpu_step.pbtxt").value();
  return text;
}

const Trace& SampleTrace() {
  static const Trace* trace = new Trace(ReadTraceFromBytes(SampleText(), "sample").value());
  return *trace;
}

void Report(benchmark::State& state, size_t bytes) {
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
  state.counters["events/s"] = benchmark::Counter(
      static_cast<double>(state.iterations() * SampleTrace().slices().size()),
      benchmark::Counter::kIsRate);
}

void BM_LoadText(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(ReadTraceFromBytes(SampleText(), "sample"));
  Report(state, SampleText().size());
}
BENCHMARK(BM_LoadText)->Unit(benchmark::kMillisecond);

void BM_LoadBinary(benchmark::State& state) {
  const std::string binary = Serialize(SampleTrace(), OutputFormat::kRunMetadataBinary).value();
  for (auto _ : state) benchmark::DoNotOptimize(ReadTraceFromBytes(binary, "sample"));
  Report(state, binary.size());
}
BENCHMARK(BM_LoadBinary)->Unit(benchmark::kMillisecond);

// The UTF-8 walk over every string field, which a text import makes when its text has escapes
// that could spell invalid UTF-8 (this sample has none, so BM_LoadText skips it).
void BM_Utf8CheckOfText(benchmark::State& state) {
  auto parsed = ParseStepStats(SampleText(), "sample").value();
  for (auto _ : state) benchmark::DoNotOptimize(RepairInvalidUtf8Strings(*parsed.run_metadata));
  Report(state, SampleText().size());
}
BENCHMARK(BM_Utf8CheckOfText)->Unit(benchmark::kMillisecond);

void BM_ExportPerfetto(benchmark::State& state) {
  size_t bytes = 0;
  for (auto _ : state) {
    std::string json = ExportPerfettoJson(SampleTrace());
    bytes = json.size();
    benchmark::DoNotOptimize(json);
  }
  Report(state, bytes);
}
BENCHMARK(BM_ExportPerfetto)->Unit(benchmark::kMillisecond);

void BM_ExportTfTimeline(benchmark::State& state) {
  size_t bytes = 0;
  for (auto _ : state) {
    std::string json = ExportTfTimelineJson(SampleTrace()).value();
    bytes = json.size();
    benchmark::DoNotOptimize(json);
  }
  Report(state, bytes);
}
BENCHMARK(BM_ExportTfTimeline)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace stepscope::trace
