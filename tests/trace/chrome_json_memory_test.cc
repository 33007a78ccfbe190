// Streaming import keeps memory bounded: reading a JSON trace far larger than the parse buffers
// raises the process's peak resident memory by a few pieces, not by the file's size. Its own
// executable, so that no other test has set the peak before.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <cstdio>
#include <string>

#include "profiler/formats/reader.h"
#include "test_util.h"

namespace stepscope::trace {
namespace {

int64_t PeakResidentBytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<int64_t>(usage.ru_maxrss) * 1024;
}

TEST(ChromeJsonMemoryTest, PeakMemoryDoesNotGrowWithTheFile) {
  // 160 MB of events the import reads and counts but keeps nothing of (instant events), and
  // one slice every 1000 events: memory can only come from parsing.
  const std::string path = (testing::ScratchDir("chrome_json_memory") / "large.json").string();
  std::FILE* file = std::fopen(path.c_str(), "wb");
  ASSERT_NE(file, nullptr);
  constexpr int64_t kFileBytes = int64_t{160} << 20;
  std::fputs("{\"traceEvents\": [\n", file);
  int64_t written = 0, events = 0, slices = 0;
  std::string event;
  while (written < kFileBytes) {
    event.clear();
    if (events > 0) event += ",\n";
    if (events % 1000 == 0) {
      event += R"({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": )" +
               std::to_string(events) + R"(, "dur": 1})";
      ++slices;
    } else {
      event += R"({"ph": "i", "cat": "cpu_instant_event", "name": "mark", "pid": 1, "tid": 1, "ts": )" +
               std::to_string(events) + R"(, "s": "t", "args": {"External id": )" + std::to_string(events) + "}}";
    }
    std::fwrite(event.data(), 1, event.size(), file);
    written += static_cast<int64_t>(event.size());
    ++events;
  }
  std::fputs("\n], \"traceName\": \"large\"}\n", file);
  ASSERT_EQ(std::fclose(file), 0);

  const int64_t before = PeakResidentBytes();
  auto trace = ReadTrace(path);
  const int64_t growth = PeakResidentBytes() - before;
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  EXPECT_EQ(static_cast<int64_t>(trace->slices().size()), slices);
  EXPECT_EQ(trace->import_stats().Get("instant_event_ignored"), events - slices);
  // The buffer, the parser's index for one piece and the trace: tens of megabytes at most.
  EXPECT_LT(growth, kFileBytes / 4) << "peak grew by " << growth << " bytes for a " << kFileBytes << "-byte file";
  std::remove(path.c_str());
}

}  // namespace
}  // namespace stepscope::trace
