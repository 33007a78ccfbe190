// Trace library throughput on step stats: load text, load binary, export each Chrome flavour,
// and the UTF-8 check of text imports, on the real PTB LSTM step; and binary RunMetadata import
// at scale. Reports MB/s (bytes of input read, or of JSON written), events/s (node stats) and,
// for imports, the heap the loaded Trace keeps per slice (B/slice).
//   LoadBinarySynthetic: the trace `stepscope-view --synthetic N --write-synthetic x.pb` writes
//   (profiler/testing/synthetic_trace.cc, linked in here), N = --slices (100000 by default so the
//   ctest smoke run stays short; 1000000 for the quoted figures).
//   LoadBinaryTf1Copies: the real TF1 GPU step repeated --tf1_copies times one after another
//   (labels, outputs, allocation records, GPU stream and aggregate lanes, as TensorFlow writes).
//   LoadBinaryFile: --pb_file=PATH, any binary RunMetadata.
//   Each load runs as `stepscope` reads the file (/0: the wire scan) and by the protobuf path (/1).
//   --write_synthetic=PATH writes the synthetic file (as the viewer would) and exits.
//   Rates are of wall time: the import deflates the node store on a second thread.
// Run: build/release/tests/trace/stepscope_trace_benchmark --slices=1000000 --tf1_copies=256
//        --benchmark_filter=LoadBinary --benchmark_repetitions=3
#include <benchmark/benchmark.h>
#include <malloc.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "base/file_io.h"
#include "profiler/formats/chrome_json/chrome_json_writer.h"
#include "profiler/formats/common/proto_utf8.h"
#include "profiler/formats/reader.h"
#include "profiler/formats/step_stats/step_stats_import.h"
#include "profiler/formats/step_stats/step_stats_io.h"
#include "profiler/formats/step_stats/step_stats_payload.h"
#include "profiler/formats/tf_timeline/tf_timeline_writer.h"
#include "profiler/formats/writer.h"
#include "profiler/testing/synthetic_trace.h"
#include "stepscope/tf/run_metadata.pb.h"
#include "tests/benchmark_main.h"

