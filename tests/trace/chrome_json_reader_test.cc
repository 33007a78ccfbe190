// Chrome JSON import: our own export read back, and a real PyTorch profiler (Kineto) trace.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "base/file_io.h"
#include "profiler/trace/chrome_writer.h"
#include "profiler/trace/reader.h"
#include "test_util.h"

namespace stepscope::trace {
namespace {

TEST(ChromeJsonReaderTest, ReadsBackOurPerfettoExport) {
  auto trace = ReadTrace(testing::DataPath("ptb_lstm_tf1_gpu_step.pbtxt"));
  ASSERT_TRUE(trace.ok());
  const std::string json = ExportPerfettoJson(*trace);
  auto again = ReadTraceFromBytes(json, "export.json");
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(again->source_format(), SourceFormat::kChromeJson);
  EXPECT_EQ(again->slices().size(), 2087u - 755u);
  EXPECT_EQ(again->span_end_ns() - again->span_begin_ns(),
            trace->span_end_ns() - trace->span_begin_ns());
  EXPECT_EQ(again->import_stats().Get("overlap_moved_to_lane"), 0);
  EXPECT_EQ(again->import_stats().Get("flow_not_bound_skipped"), 0);
  EXPECT_FALSE(again->flows().empty());
}

TEST(ChromeJsonReaderTest, ReadsARealKinetoTrace) {
  auto bytes = ReadFile(testing::DataPath("pytorch_kineto_alexnet_train.json.gz"));
  ASSERT_TRUE(bytes.ok());
  const auto doc = nlohmann::json::parse(*bytes);
  int64_t complete = 0;
  for (const auto& e : doc["traceEvents"]) complete += e.value("ph", "") == "X" ? 1 : 0;
  auto trace = ReadTraceFromBytes(*bytes, "alexnet.json.gz");
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  EXPECT_EQ(static_cast<int64_t>(trace->slices().size()), complete);
  int64_t kernels = 0;
  for (const Slice& s : trace->slices()) kernels += s.kind == SliceKind::kKernel ? 1 : 0;
  EXPECT_GT(kernels, 0);
  int64_t launches = 0;
  for (const Flow& f : trace->flows()) launches += f.kind == FlowKind::kLaunch ? 1 : 0;
  EXPECT_GT(launches, 0);
}

TEST(ChromeJsonReaderTest, JsonThatIsNotATrace) {
  auto trace = ReadTraceFromBytes(R"({"hello": "world"})", "config.json");
  ASSERT_FALSE(trace.ok());
  EXPECT_EQ(trace.status().code(), StatusCode::kInvalidInput);
  EXPECT_NE(trace.status().message().find("config.json"), std::string::npos);
  EXPECT_NE(trace.status().message().find("not a trace"), std::string::npos);
  trace = ReadTraceFromBytes(R"([1, 2, 3])", "numbers.json");
  ASSERT_FALSE(trace.ok());
  EXPECT_NE(trace.status().message().find("not a trace"), std::string::npos);
  trace = ReadTraceFromBytes(R"({"traceEvents": [{"ph": "X", "ts": 1)", "cut.json");
  ASSERT_FALSE(trace.ok());
  EXPECT_NE(trace.status().message().find("invalid JSON"), std::string::npos);
}

}  // namespace
}  // namespace stepscope::trace
