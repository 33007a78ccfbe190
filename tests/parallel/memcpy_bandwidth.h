// The baseline the all-reduce benchmarks compare with: this machine's memcpy bandwidth for a
// given size, measured in the same run as the collective so both see the same machine load.
#pragma once

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <vector>

namespace stepscope::parallel::testing {

// Bytes copied per second by memcpy of `bytes`: best of 3 rounds of at least 20 ms each.
inline double MemcpyBandwidth(int64_t bytes) {
  std::vector<char> source(static_cast<size_t>(bytes), 1), target(static_cast<size_t>(bytes), 0);
  std::memcpy(target.data(), source.data(), source.size());  // fault the pages in
  double best = 0;
  for (int round = 0; round < 3; ++round) {
    const auto start = std::chrono::steady_clock::now();
    int64_t copies = 0;
    double seconds = 0;
    do {
      std::memcpy(target.data(), source.data(), source.size());
      benchmark::ClobberMemory();
      ++copies;
      seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    } while (seconds < 0.02);
    best = std::max(best, static_cast<double>(bytes) * static_cast<double>(copies) / seconds);
  }
  return best;
}

}  // namespace stepscope::parallel::testing