namespace stepscope::trace {
namespace {

int64_t g_slices = 100000;
int g_tf1_copies = 16;
std::string g_pb_file;
std::string g_pb_bytes;  // its content, read before any benchmark runs
std::string g_write_synthetic;

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

size_t HeapInUse() {
  const struct mallinfo2 info = mallinfo2();
  return info.uordblks + info.hblkhd;
}

// The protobuf path (a message per node, then the import), which binary input took before the
// wire scan and still takes where the scan declines it: for comparison under the same load.
StatusOr<Trace> ReadWithProtobuf(std::string_view bytes, const std::string& name) {
  ASSIGN_OR_RETURN(ParsedStepStats parsed, ParseStepStats(bytes, name));
  return ImportRunMetadata(std::move(parsed.run_metadata), parsed.format, name, parsed.stats);
}

// Loads `binary` each iteration (`state.range(0)`: 0 as `stepscope` reads it, 1 by the protobuf
// path); MB/s of input, slices/s, and the heap the Trace keeps per slice (measured on one more
// load after the timed ones).
void LoadBinary(benchmark::State& state, const std::string& binary) {
  const bool protobuf = state.range(0) == 1;
  state.SetLabel(protobuf ? "protobuf path" : "wire scan");
  auto load = [&] { return protobuf ? ReadWithProtobuf(binary, "bench.pb") : ReadTraceFromBytes(binary, "bench.pb"); };
  size_t slices = 0;
  for (auto _ : state) {
    auto trace = load();
    if (!trace.ok()) {
      state.SkipWithError(trace.status().message().c_str());
      return;
    }
    slices = trace->slices().size();
    benchmark::DoNotOptimize(trace);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * binary.size()));
  state.counters["slices"] = static_cast<double>(slices);
  state.counters["slices/s"] =
      benchmark::Counter(static_cast<double>(state.iterations() * slices), benchmark::Counter::kIsRate);
  malloc_trim(0);
  const size_t before = HeapInUse();
  auto trace = load();
  const size_t after = HeapInUse();
  state.counters["B/slice"] =
      slices == 0 ? 0.0 : static_cast<double>(after > before ? after - before : 0) / static_cast<double>(slices);
  state.counters["input_B/slice"] =
      slices == 0 ? 0.0 : static_cast<double>(binary.size()) / static_cast<double>(slices);
}

void BM_LoadText(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(ReadTraceFromBytes(SampleText(), "sample"));
  Report(state, SampleText().size());
}
BENCHMARK(BM_LoadText)->Unit(benchmark::kMillisecond);

// The real TF1 step as binary RunMetadata.
void BM_LoadBinary(benchmark::State& state) {
  static const std::string binary = Serialize(SampleTrace(), OutputFormat::kRunMetadataBinary).value();
  LoadBinary(state, binary);
}
BENCHMARK(BM_LoadBinary)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_LoadBinarySynthetic(benchmark::State& state) {
  static const std::string binary =
      Serialize(synthetic::MakeSyntheticTrace(g_slices), OutputFormat::kRunMetadataBinary).value();
  LoadBinary(state, binary);
}
BENCHMARK(BM_LoadBinarySynthetic)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

// The TF1 step `copies` times, each copy's times shifted past the previous one's end.
std::string Tf1StepCopies(int copies) {
  const auto step = LoadRunMetadata(SampleTrace());
  tf::RunMetadata out;
  const int64_t span_micros = (SampleTrace().span_end_ns() - SampleTrace().span_begin_ns()) / 1000 + 1000;
  for (const auto& device : step->step_stats().dev_stats()) {
    auto* copy = out.mutable_step_stats()->add_dev_stats();
    *copy = device;
    copy->clear_node_stats();
    for (int c = 0; c < copies; ++c) {
      const int64_t shift = span_micros * c;
      for (const auto& node : device.node_stats()) {
        auto* moved = copy->add_node_stats();
        *moved = node;
        moved->set_all_start_micros(node.all_start_micros() + shift);
        if (node.all_start_nanos() != 0) moved->set_all_start_nanos(node.all_start_nanos() + shift * 1000);
        for (auto& memory : *moved->mutable_memory()) {
          for (auto& record : *memory.mutable_allocation_records()) record.set_alloc_micros(record.alloc_micros() + shift);
        }
      }
    }
  }
  return SerializeRunMetadata(out, StepStatsEncoding::kBinary).value();
}

void BM_LoadBinaryTf1Copies(benchmark::State& state) {
  static const std::string binary = Tf1StepCopies(g_tf1_copies);
  LoadBinary(state, binary);
}
BENCHMARK(BM_LoadBinaryTf1Copies)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

// Registered only with --pb_file.
void BM_LoadBinaryFile(benchmark::State& state) {
  LoadBinary(state, g_pb_bytes);
}

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

int main(int argc, char** argv) {
  // Our own flags first; Google Benchmark rejects what it does not know.
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--slices=", 9) == 0) {
      stepscope::trace::g_slices = std::strtoll(argv[i] + 9, nullptr, 10);
    } else if (std::strncmp(argv[i], "--tf1_copies=", 13) == 0) {
      stepscope::trace::g_tf1_copies = std::atoi(argv[i] + 13);
    } else if (std::strncmp(argv[i], "--pb_file=", 10) == 0) {
      stepscope::trace::g_pb_file = argv[i] + 10;
    } else if (std::strncmp(argv[i], "--write_synthetic=", 18) == 0) {
      stepscope::trace::g_write_synthetic = argv[i] + 18;
    } else {
      argv[kept++] = argv[i];
    }
  }
  if (!stepscope::trace::g_write_synthetic.empty()) {
    const auto status = stepscope::trace::WriteTrace(stepscope::synthetic::MakeSyntheticTrace(stepscope::trace::g_slices),
                                                     stepscope::trace::g_write_synthetic,
                                                     stepscope::trace::OutputFormat::kRunMetadataBinary);
    if (!status.ok()) std::fprintf(stderr, "%s\n", status.message().c_str());
    return status.ok() ? 0 : 1;
  }
  if (!stepscope::trace::g_pb_file.empty()) {
    // A file that cannot be read is a usage error, named before any benchmark runs.
    auto bytes = stepscope::ReadFile(stepscope::trace::g_pb_file);
    if (!bytes.ok()) {
      std::fprintf(stderr, "--pb_file: %s\n", bytes.status().message().c_str());
      return 2;
    }
    stepscope::trace::g_pb_bytes = std::move(*bytes);
    benchmark::RegisterBenchmark("BM_LoadBinaryFile", stepscope::trace::BM_LoadBinaryFile)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();
  }
  return stepscope::testing::RunBenchmarks(kept, argv);
}
