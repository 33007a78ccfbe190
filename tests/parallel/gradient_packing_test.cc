// The packing plan of tf_cnn_benchmarks' agg_small_grads_max_bytes / agg_small_grads_max_group.
#include "trainer/parallel/gradient_packing.h"

#include <gtest/gtest.h>

namespace stepscope::parallel {
namespace {

std::vector<PackingCandidate> Float32(const std::vector<int64_t>& sizes) {
  std::vector<PackingCandidate> candidates;
  for (int64_t size : sizes) candidates.push_back({size, true});
  return candidates;
}

TEST(GradientPackingTest, RunsOfSmallGradientsAreGroupedSinglesStay) {
  // Small (<= 100 bytes = 25 elements): 0,1,2 | 4 | 6,7.
  auto groups = PlanSmallGradientPacking(Float32({10, 25, 3, 26, 1, 1000, 2, 2}), 100, 10);
  EXPECT_EQ(groups, (std::vector<PackGroup>{{0, 2}, {6, 7}}));
}

TEST(GradientPackingTest, ThresholdCountsBytesOfFloat32) {
  EXPECT_EQ(PlanSmallGradientPacking(Float32({25, 25}), 100, 4),
            (std::vector<PackGroup>{{0, 1}}));
  EXPECT_TRUE(PlanSmallGradientPacking(Float32({25, 26}), 100, 4).empty());
}

TEST(GradientPackingTest, NonFloatGradientsAreNeverPacked) {
  std::vector<PackingCandidate> candidates = {{4, true}, {4, false}, {4, true}, {4, true}};
  EXPECT_EQ(PlanSmallGradientPacking(candidates, 64, 8), (std::vector<PackGroup>{{2, 3}}));
}

TEST(GradientPackingTest, MaxGroupCutsLongRunsAsTheOriginalDoes) {
  // extract_ranges extends while last - first <= max_group: groups of max_group + 2.
  auto groups = PlanSmallGradientPacking(Float32(std::vector<int64_t>(10, 1)), 16, 2);
  EXPECT_EQ(groups, (std::vector<PackGroup>{{0, 3}, {4, 7}, {8, 9}}));
  groups = PlanSmallGradientPacking(Float32(std::vector<int64_t>(9, 1)), 16, 2);
  // The last run of one gradient stays single.
  EXPECT_EQ(groups, (std::vector<PackGroup>{{0, 3}, {4, 7}}));
}

TEST(GradientPackingTest, OffUnlessBothLimitsArePositive) {
  auto sizes = Float32({1, 1, 1});
  EXPECT_TRUE(PlanSmallGradientPacking(sizes, 0, 10).empty());
  EXPECT_TRUE(PlanSmallGradientPacking(sizes, 100, 0).empty());
  EXPECT_TRUE(PlanSmallGradientPacking({}, 100, 10).empty());
  EXPECT_EQ(PlanSmallGradientPacking(sizes, 100, 10), (std::vector<PackGroup>{{0, 2}}));
}

TEST(GradientPackingTest, HugeCountsDoNotOverflow) {
  EXPECT_TRUE(PlanSmallGradientPacking(Float32({INT64_MAX, INT64_MAX}), INT64_MAX, 4).empty());
}

TEST(GradientPackingTest, EveryIndexIsInAtMostOneGroupAndGroupsAreSmallRuns) {
  std::vector<int64_t> sizes;
  for (int i = 0; i < 500; ++i) sizes.push_back((i * 7919) % 97);
  const int64_t max_bytes = 200;
  const int max_group = 5;
  auto groups = PlanSmallGradientPacking(Float32(sizes), max_bytes, max_group);
  ASSERT_FALSE(groups.empty());
  int previous_last = -1;
  for (const PackGroup& group : groups) {
    EXPECT_GT(group.first, previous_last);
    EXPECT_GE(group.size(), 2);
    EXPECT_LE(group.size(), max_group + 2);
    for (int i = group.first; i <= group.last; ++i) EXPECT_LE(4 * sizes[i], max_bytes);
    previous_last = group.last;
  }
}

}  // namespace
}  // namespace stepscope::parallel
