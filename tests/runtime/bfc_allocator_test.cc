// Tests of the BFC allocator: exact chunk layouts after allocate/free patterns (splitting,
// coalescing, best fit), region growth and the memory limit, statistics, allocation ids, the
// observer hook, many threads at once, and a randomized run checked step by step against a
// reference model of best fit.
#include "trainer/runtime/bfc_allocator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "trainer/runtime/clock.h"
#include "trainer/runtime/cpu_sub_allocator.h"

namespace stepscope::runtime {
namespace {

constexpr int64_t kKiB = 1024;
constexpr int64_t kMiB = 1024 * 1024;

using ChunkInfo = BFCAllocator::ChunkInfo;

// Host memory that remembers the region sizes it handed out.
class RecordingSubAllocator final : public SubAllocator {
 public:
  explicit RecordingSubAllocator(std::vector<size_t>* sizes,
                                 std::map<const char*, size_t>* starts = nullptr)
      : sizes_(sizes), starts_(starts) {}
  void* Alloc(size_t alignment, size_t bytes) override {
    sizes_->push_back(bytes);
    void* ptr = cpu_.Alloc(alignment, bytes);
    if (starts_ != nullptr && ptr != nullptr) (*starts_)[static_cast<const char*>(ptr)] = bytes;
    return ptr;
  }
  void Free(void* ptr, size_t bytes) override { cpu_.Free(ptr, bytes); }

