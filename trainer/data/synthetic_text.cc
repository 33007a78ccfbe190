// The built-in corpus's stochastic grammar (Zipfian vocabulary, sentences, topics) and the
// unigram model its difficulty is measured against.
#include "trainer/data/synthetic_text.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "base/check.h"
#include "base/random.h"

namespace stepscope::data {
namespace {

// Grammar probabilities. They set how predictable the text is; the comments give the effect.
constexpr double kTopicalWord = 0.9;    // content words from the document's topic
constexpr double kZipfExponent = 1.05;  // word frequencies inside a class
constexpr double kMeanSentencesPerDocument = 8;
constexpr double kTheDeterminer = 0.5;       // "the" (either number) vs a number-marked one
constexpr double kAdjective = 0.35;          // each of up to two adjectives
constexpr double kUnknownNoun = 0.03;        // a noun replaced by <unk>, as in PTB
constexpr double kSubjectPrepPhrase = 0.25;  // "the X of the Ys" before the verb
constexpr double kSubjectRelClause = 0.15;   // "the X that verbs the Ys" before the verb
constexpr double kAdverb = 0.15;
constexpr double kObject = 0.75;
constexpr double kTrailingPrepPhrase = 0.3;
constexpr double kCoordinatedVerb = 0.1;  // "... and verbs the Y": agrees with the subject

// Internal word ids of the closed classes, in this order.
// clang-format off
enum FunctionWord : int32_t {
  kEos, kUnk, kThe, kA, kThis, kEvery, kThese, kThose, kMany,
  kOf, kIn, kFor, kOn, kWith, kAt, kFrom, kBy, kThat, kAnd, kNumFunctionWords
};
constexpr const char* kFunctionWordText[kNumFunctionWords] = {
    "<eos>", "<unk>", "the", "a", "this", "every", "these", "those", "many",
    "of", "in", "for", "on", "with", "at", "from", "by", "that", "and"};
// clang-format on
constexpr int32_t kSingularDeterminers[] = {kA, kThis, kEvery};
constexpr int32_t kPluralDeterminers[] = {kThese, kThose, kMany};
constexpr int32_t kPrepositions[] = {kOf, kIn, kFor, kOn, kWith, kAt, kFrom, kBy};

// Cumulative weights for sampling an index by binary search.
class Sampler {
 public:
  Sampler() = default;
  explicit Sampler(const std::vector<double>& weights) : cumulative_(weights.size()) {
    std::partial_sum(weights.begin(), weights.end(), cumulative_.begin());
  }
  bool empty() const { return cumulative_.empty(); }
  size_t Sample(Rng& rng) const {
    const double x = rng.Uniform() * cumulative_.back();
    const auto it = std::upper_bound(cumulative_.begin(), cumulative_.end(), x);
    return std::min(static_cast<size_t>(it - cumulative_.begin()), cumulative_.size() - 1);
  }

 private:
  std::vector<double> cumulative_;
};

// One open word class: lemmas with Zipfian frequencies overall and inside each topic.
struct WordClass {
  int num_lemmas = 0;
  Sampler overall;
  std::vector<Sampler> by_topic;          // topic -> sampler over that topic's lemmas
  std::vector<std::vector<int>> members;  // topic -> its lemmas, most frequent first

  void Build(int lemmas, int topics) {
    num_lemmas = lemmas;
    std::vector<double> weights;
    for (int r = 0; r < lemmas; ++r) weights.push_back(1.0 / std::pow(r + 1.0, kZipfExponent));
    overall = Sampler(weights);
    members.assign(static_cast<size_t>(topics), {});
    for (int lemma = 0; lemma < lemmas; ++lemma) {
      members[static_cast<size_t>(lemma % topics)].push_back(lemma);
    }
    by_topic.clear();
    for (const std::vector<int>& topic_lemmas : members) {
      std::vector<double> topic_weights;
      for (size_t r = 0; r < topic_lemmas.size(); ++r) {
        topic_weights.push_back(1.0 / std::pow(static_cast<double>(r) + 1.0, kZipfExponent));
      }
      by_topic.emplace_back(topic_weights);
    }
  }

