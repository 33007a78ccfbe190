// A trace file cut short is an error naming the file and the byte offset of the cut, unless the
// reader is told to accept it: then the whole events before the cut are read, and the cut is
// described. Checked at every byte of a small real Kineto trace and of its gzip.
#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "base/file_io.h"
#include "profiler/formats/chrome_json/chrome_json_reader.h"
#include "profiler/formats/reader.h"
#include "profiler/trace/truncation.h"
#include "profiler/formats/writer.h"
#include "test_util.h"

namespace stepscope::trace {
namespace {

std::string Fixture() {
  auto bytes = ReadFile(testing::DataPath("kineto/alexnet_launches.json"));
  EXPECT_TRUE(bytes.ok());
  return bytes.ok() ? *bytes : std::string();
}

// The end offsets of the event array's elements, found by a scan of the text of our own (not
// the reader's): strings, escapes and nesting followed byte by byte.
std::vector<size_t> EventEnds(const std::string& json) {
  std::vector<size_t> ends;
  const size_t array = json.find("\"traceEvents\": [");
  EXPECT_NE(array, std::string::npos);
  int depth = 0;
  bool in_string = false, escaped = false;
  for (size_t i = json.find('[', array) + 1; i < json.size(); ++i) {
    const char c = json[i];
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      if (depth == 0) break;  // the array's `]`
      if (--depth == 0) ends.push_back(i + 1);
    }
  }
  return ends;
}

size_t EventsEndingBy(const std::vector<size_t>& ends, size_t offset) {
  return static_cast<size_t>(std::upper_bound(ends.begin(), ends.end(), offset) - ends.begin());
}

// What zlib inflates from a gzip file's first bytes: the decompressed bytes a cut leaves.
size_t InflatedBytes(std::string_view gz, size_t most) {
  z_stream stream{};
  EXPECT_EQ(inflateInit2(&stream, 16 + MAX_WBITS), Z_OK);
  std::string out(most + 1, '\0');
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(gz.data()));
  stream.avail_in = static_cast<uInt>(gz.size());
  stream.next_out = reinterpret_cast<Bytef*>(out.data());
  stream.avail_out = static_cast<uInt>(out.size());
  inflate(&stream, Z_SYNC_FLUSH);
  const size_t inflated = stream.total_out;
  inflateEnd(&stream);
  return inflated;
}

void WriteBytes(const std::string& path, std::string_view bytes) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  if (!bytes.empty()) {
    ASSERT_EQ(std::fwrite(bytes.data(), 1, bytes.size(), f), bytes.size());
  }
  std::fclose(f);
}

TEST(TruncatedInputTest, FixtureIsWholeAndReal) {
  const std::string json = Fixture();
  ASSERT_EQ(json.size(), 13632u);
  EXPECT_EQ(EventEnds(json).size(), 41u);
  auto whole = ReadChromeJson(json, "alexnet_launches.json");
  ASSERT_TRUE(whole.ok()) << whole.status().message();
  EXPECT_EQ(whole->import_stats().Get("json_truncated_events_kept"), 0);
  EXPECT_EQ(whole->slices().size(), 17u);  // 9 CPU ops, 4 runtime calls, 3 kernels, 1 copy
}

