// Allocate/free cost of the BFC allocator against malloc/free: one size at a time, a mixed
// working set freed in random order (the pattern of a training step), and two threads sharing
// one allocator. Run: build/.../runtime_allocator_benchmark [--benchmark_min_time=1]
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <random>
#include <vector>

#include "trainer/runtime/bfc_allocator.h"
#include "trainer/runtime/cpu_sub_allocator.h"

namespace stepscope::runtime {
namespace {

constexpr int64_t kLimit = int64_t{1} << 30;

std::unique_ptr<BFCAllocator> NewAllocator() {
  return std::make_unique<BFCAllocator>(std::make_unique<CpuSubAllocator>(), kLimit, "cpu");
}

// One allocate + free of a fixed size (the steady state reuses one chunk).
void BM_BfcAllocateFree(benchmark::State& state) {
  auto allocator = NewAllocator();
  const auto bytes = static_cast<size_t>(state.range(0));
  for (auto _ : state) {
    void* p = *allocator->Allocate(bytes);
    benchmark::DoNotOptimize(p);
    allocator->Deallocate(p);
  }
  state.SetItemsProcessed(state.iterations());  // allocate/free pairs
}
BENCHMARK(BM_BfcAllocateFree)->Arg(256)->Arg(64 << 10)->Arg(4 << 20);

void BM_MallocFree(benchmark::State& state) {
  const auto bytes = static_cast<size_t>(state.range(0));
  for (auto _ : state) {
    void* p = std::malloc(bytes);
    benchmark::DoNotOptimize(p);
    std::free(p);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_MallocFree)->Arg(256)->Arg(64 << 10)->Arg(4 << 20);

// 256 live tensors of log-uniform sizes (256 B .. 1 MiB), freed in a shuffled order, as a step's
// activations and gradients come and go.
struct WorkingSet {
  std::vector<size_t> sizes;
  std::vector<size_t> free_order;
  explicit WorkingSet(int count) {
    std::mt19937 rng(7);
    std::uniform_real_distribution<double> exponent(8.0, 20.0);
    for (int i = 0; i < count; ++i) sizes.push_back(static_cast<size_t>(std::exp2(exponent(rng))));
    for (int i = 0; i < count; ++i) free_order.push_back(static_cast<size_t>(i));
    std::shuffle(free_order.begin(), free_order.end(), rng);
  }
};

template <typename AllocateFn, typename FreeFn>
void RunWorkingSet(benchmark::State& state, AllocateFn allocate, FreeFn release) {
  const WorkingSet set(256);
  std::vector<void*> live(set.sizes.size());
  for (auto _ : state) {
    for (size_t i = 0; i < set.sizes.size(); ++i) live[i] = allocate(set.sizes[i]);
    for (size_t i : set.free_order) release(live[i]);
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(set.sizes.size()));
}

void BM_BfcWorkingSet(benchmark::State& state) {
  auto allocator = NewAllocator();
  RunWorkingSet(
      state, [&](size_t bytes) { return *allocator->Allocate(bytes); },
      [&](void* p) { allocator->Deallocate(p); });
}
BENCHMARK(BM_BfcWorkingSet);

void BM_MallocWorkingSet(benchmark::State& state) {
  RunWorkingSet(
      state, [](size_t bytes) { return std::malloc(bytes); }, [](void* p) { std::free(p); });
}
BENCHMARK(BM_MallocWorkingSet);

// Threads contending for one allocator's lock.
BFCAllocator* shared_allocator = nullptr;
void BM_BfcSharedByThreads(benchmark::State& state) {
  if (state.thread_index() == 0) shared_allocator = NewAllocator().release();
  const size_t bytes = 4096;
  for (auto _ : state) {
    void* p = *shared_allocator->Allocate(bytes);
    benchmark::DoNotOptimize(p);
    shared_allocator->Deallocate(p);
  }
  state.SetItemsProcessed(state.iterations());
  if (state.thread_index() == 0) {
    // Benchmark's threads finish the timed loop together before teardown.
    delete shared_allocator;
    shared_allocator = nullptr;
  }
}
BENCHMARK(BM_BfcSharedByThreads)->Threads(1)->Threads(2);

}  // namespace
}  // namespace stepscope::runtime
