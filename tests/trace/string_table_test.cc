// StringTable: ids dense and stable, every text returned as interned, lookups of absent texts,
// against a plain map on many texts (the table grows many times; long texts get chunks of their
// own; texts differ by one byte, hold NULs, or are empty).
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "profiler/trace/string_table.h"

namespace stepscope::trace {
namespace {

TEST(StringTableTest, InternsLikeAMapThroughGrowthAndMoves) {
  std::mt19937 random(11);
  std::vector<std::string> texts = {"", std::string("a\0b", 3), std::string("a\0c", 3), "a", "ab"};
  for (int i = 0; i < 100000; ++i) texts.push_back("op_" + std::to_string(i));
  for (int i = 0; i < 50; ++i) {
    std::string long_text(20000 + i, 'x');  // past a quarter chunk: its own allocation
    long_text.back() = static_cast<char>('a' + i % 26);
    long_text[static_cast<size_t>(i)] = 'y';
    texts.push_back(long_text);
  }
  for (int i = 0; i < 2000; ++i) {
    std::string text(std::uniform_int_distribution<size_t>(1, 300)(random), ' ');
    for (char& c : text) c = static_cast<char>(std::uniform_int_distribution<int>(0, 255)(random));
    texts.push_back(text);
  }

  StringTable table;
  std::unordered_map<std::string, StringId> expected;
  expected.emplace("", 0);
  // Each text twice, in a shuffled order: the second time finds the first's id.
  std::vector<size_t> order(texts.size() * 2);
  for (size_t i = 0; i < order.size(); ++i) order[i] = i % texts.size();
  std::shuffle(order.begin(), order.end(), random);
  for (size_t k : order) {
    const StringId id = table.Intern(texts[k]);
    auto [it, inserted] = expected.emplace(texts[k], static_cast<StringId>(expected.size()));
    EXPECT_EQ(id, it->second) << k;
  }
  ASSERT_EQ(table.size(), expected.size());

  const StringTable moved(std::move(table));  // texts stay where they are
  for (const auto& [text, id] : expected) {
    EXPECT_EQ(moved.Get(id), text);
    EXPECT_EQ(moved.Find(text), static_cast<int64_t>(id));
  }
  EXPECT_EQ(moved.Get(0).data() != nullptr, true);
  EXPECT_EQ(moved.Find("op_100000"), -1);
  EXPECT_EQ(moved.Find(std::string("a\0d", 3)), -1);
  EXPECT_EQ(moved.Find(std::string(20000, 'x')), -1);
}

}  // namespace
}  // namespace stepscope::trace
