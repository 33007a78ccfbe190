// Speed of the streaming Chrome/Kineto JSON import and of every analysis.
//   Import: a generated Kineto-format trace (500 MB with --json_mb=500; 16 MB by default so the
//   ctest smoke run stays short) -> MB/s, events/s, and resident memory per event.
//   ImportKinetoJson parses bytes already in memory (one padded copy first);
//   ImportKinetoJsonFile reads a file as `stepscope` and the viewer do (read straight into the
//   parse buffer). Use --benchmark_repetitions=3: the first run also pays for generating the JSON.
//   ImportKinetoJsonThreads/N reads the file on N threads (parallel pieces, chrome_json_reader.h);
//   --json_file=PATH reads that file instead of the generated one (e.g. a 1 GB one written by
//   GenerateKinetoJson), reporting MB/s, slices, peak resident growth per slice.
//   Analyses: each on a trace of --events=N slices (1000000 for the quoted figures).
// Run: build/release/tests/analysis/stepscope_analysis_benchmark --json_mb=500 --events=1000000
// --write_ranks=DIR --ranks=8 --json_mb=100 writes a generated multi-rank run instead (rankR.json,
// ProfilerStep#N windows of 1000 iterations (--shapes: with the ops' Input Dims and types), the last rank's kernels 2 us slower: the straggler of
// every step, by 2 us, for compute) and exits: the input of the many-rank figures in
// docs/analysis.md, for `stepscope` and HTA alike.
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

#include "kineto_generator.h"
#include "profiler/analysis/breakdowns.h"
#include "profiler/analysis/diff.h"
#include "profiler/analysis/memory_timeline.h"
#include "profiler/analysis/op_stats.h"
#include "profiler/analysis/step_analyses.h"
#include "profiler/analysis/steps.h"
#include "base/file_io.h"
#include "base/file_reader.h"
#include "profiler/formats/chrome_json/chrome_json_reader.h"
#include "profiler/formats/reader.h"
#include "test_util.h"
#include "tests/benchmark_main.h"

namespace stepscope::analysis {
namespace {

size_t g_json_mb = 16;
size_t g_events = 100000;
std::string g_json_file;

const testing::GeneratedJson& Json() {
  static const testing::GeneratedJson* json = new testing::GeneratedJson(testing::GenerateKinetoJson(g_json_mb << 20));
  return *json;
}

int64_t MaxRssBytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<int64_t>(usage.ru_maxrss) * 1024;
}

// The generated JSON in a scratch file (written once; read back from the page cache).
const std::string& JsonPath() {
  static const std::string* path = [] {
    auto* p = new std::string((stepscope::testing::ScratchDir("analysis_benchmark") / "generated.json").string());
    std::FILE* file = std::fopen(p->c_str(), "wb");
    if (file == nullptr || std::fwrite(Json().json.data(), 1, Json().json.size(), file) != Json().json.size()) {
      std::fprintf(stderr, "cannot write %s\n", p->c_str());
      std::abort();
    }
    std::fclose(file);
    return p;
  }();
  return *path;
}

template <typename Read>
void ImportBenchmark(benchmark::State& state, Read read) {
  const auto& json = Json();
  const int64_t rss_before = MaxRssBytes();
  int64_t slices = 0;
  for (auto _ : state) {
    auto trace = read();
    if (!trace.ok()) {
      state.SkipWithError(trace.status().message().c_str());
      return;
    }
    slices = static_cast<int64_t>(trace->slices().size());
    benchmark::DoNotOptimize(trace);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * json.json.size()));
  state.counters["events/s"] =
      benchmark::Counter(static_cast<double>(state.iterations() * json.events), benchmark::Counter::kIsRate);
  state.counters["events"] = static_cast<double>(json.events);
  state.counters["slices"] = static_cast<double>(slices);
  state.counters["MB"] = static_cast<double>(json.json.size()) / 1e6;
  // Peak resident growth during import (the JSON buffer, the parser's index and the trace), per
  // event. The generated JSON itself was resident before (in memory or in the page cache).
  state.counters["peak_rss_B/event"] = static_cast<double>(MaxRssBytes() - rss_before) / static_cast<double>(json.events);
}

