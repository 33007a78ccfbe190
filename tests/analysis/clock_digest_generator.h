// Generates the clock digests (analysis/clock_align.h ClockDigest) of a many-rank job, as the ranks'
// traces would give them, for the alignment solve's benchmark and scale tests: every rank takes part
// in collectives of the whole world and of its tensor-parallel group of 8, each rank's clock is
// off by a known offset and drift, ends scatter by a jitter and (optionally) a few are late by up
// to 1 ms.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "profiler/analysis/clock_align.h"

namespace stepscope::analysis::testing {

struct ClockDigestOptions {
  int ranks = 64;
  int steps = 2;
  int world_collectives = 40;   // per step, over every rank
  int group_collectives = 10;   // per step, over each group of `group_size` ranks
  int group_size = 8;
  int64_t step_ns = 1'000'000'000;
  int64_t max_offset_ns = 5'000'000'000;  // each rank's clock off by up to this, either way
  double max_drift_ppm = 50;
  int64_t jitter_ns = 2'000;              // each end scattered by up to this, either way (earliest: late)
  double late_fraction = 0;               // of the ends, late by up to 1 ms
  bool earliest = false;                  // our trainer's records (the earliest end counts), else NCCL's
  uint64_t seed = 1;
};

struct GeneratedClocks {
  std::vector<ClockDigest> digests;  // one per rank, in rank order
  // Per rank, its clock's reading at true time t: t + offset + drift x (t - origin). Rank 0 reads
  // true time.
  std::vector<int64_t> offset_ns;
  std::vector<double> drift_ppm;
  int64_t origin_ns = 0;
  int64_t matched_instances = 0;  // collective instances over all ranks
  int64_t ReadAt(int rank, int64_t true_ns) const {  // rank's clock at true time
    return true_ns + offset_ns[rank] +
           static_cast<int64_t>(std::llround(drift_ppm[rank] * 1e-6 * static_cast<double>(true_ns - origin_ns)));
  }
  // The true time at which rank's clock reads `read_ns` (to within a ns).
  int64_t TrueAt(int rank, int64_t read_ns) const {
    return origin_ns + std::llround(static_cast<double>(read_ns - offset_ns[rank] - origin_ns) /
                                    (1 + drift_ppm[rank] * 1e-6));
  }
};

inline GeneratedClocks GenerateClockDigests(const ClockDigestOptions& options) {
  GeneratedClocks out;
  std::mt19937_64 random(options.seed);
  auto uniform = [&](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(random); };
  out.origin_ns = 1'700'000'000'000'000'000;  // a Unix epoch in ns, as real traces record
  out.offset_ns.assign(options.ranks, 0);
  out.drift_ppm.assign(options.ranks, 0);
  for (int r = 1; r < options.ranks; ++r) {
    out.offset_ns[r] = std::llround(uniform(-1, 1) * static_cast<double>(options.max_offset_ns));
    out.drift_ppm[r] = uniform(-1, 1) * options.max_drift_ppm;
  }
  out.digests.resize(options.ranks);
  for (int r = 0; r < options.ranks; ++r) {
    out.digests[r].source = "rank" + std::to_string(r) + ".json";
    out.digests[r].rank = r;
    out.digests[r].host = "host" + std::to_string(r / 8);
  }
  // A collective's true end, and each member's end on its own clock.
  auto add = [&](const CollectiveKey& key, int64_t true_end, int first, int count) {
    for (int r = first; r < first + count; ++r) {
      // Our trainer's records end late only (a rank descheduled before it records the end).
      const double scatter = options.earliest ? uniform(0, 1) : uniform(-1, 1);
      int64_t end = true_end + std::llround(scatter * static_cast<double>(options.jitter_ns));
      if (uniform(0, 1) < options.late_fraction) end += std::llround(uniform(0, 1e6));
      const int64_t read = out.ReadAt(r, end);
      out.digests[r].collectives[key].push_back(
          {.end_ns = read, .start_ns = read - 50'000, .input = static_cast<size_t>(r), .slice = 0});
      ++out.matched_instances;
    }
  };
  const int per_step = options.world_collectives + options.group_collectives;
  for (int step = 0; step < options.steps; ++step) {
    const int64_t step_begin = out.origin_ns + step * options.step_ns;
    for (int c = 0; c < per_step; ++c) {
      const int64_t true_end = step_begin + (c + 1) * (options.step_ns / (per_step + 1));
      if (c < options.world_collectives) {
        add({.earliest = options.earliest, .group = "world", .name = "nccl:allreduce", .step = step}, true_end, 0,
            options.ranks);
        continue;
      }
      for (int first = 0; first < options.ranks; first += options.group_size) {
        const int count = std::min(options.group_size, options.ranks - first);
        add({.earliest = options.earliest, .group = "tp" + std::to_string(first / options.group_size),
             .name = "nccl:allreduce", .step = step},
            true_end, first, count);
      }
    }
  }
  return out;
}

}  // namespace stepscope::analysis::testing