// Plain JSON cut at every byte: an error naming the file and the cut's offset, or (a cut only in
// the whitespace after the closing brace) the whole trace. Accepted, the cut keeps exactly the
// events that end before it, and says where it is.
TEST(TruncatedInputTest, EveryCutOfPlainJsonIsAnErrorWithItsOffsetOrWhole) {
  const std::string json = Fixture();
  const std::vector<size_t> ends = EventEnds(json);
  const size_t document_end = json.find_last_of('}') + 1;
  const size_t first_brace = json.find('{');
  auto whole = ReadChromeJson(json, "whole.json");
  ASSERT_TRUE(whole.ok());
  int64_t previous_kept = 0;
  for (size_t cut = 0; cut < json.size(); ++cut) {
    SCOPED_TRACE("cut at " + std::to_string(cut));
    const std::string_view part = std::string_view(json).substr(0, cut);
    for (int threads : {1, 2}) {
      if (threads > 1 && cut % 11 != 0) continue;  // pieces on threads: every 11th cut is enough
      auto trace = ReadChromeJson(part, "cut.json", {.chunk_bytes = 1024, .threads = threads});
      if (cut >= document_end) {
        ASSERT_TRUE(trace.ok()) << trace.status().message();
        EXPECT_EQ(trace->slices().size(), whole->slices().size());
        EXPECT_EQ(trace->import_stats().counts(), whole->import_stats().counts());
        continue;
      }
      ASSERT_FALSE(trace.ok());
      EXPECT_EQ(trace.status().code(), StatusCode::kInvalidInput);
      const std::string& message = trace.status().message();
      EXPECT_EQ(message.rfind("cut.json: ", 0), 0u) << message;
      if (cut > first_brace) {
        EXPECT_NE(message.find("the file is cut short at byte " + std::to_string(cut) + " "), std::string::npos) << message;
      }
      const size_t events = EventsEndingBy(ends, cut);
      if (events > 0) {
        EXPECT_NE(message.find("; " + std::to_string(events) + " whole events before it"), std::string::npos) << message;
      }
    }
    if (cut >= document_end) continue;
    Truncation cut_at;
    auto kept = ReadChromeJson(part, "cut.json",
                               {.threads = cut % 11 == 0 ? 2 : 1, .allow_truncated = true, .truncation = &cut_at});
    const size_t events = EventsEndingBy(ends, cut);
    if (events == 0) {
      EXPECT_FALSE(kept.ok());  // nothing to analyse: still an error
      continue;
    }
    ASSERT_TRUE(kept.ok()) << kept.status().message();
    EXPECT_EQ(cut_at.file, "cut.json");
    EXPECT_EQ(cut_at.offset, static_cast<int64_t>(cut));
    EXPECT_FALSE(cut_at.gzip_cut);
    EXPECT_EQ(cut_at.events_kept, static_cast<int64_t>(events));
    EXPECT_EQ(kept->import_stats().Get("json_truncated_events_kept"), static_cast<int64_t>(events));
    EXPECT_EQ(kept->import_stats().Get("json_truncated_bytes_dropped"),
              static_cast<int64_t>(cut - ends[events - 1]));
    EXPECT_GE(cut_at.events_kept, previous_kept);
    previous_kept = cut_at.events_kept;
    EXPECT_LE(kept->slices().size(), whole->slices().size());
  }
  EXPECT_EQ(previous_kept, 41);
}

// The fixture gzipped, its file cut at every byte: always an error (a gzip stream that ends
// early is a cut, even where the JSON inside is complete) naming the file, that the compressed
// file ends early, and the offset in the decompressed stream; accepted, the events before it.
TEST(TruncatedInputTest, EveryCutOfAGzipFileIsAnErrorWithItsOffset) {
  const std::string json = Fixture();
  const std::vector<size_t> ends = EventEnds(json);
  auto gz = Gzip(json);
  ASSERT_TRUE(gz.ok());
  const std::string path = (testing::ScratchDir("truncated_gzip") / "cut.json.gz").string();
  WriteBytes(path, *gz);
  auto whole = ReadTrace(path);
  ASSERT_TRUE(whole.ok()) << whole.status().message();
  Truncation none;
  ASSERT_TRUE(ReadTrace(path, {.allow_truncated = true, .truncation = &none}).ok());
  EXPECT_TRUE(none.file.empty());
  int cut_in_json = 0, json_whole_gzip_cut = 0;
  for (size_t cut = 0; cut < gz->size(); ++cut) {
    SCOPED_TRACE("cut at " + std::to_string(cut) + " of " + std::to_string(gz->size()));
    WriteBytes(path, std::string_view(*gz).substr(0, cut));
    auto trace = ReadTrace(path);
    ASSERT_FALSE(trace.ok());
    EXPECT_EQ(trace.status().code(), StatusCode::kInvalidInput);
    const std::string& message = trace.status().message();
    EXPECT_EQ(message.rfind(path + ": ", 0), 0u) << message;
    if (cut < 2) continue;  // not even the gzip magic: not known as gzip
    const size_t inflated = InflatedBytes(std::string_view(*gz).substr(0, cut), json.size());
    EXPECT_NE(message.find("the compressed file ends early"), std::string::npos) << message;
    EXPECT_NE(message.find("at byte " + std::to_string(inflated) + " of the decompressed content"), std::string::npos)
        << message;
    Truncation cut_at;
    auto kept = ReadTrace(path, {.allow_truncated = true, .truncation = &cut_at});
    const size_t events = EventsEndingBy(ends, inflated);
    if (events == 0) {
      EXPECT_FALSE(kept.ok());
      continue;
    }
    ASSERT_TRUE(kept.ok()) << kept.status().message();
    EXPECT_EQ(cut_at.file, path);
    EXPECT_TRUE(cut_at.gzip_cut);
    EXPECT_EQ(cut_at.offset, static_cast<int64_t>(inflated));
    EXPECT_EQ(cut_at.events_kept, static_cast<int64_t>(events));
    EXPECT_EQ(kept->import_stats().Get("gzip_cut_short_read_to_the_cut"), 1);
    if (inflated == json.size()) {
      ++json_whole_gzip_cut;  // only the trailer is missing: every event, still a cut
      EXPECT_EQ(kept->slices().size(), whole->slices().size());
    } else {
      ++cut_in_json;
    }
  }
  EXPECT_GT(cut_in_json, 100);
  EXPECT_GT(json_whole_gzip_cut, 0);
}