void BM_ImportKinetoJson(benchmark::State& state) {
  ImportBenchmark(state, [] { return trace::ReadTraceFromBytes(Json().json, "generated.json"); });
}
BENCHMARK(BM_ImportKinetoJson)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_ImportKinetoJsonFile(benchmark::State& state) {
  const std::string& path = JsonPath();
  ImportBenchmark(state, [&] { return trace::ReadTrace(path); });
}
BENCHMARK(BM_ImportKinetoJsonFile)->Unit(benchmark::kMillisecond)->UseRealTime();

// The file on 1 or 2 threads: the import as `stepscope` runs it, with the thread count fixed.
void BM_ImportKinetoJsonThreads(benchmark::State& state) {
  const std::string path = g_json_file.empty() ? JsonPath() : g_json_file;
  const auto bytes = static_cast<int64_t>(std::filesystem::file_size(path));
  trace::ChromeJsonReadOptions options;
  options.threads = static_cast<int>(state.range(0));
  const int64_t rss_before = MaxRssBytes();
  int64_t slices = 0;
  for (auto _ : state) {
    auto reader = FileReader::Open(path);
    if (!reader.ok()) {
      state.SkipWithError(reader.status().message().c_str());
      return;
    }
    auto trace = trace::ReadChromeJson(**reader, {}, options);
    if (!trace.ok()) {
      state.SkipWithError(trace.status().message().c_str());
      return;
    }
    slices = static_cast<int64_t>(trace->slices().size());
    benchmark::DoNotOptimize(trace);
  }
  state.SetBytesProcessed(state.iterations() * bytes);
  state.counters["slices"] = static_cast<double>(slices);
  state.counters["MB"] = static_cast<double>(bytes) / 1e6;
  state.counters["peak_rss_B/slice"] = static_cast<double>(MaxRssBytes() - rss_before) / static_cast<double>(slices);
}
BENCHMARK(BM_ImportKinetoJsonThreads)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

// A trace of about g_events slices: the generated JSON cut to size.
const trace::Trace& Events() {
  static const trace::Trace* trace = [] {
    const size_t bytes = g_events * 382;  // ~382 bytes of JSON per slice in the generated mix
    const auto json = testing::GenerateKinetoJson(bytes);
    return new trace::Trace(trace::ReadTraceFromBytes(json.json, "events.json").value());
  }();
  return *trace;
}

template <typename F>
void RunAnalysis(benchmark::State& state, F analysis) {
  const trace::Trace& trace = Events();
  for (auto _ : state) benchmark::DoNotOptimize(analysis(trace));
  state.counters["slices"] = static_cast<double>(trace.slices().size());
  state.counters["slices/s"] = benchmark::Counter(
      static_cast<double>(state.iterations() * trace.slices().size()), benchmark::Counter::kIsRate);
}

