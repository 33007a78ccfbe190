// Interval arithmetic in start order: MergeByStart visits the items of sorted lists in start order,
// and UnionInStartOrder, UnionLength and UnionLengthInPlace agree with counting covered time
// nanosecond by nanosecond. DurationList and StatsOfSorted give what sorting all values does.
#include "profiler/analysis/intervals.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
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

// Values of every width (negative launch delays, gaps past 4.3 s, and the narrow ones between,
// whose deltas take one to five bytes): the statistics of several lists together, read off their
// sorted runs, are those of all their values sorted, with statistics.h's interpolated
// percentiles.
TEST(DurationListTest, ListsOfEveryWidthGiveTheStatisticsOfAllTheirValues) {
  Rng random(5);
  const int64_t kWide = int64_t{UINT32_MAX};
  std::vector<DurationList> lists(5);
  std::vector<std::vector<int64_t>> values(lists.size());
  auto add = [&](size_t l, int64_t value) {
    lists[l].Add(value);
    values[l].push_back(value);
  };
  // Three runs and a remainder, values close together as durations are, and a few far apart.
  for (size_t i = 0; i < 3 * DurationList::kRunValues + 1234; ++i) {
    int64_t value = random.Between(1000, 60000);
    const int64_t kind = random.Between(0, 999);
    if (kind == 0) value = -random.Between(1, 5000);             // a launch before its call ended
    if (kind == 1) value = kWide + random.Between(-2, 1000000);  // around and past 4.3 s
    if (kind == 2) value = random.Between(0, kWide);              // far apart: deltas of 5 bytes
    add(0, value);
  }
  for (int i = 0; i < 300; ++i) add(1, random.Between(0, 1000000));
  add(2, -7);  // a list of one wide value
  add(3, kWide);
  add(3, 0);
  // lists[4] stays empty: it adds nothing.
  std::vector<const DurationList*> pointers;
  for (DurationList& list : lists) {
    list.Sort();
    pointers.push_back(&list);
  }
  EXPECT_EQ(lists[0].runs().size(), 4u);
  EXPECT_GT(lists[0].wide().size(), 0u);
  auto expect_stats_of = [](const MergedStats& stats, std::vector<int64_t> all, const std::string& what) {
    std::sort(all.begin(), all.end());
    ASSERT_EQ(stats.count, static_cast<int64_t>(all.size())) << what;
    if (all.empty()) return;
    int64_t total = 0;
    for (int64_t v : all) total += v;
    EXPECT_EQ(stats.total_ns, total) << what;
    EXPECT_EQ(stats.min_ns, all.front()) << what;
    EXPECT_EQ(stats.max_ns, all.back()) << what;
    const std::vector<double> as_double(all.begin(), all.end());
    EXPECT_DOUBLE_EQ(stats.p50_ns, Quantile(as_double, 0.5)) << what;
    EXPECT_DOUBLE_EQ(stats.p95_ns, Quantile(as_double, 0.95)) << what;
  };
  std::vector<int64_t> all;
  for (size_t l = 0; l < lists.size(); ++l) {
    expect_stats_of(StatsOfSorted({&lists[l]}), values[l], "list " + std::to_string(l));
    all.insert(all.end(), values[l].begin(), values[l].end());
  }
  expect_stats_of(StatsOfSorted(pointers), all, "all lists");
  expect_stats_of(StatsOfSorted({&lists[1], &lists[2], &lists[3]}), [&] {
    std::vector<int64_t> some = values[1];
    some.insert(some.end(), values[2].begin(), values[2].end());
    some.insert(some.end(), values[3].begin(), values[3].end());
    return some;
  }(), "small lists");
  // A copy reads the same; a list copied before its last run was sealed too.
  DurationList copy;
  copy.CopyFrom(lists[0]);
  expect_stats_of(StatsOfSorted({&copy}), values[0], "copy");
  DurationList unsorted;
  for (int64_t v : values[0]) unsorted.Add(v);
  DurationList copy_before_sort;
  copy_before_sort.CopyFrom(unsorted);
  copy_before_sort.Sort();
  expect_stats_of(StatsOfSorted({&copy_before_sort}), values[0], "copied unsorted");
}

}  // namespace
}  // namespace stepscope::analysis
