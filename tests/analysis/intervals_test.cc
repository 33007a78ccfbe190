// Interval arithmetic in start order: MergeByStart visits the items of sorted lists in start order,
// and UnionInStartOrder, UnionLength and UnionLengthInPlace agree with counting covered time
// nanosecond by nanosecond.
#include "profiler/analysis/intervals.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "base/random.h"
#include "profiler/analysis/summary.h"

namespace stepscope::analysis {
namespace {

using Interval = std::pair<int64_t, int64_t>;

std::vector<Interval> RandomIntervals(Rng& random, int count, int64_t horizon) {
  std::vector<Interval> intervals;
  for (int i = 0; i < count; ++i) {
    const int64_t start = random.Between(0, horizon - 1);
    intervals.emplace_back(start, start + random.Between(0, 40));
  }
  return intervals;
}

int64_t CoveredNanoseconds(const std::vector<Interval>& intervals, int64_t horizon) {
  std::vector<bool> covered(static_cast<size_t>(horizon + 64), false);
  for (const auto& [start, end] : intervals) {
    for (int64_t t = start; t < end; ++t) covered[static_cast<size_t>(t)] = true;
  }
  return std::count(covered.begin(), covered.end(), true);
}

TEST(IntervalsTest, MergeByStartVisitsSortedListsInStartOrder) {
  Rng random(7);
  std::vector<std::vector<Interval>> lists(5);
  std::vector<Interval> everything;
  for (auto& list : lists) {
    list = RandomIntervals(random, static_cast<int>(random.Between(0, 300)), 1000);
    std::sort(list.begin(), list.end());
    everything.insert(everything.end(), list.begin(), list.end());
  }
  lists.emplace_back();  // an empty list is passed over
  std::vector<std::pair<const Interval*, const Interval*>> ranges;
  for (const auto& list : lists) ranges.emplace_back(list.data(), list.data() + list.size());
  std::vector<Interval> visited;
  MergeByStart(std::move(ranges), [](const Interval& i) { return i.first; }, [&](const Interval& i) { visited.push_back(i); });
  ASSERT_EQ(visited.size(), everything.size());
  EXPECT_TRUE(std::is_sorted(visited.begin(), visited.end(),
                             [](const Interval& a, const Interval& b) { return a.first < b.first; }));
  std::sort(visited.begin(), visited.end());
  std::sort(everything.begin(), everything.end());
  EXPECT_EQ(visited, everything);
}

TEST(IntervalsTest, UnionLengthsMatchTheTimeCovered) {
  Rng random(11);
  for (int round = 0; round < 50; ++round) {
    std::vector<Interval> intervals = RandomIntervals(random, static_cast<int>(random.Between(0, 200)), 2000);
    const int64_t covered = CoveredNanoseconds(intervals, 2000);
    EXPECT_EQ(UnionLength(intervals), covered) << round;
    std::vector<Interval> sorted = intervals;
    std::sort(sorted.begin(), sorted.end());
    UnionInStartOrder in_order;
    for (const auto& [start, end] : sorted) in_order.Add(start, end);
    EXPECT_EQ(in_order.length(), covered) << round;
    EXPECT_EQ(UnionLengthInPlace(intervals), covered) << round;
  }
  EXPECT_EQ(UnionInStartOrder().length(), 0);
}

}  // namespace
}  // namespace stepscope::analysis
