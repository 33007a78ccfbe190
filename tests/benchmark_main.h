// The one way our benchmark programs run their benchmarks: Google Benchmark's own main returns 0
// even when a benchmark called SkipWithError (a failed step, a wrong result), so a smoke run in
// ctest would pass whatever happened. RunBenchmarks reports as usual and returns 1 when any run
// reported an error, naming each.
#pragma once

#include <benchmark/benchmark.h>

namespace stepscope::testing {

// Initialize (after the caller took its own flags out of argv), run what the flags select,
// Shutdown. 0 when every run succeeded; 1 on an unknown flag or any run with an error.
int RunBenchmarks(int argc, char** argv);

}  // namespace stepscope::testing
