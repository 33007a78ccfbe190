// The byte budget on CUPTI's activity buffers: requests past it are refused and counted, returned
// buffers are reused, and buffers honour CUPTI's 8-byte record alignment.
#include "profiler/collect/cupti/activity_buffer_pool.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <thread>
#include <vector>

namespace stepscope::collect::cupti {
namespace {

TEST(ActivityBufferPoolTest, BudgetExhaustionRefusesAndCounts) {
  ActivityBufferPool pool(/*buffer_bytes=*/1000, /*budget_bytes=*/3000);
  EXPECT_EQ(pool.buffer_bytes(), 1000u);
  EXPECT_EQ(pool.budget_bytes(), 3000u);
  std::vector<uint8_t*> held;
  for (int i = 0; i < 3; ++i) {
    uint8_t* buffer = pool.Acquire();
    ASSERT_NE(buffer, nullptr) << "buffer " << i;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(buffer) % 8, 0u);
    held.push_back(buffer);
  }
  EXPECT_EQ(pool.bytes_in_use(), 3000u);
  EXPECT_EQ(pool.Acquire(), nullptr);
  EXPECT_EQ(pool.Acquire(), nullptr);
  EXPECT_EQ(pool.refused(), 2u);

  // A delivered buffer comes back and is lent again: no new memory.
  pool.Release(held[1]);
  EXPECT_EQ(pool.bytes_in_use(), 2000u);
  EXPECT_EQ(pool.Acquire(), held[1]);
  EXPECT_EQ(pool.Acquire(), nullptr);
  EXPECT_EQ(pool.refused(), 3u);
  for (uint8_t* buffer : held) pool.Release(buffer);
  EXPECT_EQ(pool.bytes_in_use(), 0u);
  pool.Release(nullptr);  // what CUPTI hands back for a refused request
  EXPECT_EQ(pool.bytes_in_use(), 0u);
}

TEST(ActivityBufferPoolTest, SizesRoundToRecordAlignmentAndBudgetAllowsOneBuffer) {
  ActivityBufferPool pool(/*buffer_bytes=*/1001, /*budget_bytes=*/10);
  EXPECT_EQ(pool.buffer_bytes(), 1008u);
  EXPECT_EQ(pool.budget_bytes(), 1008u);
  uint8_t* buffer = pool.Acquire();
  ASSERT_NE(buffer, nullptr);
  EXPECT_EQ(pool.Acquire(), nullptr);
  pool.Release(buffer);
}

TEST(ActivityBufferPoolTest, ConcurrentRequestsNeverExceedBudget) {
  ActivityBufferPool pool(/*buffer_bytes=*/64, /*budget_bytes=*/64 * 8);
  std::vector<std::thread> threads;
  std::vector<uint64_t> acquired(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 2000; ++i) {
        uint8_t* buffer = pool.Acquire();
        if (buffer == nullptr) continue;
        ++acquired[static_cast<size_t>(t)];
        EXPECT_LE(pool.bytes_in_use(), pool.budget_bytes());
        buffer[0] = static_cast<uint8_t>(i);  // the memory is ours while held
        pool.Release(buffer);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  uint64_t total = 0;
  for (uint64_t n : acquired) total += n;
  EXPECT_EQ(total + pool.refused(), 8000u);
  EXPECT_EQ(pool.bytes_in_use(), 0u);
}

}  // namespace
}  // namespace stepscope::collect::cupti
