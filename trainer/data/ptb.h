// The Penn Treebank word corpus as TensorFlow's PTB tutorial reads it (models/tutorials/rnn/ptb/
// reader.py): ptb.train.txt, ptb.valid.txt and ptb.test.txt of a data directory, words split on
// whitespace with every newline an "<eos>" word, one vocabulary built from the training words
// (most frequent first, ties by the word), and ptb_producer's batching.
//
// Differences from reader.py, on purpose: a word of the valid/test files that the training
// vocabulary lacks is an error naming the file, line and word (reader.py drops it silently), and a
// file that is not text is an error naming it. On the real PTB files the results are identical.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/status.h"

namespace stepscope::data {

inline constexpr std::string_view kEndOfSentence = "<eos>";

// Word <-> id. Ids are dense, 0 .. size() - 1.
struct Vocabulary {
  std::vector<std::string> words;                // id -> word
  std::unordered_map<std::string, int32_t> ids;  // word -> id

  int32_t size() const { return static_cast<int32_t>(words.size()); }
  // The id of `word`, or -1.
  int32_t Find(const std::string& word) const {
    auto it = ids.find(word);
    return it == ids.end() ? -1 : it->second;
  }
};

// A word corpus with its three splits as word ids of one vocabulary.
struct PtbCorpus {
  Vocabulary vocabulary;
  std::vector<int32_t> train, valid, test;
};

// One word of a file and the 1-based line it is on ("<eos>" is on the line it ends).
struct PtbWord {
  std::string_view text;
  int64_t line = 0;
};

// Splits `text` into words, each newline adding "<eos>" (a last line without a newline adds
// none). The views point into `text` (or at kEndOfSentence). Fails with kInvalidInput naming
// `file_name` when the bytes are not text (control characters, invalid UTF-8; the message gives
// line and byte offset) or when there is no word at all.
StatusOr<std::vector<PtbWord>> SplitPtbWords(std::string_view text, const std::string& file_name);

// reader.py's _build_vocab: ids by frequency, most frequent first, ties in byte order of the word.
Vocabulary BuildVocabulary(std::span<const PtbWord> words);

// Reads <data_dir>/ptb.{train,valid,test}.txt (gzip is transparent). A missing file is kNotFound
// naming its path; an empty or non-text file, or a valid/test word outside the training
// vocabulary, is kInvalidInput naming the file (and line and word).
StatusOr<PtbCorpus> LoadPtb(const std::string& data_dir);

// Batches of a word-id sequence as reader.py's ptb_producer cuts them:
//   batch_len = size / batch_size; data = ids[0 : batch_size * batch_len] as (batch_size,
//   batch_len); epoch_size = (batch_len - 1) / num_steps; batch i has
//   inputs  = data[:, i * num_steps : (i + 1) * num_steps]
//   targets = data[:, i * num_steps + 1 : (i + 1) * num_steps + 1].
// Row r of the batches continues row r of the previous batch, so an LSTM carries its state.
class PtbBatcher {
 public:
  // kInvalidInput when batch_size or num_steps is not positive, or the data is too short for
  // one batch (epoch_size == 0).
  static StatusOr<PtbBatcher> Create(std::span<const int32_t> ids, int batch_size, int num_steps);

  int batch_size() const { return batch_size_; }
  int num_steps() const { return num_steps_; }
  int64_t batch_len() const { return batch_len_; }
  int64_t epoch_size() const { return epoch_size_; }

  // Writes batch `index` (0 <= index < epoch_size(); anything else is a bug) into `inputs` and
  // `targets`, each (batch_size, num_steps) row-major.
  void Batch(int64_t index, std::span<int32_t> inputs, std::span<int32_t> targets) const;

 private:
  PtbBatcher(std::vector<int32_t> data, int batch_size, int num_steps, int64_t batch_len);

  std::vector<int32_t> data_;  // (batch_size, batch_len)
  int batch_size_;
  int num_steps_;
  int64_t batch_len_;
  int64_t epoch_size_;
};

}  // namespace stepscope::data