  int Lemma(Rng& rng, int topic, bool topical) const {
    const auto t = static_cast<size_t>(topic);
    if (topical && !by_topic[t].empty()) return members[t][by_topic[t].Sample(rng)];
    return static_cast<int>(overall.Sample(rng));
  }
};

// "bada", "bade", ...: pronounceable, unique per index, always ending in a vowel (so the "s" and
// "ly" forms never collide with a stem).
std::string Stem(int index) {
  static constexpr char kConsonants[] = "bdfgklmnprtvz";
  static constexpr char kVowels[] = "aeiou";
  constexpr int kSyllables = 13 * 5;
  std::string stem;
  int rest = index;
  for (int syllable = 0; syllable < 2 || rest > 0; ++syllable) {
    const int s = rest % kSyllables;
    rest /= kSyllables;
    stem += kConsonants[s / 5];
    stem += kVowels[s % 5];
  }
  return stem;
}

class Generator {
 public:
  Generator(int vocab_size, uint64_t seed) : rng_(MixSeed(seed, 0x5445585455414cull)) {
    const int content = vocab_size - kNumFunctionWords;
    const int noun_lemmas = content * 2 / 10;    // two forms each: 40% of the content words
    const int verb_lemmas = content * 15 / 100;  // two forms each: 30%
    const int adjectives = content * 2 / 10;
    const int adverbs = content - 2 * noun_lemmas - 2 * verb_lemmas - adjectives;
    STEPSCOPE_CHECK(noun_lemmas > 0 && verb_lemmas > 0 && adjectives > 0 && adverbs > 0);
    topics_ = std::clamp(content / 40, 4, 40);
    nouns_.Build(noun_lemmas, topics_);
    verbs_.Build(verb_lemmas, topics_);
    adjectives_.Build(adjectives, topics_);
    adverbs_.Build(adverbs, 1);

    for (const char* word : kFunctionWordText) words_.emplace_back(word);
    int stem = 0;
    noun_base_ = static_cast<int32_t>(words_.size());
    for (int i = 0; i < noun_lemmas; ++i, ++stem) {
      words_.push_back(Stem(stem));  // singular at noun_base_ + 2i, plural at + 1
      words_.push_back(Stem(stem) + "s");
    }
    verb_base_ = static_cast<int32_t>(words_.size());
    for (int i = 0; i < verb_lemmas; ++i, ++stem) {
      words_.push_back(Stem(stem) + "s");  // agrees with a singular subject, then the plural form
      words_.push_back(Stem(stem));
    }
    adjective_base_ = static_cast<int32_t>(words_.size());
    for (int i = 0; i < adjectives; ++i, ++stem) words_.push_back(Stem(stem));
    adverb_base_ = static_cast<int32_t>(words_.size());
    for (int i = 0; i < adverbs; ++i, ++stem) words_.push_back(Stem(stem) + "ly");
    STEPSCOPE_CHECK(static_cast<int>(words_.size()) == vocab_size);
  }

  const std::vector<std::string>& words() const { return words_; }

  // Appends whole documents until `out` holds `count` words, then cuts it to exactly `count`.
  void Generate(int64_t count, std::vector<int32_t>& out) {
    out.clear();
    while (static_cast<int64_t>(out.size()) < count) {
      const int topic = static_cast<int>(rng_.Below(static_cast<uint64_t>(topics_)));
      do {
        Sentence(topic, out);
      } while (!rng_.Bernoulli(1.0 / kMeanSentencesPerDocument));
    }
    out.resize(static_cast<size_t>(count));
  }

