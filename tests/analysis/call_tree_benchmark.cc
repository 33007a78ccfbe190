// Speed of the call tree (analysis/call_tree.h) over a selection of N generated slices (the
// synthetic trace of `stepscope-view --synthetic N`: CPU ops nested up to three levels on four
// threads, kernels on four streams), the host selected, which stands for every lane below it (an
// area over all the tracks in the viewer): all N slices counted, the GPU streams' too (the
// viewer's "whole trace" leaves the GPU lanes out). The trace is made once, outside the timing:
// a repetition times the tree alone, top-down, and with the bottom-up tree built from it. The
// figure to keep: 10 M slices in at most 1 s. The first repetition is a process's first build
// (fresh pages), the one a user waits for first.
// Run: build/release/tests/analysis/stepscope_call_tree_benchmark --benchmark_filter=10000000
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <map>
#include <memory>

#include "profiler/analysis/call_tree.h"
#include "profiler/testing/synthetic_trace.h"

namespace stepscope::analysis {
namespace {

const trace::Trace& Synthetic(int64_t slices) {
  static std::map<int64_t, std::unique_ptr<trace::Trace>> traces;
  auto& trace = traces[slices];
  if (!trace) trace = std::make_unique<trace::Trace>(synthetic::MakeSyntheticTrace(slices));
  return *trace;
}

void Run(benchmark::State& state, bool bottom_up) {
  const trace::Trace& trace = Synthetic(state.range(0));
  // The host stands for every track below it: the CPU threads and the GPU streams.
  const CallTreeOptions everything{.tracks = {0}};
  int64_t counted = 0;
  // Page faults per build: a process's first build touches fresh pages where later ones may
  // reuse its freed memory (run with --benchmark_repetitions=3: the first repetition is the first).
  auto minor_faults = [] {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    return static_cast<double>(usage.ru_minflt);
  };
  // CPU time of every thread of the process, the kernel's (zeroing fresh pages) included: on a
  // shared machine the figure that moves least with the other jobs.
  auto process_cpu_s = [] {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6; };
    return seconds(usage.ru_utime) + seconds(usage.ru_stime);
  };
  const double faults_before = minor_faults();
  const double cpu_before = process_cpu_s();
  for (auto _ : state) {
    CallTree tree = ComputeCallTree(trace, everything);
    if (bottom_up) tree = BottomUpTree(tree);
    counted = tree.slices;
    benchmark::DoNotOptimize(tree);
  }
  state.counters["slices"] = static_cast<double>(counted);
  state.counters["minor_faults"] = (minor_faults() - faults_before) / static_cast<double>(state.iterations());
  state.counters["process_cpu_s"] = (process_cpu_s() - cpu_before) / static_cast<double>(state.iterations());
  state.counters["slices/s"] =
      benchmark::Counter(static_cast<double>(state.iterations() * counted), benchmark::Counter::kIsRate);
}

void BM_CallTree(benchmark::State& state) { Run(state, false); }
void BM_CallTreeBottomUp(benchmark::State& state) { Run(state, true); }
BENCHMARK(BM_CallTree)->Arg(100'000)->Arg(1'000'000)->Arg(10'000'000)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_CallTreeBottomUp)->Arg(100'000)->Arg(1'000'000)->Arg(10'000'000)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace stepscope::analysis
