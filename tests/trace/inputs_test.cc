// The input resolver (profiler/formats/inputs.h) and the reader table's file names: files, globs
// and directories turned into traces, on the real fixtures.
#include "profiler/formats/inputs.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "profiler/formats/reader.h"
#include "profiler/formats/writer.h"
#include "test_util.h"

namespace stepscope::trace {
namespace {

namespace fs = std::filesystem;

void CopyInto(const fs::path& dir, const std::string& fixture, const std::string& as) {
  fs::copy_file(stepscope::testing::DataPath(fixture), dir / as, fs::copy_options::overwrite_existing);
}

TEST(InputsTest, FileNamesAreTheReaderTablesWithTheLongestEndingWinning) {
  ASSERT_NE(TraceReaderForFileName("run/host.xplane.pb.gz"), nullptr);
  EXPECT_EQ(TraceReaderForFileName("run/host.xplane.pb.gz")->format, DetectedFormat::kXSpace);
  EXPECT_EQ(TraceReaderForFileName("run/host.xplane.pb")->format, DetectedFormat::kXSpace);
  EXPECT_EQ(TraceReaderForFileName("rank0.pb")->format, DetectedFormat::kStepStats);
  EXPECT_EQ(TraceReaderForFileName("rank0.pbtxt.gz")->format, DetectedFormat::kStepStats);
  EXPECT_EQ(TraceReaderForFileName("x.pt.trace.json")->format, DetectedFormat::kChromeJson);
  EXPECT_EQ(TraceReaderForFileName("x.json.gz")->format, DetectedFormat::kChromeJson);
  EXPECT_EQ(TraceReaderForFileName("x.perfetto-trace.gz")->format, DetectedFormat::kPerfettoProto);
  EXPECT_EQ(TraceReaderForFileName("README.md"), nullptr);
  EXPECT_EQ(TraceReaderForFileName("x.pbtxt.bak"), nullptr);
}

TEST(InputsTest, TheViewersFilePatternsCoverEveryReader) {
  const std::vector<std::string> patterns = TraceFilePatterns();
  for (const char* expected : {"*.json", "*.json.gz", "*.pb", "*.pbtxt", "*.pb.gz", "*.pbtxt.gz", "*.xplane.pb",
                               "*.xplane.pb.gz", "*.pftrace", "*.perfetto-trace", "*.pftrace.gz",
                               "*.perfetto-trace.gz"}) {
    EXPECT_NE(std::find(patterns.begin(), patterns.end(), expected), patterns.end()) << expected;
  }
  EXPECT_EQ(patterns.size(), 12u);
}

TEST(InputsTest, OutputFormatsComeFromTheWriterTablesExtensions) {
  EXPECT_EQ(OutputFormatFromPath("a.json"), OutputFormat::kPerfettoJson);
  EXPECT_EQ(OutputFormatFromPath("a.json.gz"), OutputFormat::kPerfettoJson);
  EXPECT_EQ(OutputFormatFromPath("a.perfetto-trace.gz"), OutputFormat::kPerfettoProto);
  EXPECT_EQ(OutputFormatFromPath("a.pb"), OutputFormat::kRunMetadataBinary);
  EXPECT_EQ(OutputFormatFromPath("a.pbtxt"), OutputFormat::kRunMetadataText);
  EXPECT_EQ(OutputFormatFromPath("a.pb.gz"), std::nullopt);  // pb output is never gzipped
  EXPECT_EQ(OutputFormatFromPath("a.txt"), std::nullopt);
}

// A directory of per-rank traces: each file an input, in natural order (rank10 after rank2).
TEST(InputsTest, ADirectoryOfRanksIsEachTraceFileInNaturalOrder) {
  const fs::path dir = stepscope::testing::ScratchDir("inputs_ranks");
  CopyInto(dir, "analysis/ranks/rank0.pbtxt", "rank10.pbtxt");
  CopyInto(dir, "analysis/ranks/rank1.pbtxt", "rank2.pbtxt");
  std::ofstream(dir / "notes.txt") << "not a trace";
  auto contents = ListTraceDirectory(dir.string());
  ASSERT_TRUE(contents.ok()) << contents.status().message();
  EXPECT_EQ(contents->kind, DirectoryContents::Kind::kTraceFiles);
  EXPECT_EQ(DescribeDirectory(*contents), "2 trace files");
  auto inputs = ResolveTracePaths({dir.string()});
  ASSERT_TRUE(inputs.ok()) << inputs.status().message();
  EXPECT_EQ(*inputs, (std::vector<std::string>{(dir / "rank2.pbtxt").string(), (dir / "rank10.pbtxt").string()}));
}

// An XSpace profiler run (a `.xplane.pb` per host) is one input, read as one trace with a host
// per file, as ReadTrace reads the directory; not a merge of separate traces.
TEST(InputsTest, AProfilerRunDirectoryIsOneTrace) {
  const fs::path dir = stepscope::testing::ScratchDir("inputs_xspace_run");
  CopyInto(dir, "xspace/jax_mlp_cpu.xplane.pb.gz", "host-a.xplane.pb.gz");
  CopyInto(dir, "xspace/tf2_keras_mlp_cpu.xplane.pb.gz", "host-b.xplane.pb.gz");
  auto contents = ListTraceDirectory(dir.string());
  ASSERT_TRUE(contents.ok()) << contents.status().message();
  EXPECT_EQ(contents->kind, DirectoryContents::Kind::kProfilerRun);
  EXPECT_EQ(contents->format, "xspace");
  EXPECT_EQ(DescribeDirectory(*contents), "a profiler run: 2 xspace files read as one trace");
  auto traces = ReadTraces({dir.string()});
  ASSERT_TRUE(traces.ok()) << traces.status().message();
  ASSERT_EQ(traces->size(), 1u);
  auto direct = ReadTrace(dir.string());
  ASSERT_TRUE(direct.ok()) << direct.status().message();
  EXPECT_EQ(traces->front().slices().size(), direct->slices().size());
  EXPECT_EQ(traces->front().tracks().size(), direct->tracks().size());
  size_t hosts = 0;
  for (const Track& track : traces->front().tracks()) hosts += track.parent < 0 ? 1 : 0;
  EXPECT_EQ(hosts, 2u);
}

TEST(InputsTest, AGlobNamesTheTraceFilesItMatches) {
  const fs::path dir = stepscope::testing::ScratchDir("inputs_glob");
  CopyInto(dir, "analysis/ranks/rank0.pbtxt", "step10.pbtxt");
  CopyInto(dir, "analysis/ranks/rank1.pbtxt", "step9.pbtxt");
  std::ofstream(dir / "step1.log") << "not a trace";
  auto inputs = ResolveTracePaths({(dir / "step*").string()});
  ASSERT_TRUE(inputs.ok()) << inputs.status().message();
  EXPECT_EQ(*inputs, (std::vector<std::string>{(dir / "step9.pbtxt").string(), (dir / "step10.pbtxt").string()}));
  auto traces = ReadTraces({(dir / "step*.pbtxt").string()});
  ASSERT_TRUE(traces.ok()) << traces.status().message();
  EXPECT_EQ(traces->size(), 2u);

  auto none = ResolveTracePaths({(dir / "rank*.json").string()});
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), StatusCode::kInvalidInput);
  EXPECT_NE(none.status().message().find("rank*.json"), std::string::npos) << none.status().message();
}

TEST(InputsTest, ADirectoryWithoutTracesNamesItAndWhatItExpected) {
  const fs::path dir = stepscope::testing::ScratchDir("inputs_empty");
  std::ofstream(dir / "notes.txt") << "not a trace";
  auto inputs = ResolveTracePaths({dir.string()});
  ASSERT_FALSE(inputs.ok());
  EXPECT_EQ(inputs.status().code(), StatusCode::kInvalidInput);
  const std::string& message = inputs.status().message();
  EXPECT_NE(message.find(dir.string() + ": no trace files in the directory"), std::string::npos) << message;
  for (const TraceReaderEntry& entry : TraceReaders()) {
    EXPECT_NE(message.find(entry.extensions), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace stepscope::trace