 private:
  void Sentence(int topic, std::vector<int32_t>& out) {
    const bool plural = rng_.Bernoulli(0.5);
    NounPhrase(topic, plural, /*nested=*/false, out);
    if (rng_.Bernoulli(kAdverb)) out.push_back(Adverb());
    out.push_back(Verb(topic, plural));
    if (rng_.Bernoulli(kObject)) NounPhrase(topic, rng_.Bernoulli(0.5), true, out);
    if (rng_.Bernoulli(kTrailingPrepPhrase)) PrepPhrase(topic, out);
    if (rng_.Bernoulli(kCoordinatedVerb)) {
      out.push_back(kAnd);
      out.push_back(Verb(topic, plural));
      NounPhrase(topic, rng_.Bernoulli(0.5), true, out);
    }
    out.push_back(kEos);
  }

  void NounPhrase(int topic, bool plural, bool nested, std::vector<int32_t>& out) {
    if (rng_.Bernoulli(kTheDeterminer)) {
      out.push_back(kThe);
    } else {
      out.push_back(plural ? kPluralDeterminers[rng_.Below(3)]
                           : kSingularDeterminers[rng_.Below(3)]);
    }
    for (int i = 0; i < 2 && rng_.Bernoulli(kAdjective); ++i) {
      out.push_back(adjective_base_ + adjectives_.Lemma(rng_, topic, rng_.Bernoulli(kTopicalWord)));
    }
    if (rng_.Bernoulli(kUnknownNoun)) {
      out.push_back(kUnk);
    } else {
      const int lemma = nouns_.Lemma(rng_, topic, rng_.Bernoulli(kTopicalWord));
      out.push_back(noun_base_ + 2 * lemma + (plural ? 1 : 0));
    }
    if (nested) return;
    const double modifier = rng_.Uniform();
    if (modifier < kSubjectPrepPhrase) {
      PrepPhrase(topic, out);
    } else if (modifier < kSubjectPrepPhrase + kSubjectRelClause) {
      out.push_back(kThat);
      out.push_back(Verb(topic, plural));
      NounPhrase(topic, rng_.Bernoulli(0.5), true, out);
    }
  }

  void PrepPhrase(int topic, std::vector<int32_t>& out) {
    out.push_back(kPrepositions[rng_.Below(8)]);
    NounPhrase(topic, rng_.Bernoulli(0.5), true, out);
  }

  int32_t Verb(int topic, bool plural_subject) {
    const int lemma = verbs_.Lemma(rng_, topic, rng_.Bernoulli(kTopicalWord));
    return verb_base_ + 2 * lemma + (plural_subject ? 1 : 0);
  }

  int32_t Adverb() { return adverb_base_ + adverbs_.Lemma(rng_, 0, false); }

  Rng rng_;
  int topics_ = 0;
  WordClass nouns_, verbs_, adjectives_, adverbs_;
  std::vector<std::string> words_;  // internal id -> word
  int32_t noun_base_ = 0, verb_base_ = 0, adjective_base_ = 0, adverb_base_ = 0;
};

}  // namespace

StatusOr<PtbCorpus> MakeSyntheticCorpus(int vocab_size, int64_t num_words, uint64_t seed) {
  if (vocab_size < kMinSyntheticVocabulary) {
    return InvalidInput("the built-in corpus needs a vocabulary of at least " +
                        std::to_string(kMinSyntheticVocabulary) + " words (got " +
                        std::to_string(vocab_size) + ")");
  }
  if (num_words < 1000) {
    return InvalidInput("the built-in corpus needs at least 1000 training words (got " +
                        std::to_string(num_words) + ")");
  }
  Generator generator(vocab_size, seed);
  std::vector<int32_t> train, valid, test;
  const int64_t held_out = std::max<int64_t>(num_words / 10, 100);
  generator.Generate(num_words, train);
  generator.Generate(held_out, valid);
  generator.Generate(held_out, test);

  // Ids as reader.py assigns them: by training frequency, then by the word.
  const std::vector<std::string>& words = generator.words();
  std::vector<int64_t> counts(words.size(), 0);
  for (int32_t id : train) ++counts[static_cast<size_t>(id)];
  std::vector<int32_t> order(words.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    const auto ua = static_cast<size_t>(a), ub = static_cast<size_t>(b);
    return counts[ua] != counts[ub] ? counts[ua] > counts[ub] : words[ua] < words[ub];
  });
  std::vector<int32_t> final_id(words.size());
  PtbCorpus corpus;
  for (size_t rank = 0; rank < order.size(); ++rank) {
    const auto internal = static_cast<size_t>(order[rank]);
    final_id[internal] = static_cast<int32_t>(rank);
    corpus.vocabulary.words.push_back(words[internal]);
    const bool inserted =
        corpus.vocabulary.ids.emplace(words[internal], static_cast<int32_t>(rank)).second;
    STEPSCOPE_CHECK(inserted);  // every word of the lexicon is distinct
  }
  auto remap = [&](std::vector<int32_t>& ids) {
    for (int32_t& id : ids) id = final_id[static_cast<size_t>(id)];
  };
  remap(train);
  remap(valid);
  remap(test);
  corpus.train = std::move(train);
  corpus.valid = std::move(valid);
  corpus.test = std::move(test);
  return corpus;
}

