// Reading files in pieces: plain and gzip (one or several members) give the file's content
// whatever the piece size; cut or corrupt gzip is an error naming the file, after the bytes
// that could be inflated.
#include "base/file_reader.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include "base/file_io.h"
#include "test_util.h"

namespace stepscope {
namespace {

std::string TempPath(const std::string& name) {
  return (testing::ScratchDir("file_reader_test") / name).string();
}

void WriteRaw(const std::string& path, std::string_view bytes) {
  std::FILE* file = std::fopen(path.c_str(), "wb");
  ASSERT_NE(file, nullptr);
  ASSERT_EQ(std::fwrite(bytes.data(), 1, bytes.size(), file), bytes.size());
  ASSERT_EQ(std::fclose(file), 0);
}

// Text that compresses, but not to nothing: 3 MB, more than the reader's raw buffer.
std::string SampleText() {
  std::mt19937 random(7);
  std::string text;
  while (text.size() < (size_t{3} << 20)) text += "event " + std::to_string(random() % 100000) + ",\n";
  return text;
}

StatusOr<std::string> ReadInPieces(const std::string& path, size_t piece) {
  ASSIGN_OR_RETURN(std::unique_ptr<FileReader> reader, FileReader::Open(path));
  std::string out, buffer(piece, '\0');
  while (true) {
    ASSIGN_OR_RETURN(const size_t n, reader->Read({buffer.data(), buffer.size()}));
    out.append(buffer.data(), n);
    if (n < piece) return out;
  }
}

TEST(FileReaderTest, PlainAndGzipInPiecesOfAnySize) {
  const std::string text = SampleText();
  const std::string plain = TempPath("plain.txt");
  WriteRaw(plain, text);
  auto compressed = Gzip(text);
  ASSERT_TRUE(compressed.ok());
  const std::string gz = TempPath("text.gz");
  WriteRaw(gz, *compressed);
  // Two members one after the other, as `cat a.gz b.gz` makes: both inflated.
  auto second = Gzip("tail\n");
  ASSERT_TRUE(second.ok());
  const std::string two = TempPath("two.gz");
  WriteRaw(two, *compressed + *second);
  for (const size_t piece : {size_t{1}, size_t{7}, size_t{4096}, size_t{1} << 20, size_t{8} << 20}) {
    auto from_plain = ReadInPieces(plain, piece);
    auto from_gz = ReadInPieces(gz, piece);
    auto from_two = ReadInPieces(two, piece);
    ASSERT_TRUE(from_plain.ok() && from_gz.ok() && from_two.ok()) << piece;
    EXPECT_TRUE(*from_plain == text) << "plain in pieces of " << piece;
    EXPECT_TRUE(*from_gz == text) << "gzip in pieces of " << piece;
    EXPECT_TRUE(*from_two == text + "tail\n") << "two members in pieces of " << piece;
  }
  auto whole = ReadFile(two);
  ASSERT_TRUE(whole.ok());
  EXPECT_TRUE(*whole == text + "tail\n");
}

TEST(FileReaderTest, CutAndCorruptGzipNameTheFile) {
  const std::string text = SampleText();
  auto compressed = Gzip(text);
  ASSERT_TRUE(compressed.ok());
  const std::string cut = TempPath("cut.gz");
  WriteRaw(cut, compressed->substr(0, compressed->size() / 2));
  auto from_cut = ReadInPieces(cut, 4096);
  ASSERT_FALSE(from_cut.ok());
  EXPECT_EQ(from_cut.status().code(), StatusCode::kInvalidInput);
  EXPECT_NE(from_cut.status().message().find(cut + ": gzip data is truncated (inflated "), std::string::npos)
      << from_cut.status().message();

  std::string damaged = *compressed;
  for (size_t i = damaged.size() / 2; i < damaged.size() / 2 + 64; ++i) damaged[i] = static_cast<char>(~damaged[i]);
  const std::string corrupt = TempPath("corrupt.gz");
  WriteRaw(corrupt, damaged);
  auto from_corrupt = ReadInPieces(corrupt, 4096);
  ASSERT_FALSE(from_corrupt.ok());
  EXPECT_NE(from_corrupt.status().message().find(corrupt + ": gzip data is corrupt"), std::string::npos)
      << from_corrupt.status().message();
}

TEST(FileReaderTest, MissingPathsDirectoriesAndEmptyFiles) {
  auto missing = FileReader::Open(TempPath("nope"));
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  auto directory = FileReader::Open(std::filesystem::temp_directory_path().string());
  EXPECT_EQ(directory.status().code(), StatusCode::kInvalidInput);
  EXPECT_NE(directory.status().message().find("is a directory"), std::string::npos);
  const std::string empty = TempPath("empty");
  WriteRaw(empty, "");
  auto from_empty = ReadInPieces(empty, 16);
  ASSERT_TRUE(from_empty.ok());
  EXPECT_TRUE(from_empty->empty());
  const std::string one = TempPath("one");
  WriteRaw(one, "x");  // shorter than the gzip magic
  auto from_one = ReadInPieces(one, 16);
  ASSERT_TRUE(from_one.ok());
  EXPECT_EQ(*from_one, "x");
}

}  // namespace
}  // namespace stepscope
