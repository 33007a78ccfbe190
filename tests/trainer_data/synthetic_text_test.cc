// The built-in corpus: exact sizes and id order, determinism, and that it has structure beyond
// word frequencies (bigram and long-range), measured with the perplexity helpers, which are
// themselves checked on sequences whose perplexity is known.
#include "trainer/data/synthetic_text.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <unordered_map>
#include <vector>

#include "base/random.h"

namespace stepscope::data {
namespace {

TEST(PerplexityTest, KnownSequences) {
  // A cycle 0..9: every word equally frequent (unigram 10), each word fixes the next (bigram ~1).
  std::vector<int32_t> cycle;
  for (int i = 0; i < 10000; ++i) cycle.push_back(i % 10);
  EXPECT_NEAR(UnigramPerplexity(cycle, cycle, 10), 10.0, 1e-9);
  EXPECT_LT(BigramPerplexity(cycle, cycle, 10), 1.01);
  // Independent uniform words: neither model beats the vocabulary size by much.
  Rng rng(3);
  std::vector<int32_t> train, eval;
  for (int i = 0; i < 200000; ++i) train.push_back(static_cast<int32_t>(rng.Below(50)));
  for (int i = 0; i < 20000; ++i) eval.push_back(static_cast<int32_t>(rng.Below(50)));
  EXPECT_NEAR(UnigramPerplexity(train, eval, 50), 50.0, 0.5);
  EXPECT_NEAR(BigramPerplexity(train, eval, 50), 50.0, 2.0);
  EXPECT_GE(BigramPerplexity(train, eval, 50), UnigramPerplexity(train, eval, 50) - 0.01);
}

TEST(SyntheticCorpusTest, SizesAndIdsFollowTheReaderConventions) {
  auto corpus = MakeSyntheticCorpus(2000, 50000, 1);
  ASSERT_TRUE(corpus.ok()) << corpus.status().message();
  EXPECT_EQ(corpus->vocabulary.size(), 2000);
  EXPECT_EQ(corpus->vocabulary.ids.size(), 2000u);
  EXPECT_EQ(corpus->train.size(), 50000u);
  EXPECT_EQ(corpus->valid.size(), 5000u);
  EXPECT_EQ(corpus->test.size(), 5000u);
  std::vector<int64_t> counts(2000, 0);
  for (int32_t id : corpus->train) {
    ASSERT_GE(id, 0);
    ASSERT_LT(id, 2000);
    ++counts[static_cast<size_t>(id)];
  }
  for (int32_t id : corpus->valid) ASSERT_LT(static_cast<uint32_t>(id), 2000u);
  // Ids by descending training frequency, ties by the word.
  for (size_t id = 1; id < counts.size(); ++id) {
    ASSERT_GE(counts[id - 1], counts[id]) << id;
    if (counts[id - 1] == counts[id]) {
      ASSERT_LT(corpus->vocabulary.words[id - 1], corpus->vocabulary.words[id]);
    }
  }
  for (int32_t id = 0; id < 2000; ++id) {
    ASSERT_EQ(corpus->vocabulary.Find(corpus->vocabulary.words[static_cast<size_t>(id)]), id);
  }
  // Sentences end in <eos>, as in PTB, about one word in a dozen.
  const int32_t eos = corpus->vocabulary.Find("<eos>");
  ASSERT_GE(eos, 0);
  EXPECT_LT(eos, 3);
  const double eos_share = static_cast<double>(counts[static_cast<size_t>(eos)]) / 50000;
  EXPECT_GT(eos_share, 0.04);
  EXPECT_LT(eos_share, 0.15);
}

TEST(SyntheticCorpusTest, DeterministicForTheSeed) {
  auto a = MakeSyntheticCorpus(500, 5000, 42);
  auto b = MakeSyntheticCorpus(500, 5000, 42);
  auto c = MakeSyntheticCorpus(500, 5000, 43);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_EQ(a->train, b->train);
  EXPECT_EQ(a->test, b->test);
  EXPECT_EQ(a->vocabulary.words, b->vocabulary.words);
  EXPECT_NE(a->train, c->train);
  // The first words, pinned so a change of the generator is noticed.
  std::string start;
  for (size_t i = 0; i < 6; ++i)
    start += a->vocabulary.words[static_cast<size_t>(a->train[i])] + " ";
  EXPECT_EQ(start, "the babo fuba by these libas ");
}

// Perplexity of w[t] given w[t - distance] (Witten-Bell as BigramPerplexity), i.e. how much a
// word `distance` positions back tells about the current one.
double SkipGramPerplexity(const std::vector<int32_t>& train, const std::vector<int32_t>& eval,
                          int vocab_size, size_t distance) {
  std::unordered_map<int64_t, int64_t> pairs;
  std::vector<int64_t> context(static_cast<size_t>(vocab_size));
  std::vector<int64_t> types(static_cast<size_t>(vocab_size));
  std::vector<double> unigram(static_cast<size_t>(vocab_size), 1.0);
  for (int32_t id : train) unigram[static_cast<size_t>(id)] += 1;
  for (double& p : unigram) p /= static_cast<double>(train.size()) + vocab_size;
  for (size_t i = distance; i < train.size(); ++i) {
    if (pairs[int64_t{train[i - distance]} * vocab_size + train[i]]++ == 0) {
      ++types[static_cast<size_t>(train[i - distance])];
    }
    ++context[static_cast<size_t>(train[i - distance])];
  }
  double log_sum = 0;
  for (size_t i = distance; i < eval.size(); ++i) {
    const auto v = static_cast<size_t>(eval[i - distance]);
    const double backoff = unigram[static_cast<size_t>(eval[i])];
    auto it = pairs.find(int64_t{eval[i - distance]} * vocab_size + eval[i]);
    const double count = it == pairs.end() ? 0.0 : static_cast<double>(it->second);
    const double c = static_cast<double>(context[v]), t = static_cast<double>(types[v]);
    log_sum += std::log(c > 0 ? (count + t * backoff) / (c + t) : backoff);
  }
  return std::exp(-log_sum / static_cast<double>(eval.size() - distance));
}

TEST(SyntheticCorpusTest, HasStructureWellBelowTheVocabularySize) {
  constexpr int kVocab = 10000;
  auto corpus = MakeSyntheticCorpus(kVocab, 1000000, 7);  // the PTB-small shape
  ASSERT_TRUE(corpus.ok());
  const double unigram = UnigramPerplexity(corpus->train, corpus->valid, kVocab);
  const double bigram = BigramPerplexity(corpus->train, corpus->valid, kVocab);
  RecordProperty("unigram_perplexity", std::to_string(unigram));
  RecordProperty("bigram_perplexity", std::to_string(bigram));
  std::printf("built-in corpus (vocab %d, 1M words): unigram perplexity %.1f, bigram %.1f\n",
              kVocab, unigram, bigram);
  // Measured 498.6 and 158.0.
  EXPECT_LT(unigram, 0.1 * kVocab);
  EXPECT_LT(bigram, 0.5 * unigram);
}

TEST(SyntheticCorpusTest, WordsFarBackStillInformTheNextWord) {
  // Topics: the word 8 or 30 positions back (usually an earlier sentence) lowers the perplexity
  // of the current word below the unigram figure. A small vocabulary keeps the pair counts dense.
  constexpr int kVocab = 500;
  auto corpus = MakeSyntheticCorpus(kVocab, 1000000, 3);
  ASSERT_TRUE(corpus.ok());
  const double unigram = UnigramPerplexity(corpus->train, corpus->valid, kVocab);
  const double skip8 = SkipGramPerplexity(corpus->train, corpus->valid, kVocab, 8);
  const double skip30 = SkipGramPerplexity(corpus->train, corpus->valid, kVocab, 30);
  std::printf("vocab %d: unigram perplexity %.1f; given the word 8 back %.1f, 30 back %.1f\n",
              kVocab, unigram, skip8, skip30);
  // Measured 132.2, 96.0 and 113.9.
  EXPECT_LT(skip8, 0.85 * unigram);
  EXPECT_LT(skip30, 0.95 * unigram);
}

TEST(SyntheticCorpusTest, RejectsTooSmallArguments) {
  auto tiny_vocab = MakeSyntheticCorpus(10, 5000, 1);
  ASSERT_FALSE(tiny_vocab.ok());
  EXPECT_EQ(tiny_vocab.status().code(), StatusCode::kInvalidInput);
  EXPECT_EQ(tiny_vocab.status().message(),
            "the built-in corpus needs a vocabulary of at least 64 words (got 10)");
  EXPECT_FALSE(MakeSyntheticCorpus(1000, 10, 1).ok());
  EXPECT_TRUE(MakeSyntheticCorpus(kMinSyntheticVocabulary, 1000, 1).ok());
}

}  // namespace
}  // namespace stepscope::data