namespace {

// Add-one smoothed unigram probabilities of `train`.
std::vector<double> UnigramModel(std::span<const int32_t> train, int vocab_size) {
  std::vector<double> p(static_cast<size_t>(vocab_size), 1.0);
  for (int32_t id : train) {
    STEPSCOPE_CHECK(id >= 0 && id < vocab_size);
    p[static_cast<size_t>(id)] += 1.0;
  }
  const double total = static_cast<double>(train.size()) + vocab_size;
  for (double& value : p) value /= total;
  return p;
}

}  // namespace

double UnigramPerplexity(std::span<const int32_t> train, std::span<const int32_t> eval,
                         int vocab_size) {
  STEPSCOPE_CHECK(!eval.empty());
  const std::vector<double> unigram = UnigramModel(train, vocab_size);
  double log_sum = 0;
  for (int32_t id : eval) {
    STEPSCOPE_CHECK(id >= 0 && id < vocab_size);
    log_sum += std::log(unigram[static_cast<size_t>(id)]);
  }
  return std::exp(-log_sum / static_cast<double>(eval.size()));
}

double BigramPerplexity(std::span<const int32_t> train, std::span<const int32_t> eval,
                        int vocab_size) {
  STEPSCOPE_CHECK(!eval.empty());
  const std::vector<double> unigram = UnigramModel(train, vocab_size);
  const auto key = [vocab_size](int32_t previous, int32_t next) {
    return static_cast<uint64_t>(previous) * static_cast<uint64_t>(vocab_size) +
           static_cast<uint64_t>(next);
  };
  std::unordered_map<uint64_t, int64_t> pair_counts;
  std::vector<int64_t> context_counts(static_cast<size_t>(vocab_size), 0);
  std::vector<int64_t> distinct_followers(static_cast<size_t>(vocab_size), 0);
  for (size_t i = 1; i < train.size(); ++i) {
    if (pair_counts[key(train[i - 1], train[i])]++ == 0) {
      ++distinct_followers[static_cast<size_t>(train[i - 1])];
    }
    ++context_counts[static_cast<size_t>(train[i - 1])];
  }
  double log_sum = std::log(unigram[static_cast<size_t>(eval[0])]);
  for (size_t i = 1; i < eval.size(); ++i) {
    const int32_t previous = eval[i - 1], next = eval[i];
    STEPSCOPE_CHECK(next >= 0 && next < vocab_size);
    const auto context = static_cast<double>(context_counts[static_cast<size_t>(previous)]);
    const auto types = static_cast<double>(distinct_followers[static_cast<size_t>(previous)]);
    const double backoff = unigram[static_cast<size_t>(next)];
    double p = backoff;
    if (context > 0) {
      auto it = pair_counts.find(key(previous, next));
      const double pair = it == pair_counts.end() ? 0.0 : static_cast<double>(it->second);
      p = (pair + types * backoff) / (context + types);
    }
    log_sum += std::log(p);
  }
  return std::exp(-log_sum / static_cast<double>(eval.size()));
}

}  // namespace stepscope::data
