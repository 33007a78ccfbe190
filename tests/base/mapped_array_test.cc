// MappedArray: growth keeps the values, new elements are value-initialised (also where a shrink
// left old values behind), and ConvertInPlace rewrites every value as a smaller type exactly.
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
struct Narrow {
  int64_t a = 0;
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

TEST(MappedArrayTest, ConvertInPlaceKeepsEveryValueAndEmptiesTheSource) {
  MappedArray<Wide> wide;
  constexpr int64_t kCount = 1'000'003;
  for (int64_t i = 0; i < kCount; ++i) wide.push_back(Wide{i, -i, static_cast<int32_t>(i % 1000)});
  MappedArray<Narrow> narrow =
      std::move(wide).ConvertInPlace<Narrow>([](const Wide& w) { return Narrow{w.a + w.b + w.a, w.c}; });
  EXPECT_TRUE(wide.empty());  // NOLINT(bugprone-use-after-move): the documented state
  ASSERT_EQ(narrow.size(), static_cast<size_t>(kCount));
  for (int64_t i = 0; i < kCount; ++i) {
    ASSERT_EQ(narrow[i].a, i) << i;
    ASSERT_EQ(narrow[i].c, i % 1000) << i;
  }
  narrow.push_back(Narrow{5, 6});  // and it grows on from there
  EXPECT_EQ(narrow.back().a, 5);
  EXPECT_EQ(narrow[kCount - 1].a, kCount - 1);
}

}  // namespace
}  // namespace stepscope
