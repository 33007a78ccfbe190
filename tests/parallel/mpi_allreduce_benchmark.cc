// Bus bandwidth of the all-reduce across MPI ranks (MpiSession::AllReduceSum in place: the
// shared-memory window on one host, what the trainer runs between processes), as nccl-tests
// reports it: algbw = bytes per rank / time, busbw = algbw x 2(n-1)/n, beside this machine's
// memcpy bandwidth for the same size measured in the same run; `vs_memcpy` = busbw / memcpy_bw.
// 1 KB ... 256 MB per rank.
//
//   OMPI_MCA_btl=self,vader mpirun --oversubscribe --allow-run-as-root -np 2
//       build/.../tests/parallel/parallel_mpi_allreduce_benchmark --benchmark_counters_tabular=true
//
// Rank 0 runs Google Benchmark and prints; the other ranks follow. Google Benchmark fixes the
// iteration count of a run before it starts, so rank 0 broadcasts (bytes, iterations) and every
// rank then: fills its buffer with small integers that depend on its rank, all-reduces once and
// checks the exact sum (correctness, untimed), and runs the timed all-reduces. A (0, 0) command
// releases the followers. A wrong sum fails the run and makes the exit code 1. A failed MPI call
// ends the job (MPI_Abort), and a rank that exits or dies makes mpirun end it: no rank waits
// forever for a partner that is gone.
#include <benchmark/benchmark.h>

#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "tests/parallel/memcpy_bandwidth.h"
#include "trainer/parallel/mpi_session.h"

