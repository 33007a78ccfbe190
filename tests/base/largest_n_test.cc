// LargestN keeps the N highest-ranking items of a stream, highest first, the first offered ahead
// among equals, whatever the order the heap saw them in.
#include "base/largest_n.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "base/random.h"

namespace stepscope {
namespace {

struct Gap {
  int64_t length;
  std::string label;
};

auto Longer() {
  return [](const Gap& a, const Gap& b) { return a.length > b.length; };
}

TEST(LargestNTest, KeepsTheLongestHighestFirstTheFirstOfferedAheadAmongEquals) {
  LargestN<Gap, decltype(Longer())> largest(3, Longer());
  for (const Gap& gap : std::vector<Gap>{{5, "a"}, {9, "b"}, {5, "c"}, {1, "d"}, {9, "e"}, {5, "f"}}) {
    largest.Offer(gap);
  }
  const std::vector<Gap> kept = largest.TakeSorted();
  ASSERT_EQ(kept.size(), 3u);
  EXPECT_EQ(kept[0].label, "b");
  EXPECT_EQ(kept[1].label, "e");
  EXPECT_EQ(kept[2].label, "a");  // of the three 5s, the first offered
}

TEST(LargestNTest, MatchesAStableSortOfEverythingOffered) {
  Rng random(42);
  std::vector<Gap> all;
  LargestN<Gap, decltype(Longer())> largest(50, Longer());
  for (int i = 0; i < 10'000; ++i) {
    const Gap gap{static_cast<int64_t>(random.Below(200)), std::to_string(i)};  // many ties
    all.push_back(gap);
    largest.Offer(gap);
  }
  std::stable_sort(all.begin(), all.end(), Longer());
  const std::vector<Gap> kept = largest.TakeSorted();
  ASSERT_EQ(kept.size(), 50u);
  for (size_t i = 0; i < kept.size(); ++i) {
    EXPECT_EQ(kept[i].length, all[i].length) << i;
    EXPECT_EQ(kept[i].label, all[i].label) << i;
  }
}

TEST(LargestNTest, KeepsNothingForZeroAndEverythingForFewerThanN) {
  LargestN<Gap, decltype(Longer())> none(0, Longer());
  none.Offer({3, "x"});
  EXPECT_TRUE(none.TakeSorted().empty());
  LargestN<Gap, decltype(Longer())> few(10, Longer());
  few.Offer({3, "x"});
  few.Offer({7, "y"});
  const std::vector<Gap> kept = few.TakeSorted();
  ASSERT_EQ(kept.size(), 2u);
  EXPECT_EQ(kept[0].label, "y");
  EXPECT_EQ(kept[1].label, "x");
}

}  // namespace
}  // namespace stepscope