 private:
  std::vector<size_t>* sizes_;
  std::map<const char*, size_t>* starts_;
  CpuSubAllocator cpu_;
};

std::unique_ptr<BFCAllocator> MakeAllocator(int64_t limit, int64_t initial_region,
                                            std::vector<size_t>* region_sizes = nullptr,
                                            const std::string& name = "cpu") {
  std::unique_ptr<SubAllocator> sub;
  if (region_sizes != nullptr) {
    sub = std::make_unique<RecordingSubAllocator>(region_sizes);
  } else {
    sub = std::make_unique<CpuSubAllocator>();
  }
  return std::make_unique<BFCAllocator>(std::move(sub), limit, name,
                                        BFCAllocator::Options{initial_region});
}

void* MustAllocate(Allocator& allocator, size_t bytes) {
  StatusOr<void*> result = allocator.Allocate(bytes);
  EXPECT_TRUE(result.ok()) << result.status().message();
  return result.ok() ? *result : nullptr;
}

const char* At(const void* base, int64_t offset) { return static_cast<const char*>(base) + offset; }

TEST(BfcAllocatorTest, RoundingAndBinsFollowTensorFlow) {
  EXPECT_EQ(BFCAllocator::RoundedBytes(0), 256u);
  EXPECT_EQ(BFCAllocator::RoundedBytes(1), 256u);
  EXPECT_EQ(BFCAllocator::RoundedBytes(256), 256u);
  EXPECT_EQ(BFCAllocator::RoundedBytes(257), 512u);
  EXPECT_EQ(BFCAllocator::RoundedBytes(1000), 1024u);
  EXPECT_EQ(BFCAllocator::BinForSize(256), 0);
  EXPECT_EQ(BFCAllocator::BinForSize(511), 0);
  EXPECT_EQ(BFCAllocator::BinForSize(512), 1);
  EXPECT_EQ(BFCAllocator::BinForSize(1024), 2);
  EXPECT_EQ(BFCAllocator::BinForSize(size_t{256} << 19), 19);
  EXPECT_EQ(BFCAllocator::BinForSize(size_t{256} << 20), 20);
  EXPECT_EQ(BFCAllocator::BinForSize(size_t{1} << 40), 20);  // the last bin takes the rest
}

TEST(BfcAllocatorTest, FirstAllocationSplitsTheRegion) {
  auto allocator = MakeAllocator(64 * kMiB, 1 * kMiB);
  void* a = MustAllocate(*allocator, 100);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % 256, 0u);
  EXPECT_EQ(allocator->AllocationId(a), 1);
  EXPECT_EQ(allocator->RequestedSize(a), 100);
  EXPECT_EQ(allocator->AllocatedSize(a), 256);
  const std::vector<ChunkInfo> expected = {
      {a, 256, 100, 1, -1},
      {At(a, 256), kMiB - 256, 0, -1, BFCAllocator::BinForSize(kMiB - 256)},
  };
  EXPECT_EQ(allocator->Chunks(), expected);
  EXPECT_EQ(allocator->NumRegions(), 1);
  allocator->Deallocate(a);
  EXPECT_EQ(allocator->Chunks(), (std::vector<ChunkInfo>{{a, kMiB, 0, -1, 12}}));
}

TEST(BfcAllocatorTest, FreeingTheMiddleThenItsNeighboursCoalescesIntoOneChunk) {
  auto allocator = MakeAllocator(64 * kMiB, 1 * kMiB);
  void* a = MustAllocate(*allocator, 1024);
  void* b = MustAllocate(*allocator, 1024);
  void* c = MustAllocate(*allocator, 1024);
  ASSERT_EQ(b, At(a, 1024));
  ASSERT_EQ(c, At(a, 2048));
  const int64_t rest = kMiB - 3072;
  const int rest_bin = BFCAllocator::BinForSize(static_cast<size_t>(rest));

  allocator->Deallocate(b);  // a hole between two live chunks: nothing to merge with
  EXPECT_EQ(allocator->Chunks(), (std::vector<ChunkInfo>{{a, 1024, 1024, 1, -1},
                                                         {b, 1024, 0, -1, 2},
                                                         {c, 1024, 1024, 3, -1},
                                                         {At(a, 3072), rest, 0, -1, rest_bin}}));
  allocator->Deallocate(a);  // merges with the free next neighbour
  EXPECT_EQ(allocator->Chunks(), (std::vector<ChunkInfo>{{a, 2048, 0, -1, 3},
                                                         {c, 1024, 1024, 3, -1},
                                                         {At(a, 3072), rest, 0, -1, rest_bin}}));
  allocator->Deallocate(c);  // merges with both neighbours: the region is one chunk again
  EXPECT_EQ(allocator->Chunks(), (std::vector<ChunkInfo>{{a, kMiB, 0, -1, 12}}));
  // The whole region is usable as one block without asking for more memory.
  void* whole = MustAllocate(*allocator, kMiB);
  EXPECT_EQ(whole, a);
  EXPECT_EQ(allocator->NumRegions(), 1);
  allocator->Deallocate(whole);
}

TEST(BfcAllocatorTest, BestFitPicksTheSmallestHoleThatFits) {
  auto allocator = MakeAllocator(64 * kMiB, 1 * kMiB);
  // Holes of 4096, 2048 and 3072 bytes, in that address order, each fenced by a live chunk.
  std::vector<void*> live;
  void* hole4k = MustAllocate(*allocator, 4096);
  live.push_back(MustAllocate(*allocator, 256));
  void* hole2k = MustAllocate(*allocator, 2048);
  live.push_back(MustAllocate(*allocator, 256));
  void* hole3k = MustAllocate(*allocator, 3072);
  live.push_back(MustAllocate(*allocator, 256));
  allocator->Deallocate(hole4k);
  allocator->Deallocate(hole2k);
  allocator->Deallocate(hole3k);

  void* p3 = MustAllocate(*allocator, 2500);  // 2560 rounded: 3072 is the tightest fit
  EXPECT_EQ(p3, hole3k);
  EXPECT_EQ(allocator->AllocatedSize(p3), 3072);  // 3072 < 2 * 2560: handed out whole
  void* p2 = MustAllocate(*allocator, 2000);      // 2048 rounded: the 2048 hole exactly
  EXPECT_EQ(p2, hole2k);
  EXPECT_EQ(allocator->AllocatedSize(p2), 2048);
  void* p1 = MustAllocate(*allocator, 1000);  // only the 4096 hole is left below the tail
  EXPECT_EQ(p1, hole4k);
  EXPECT_EQ(allocator->AllocatedSize(p1), 1024);  // 4096 >= 2 * 1024: split
  const std::vector<ChunkInfo> chunks = allocator->Chunks();
  ASSERT_GE(chunks.size(), 2u);
  EXPECT_EQ(chunks[1], (ChunkInfo{At(hole4k, 1024), 3072, 0, -1, 3}));
  for (void* p : {p1, p2, p3}) allocator->Deallocate(p);
  for (void* p : live) allocator->Deallocate(p);
  EXPECT_EQ(allocator->Chunks().size(), 1u);
}

TEST(BfcAllocatorTest, RequestedAndAllocatedSizesDiffer) {
  auto allocator = MakeAllocator(64 * kMiB, 1 * kMiB);
  void* hole = MustAllocate(*allocator, 1024);
  void* fence = MustAllocate(*allocator, 1);
  allocator->Deallocate(hole);
  void* p = MustAllocate(*allocator, 700);  // rounded 768; the 1024 hole is not split
  EXPECT_EQ(p, hole);
  EXPECT_EQ(allocator->RequestedSize(p), 700);
  EXPECT_EQ(allocator->AllocatedSize(p), 1024);
  EXPECT_EQ(allocator->RequestedSize(fence), 1);
  EXPECT_EQ(allocator->AllocatedSize(fence), 256);
  EXPECT_EQ(allocator->Stats().bytes_in_use, 1024 + 256);
  allocator->Deallocate(p);
  allocator->Deallocate(fence);
}

TEST(BfcAllocatorTest, RegionsGrowByDoubling) {
  std::vector<size_t> regions;
  auto allocator = MakeAllocator(64 * kMiB, 1 * kMiB, &regions);
  EXPECT_EQ(allocator->Stats().bytes_reserved, 0);  // nothing is reserved before the first use
  void* a = MustAllocate(*allocator, 512 * kKiB);
  void* b = MustAllocate(*allocator, 512 * kKiB);
  EXPECT_EQ(regions, (std::vector<size_t>{1 * kMiB}));
  void* c = MustAllocate(*allocator, 512 * kKiB);  // the next region doubles
  EXPECT_EQ(regions, (std::vector<size_t>{1 * kMiB, 2 * kMiB}));
  // Larger than the next region (4 MiB): the region doubles until it fits (16 MiB).
  void* d = MustAllocate(*allocator, 10 * kMiB);
  EXPECT_EQ(regions, (std::vector<size_t>{1 * kMiB, 2 * kMiB, 16 * kMiB}));
  EXPECT_EQ(allocator->NumRegions(), 3);
  EXPECT_EQ(allocator->Stats().bytes_reserved, 19 * kMiB);
  for (void* p : {a, b, c, d}) allocator->Deallocate(p);
  // Each region coalesces on its own: one free chunk per region, never merged across regions.
  const std::vector<ChunkInfo> chunks = allocator->Chunks();
  ASSERT_EQ(chunks.size(), 3u);
  for (const ChunkInfo& chunk : chunks) EXPECT_FALSE(chunk.in_use());
  EXPECT_EQ(allocator->Stats().bytes_reserved, 19 * kMiB);  // regions are kept for reuse
}

TEST(BfcAllocatorTest, TheLastRegionIsCappedByTheLimit) {
  std::vector<size_t> regions;
  auto allocator = MakeAllocator(5 * kMiB, 2 * kMiB, &regions);
  void* a = MustAllocate(*allocator, 2 * kMiB);
  // The next region would be 4 MiB; only 3 MiB remain under the limit.
  void* b = MustAllocate(*allocator, 1536 * kKiB);
  EXPECT_EQ(regions, (std::vector<size_t>{2 * kMiB, 3 * kMiB}));
  void* c = MustAllocate(*allocator, 1536 * kKiB);  // the split-off tail of the capped region
  EXPECT_EQ(c, At(b, 1536 * kKiB));
  EXPECT_FALSE(allocator->Allocate(1).ok());
  for (void* p : {a, b, c}) allocator->Deallocate(p);
}

TEST(BfcAllocatorTest, ExhaustionIsAnErrorNamingAllocatorSizesAndLimit) {
  auto allocator = MakeAllocator(1 * kMiB, 1 * kMiB, nullptr, "GPU_0_bfc");
  void* a = MustAllocate(*allocator, 384 * kKiB);  // splits the 1 MiB region: 640 KiB stay free
  StatusOr<void*> too_much = allocator->Allocate(768 * kKiB);
  ASSERT_FALSE(too_much.ok());
  EXPECT_EQ(too_much.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(too_much.status().message(),
            "allocator GPU_0_bfc ran out of memory trying to allocate 786432 bytes (rounded to "
            "786432): 393216 bytes in use, 1048576 bytes reserved, limit 1048576 bytes");
  // More than the limit at all, and sizes whose rounding would overflow.
  EXPECT_EQ(allocator->Allocate(2 * kMiB).status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(allocator->Allocate(SIZE_MAX).status().code(), StatusCode::kResourceExhausted);
  // A failure changes nothing: after the free the same request succeeds.
  const AllocatorStats before = allocator->Stats();
  EXPECT_EQ(before.num_allocs, 1);
  EXPECT_EQ(before.bytes_in_use, 384 * kKiB);
  allocator->Deallocate(a);
  void* b = MustAllocate(*allocator, 768 * kKiB);
  EXPECT_EQ(b, a);
  EXPECT_EQ(allocator->AllocatedSize(b), 1 * kMiB);  // 1 MiB < 2 * 768 KiB: not split
  allocator->Deallocate(b);
}

TEST(BfcAllocatorTest, StatisticsTrackUsePeakAndLargest) {
  auto allocator = MakeAllocator(64 * kMiB, 1 * kMiB, nullptr, "cpu");
  EXPECT_EQ(allocator->Name(), "cpu");
  EXPECT_EQ(allocator->Stats(), (AllocatorStats{0, 0, 0, 0, 64 * kMiB, 0}));
  void* a = MustAllocate(*allocator, 1000);    // 1024
  void* b = MustAllocate(*allocator, 5000);    // 5120
  void* c = MustAllocate(*allocator, 300000);  // 300032
  EXPECT_EQ(allocator->Stats(), (AllocatorStats{3, 1024 + 5120 + 300032, 1024 + 5120 + 300032,
                                                300032, 64 * kMiB, 1 * kMiB}));
  allocator->Deallocate(c);
  void* d = MustAllocate(*allocator, 256);
  EXPECT_EQ(allocator->Stats(), (AllocatorStats{4, 1024 + 5120 + 256, 1024 + 5120 + 300032, 300032,
                                                64 * kMiB, 1 * kMiB}));
  for (void* p : {a, b, d}) allocator->Deallocate(p);
  const AllocatorStats after = allocator->Stats();
  EXPECT_EQ(after.bytes_in_use, 0);
  EXPECT_EQ(after.peak_bytes_in_use, 1024 + 5120 + 300032);
  EXPECT_EQ(after.num_allocs, 4);
}

TEST(BfcAllocatorTest, AllocationIdsIncreaseFromOneAndAreNeverReused) {
  auto allocator = MakeAllocator(64 * kMiB, 1 * kMiB);
  void* a = MustAllocate(*allocator, 10);
  void* b = MustAllocate(*allocator, 10);
  EXPECT_EQ(allocator->AllocationId(a), 1);
  EXPECT_EQ(allocator->AllocationId(b), 2);
  allocator->Deallocate(a);
  void* c = MustAllocate(*allocator, 10);
  EXPECT_EQ(c, a);                           // the same memory...
  EXPECT_EQ(allocator->AllocationId(c), 3);  // ...under a new id
  allocator->Deallocate(b);
  allocator->Deallocate(c);
}

TEST(BfcAllocatorTest, ZeroBytesIsNullAndFreeingNullIsANoOp) {
  auto allocator = MakeAllocator(64 * kMiB, 1 * kMiB);
  StatusOr<void*> zero = allocator->Allocate(0);
  ASSERT_TRUE(zero.ok());
  EXPECT_EQ(*zero, nullptr);
  allocator->Deallocate(nullptr);
  EXPECT_EQ(allocator->Stats().num_allocs, 0);
  EXPECT_EQ(allocator->Stats().bytes_reserved, 0);
}

TEST(BfcAllocatorDeathTest, FreeingForeignOrFreedMemoryIsABug) {
  auto allocator = MakeAllocator(64 * kMiB, 1 * kMiB);
  void* a = MustAllocate(*allocator, 512);
  int on_stack = 0;
  EXPECT_DEATH(allocator->Deallocate(&on_stack), "CHECK failed");
  EXPECT_DEATH(allocator->Deallocate(const_cast<char*>(At(a, 256))), "CHECK failed");
  allocator->Deallocate(a);
  EXPECT_DEATH(allocator->Deallocate(a), "CHECK failed");
  EXPECT_DEATH((void)allocator->AllocationId(a), "CHECK failed");
}

class RecordingObserver final : public AllocationObserver {
 public:
  void OnAllocation(const Allocator& allocator, const AllocationEvent& event) override {
    names.push_back(allocator.Name());
    events.push_back(event);
  }
  std::vector<std::string> names;
  std::vector<AllocationEvent> events;
};

TEST(BfcAllocatorTest, ObserverSeesEveryEventInOrder) {
  auto allocator = MakeAllocator(64 * kMiB, 1 * kMiB, nullptr, "cuda_host_bfc");
  void* before = MustAllocate(*allocator, 100);  // not observed
  RecordingObserver observer;
  allocator->SetObserver(&observer);
  const int64_t start = NowNanos();
  void* a = MustAllocate(*allocator, 1000);
  void* b = MustAllocate(*allocator, 3000);
  allocator->Deallocate(a);
  void* c = MustAllocate(*allocator, 1);
  allocator->Deallocate(b);
  ASSERT_FALSE(allocator->Allocate(128 * kMiB).ok());  // failures are not events
  allocator->Deallocate(c);
  allocator->SetObserver(nullptr);
  allocator->Deallocate(before);  // not observed

  struct Expected {
    int64_t delta, requested, allocated, id;
    const void* ptr;
    int64_t in_use_after;
  };
  const std::vector<Expected> expected = {
      {+1024, 1000, 1024, 2, a, 256 + 1024}, {+3072, 3000, 3072, 3, b, 256 + 1024 + 3072},
      {-1024, 1000, 1024, 2, a, 256 + 3072}, {+256, 1, 256, 4, c, 256 + 3072 + 256},
      {-3072, 3000, 3072, 3, b, 256 + 256},  {-256, 1, 256, 4, c, 256},
  };
  ASSERT_EQ(observer.events.size(), expected.size());
  int64_t previous_time = start;
  for (size_t i = 0; i < expected.size(); ++i) {
    const AllocationEvent& event = observer.events[i];
    SCOPED_TRACE(i);
    EXPECT_EQ(observer.names[i], "cuda_host_bfc");
    EXPECT_EQ(event.delta_bytes, expected[i].delta);
    EXPECT_EQ(event.requested_bytes, expected[i].requested);
    EXPECT_EQ(event.allocated_bytes, expected[i].allocated);
    EXPECT_EQ(event.allocation_id, expected[i].id);
    EXPECT_EQ(event.ptr, expected[i].ptr);
    EXPECT_EQ(event.bytes_in_use_after, expected[i].in_use_after);
    EXPECT_GE(event.time_ns, previous_time);
    previous_time = event.time_ns;
  }
  EXPECT_LE(previous_time, NowNanos());
}

TEST(BfcAllocatorTest, ManyThreadsKeepTheirMemoryAndLeaveNothingBehind) {
  auto allocator = MakeAllocator(256 * kMiB, 1 * kMiB);
  // The observer runs under the allocator's lock, so plain counters are safe.
  class Counting final : public AllocationObserver {
   public:
    void OnAllocation(const Allocator&, const AllocationEvent& event) override {
      ++events;
      balance += event.delta_bytes;
      consistent = consistent && balance == event.bytes_in_use_after;
    }
    int64_t events = 0, balance = 0;
    bool consistent = true;
  } observer;
  allocator->SetObserver(&observer);

  constexpr int kThreads = 4;
  constexpr int kOpsPerThread = 3000;
  std::vector<int> corrupted(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(static_cast<unsigned>(t + 1));
      std::vector<std::pair<unsigned char*, size_t>> live;
      for (int op = 0; op < kOpsPerThread; ++op) {
        if (live.empty() || (live.size() < 64 && rng() % 2 == 0)) {
          const size_t bytes = 1 + rng() % (rng() % 8 == 0 ? 200000 : 4000);
          StatusOr<void*> p = allocator->Allocate(bytes);
          if (!p.ok()) continue;
          auto* bytes_ptr = static_cast<unsigned char*>(*p);
          std::memset(bytes_ptr, t + 1, bytes);  // a thread-specific fill detects overlaps
          live.emplace_back(bytes_ptr, bytes);
        } else {
          const size_t pick = rng() % live.size();
          auto [ptr, bytes] = live[pick];
          for (size_t i = 0; i < bytes; i += 61) {
            if (ptr[i] != static_cast<unsigned char>(t + 1)) ++corrupted[static_cast<size_t>(t)];
          }
          allocator->Deallocate(ptr);
          live[pick] = live.back();
          live.pop_back();
        }
      }
      for (auto [ptr, bytes] : live) allocator->Deallocate(ptr);
    });
  }
  for (std::thread& thread : threads) thread.join();
  allocator->SetObserver(nullptr);

  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(corrupted[static_cast<size_t>(t)], 0);
  const AllocatorStats stats = allocator->Stats();
  EXPECT_EQ(stats.bytes_in_use, 0);
  EXPECT_GT(stats.num_allocs, kThreads * kOpsPerThread / 3);
  EXPECT_EQ(observer.events, 2 * stats.num_allocs);
  EXPECT_EQ(observer.balance, 0);
  EXPECT_TRUE(observer.consistent);
  // Everything coalesced back: one free chunk per region.
  EXPECT_EQ(static_cast<int64_t>(allocator->Chunks().size()), allocator->NumRegions());
}

// Random allocations and frees, each checked against a model: the chunks tile every region, no
// two neighbours are both free, the live chunks are exactly the model's live allocations, the
// chosen chunk is the best fit of the free chunks before the call, and sizes obey the split rule.
TEST(BfcAllocatorTest, RandomizedRunMatchesTheBestFitModel) {
  std::vector<size_t> region_sizes;
  std::map<const char*, size_t> regions;  // start -> bytes
  auto allocator = std::make_unique<BFCAllocator>(
      std::make_unique<RecordingSubAllocator>(&region_sizes, &regions), 32 * kMiB, "cpu",
      BFCAllocator::Options{256 * kKiB});
  struct Live {
    int64_t id;
    size_t requested;
  };
  std::map<const void*, Live> model;
  std::mt19937_64 rng(20240611);
  int64_t next_id = 1, exhausted = 0, fits_checked = 0;

  for (int step = 0; step < 4000; ++step) {
    SCOPED_TRACE(step);
    const std::vector<ChunkInfo> before = allocator->Chunks();
    const bool allocate = model.empty() || rng() % 100 < 55;
    if (allocate) {
      // Log-uniform sizes from 1 B to 1 MiB.
      const double exponent = std::uniform_real_distribution<double>(0.0, 20.0)(rng);
      const auto bytes = static_cast<size_t>(std::exp2(exponent));
      const size_t rounded = BFCAllocator::RoundedBytes(bytes);
      const ChunkInfo* best = nullptr;
      for (const ChunkInfo& chunk : before) {
        if (chunk.in_use() || static_cast<size_t>(chunk.size) < rounded) continue;
        if (best == nullptr || chunk.size < best->size ||
            (chunk.size == best->size && chunk.ptr < best->ptr)) {
          best = &chunk;
        }
      }
      StatusOr<void*> p = allocator->Allocate(bytes);
      if (!p.ok()) {
        ASSERT_EQ(best, nullptr) << "failed although a free chunk fits";
        ASSERT_EQ(p.status().code(), StatusCode::kResourceExhausted);
        ++exhausted;
        continue;
      }
      if (best != nullptr) {
        ASSERT_EQ(*p, best->ptr);
        ++fits_checked;
      }
      const int64_t allocated = allocator->AllocatedSize(*p);
      ASSERT_GE(static_cast<size_t>(allocated), rounded);
      ASSERT_LT(static_cast<size_t>(allocated), 2 * rounded);
      ASSERT_EQ(allocator->AllocationId(*p), next_id);
      model[*p] = Live{next_id++, bytes};
    } else {
      auto it = model.begin();
      std::advance(it, static_cast<long>(rng() % model.size()));
      allocator->Deallocate(const_cast<void*>(it->first));
      model.erase(it);
    }

    const std::vector<ChunkInfo> chunks = allocator->Chunks();
    int64_t in_use = 0;
    size_t live_chunks = 0, regions_seen = 0;
    const char* region_end = nullptr;
    const char* expected_start = nullptr;
    for (size_t i = 0; i < chunks.size(); ++i) {
      const ChunkInfo& chunk = chunks[i];
      const char* start = static_cast<const char*>(chunk.ptr);
      if (start != expected_start) {  // a new region begins
        ASSERT_EQ(expected_start, region_end);
        auto region = regions.find(start);
        ASSERT_NE(region, regions.end()) << "a chunk list does not start at a region";
        region_end = start + region->second;
        ++regions_seen;
      } else if (i > 0) {
        ASSERT_FALSE(!chunk.in_use() && !chunks[i - 1].in_use()) << "adjacent free chunks";
      }
      expected_start = start + chunk.size;
      ASSERT_LE(expected_start, region_end);
      if (chunk.in_use()) {
        auto it = model.find(chunk.ptr);
        ASSERT_NE(it, model.end());
        ASSERT_EQ(chunk.allocation_id, it->second.id);
        ASSERT_EQ(static_cast<size_t>(chunk.requested_size), it->second.requested);
        in_use += chunk.size;
        ++live_chunks;
      } else {
        ASSERT_EQ(chunk.bin, BFCAllocator::BinForSize(static_cast<size_t>(chunk.size)));
      }
    }
    ASSERT_EQ(expected_start, region_end);
    ASSERT_EQ(regions_seen, regions.size());
    ASSERT_EQ(live_chunks, model.size());
    ASSERT_EQ(allocator->Stats().bytes_in_use, in_use);
  }
  EXPECT_GT(fits_checked, 1000);  // the run exercised best fit, not only growth
  for (const auto& [ptr, live] : model) allocator->Deallocate(const_cast<void*>(ptr));
  EXPECT_EQ(allocator->Stats().bytes_in_use, 0);
  EXPECT_EQ(static_cast<int64_t>(allocator->Chunks().size()), allocator->NumRegions());
  RecordProperty("exhausted", static_cast<int>(exhausted));
}

}  // namespace
}  // namespace stepscope::runtime
