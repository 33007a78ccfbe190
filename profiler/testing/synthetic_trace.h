// A generated trace of any size for benchmarks and scale tests (`stepscope-view --bench
// --synthetic N`): one host with a CPU device (four executor threads whose ops nest up to three
// levels, as PyTorch CPU ops do) and a GPU device (four streams of back-to-back kernels, a
// quarter of them with a launch flow from a CPU op), with `allocator` its allocator's bytes in
// use sampled every 32 kernels (the counter GPU_0_bfc; the bench's memory track). 120 op types, about 5000 node names, a
// fixed seed: the same N always gives the same trace.
#pragma once

#include <cstdint>

#include "profiler/trace/trace.h"

namespace stepscope::synthetic {

trace::Trace MakeSyntheticTrace(int64_t slice_count, uint64_t seed = 1, bool allocator = false);

}  // namespace stepscope::synthetic