void BM_OpStats(benchmark::State& s) { RunAnalysis(s, [](const trace::Trace& t) { return ComputeOpStats(t); }); }
void BM_Kernels(benchmark::State& s) { RunAnalysis(s, [](const trace::Trace& t) { return ComputeKernelStats(t); }); }
void BM_Memcpy(benchmark::State& s) { RunAnalysis(s, [](const trace::Trace& t) { return ComputeMemcpyStats(t); }); }
void BM_Streams(benchmark::State& s) { RunAnalysis(s, [](const trace::Trace& t) { return ComputeStreamStats(t); }); }
void BM_Overlap(benchmark::State& s) { RunAnalysis(s, [](const trace::Trace& t) { return ComputeOverlap(t); }); }
void BM_CriticalPath(benchmark::State& s) { RunAnalysis(s, [](const trace::Trace& t) { return ComputeCriticalPath(t); }); }
// One path per ProfilerStep#N window, as `stepscope critical-path` and the viewer find them, on
// a trace of about g_events slices with a step every 100 iterations (~300 slices a step).
void BM_CriticalPathPerStep(benchmark::State& state) {
  static const trace::Trace* trace = [] {
    const auto json = testing::GenerateKinetoJson(g_events * 382, {.iterations_per_step = 100});
    return new trace::Trace(trace::ReadTraceFromBytes(json.json, "steps.json").value());
  }();
  const std::vector<Step> steps = StepsOfTrace(*trace, /*with_totals=*/false);
  for (auto _ : state) {
    const CriticalPathFinder paths(*trace);
    for (const Step& step : steps) benchmark::DoNotOptimize(paths.Find(step.begin_ns, step.end_ns));
  }
  state.counters["steps"] = static_cast<double>(steps.size());
  state.counters["slices/s"] = benchmark::Counter(
      static_cast<double>(state.iterations() * trace->slices().size()), benchmark::Counter::kIsRate);
}
void BM_Memory(benchmark::State& s) { RunAnalysis(s, [](const trace::Trace& t) { return ComputeMemoryTimelines(t); }); }
void BM_Diff(benchmark::State& s) { RunAnalysis(s, [](const trace::Trace& t) { return DiffTraces(t, t); }); }
BENCHMARK(BM_OpStats)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Kernels)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Memcpy)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Streams)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Overlap)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_CriticalPath)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_CriticalPathPerStep)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Memory)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Diff)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace stepscope::analysis

int main(int argc, char** argv) {
  // Our own flags first; Google Benchmark rejects what it does not know.
  std::string write_ranks;
  int ranks = 8;
  bool shapes = false;  // --shapes: the ops' shapes too (record_shapes=True), for `efficiency`
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--json_mb=", 10) == 0) {
      stepscope::analysis::g_json_mb = std::strtoul(argv[i] + 10, nullptr, 10);
    } else if (std::strncmp(argv[i], "--json_file=", 12) == 0) {
      stepscope::analysis::g_json_file = argv[i] + 12;
    } else if (std::strncmp(argv[i], "--events=", 9) == 0) {
      stepscope::analysis::g_events = std::strtoul(argv[i] + 9, nullptr, 10);
    } else if (std::strncmp(argv[i], "--write_ranks=", 14) == 0) {
      write_ranks = argv[i] + 14;
    } else if (std::strcmp(argv[i], "--shapes") == 0) {
      shapes = true;
    } else if (std::strncmp(argv[i], "--ranks=", 8) == 0) {
      ranks = std::atoi(argv[i] + 8);
    } else {
      argv[kept++] = argv[i];
    }
  }
  argc = kept;
  if (!write_ranks.empty()) {
    std::filesystem::create_directories(write_ranks);
    for (int rank = 0; rank < ranks; ++rank) {
      const stepscope::analysis::testing::KinetoJsonOptions options{
          .rank = rank, .world_size = ranks, .iterations_per_step = 1000,
          .slow_kernel_ns = rank == ranks - 1 ? 2000 : 0, .shapes = shapes};
      const auto generated = stepscope::analysis::testing::GenerateKinetoJson(stepscope::analysis::g_json_mb << 20, options);
      const std::string path = write_ranks + "/rank" + std::to_string(rank) + ".json";
      const stepscope::Status written = stepscope::WriteFileAtomically(path, generated.json);
      if (!written.ok()) {
        std::fprintf(stderr, "%s\n", written.message().c_str());
        return 1;
      }
      std::printf("%s: %zu bytes, %lld slices\n", path.c_str(), generated.json.size(),
                  static_cast<long long>(generated.slices));
    }
    return 0;
  }
  const int status = stepscope::testing::RunBenchmarks(argc, argv);
  std::filesystem::remove_all(stepscope::testing::ScratchDir("analysis_benchmark"));  // the generated file
  return status;
}
