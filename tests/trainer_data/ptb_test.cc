// PTB reading: word splitting with <eos>, the frequency-ordered vocabulary, ids of the three
// files, the errors for missing, empty, binary and out-of-vocabulary input, and ptb_producer's
// batches.
#include "trainer/data/ptb.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <numeric>
#include <string>
#include <vector>

#include "base/file_io.h"
#include "test_util.h"

namespace stepscope::data {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> Texts(const std::vector<PtbWord>& words) {
  std::vector<std::string> texts;
  for (const PtbWord& word : words) texts.emplace_back(word.text);
  return texts;
}

std::vector<int64_t> Lines(const std::vector<PtbWord>& words) {
  std::vector<int64_t> lines;
  for (const PtbWord& word : words) lines.push_back(word.line);
  return lines;
}

TEST(PtbWordsTest, NewlinesBecomeEndOfSentence) {
  auto words = SplitPtbWords(" the cat \n a  dog\r\n\tsat", "t.txt");
  ASSERT_TRUE(words.ok()) << words.status().message();
  EXPECT_EQ(Texts(*words), (std::vector<std::string>{"the", "cat", "<eos>", "a", "dog", "<eos>",
                                                     "sat"}));  // no newline at the end: no <eos>
  EXPECT_EQ(Lines(*words), (std::vector<int64_t>{1, 1, 1, 2, 2, 2, 3}));
  auto utf8 = SplitPtbWords("café naïve\n", "u.txt");
  ASSERT_TRUE(utf8.ok());
  EXPECT_EQ(Texts(*utf8), (std::vector<std::string>{"café", "naïve", "<eos>"}));
}

TEST(PtbWordsTest, NonTextIsRejectedWithFileLineAndOffset) {
  const std::string with_nul = std::string("ok\nbad") + '\0' + "word\n";
  auto nul = SplitPtbWords(with_nul, "ptb.train.txt");
  ASSERT_FALSE(nul.ok());
  EXPECT_EQ(nul.status().code(), StatusCode::kInvalidInput);
  EXPECT_EQ(nul.status().message(),
            "ptb.train.txt: not a text file: byte 0x00 at offset 6 (line 2)");
  auto latin1 = SplitPtbWords("caf\xe9 au lait\n", "x.txt");  // ISO-8859-1, not UTF-8
  ASSERT_FALSE(latin1.ok());
  EXPECT_EQ(latin1.status().message(), "x.txt: not a text file: byte 0xe9 at offset 3 (line 1)");
  auto blank = SplitPtbWords(" \n\n  \n", "blank.txt");
  ASSERT_FALSE(blank.ok());
  EXPECT_EQ(blank.status().message(), "blank.txt: contains no words");
}

TEST(PtbVocabularyTest, MostFrequentFirstThenByWord) {
  auto words = SplitPtbWords(" b a \n c b \n b d \n", "v.txt");
  ASSERT_TRUE(words.ok());
  const Vocabulary vocabulary = BuildVocabulary(*words);
  // b and <eos> occur 3 times ("<" sorts before letters), then a, c, d once each.
  EXPECT_EQ(vocabulary.words, (std::vector<std::string>{"<eos>", "b", "a", "c", "d"}));
  EXPECT_EQ(vocabulary.Find("b"), 1);
  EXPECT_EQ(vocabulary.Find("d"), 4);
  EXPECT_EQ(vocabulary.Find("zebra"), -1);
}

class PtbFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = stepscope::testing::ScratchDir(
        "ptb_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    Write("ptb.train.txt", " a b c \n b c \n c \n");
    Write("ptb.valid.txt", " c a \n");
    Write("ptb.test.txt", " b \n b a \n");
  }
  void TearDown() override { fs::remove_all(dir_); }
  void Write(const std::string& name, const std::string& text, bool gzip = false) {
    ASSERT_TRUE(WriteFileAtomically((dir_ / name).string(), text, gzip).ok());
  }
  fs::path dir_;
};

TEST_F(PtbFilesTest, LoadsIdsOfAllThreeFiles) {
  auto corpus = LoadPtb(dir_.string());
  ASSERT_TRUE(corpus.ok()) << corpus.status().message();
  // c and <eos> 3 times, b twice, a once.
  EXPECT_EQ(corpus->vocabulary.words, (std::vector<std::string>{"<eos>", "c", "b", "a"}));
  EXPECT_EQ(corpus->train, (std::vector<int32_t>{3, 2, 1, 0, 2, 1, 0, 1, 0}));
  EXPECT_EQ(corpus->valid, (std::vector<int32_t>{1, 3, 0}));
  EXPECT_EQ(corpus->test, (std::vector<int32_t>{2, 0, 2, 3, 0}));
}