// The protobuf formats: a gzip stream cut between two whole messages reads as a whole trace
// unless the gzip stream is checked; it is, for every format.
TEST(TruncatedInputTest, AGzipCutIsAnErrorInEveryFormat) {
  const std::string dir = testing::ScratchDir("truncated_formats").string();
  auto pbtxt = ReadFile(testing::DataPath("corner/quirks.pbtxt"));
  ASSERT_TRUE(pbtxt.ok());
  auto gz = Gzip(*pbtxt);
  ASSERT_TRUE(gz.ok());
  const std::string path = dir + "/quirks.pbtxt.gz";
  WriteBytes(path, std::string_view(*gz).substr(0, gz->size() - 4));  // the length in the trailer cut
  // Perfetto protobuf streams through its own reader: the same, with every packet whole.
  auto alexnet = ReadTrace(testing::DataPath("pytorch_kineto_alexnet_train.json.gz"));
  ASSERT_TRUE(alexnet.ok());
  auto pftrace = Serialize(*alexnet, OutputFormat::kPerfettoProto);
  ASSERT_TRUE(pftrace.ok());
  auto pftrace_gz = Gzip(*pftrace);
  ASSERT_TRUE(pftrace_gz.ok());
  const std::string perfetto = dir + "/alexnet.pftrace.gz";
  WriteBytes(perfetto, std::string_view(*pftrace_gz).substr(0, pftrace_gz->size() - 4));
  for (const auto& [file, size] : {std::pair{path, pbtxt->size()}, std::pair{perfetto, pftrace->size()}}) {
    for (bool allow : {false, true}) {
      auto trace = ReadTrace(file, {.allow_truncated = allow});
      ASSERT_FALSE(trace.ok()) << file;
      EXPECT_EQ(trace.status().message(), file + ": the compressed file ends early: its gzip stream stops at byte " +
                                              std::to_string(size) + " of the decompressed content");
    }
  }
}

// An AllowTruncatedScope makes every read on its thread accept cuts and records them, for front
// ends that read through layers that take no options (merging, per-step collection).
TEST(TruncatedInputTest, ScopeAcceptsAndRecordsEveryCut) {
  const std::string json = Fixture();
  const std::string dir = testing::ScratchDir("truncated_scope").string();
  const std::string a = dir + "/a.json", b = dir + "/b.json";
  WriteBytes(a, std::string_view(json).substr(0, 6000));
  WriteBytes(b, json);
  EXPECT_FALSE(ReadTrace(a).ok());
  {
    AllowTruncatedScope scope;
    ASSERT_TRUE(ReadTrace(a).ok());
    ASSERT_TRUE(ReadTrace(b).ok());
    ASSERT_EQ(scope.truncations().size(), 1u);
    const Truncation& cut = scope.truncations().front();
    EXPECT_EQ(cut.file, a);
    EXPECT_EQ(cut.offset, 6000);
    EXPECT_EQ(cut.events_kept, static_cast<int64_t>(EventsEndingBy(EventEnds(json), 6000)));
    EXPECT_EQ(TruncationLine(cut), "TRUNCATED INPUT: " + a + ": read to byte 6000 (" + cut.reason +
                                       "); analysing the " + std::to_string(cut.events_kept) +
                                       " whole events before it (--allow-truncated)");
  }
  EXPECT_EQ(AllowTruncatedScope::Current(), nullptr);
  EXPECT_FALSE(ReadTrace(a).ok());
}

}  // namespace
}  // namespace stepscope::trace
