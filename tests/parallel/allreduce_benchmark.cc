// Bus bandwidth of the in-process ring all-reduce (nccl-tests' busbw = algbw * 2(n-1)/n) over
// 2-4 participants for 1 KB ... 256 MB, beside this machine's memcpy bandwidth for the same size,
// measured in the same run; `vs_memcpy` is busbw / memcpy bandwidth. Each participant's buffer
// holds the full size.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <vector>

#include "tests/parallel/memcpy_bandwidth.h"
#include "trainer/parallel/all_reducer.h"

namespace stepscope::parallel {
namespace {

constexpr int64_t kMinBytes = int64_t{1} << 10;
constexpr int64_t kMaxBytes = int64_t{256} << 20;

void BM_Memcpy(benchmark::State& state) {
  const int64_t bytes = state.range(0);
  std::vector<char> source(static_cast<size_t>(bytes), 1), target(static_cast<size_t>(bytes), 0);
  for (auto _ : state) {
    std::memcpy(target.data(), source.data(), source.size());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * bytes);
}
BENCHMARK(BM_Memcpy)->RangeMultiplier(4)->Range(kMinBytes, kMaxBytes)->UseRealTime();

void BM_RingAllReduce(benchmark::State& state) {
  const int participants = static_cast<int>(state.range(0));
  const int64_t bytes = state.range(1);
  const int64_t elements = bytes / 4;
  auto reducer = AllReducer::Create(*ParseAllReduceSpec("ring"), participants, {});
  if (!reducer.ok()) {
    state.SkipWithError(reducer.status().message().c_str());
    return;
  }
  std::vector<std::vector<float>> buffers(participants, std::vector<float>(elements, 0.5f));
  GradientReplicas gradient{"bench/grad", {}, elements};
  for (auto& buffer : buffers) gradient.replicas.push_back(buffer.data());
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    // Values grow by a factor N per call; a float overflows to inf after many calls, which
    // costs nothing on this hardware and keeps the loop free of refills.
    if (!(*reducer)->AllReduce(std::span<const GradientReplicas>(&gradient, 1)).ok()) {
      state.SkipWithError("all-reduce failed");
      return;
    }
    benchmark::ClobberMemory();
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double algbw = static_cast<double>(bytes) * static_cast<double>(state.iterations()) /
                       seconds;
  const double busbw = algbw * 2.0 * (participants - 1) / participants;
  const double memcpy_bw = testing::MemcpyBandwidth(bytes);
  // Plain numbers in bytes per second (printed with k/M/G prefixes), and their ratio.
  state.counters["algbw"] = algbw;
  state.counters["busbw"] = busbw;
  state.counters["memcpy_bw"] = memcpy_bw;
  state.counters["vs_memcpy"] = busbw / memcpy_bw;
  state.SetBytesProcessed(state.iterations() * bytes);
}
BENCHMARK(BM_RingAllReduce)
    ->ArgsProduct({{2, 3, 4}, benchmark::CreateRange(kMinBytes, kMaxBytes, 4)})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace stepscope::parallel
