// Reads PTB's three text files as reader.py does: words split on whitespace, "<eos>" per line, a
// vocabulary by frequency, and ptb_producer's strips of inputs and shifted targets.
#include "trainer/data/ptb.h"

#include <algorithm>
#include <filesystem>
#include <utility>

#include "base/check.h"
#include "base/file_io.h"

namespace stepscope::data {
namespace {

bool IsSpace(unsigned char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

// Length of the UTF-8 sequence starting at text[i], or 0 when it is malformed.
size_t Utf8SequenceLength(std::string_view text, size_t i) {
  const auto lead = static_cast<unsigned char>(text[i]);
  size_t length = 0;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
  } else {
    return 0;
  }
  if (i + length > text.size()) return 0;
  for (size_t k = 1; k < length; ++k) {
    if ((static_cast<unsigned char>(text[i + k]) & 0xC0) != 0x80) return 0;
  }
  return length;
}

std::string Hex(unsigned char c) {
  static constexpr char kDigits[] = "0123456789abcdef";
  return std::string("0x") + kDigits[c >> 4] + kDigits[c & 15];
}

}  // namespace

StatusOr<std::vector<PtbWord>> SplitPtbWords(std::string_view text, const std::string& file_name) {
  std::vector<PtbWord> words;
  int64_t line = 1;
  size_t word_start = std::string_view::npos;
  size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (IsSpace(c)) {
      if (word_start != std::string_view::npos) {
        words.push_back({text.substr(word_start, i - word_start), line});
        word_start = std::string_view::npos;
      }
      if (c == '\n') words.push_back({kEndOfSentence, line++});
      ++i;
      continue;
    }
    size_t length = 1;
    if (c < 0x20 || c == 0x7F) {
      length = 0;
    } else if (c >= 0x80) {
      length = Utf8SequenceLength(text, i);
    }
    if (length == 0) {
      return InvalidInput(file_name + ": not a text file: byte " + Hex(c) + " at offset " +
                          std::to_string(i) + " (line " + std::to_string(line) + ")");
    }
    if (word_start == std::string_view::npos) word_start = i;
    i += length;
  }
  if (word_start != std::string_view::npos) words.push_back({text.substr(word_start), line});
  const bool has_word = std::any_of(words.begin(), words.end(),
                                    [](const PtbWord& w) { return w.text != kEndOfSentence; });
  if (!has_word) return InvalidInput(file_name + ": contains no words");
  return words;
}

Vocabulary BuildVocabulary(std::span<const PtbWord> words) {
  std::unordered_map<std::string_view, int64_t> counts;
  for (const PtbWord& word : words) ++counts[word.text];
  std::vector<std::pair<std::string_view, int64_t>> sorted(counts.begin(), counts.end());
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  Vocabulary vocabulary;
  vocabulary.words.reserve(sorted.size());
  for (const auto& [word, count] : sorted) {
    vocabulary.ids.emplace(std::string(word), vocabulary.size());
    vocabulary.words.emplace_back(word);
  }
  return vocabulary;
}

namespace {

StatusOr<std::vector<int32_t>> ToIds(std::span<const PtbWord> words, const Vocabulary& vocabulary,
                                     const std::string& file_name) {
  std::vector<int32_t> ids;
  ids.reserve(words.size());
  std::string key;
  for (const PtbWord& word : words) {
    key.assign(word.text);
    const int32_t id = vocabulary.Find(key);
    if (id < 0) {
      return InvalidInput(file_name + ":" + std::to_string(word.line) + ": word \"" + key +
                          "\" is not in the vocabulary of the training file");
    }
    ids.push_back(id);
  }
  return ids;
}

}  // namespace

StatusOr<PtbCorpus> LoadPtb(const std::string& data_dir) {
  const std::filesystem::path dir(data_dir);
  const std::string train_path = (dir / "ptb.train.txt").string();
  const std::string valid_path = (dir / "ptb.valid.txt").string();
  const std::string test_path = (dir / "ptb.test.txt").string();

  // Read all three first so a missing file is reported before any parsing work.
  ASSIGN_OR_RETURN(std::string train_text, ReadFile(train_path));
  ASSIGN_OR_RETURN(std::string valid_text, ReadFile(valid_path));
  ASSIGN_OR_RETURN(std::string test_text, ReadFile(test_path));

  ASSIGN_OR_RETURN(std::vector<PtbWord> train_words, SplitPtbWords(train_text, train_path));
  ASSIGN_OR_RETURN(std::vector<PtbWord> valid_words, SplitPtbWords(valid_text, valid_path));
  ASSIGN_OR_RETURN(std::vector<PtbWord> test_words, SplitPtbWords(test_text, test_path));

  PtbCorpus corpus;
  corpus.vocabulary = BuildVocabulary(train_words);
  ASSIGN_OR_RETURN(corpus.train, ToIds(train_words, corpus.vocabulary, train_path));
  ASSIGN_OR_RETURN(corpus.valid, ToIds(valid_words, corpus.vocabulary, valid_path));
  ASSIGN_OR_RETURN(corpus.test, ToIds(test_words, corpus.vocabulary, test_path));
  return corpus;
}

StatusOr<PtbBatcher> PtbBatcher::Create(std::span<const int32_t> ids, int batch_size,
                                        int num_steps) {
  if (batch_size <= 0 || num_steps <= 0) {
    return InvalidInput("PTB batches need a positive batch_size and num_steps (got batch_size " +
                        std::to_string(batch_size) + ", num_steps " + std::to_string(num_steps) +
                        ")");
  }
  const auto words = static_cast<int64_t>(ids.size());
  const int64_t batch_len = words / batch_size;
  if (batch_len < 1 || (batch_len - 1) / num_steps == 0) {
    return InvalidInput("epoch_size == 0: " + std::to_string(words) + " words in " +
                        std::to_string(batch_size) + " rows give " + std::to_string(batch_len) +
                        " words per row, fewer than num_steps + 1 = " +
                        std::to_string(num_steps + 1) + "; decrease batch_size or num_steps");
  }
  std::vector<int32_t> data(ids.begin(), ids.begin() + batch_size * batch_len);
  return PtbBatcher(std::move(data), batch_size, num_steps, batch_len);
}

PtbBatcher::PtbBatcher(std::vector<int32_t> data, int batch_size, int num_steps, int64_t batch_len)
    : data_(std::move(data)),
      batch_size_(batch_size),
      num_steps_(num_steps),
      batch_len_(batch_len),
      epoch_size_((batch_len - 1) / num_steps) {}

void PtbBatcher::Batch(int64_t index, std::span<int32_t> inputs, std::span<int32_t> targets) const {
  STEPSCOPE_CHECK(index >= 0 && index < epoch_size_);
  const auto cells = static_cast<size_t>(batch_size_) * static_cast<size_t>(num_steps_);
  STEPSCOPE_CHECK(inputs.size() == cells && targets.size() == cells);
  for (int row = 0; row < batch_size_; ++row) {
    const int32_t* source = data_.data() + row * batch_len_ + index * num_steps_;
    const auto out = static_cast<size_t>(row) * static_cast<size_t>(num_steps_);
    std::copy(source, source + num_steps_, inputs.begin() + static_cast<ptrdiff_t>(out));
    std::copy(source + 1, source + 1 + num_steps_, targets.begin() + static_cast<ptrdiff_t>(out));
  }
}

}  // namespace stepscope::data