namespace stepscope::parallel {
namespace {

constexpr int64_t kMinBytes = int64_t{1} << 10;
constexpr int64_t kMaxBytes = int64_t{256} << 20;

// What every rank holds across the runs of one process.
struct RankState {
  MpiSession* mpi = nullptr;
  std::vector<float> buffer;
  int failed_runs = 0;  // rank 0: runs that reported an error
};

// A collective that failed leaves the ranks out of step: end every rank of the job.
[[noreturn]] void AbortJob(const MpiSession& mpi, const std::string& what) {
  std::fprintf(stderr, "rank %d: %s; ending the job\n", mpi.rank(), what.c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::_Exit(1);
}

// Element i of rank r: (i mod 7) + r. Sums over n ranks are small integers, exact in float.
float ValueOf(int64_t i, int rank) { return static_cast<float>(i % 7 + rank); }

// One run's untimed part on any rank: sized and filled buffer, one all-reduce, the exact sum
// checked here and agreed across ranks. Returns the number of ranks that saw a wrong sum.
int PrepareAndCheck(RankState& rank_state, int64_t bytes) {
  MpiSession& mpi = *rank_state.mpi;
  const int64_t elements = bytes / 4;
  rank_state.buffer.resize(static_cast<size_t>(elements));
  for (int64_t i = 0; i < elements; ++i) rank_state.buffer[i] = ValueOf(i, mpi.rank());
  if (!mpi.AllReduceSum(rank_state.buffer).ok()) AbortJob(mpi, "all-reduce failed");
  const int n = mpi.world_size();
  bool correct = true;
  for (int64_t i = 0; i < elements && correct; ++i) {
    correct = rank_state.buffer[i] == static_cast<float>(n * (i % 7) + n * (n - 1) / 2);
  }
  if (!correct) std::fprintf(stderr, "rank %d: wrong all-reduce sum for %lld bytes\n", mpi.rank(),
                             static_cast<long long>(bytes));
  std::vector<float> wrong_ranks = {correct ? 0.0f : 1.0f};
  if (!mpi.AllReduceSum(wrong_ranks).ok()) AbortJob(mpi, "all-reduce failed");
  return static_cast<int>(wrong_ranks[0]);
}

// The timed part: `iterations` all-reduces of the whole buffer. Values grow by a factor n per
// call and may reach inf, which costs nothing here and keeps refills out of the loop.
void RunAllReduces(RankState& rank_state, int64_t iterations) {
  for (int64_t k = 0; k < iterations; ++k) {
    if (!rank_state.mpi->AllReduceSum(rank_state.buffer).ok()) {
      AbortJob(*rank_state.mpi, "all-reduce failed");
    }
  }
}

// Rank 0's (bytes, iterations) to every rank; (0, 0) = stop.
std::vector<int64_t> ExchangeCommand(MpiSession& mpi, int64_t bytes, int64_t iterations) {
  std::vector<int64_t> command = {bytes, iterations};
  if (!mpi.Broadcast(std::span<int64_t>(command), 0).ok()) AbortJob(mpi, "MPI_Bcast failed");
  return command;
}

// Rank 0's benchmark body.
void BM_MpiAllReduce(benchmark::State& state, RankState* rank_state) {
  MpiSession& mpi = *rank_state->mpi;
  const int64_t bytes = state.range(0);
  // First of all, so the followers run exactly what this run runs.
  ExchangeCommand(mpi, bytes, static_cast<int64_t>(state.max_iterations));
  const int wrong = PrepareAndCheck(*rank_state, bytes);
  if (wrong != 0) {
    ++rank_state->failed_runs;
    state.SkipWithError(("wrong all-reduce sum on " + std::to_string(wrong) + " rank(s)").c_str());
    return;
  }
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    if (!mpi.AllReduceSum(rank_state->buffer).ok()) AbortJob(mpi, "all-reduce failed");
    benchmark::ClobberMemory();
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const int n = mpi.world_size();
  const double algbw =
      static_cast<double>(bytes) * static_cast<double>(state.iterations()) / seconds;
  const double busbw = algbw * 2.0 * (n - 1) / n;
  const double memcpy_bw = testing::MemcpyBandwidth(bytes);
  state.counters["ranks"] = n;
  state.counters["algbw"] = algbw;
  state.counters["busbw"] = busbw;
  state.counters["memcpy_bw"] = memcpy_bw;
  state.counters["vs_memcpy"] = busbw / memcpy_bw;
  state.SetBytesProcessed(state.iterations() * bytes);
}

// Ranks other than 0: run what rank 0 commands until it says stop.
void Follow(RankState& rank_state) {
  while (true) {
    const std::vector<int64_t> command = ExchangeCommand(*rank_state.mpi, 0, 0);
    const int64_t bytes = command[0];
    const int64_t iterations = command[1];
    if (bytes == 0) return;
    if (PrepareAndCheck(rank_state, bytes) != 0) continue;  // rank 0 skips the timed loop too
    RunAllReduces(rank_state, iterations);
  }
}

int Main(int argc, char** argv) {
  auto session = MpiSession::Create();
  if (!session.ok()) {
    std::fprintf(stderr, "MPI: %s\n", session.status().message().c_str());
    return 1;
  }
  RankState rank_state;
  rank_state.mpi = session->get();
  MpiSession& mpi = **session;
  if (mpi.world_size() < 2) {
    std::fprintf(stderr,
                 "run under MPI with at least 2 ranks, e.g. mpirun --oversubscribe "
                 "--allow-run-as-root -np 2 %s (world size is %d)\n",
                 argv[0], mpi.world_size());
    return 2;
  }
  if (mpi.rank() != 0) {
    Follow(rank_state);
    return 0;
  }

  benchmark::Initialize(&argc, argv);
  const bool bad_flags = benchmark::ReportUnrecognizedArguments(argc, argv);
  if (!bad_flags) {
    benchmark::RegisterBenchmark("BM_MpiAllReduce", BM_MpiAllReduce, &rank_state)
        ->RangeMultiplier(4)
        ->Range(kMinBytes, kMaxBytes)
        ->UseRealTime()
        ->Unit(benchmark::kMicrosecond);
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
  }
  ExchangeCommand(mpi, 0, 0);
  if (bad_flags) return 2;
  return rank_state.failed_runs == 0 ? 0 : 1;
}

}  // namespace
}  // namespace stepscope::parallel

int main(int argc, char** argv) { return stepscope::parallel::Main(argc, argv); }
