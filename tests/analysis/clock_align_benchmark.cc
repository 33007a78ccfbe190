// Speed of the collectives' alignment solve (analysis/clock_align.h AlignDigests) over many ranks,
// on generated digests (clock_digest_generator.h): 64 to 4,096 ranks, each in 80 collectives of the
// whole world and 20 of its group of 8 over two 1 s steps, clocks off by up to 5 s and 50 ppm.
// This is what process 0 of `mpirun -np N stepscope align` runs once the digests are gathered.
// Each run checks the answer: every rank's correction at its anchor within 20 µs of the truth
// (the ends scatter by 2 µs either way), else the benchmark fails.
// Run: build/release/tests/analysis/stepscope_clock_align_benchmark
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <map>
#include <string>

#include "analysis/clock_digest_generator.h"
#include "profiler/analysis/clock_align.h"

namespace stepscope::analysis {
namespace {

const testing::GeneratedClocks& Generated(int ranks) {
  static std::map<int, testing::GeneratedClocks> generated;
  auto found = generated.find(ranks);
  if (found == generated.end()) {
    found = generated.emplace(ranks, testing::GenerateClockDigests({.ranks = ranks})).first;
  }
  return found->second;
}

// The largest distance of a rank's correction at its anchor from the truth, in ns.
int64_t WorstError(const testing::GeneratedClocks& clocks, const AlignmentReport& report) {
  int64_t worst = 0;
  for (size_t r = 0; r < report.ranks.size(); ++r) {
    const RankClock& clock = report.ranks[r];
    const int64_t truth = clocks.TrueAt(clock.rank, clock.anchor_ns) - clock.anchor_ns;
    worst = std::max(worst, std::abs(clock.CorrectionAt(clock.anchor_ns) - truth));
  }
  return worst;
}

void BM_AlignCollectives(benchmark::State& state) {
  const testing::GeneratedClocks& clocks = Generated(static_cast<int>(state.range(0)));
  AlignmentReport report;
  for (auto _ : state) {
    report = AlignDigests(clocks.digests, AlignMethod::kCollectives);
    benchmark::DoNotOptimize(report);
  }
  if (report.method != AlignMethod::kCollectives) {
    state.SkipWithError("the collectives did not align the clocks");
    return;
  }
  const int64_t worst = WorstError(clocks, report);
  if (worst > 20'000) {
    state.SkipWithError(("a rank's correction is " + std::to_string(worst) + " ns off the truth").c_str());
    return;
  }
  state.counters["ranks"] = static_cast<double>(report.ranks.size());
  state.counters["rounds"] = report.solve_rounds;
  state.counters["worst_error_ns"] = static_cast<double>(worst);
  // Instances: a rank's part in a collective, each a term of the solve.
  state.counters["instances/s"] = benchmark::Counter(
      static_cast<double>(state.iterations() * clocks.matched_instances), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_AlignCollectives)->Arg(64)->Arg(256)->Arg(1024)->Arg(4096)->Unit(benchmark::kMillisecond)->UseRealTime();

// Long runs: each rank in `collectives` matches (a 1 GB trace holds about 180,000), so the cost of
// one rank's robust fit over many matches, per round, is what the time shows.
void BM_AlignLongRun(benchmark::State& state) {
  const int ranks = static_cast<int>(state.range(0));
  const int per_rank = static_cast<int>(state.range(1));
  const testing::GeneratedClocks clocks = testing::GenerateClockDigests(
      {.ranks = ranks, .steps = per_rank / 500, .world_collectives = 400, .group_collectives = 100});
  AlignmentReport report;
  for (auto _ : state) {
    report = AlignDigests(clocks.digests, AlignMethod::kCollectives);
    benchmark::DoNotOptimize(report);
  }
  const int64_t worst = WorstError(clocks, report);
  if (report.method != AlignMethod::kCollectives || worst > 20'000) {
    state.SkipWithError(("a rank's correction is " + std::to_string(worst) + " ns off the truth").c_str());
    return;
  }
  state.counters["rounds"] = report.solve_rounds;
  // Each rank is fitted once in the first pass, once per round and once for its residual.
  state.counters["rank_fits/s"] = benchmark::Counter(
      static_cast<double>(state.iterations() * ranks * (report.solve_rounds + 2)), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_AlignLongRun)->Args({2, 180'000})->Args({64, 10'000})->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace stepscope::analysis