TEST_F(PtbFilesTest, GzippedFilesAreRead) {
  Write("ptb.train.txt", " a b c \n b c \n c \n", /*gzip=*/true);
  auto corpus = LoadPtb(dir_.string());
  ASSERT_TRUE(corpus.ok()) << corpus.status().message();
  EXPECT_EQ(corpus->train.size(), 9u);
}

TEST_F(PtbFilesTest, MissingFileIsNotFoundNamingThePath) {
  fs::remove(dir_ / "ptb.valid.txt");
  auto corpus = LoadPtb(dir_.string());
  ASSERT_FALSE(corpus.ok());
  EXPECT_EQ(corpus.status().code(), StatusCode::kNotFound);
  EXPECT_NE(corpus.status().message().find((dir_ / "ptb.valid.txt").string()), std::string::npos)
      << corpus.status().message();
  EXPECT_EQ(ExitCodeFor(corpus.status()), 2);
}

TEST_F(PtbFilesTest, EmptyOrBinaryFileIsInvalidInputNamingTheFile) {
  Write("ptb.test.txt", "");
  auto empty = LoadPtb(dir_.string());
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.status().code(), StatusCode::kInvalidInput);
  EXPECT_NE(empty.status().message().find("ptb.test.txt"), std::string::npos);

  Write("ptb.test.txt", std::string("\x7f"
                                    "ELF\x02\x01\x01\0\0\0",
                                    10));
  auto binary = LoadPtb(dir_.string());
  ASSERT_FALSE(binary.ok());
  EXPECT_EQ(binary.status().code(), StatusCode::kInvalidInput);
  EXPECT_EQ(binary.status().message(),
            (dir_ / "ptb.test.txt").string() + ": not a text file: byte 0x7f at offset 0 (line 1)");
}

TEST_F(PtbFilesTest, WordOutsideTheTrainingVocabularyNamesFileLineAndWord) {
  Write("ptb.test.txt", " b \n b zebra a \n");
  auto corpus = LoadPtb(dir_.string());
  ASSERT_FALSE(corpus.ok());
  EXPECT_EQ(corpus.status().code(), StatusCode::kInvalidInput);
  EXPECT_EQ(corpus.status().message(),
            (dir_ / "ptb.test.txt").string() +
                ":2: word \"zebra\" is not in the vocabulary of the training file");
}

TEST(PtbBatcherTest, CutsBatchesAsPtbProducer) {
  std::vector<int32_t> ids(25);
  std::iota(ids.begin(), ids.end(), 0);  // the 25th word is dropped: 2 rows of 12
  auto batcher = PtbBatcher::Create(ids, /*batch_size=*/2, /*num_steps=*/3);
  ASSERT_TRUE(batcher.ok()) << batcher.status().message();
  EXPECT_EQ(batcher->batch_len(), 12);
  EXPECT_EQ(batcher->epoch_size(), 3);  // (12 - 1) / 3
  std::vector<int32_t> x(6), y(6);
  batcher->Batch(0, x, y);
  EXPECT_EQ(x, (std::vector<int32_t>{0, 1, 2, 12, 13, 14}));
  EXPECT_EQ(y, (std::vector<int32_t>{1, 2, 3, 13, 14, 15}));
  batcher->Batch(2, x, y);
  EXPECT_EQ(x, (std::vector<int32_t>{6, 7, 8, 18, 19, 20}));
  EXPECT_EQ(y, (std::vector<int32_t>{7, 8, 9, 19, 20, 21}));
}

TEST(PtbBatcherTest, TooLittleDataOrBadShapesAreErrors) {
  std::vector<int32_t> ids(10, 0);
  auto short_data = PtbBatcher::Create(ids, 2, 5);  // 5 words per row, 6 needed
  ASSERT_FALSE(short_data.ok());
  EXPECT_EQ(short_data.status().code(), StatusCode::kInvalidInput);
  EXPECT_EQ(short_data.status().message(),
            "epoch_size == 0: 10 words in 2 rows give 5 words per row, fewer than num_steps + 1 "
            "= 6; decrease batch_size or num_steps");
  EXPECT_TRUE(PtbBatcher::Create(ids, 2, 4).ok());  // exactly one batch
  EXPECT_FALSE(PtbBatcher::Create(ids, 0, 4).ok());
  EXPECT_FALSE(PtbBatcher::Create(ids, 2, -1).ok());
  EXPECT_FALSE(PtbBatcher::Create(ids, 11, 1).ok());  // no word per row
}

}  // namespace
}  // namespace stepscope::data
