// File I/O: gzip round trips and damage, atomic writes that leave nothing behind on failure.
#include "base/file_io.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "test_util.h"

namespace stepscope {
namespace {

std::filesystem::path TempDir() { return testing::ScratchDir("file_io_test"); }

TEST(FileIoTest, GzipRoundTripAndTransparentRead) {
  const std::string text(100000, 'x');
  auto compressed = Gzip(text);
  ASSERT_TRUE(compressed.ok());
  EXPECT_TRUE(IsGzip(*compressed));
  EXPECT_LT(compressed->size(), text.size() / 10);
  const auto path = (TempDir() / "a.txt.gz").string();
  ASSERT_TRUE(WriteFileAtomically(path, text, /*gzip=*/true).ok());
  auto read = ReadFile(path);
  ASSERT_TRUE(read.ok()) << read.status().message();
  EXPECT_EQ(*read, text);
}

TEST(FileIoTest, TruncatedGzipIsInvalidInputNamingTheFile) {
  auto compressed = Gzip(std::string(50000, 'y'));
  ASSERT_TRUE(compressed.ok());
  auto cut = Gunzip(std::string_view(*compressed).substr(0, compressed->size() / 2), "cut.gz");
  ASSERT_FALSE(cut.ok());
  EXPECT_EQ(cut.status().code(), StatusCode::kInvalidInput);
  EXPECT_NE(cut.status().message().find("cut.gz"), std::string::npos);
  EXPECT_NE(cut.status().message().find("truncated"), std::string::npos);
}

TEST(FileIoTest, MissingEmptyAndDirectoryPaths) {
  const auto dir = TempDir();
  auto missing = ReadFile((dir / "nope").string());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(ExitCodeFor(missing.status()), 2);
  ASSERT_TRUE(WriteFileAtomically((dir / "empty").string(), "").ok());
  auto empty = ReadFile((dir / "empty").string());
  EXPECT_EQ(empty.status().code(), StatusCode::kInvalidInput);
  EXPECT_NE(empty.status().message().find("empty"), std::string::npos);
  auto directory = ReadFile(dir.string());
  EXPECT_EQ(directory.status().code(), StatusCode::kInvalidInput);
  EXPECT_NE(directory.status().message().find("directory"), std::string::npos);
}

TEST(FileIoTest, UncommittedWriterLeavesNothing) {
  const auto dir = TempDir();
  const auto path = (dir / "out.json").string();
  std::filesystem::remove(path);
  {
    AtomicFileWriter writer(path);
    ASSERT_TRUE(writer.Open().ok());
    ASSERT_TRUE(writer.Write("partial").ok());
    // No Commit: as if the conversion failed half-way.
  }
  EXPECT_FALSE(std::filesystem::exists(path));
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    EXPECT_EQ(entry.path().string().find("out.json.tmp"), std::string::npos) << entry.path();
  }
}

TEST(FileIoTest, CommitReplacesAnExistingFileWhole) {
  const auto path = (TempDir() / "replace.txt").string();
  ASSERT_TRUE(WriteFileAtomically(path, "old content").ok());
  ASSERT_TRUE(WriteFileAtomically(path, "new").ok());
  auto read = ReadFile(path);
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(*read, "new");
}

TEST(FileIoTest, WritingOntoADirectoryFails) {
  const auto dir = TempDir();
  const Status status = WriteFileAtomically(dir.string(), "x");
  EXPECT_EQ(status.code(), StatusCode::kInvalidInput);
  EXPECT_TRUE(std::filesystem::is_directory(dir));
}

}  // namespace
}  // namespace stepscope
