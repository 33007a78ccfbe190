// MappedArray: growth keeps the values, new elements are value-initialised (also where a shrink
// left old values behind), and ShrinkToFit gives back the pages past the end, keeping the rest.
#include "base/mapped_array.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>


namespace stepscope {
namespace {

struct Wide {
  int64_t a = 0;
  int64_t b = 0;
  int32_t c = 0;
};

TEST(MappedArrayTest, GrowsAcrossManyPagesKeepingEveryValue) {
  MappedArray<int64_t> values;
  constexpr int64_t kCount = 3'000'000;  // 24 MB: several remaps
  for (int64_t i = 0; i < kCount; ++i) values.push_back(i * 7);
  ASSERT_EQ(values.size(), static_cast<size_t>(kCount));
  for (int64_t i = 0; i < kCount; ++i) ASSERT_EQ(values[i], i * 7) << i;
  EXPECT_EQ(std::accumulate(values.begin(), values.end(), int64_t{0}), 7 * (kCount - 1) * kCount / 2);
}

TEST(MappedArrayTest, ResizeValueInitialisesNewElementsEvenWhereOldValuesWere) {
  MappedArray<Wide> values(10);
  for (size_t i = 0; i < values.size(); ++i) values[i] = Wide{1, 2, 3};
  values.resize(4);
  values.resize(100'000);  // the first six new ones reuse written memory, the rest is fresh
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(values[i].a, 1);
  for (size_t i = 4; i < values.size(); ++i) {
    ASSERT_EQ(values[i].a, 0) << i;
    ASSERT_EQ(values[i].b, 0) << i;
    ASSERT_EQ(values[i].c, 0) << i;
  }
}

// Consumed from the back and shrunk as it goes, it keeps the values before the end and grows
// again from there; shrunk to nothing, it is empty and grows anew.
TEST(MappedArrayTest, ShrinkToFitKeepsTheValuesBeforeTheEnd) {
  MappedArray<Wide> values;
  constexpr int64_t kCount = 1'000'003;
  for (int64_t i = 0; i < kCount; ++i) values.push_back(Wide{i, -i, static_cast<int32_t>(i % 1000)});
  const size_t full = values.capacity();
  for (int64_t i = kCount - 1; i >= kCount / 3; --i) {
    ASSERT_EQ(values.back().a, i);
    values.pop_back();
    if (i % 65536 == 0) values.ShrinkToFit();
  }
  values.ShrinkToFit();
  ASSERT_EQ(values.size(), static_cast<size_t>(kCount / 3));
  EXPECT_LT(values.capacity(), full / 2);
  for (int64_t i = 0; i < kCount / 3; ++i) {
    ASSERT_EQ(values[i].a, i) << i;
    ASSERT_EQ(values[i].c, i % 1000) << i;
  }
  values.resize(values.size() + 2);  // past the old end: value-initialised, not the old values
  EXPECT_EQ(values.back().a, 0);
  values.push_back(Wide{5, 6, 7});
  EXPECT_EQ(values.back().b, 6);
  values.resize(0);
  values.ShrinkToFit();
  EXPECT_EQ(values.capacity(), 0u);
  values.push_back(Wide{8, 9, 10});
  EXPECT_EQ(values[0].c, 10);
}

}  // namespace
}  // namespace stepscope
