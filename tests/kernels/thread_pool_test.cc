// ThreadPool / CpuContext::ParallelFor: every index exactly once, fixed chunking, nesting.
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <set>
#include <vector>

#include "kernels/cpu_context.h"

namespace stepscope::kernels {
namespace {

TEST(ThreadPool, CoversEveryIndexOnceWithFixedChunks) {
  for (const int workers : {0, 1, 3}) {
    ThreadPool pool(workers);
    CpuContext ctx(&pool);
    for (const int64_t n : {int64_t{0}, int64_t{1}, int64_t{7}, int64_t{1000}}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      std::mutex mu;
      std::set<std::pair<int64_t, int64_t>> chunks;
      ctx.ParallelFor(n, 64, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)]++;
        std::lock_guard<std::mutex> lock(mu);
        chunks.insert({b, e});
      });
      for (const auto& h : hits) ASSERT_EQ(h.load(), 1);
      EXPECT_EQ(static_cast<int64_t>(chunks.size()), (n + 63) / 64);
      for (const auto& [b, e] : chunks) {
        EXPECT_EQ(b % 64, 0);
        EXPECT_EQ(e, std::min(n, b + 64));
      }
    }
  }
}

TEST(ThreadPool, NestedParallelForCompletes) {
  ThreadPool pool(2);
  CpuContext ctx(&pool);
  std::atomic<int64_t> sum{0};
  ctx.ParallelFor(8, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      ctx.ParallelFor(100, 10, [&](int64_t b2, int64_t e2) { sum += e2 - b2; });
    }
  });
  EXPECT_EQ(sum.load(), 800);
}

TEST(ThreadPool, UsesMoreThanOneThread) {
  ThreadPool pool(2);
  CpuContext ctx(&pool);
  EXPECT_EQ(ctx.num_threads(), 3);
  std::mutex mu;
  std::set<std::thread::id> ids;
  std::atomic<int> arrived{0};
  ctx.ParallelFor(3, 1, [&](int64_t, int64_t) {
    {
      std::lock_guard<std::mutex> lock(mu);
      ids.insert(std::this_thread::get_id());
    }
    // Hold each chunk until all three are claimed, so they must run on different threads.
    arrived++;
    while (arrived.load() < 3) std::this_thread::yield();
  });
  EXPECT_EQ(ids.size(), 3u);
}

}  // namespace
}  // namespace stepscope::kernels
