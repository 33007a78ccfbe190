// The all-reduce spec grammar of docs/trainers.md §2: valid specs, every kind of error with its
// position, the canonical text, split_grads_by_size, and random strings that must never crash.
#include "trainer/parallel/allreduce_spec.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

namespace stepscope::parallel {
namespace {

AllReduceSpec Parse(const std::string& text) {
  auto spec = ParseAllReduceSpec(text);
  EXPECT_TRUE(spec.ok()) << text << ": " << spec.status().message();
  return spec.ok() ? *spec : AllReduceSpec{};
}

std::string ErrorOf(const std::string& text) {
  auto spec = ParseAllReduceSpec(text);
  EXPECT_FALSE(spec.ok()) << text << " parsed";
  if (spec.ok()) return "";
  EXPECT_EQ(spec.status().code(), StatusCode::kInvalidInput);
  return spec.status().message();
}

TEST(AllReduceSpecTest, SingleAlgorithms) {
  EXPECT_EQ(Parse("nccl"), (AllReduceSpec{{{Algorithm::kNccl, 1, {}}}, {}}));
  EXPECT_EQ(Parse("ring"), (AllReduceSpec{{{Algorithm::kRing, 1, {}}}, {}}));
  EXPECT_EQ(Parse("xring"), (AllReduceSpec{{{Algorithm::kRing, 1, {}}}, {}}));
  EXPECT_EQ(Parse("pscpu"), (AllReduceSpec{{{Algorithm::kPsCpu, 1, {}}}, {}}));
  EXPECT_EQ(Parse("psgpu#4"), (AllReduceSpec{{{Algorithm::kPsGpu, 4, {}}}, {}}));
  EXPECT_EQ(Parse("mpi"), (AllReduceSpec{{{Algorithm::kMpi, 1, {}}}, {}}));
  EXPECT_EQ(Parse("collective"), (AllReduceSpec{{{Algorithm::kCollective, 1, {}}}, {}}));
}

TEST(AllReduceSpecTest, HierarchicalAndShards) {
  EXPECT_EQ(Parse("nccl/xring"), (AllReduceSpec{{{Algorithm::kNccl, 1, Algorithm::kRing}}, {}}));
  EXPECT_EQ(Parse("psgpu#2/pscpu"),
            (AllReduceSpec{{{Algorithm::kPsGpu, 2, Algorithm::kPsCpu}}, {}}));
  // The original's order, shards after the whole hierarchical name.
  EXPECT_EQ(Parse("nccl/xring#3"), (AllReduceSpec{{{Algorithm::kNccl, 3, Algorithm::kRing}}, {}}));
  EXPECT_EQ(Parse("xring#2"), (AllReduceSpec{{{Algorithm::kRing, 2, {}}}, {}}));
}

TEST(AllReduceSpecTest, SizeRangesCountElementsWithBinarySuffixes) {
  AllReduceSpec spec = Parse("pscpu:32k:xring#2:4M:nccl/pscpu:1G:ring:2T:mpi");
  ASSERT_EQ(spec.ranges.size(), 5u);
  EXPECT_EQ(spec.limits, (std::vector<int64_t>{32768, 4194304, int64_t{1} << 30,
                                               int64_t{2} << 40}));
  EXPECT_EQ(spec.ranges[1], (AllReduceRange{Algorithm::kRing, 2, {}}));
  EXPECT_EQ(spec.ranges[2], (AllReduceRange{Algorithm::kNccl, 1, Algorithm::kPsCpu}));
  EXPECT_EQ(Parse("pscpu:100:ring").limits, (std::vector<int64_t>{100}));
}

TEST(AllReduceSpecTest, FormatRoundTrips) {
  for (const char* text : {"ring", "pscpu:32K:ring#2", "psgpu#4/pscpu:1000:mpi:3G:collective",
                           "nccl/ring:1T:pscpu"}) {
    AllReduceSpec spec = Parse(text);
    EXPECT_EQ(FormatAllReduceSpec(spec), text);
    EXPECT_EQ(Parse(FormatAllReduceSpec(spec)), spec);
  }
  EXPECT_EQ(FormatAllReduceSpec(Parse("xring#1:32768:pscpu")), "ring:32K:pscpu");
}

TEST(AllReduceSpecTest, SizeWithoutFollowingRange) {
  std::string message = ErrorOf("pscpu:32k");
  EXPECT_NE(message.find("\"pscpu:32k\""), std::string::npos) << message;
  EXPECT_NE(message.find("at offset 6"), std::string::npos) << message;
  EXPECT_NE(message.find("'32k' has no range after it"), std::string::npos) << message;
  // The caret line underlines the size.
  EXPECT_NE(message.find("\n  pscpu:32k\n        ^~~"), std::string::npos) << message;
  EXPECT_NE(ErrorOf("pscpu:").find("followed by a size"), std::string::npos);
  EXPECT_NE(ErrorOf("pscpu:32k:").find("expected an algorithm"), std::string::npos);
}

TEST(AllReduceSpecTest, NonIntegerShardCount) {
  std::string message = ErrorOf("pscpu:32k:xring#two");
  EXPECT_NE(message.find("shard count 'two' is not a positive integer"), std::string::npos)
      << message;
  EXPECT_NE(message.find("at offset 16"), std::string::npos) << message;
  EXPECT_NE(message.find("^~~"), std::string::npos) << message;
  EXPECT_NE(ErrorOf("ring#").find("expected a shard count"), std::string::npos);
  EXPECT_NE(ErrorOf("ring#0").find("at least 1"), std::string::npos);
  EXPECT_NE(ErrorOf("ring#-2").find("not a positive integer"), std::string::npos);
  EXPECT_NE(ErrorOf("ring#99999999999999999999").find("larger than"), std::string::npos);
  EXPECT_NE(ErrorOf("ring#2#3").find("more than one '#'"), std::string::npos);
  EXPECT_NE(ErrorOf("ring#2/pscpu#3").find("given twice"), std::string::npos);
}

TEST(AllReduceSpecTest, UnknownAlgorithmAndBadSizes) {
  std::string message = ErrorOf("ring:1k:allgather");
  EXPECT_NE(message.find("unknown algorithm 'allgather'"), std::string::npos) << message;
  EXPECT_NE(message.find("at offset 8"), std::string::npos) << message;
  EXPECT_NE(ErrorOf("RING").find("unknown algorithm"), std::string::npos);
  EXPECT_NE(ErrorOf("ring/pscpu/mpi").find("at most two levels"), std::string::npos);
  EXPECT_NE(ErrorOf("ring:1.5k:pscpu").find("is not an element count"), std::string::npos);
  EXPECT_NE(ErrorOf("ring:k:pscpu").find("is not an element count"), std::string::npos);
  EXPECT_NE(ErrorOf("ring:1KB:pscpu").find("is not an element count"), std::string::npos);
  EXPECT_NE(ErrorOf("ring:0:pscpu").find("at least 1 element"), std::string::npos);
  EXPECT_NE(ErrorOf("ring:99999999999T:pscpu").find("too large"), std::string::npos);
  EXPECT_NE(ErrorOf("ring:999999999999999999999:pscpu").find("too large"), std::string::npos);
  EXPECT_EQ(ParseAllReduceSpec("").status().code(), StatusCode::kInvalidInput);
}

TEST(AllReduceSpecTest, SizesMustIncrease) {
  std::string message = ErrorOf("pscpu:64k:ring:32k:nccl");
  EXPECT_NE(message.find("sizes must increase"), std::string::npos) << message;
  EXPECT_NE(message.find("at offset 15"), std::string::npos) << message;
  EXPECT_FALSE(ParseAllReduceSpec("pscpu:1k:ring:1024:nccl").ok());  // equal is not larger
}

TEST(AllReduceSpecTest, SplitBySizeSendsThresholdSizedGradientsToTheEarlierRange) {
  AllReduceSpec spec = Parse("pscpu:1k:ring:1M:psgpu");
  std::vector<int64_t> sizes = {1, 1024, 1025, 1 << 20, (1 << 20) + 1, 0};
  EXPECT_EQ(SplitBySize(spec, sizes), (std::vector<int>{0, 0, 1, 1, 2, 0}));
  EXPECT_EQ(SplitBySize(Parse("ring"), sizes), (std::vector<int>(sizes.size(), 0)));
}

TEST(AllReduceSpecTest, RandomStringsNeverCrash) {
  std::mt19937 rng(20260521);
  const std::string alphabet = "ringpscpuxmcolectvNCL#/:0123456789KMGTk \x01\xff-";
  const std::vector<std::string> tokens = {"ring", "xring", "pscpu", "psgpu", "nccl", "mpi",
                                           "collective", ":", "#", "/", "32k", "4M", "1G",
                                           "7T", "0", "2", "", "x"};
  int parsed = 0;
  for (int iteration = 0; iteration < 200000; ++iteration) {
    std::string text;
    const int length = static_cast<int>(rng() % 24);
    for (int i = 0; i < length; ++i) {
      if (iteration % 2 == 0) {
        text += alphabet[rng() % alphabet.size()];
      } else {
        text += tokens[rng() % tokens.size()];
      }
    }
    auto spec = ParseAllReduceSpec(text);
    if (spec.ok()) {
      ++parsed;
      // What parses must print back to an equal spec with consistent limits.
      ASSERT_EQ(spec->limits.size() + 1, spec->ranges.size()) << text;
      auto again = ParseAllReduceSpec(FormatAllReduceSpec(*spec));
      ASSERT_TRUE(again.ok()) << text;
      ASSERT_EQ(*again, *spec) << text;
    } else {
      ASSERT_EQ(spec.status().code(), StatusCode::kInvalidInput) << text;
      ASSERT_FALSE(spec.status().message().empty());
    }
  }
  EXPECT_GT(parsed, 100);  // the token mode reaches valid specs too
}

}  // namespace
}  // namespace stepscope::parallel
