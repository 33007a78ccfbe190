// Interval arithmetic in start order: MergeByStart visits the items of sorted lists in start order,
// and UnionInStartOrder, UnionLength and UnionLengthInPlace agree with counting covered time
// nanosecond by nanosecond. DurationList and StatsOfSorted give what sorting all values does.
#include "profiler/analysis/intervals.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "base/random.h"
#include "profiler/analysis/duration_list.h"
#include "profiler/analysis/statistics.h"
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

// Values of every width (negative launch delays, gaps past 4.3 s, and the narrow ones between):
// a sorted list reads back in order, and the statistics of several lists together are those of
// all their values sorted, with statistics.h's interpolated percentiles.
TEST(DurationListTest, ListsOfEveryWidthGiveTheStatisticsOfAllTheirValues) {
  Rng random(5);
  const int64_t kWide = int64_t{UINT32_MAX};
  std::vector<DurationList> lists(4);
  std::vector<int64_t> all;
  for (size_t l = 0; l < lists.size(); ++l) {
    const int count = l == 3 ? 1 : static_cast<int>(random.Between(50, 400));
    for (int i = 0; i < count; ++i) {
      int64_t value = random.Between(0, 1000000);
      const int64_t kind = random.Between(0, 9);
      if (kind == 0) value = -random.Between(1, 5000);                   // a launch before its call ended
      if (kind == 1) value = kWide + random.Between(-2, 1000000);        // around and past 4.3 s
      if (l == 3) value = -7;                                            // a list of one wide value
      lists[l].Add(value);
      all.push_back(value);
    }
  }
  lists.emplace_back();  // an empty list adds nothing
  std::vector<const DurationList*> pointers;
  for (DurationList& list : lists) {
    list.Sort();
    pointers.push_back(&list);
  }
  for (const DurationList& list : lists) {
    for (size_t k = 1; k < list.size(); ++k) ASSERT_LE(list[k - 1], list[k]) << k;
  }
  EXPECT_GT(lists[0].wide().size(), 0u);
  EXPECT_EQ(lists[3][0], -7);
  std::sort(all.begin(), all.end());
  const MergedStats stats = StatsOfSorted(pointers);
  EXPECT_EQ(stats.count, static_cast<int64_t>(all.size()));
  int64_t total = 0;
  for (int64_t v : all) total += v;
  EXPECT_EQ(stats.total_ns, total);
  EXPECT_EQ(stats.min_ns, all.front());
  EXPECT_EQ(stats.max_ns, all.back());
  const std::vector<double> as_double(all.begin(), all.end());
  EXPECT_DOUBLE_EQ(stats.p50_ns, Quantile(as_double, 0.5));
  EXPECT_DOUBLE_EQ(stats.p95_ns, Quantile(as_double, 0.95));
  // One list alone, and a copy of it, give the same as its own values.
  DurationList copy;
  copy.CopyFrom(lists[1]);
  const MergedStats one = StatsOfSorted({&copy});
  EXPECT_EQ(one.count, static_cast<int64_t>(lists[1].size()));
  EXPECT_EQ(one.min_ns, lists[1][0]);
  EXPECT_EQ(one.max_ns, lists[1][lists[1].size() - 1]);
  EXPECT_EQ(StatsOfSorted({&lists[4]}).count, 0);
}

}  // namespace
}  // namespace stepscope::analysis
