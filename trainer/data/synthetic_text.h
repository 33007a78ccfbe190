// The built-in word corpus: what the PTB LSTM trains on when no --data_dir is given.
//
// Text comes from a small stochastic grammar, so the corpus has the kinds of structure a
// two-layer LSTM learns from PTB, at a known difficulty:
// - Zipfian word frequencies inside each word class;
// - syntax: sentence -> subject verb [object] [prepositional phrase] <eos>, noun phrases with
//   determiners, adjectives, prepositional phrases and relative clauses;
// - agreement over a distance: determiners agree with their noun, and the main verb agrees in
//   number with the subject noun across an intervening prepositional phrase or relative clause
//   (singular "the fuba of these libas lidos ..." vs plural "these fubas of a liba lido ...");
// - topics: a document of several sentences draws most nouns, verbs and adjectives from one topic,
//   a dependency that spans sentences (the LSTM state carried across batches can use it).
// Generation is deterministic for (vocab_size, num_words, seed) on every platform.
#pragma once

#include <cstdint>
#include <span>

#include "base/status.h"
#include "trainer/data/ptb.h"

namespace stepscope::data {

inline constexpr int kMinSyntheticVocabulary = 64;

// A corpus with `num_words` training words and num_words / 10 (at least 100) words each for
// valid and test, drawn from the same grammar. The vocabulary has exactly `vocab_size` words,
// ids in reader.py's order (most frequent training word first, ties by the word; words absent
// from train last). kInvalidInput for vocab_size < kMinSyntheticVocabulary or num_words < 1000.
StatusOr<PtbCorpus> MakeSyntheticCorpus(int vocab_size, int64_t num_words, uint64_t seed);

// How much structure a corpus has, as the perplexity of `eval` under simple models fitted on
// `train` (ids in [0, vocab_size)); an LSTM should land at or below the bigram figure.
// Unigram: add-one smoothed word frequencies. Bigram: Witten-Bell interpolation of the bigram
// and the unigram model. A corpus without structure scores close to vocab_size on both.
double UnigramPerplexity(std::span<const int32_t> train, std::span<const int32_t> eval,
                         int vocab_size);
double BigramPerplexity(std::span<const int32_t> train, std::span<const int32_t> eval,
                        int vocab_size);

}  // namespace stepscope::data
