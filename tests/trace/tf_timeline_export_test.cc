// The tf-timeline export against TensorFlow's own timeline.py output (fixtures made by
// scripts/fixtures/make_tf_timeline_fixtures.py with TensorFlow 2.21), event for event.
// On a mismatch the export is written next to the fixture as `.actual` for diffing.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "base/file_io.h"
#include "profiler/formats/tf_timeline/tf_timeline_writer.h"
#include "profiler/formats/reader.h"
#include "test_util.h"

namespace stepscope::trace {
namespace {

using Json = nlohmann::json;

class TfTimelineExportTest : public ::testing::TestWithParam<std::string> {};

TEST_P(TfTimelineExportTest, EqualsTensorFlowsTimeline) {
  const std::string name = GetParam();
  // The real TF sample, hand-made corner cases, and a trace our trainer wrote (binary).
  const std::string input = testing::DataPath(
      name == "ptb_lstm_tf1_gpu_step" ? name + ".pbtxt"
      : name == "lstm_small_step3"    ? "trainer/" + name + ".pb"
                                      : "corner/" + name + ".pbtxt");
  const std::string fixture_base = testing::DataPath("tf_timeline/" + name + ".tf_timeline.json");
  auto fixture_bytes = ReadFile(fixture_base);
  if (!fixture_bytes.ok()) fixture_bytes = ReadFile(fixture_base + ".gz");
  ASSERT_TRUE(fixture_bytes.ok()) << fixture_bytes.status().message();

  auto trace = ReadTrace(input);
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  auto exported = ExportTfTimelineJson(*trace);
  ASSERT_TRUE(exported.ok()) << exported.status().message();

  const Json expected = Json::parse(*fixture_bytes);
  const Json actual = Json::parse(*exported);
  ASSERT_TRUE(actual.contains("traceEvents"));
  const Json& want = expected["traceEvents"];
  const Json& got = actual["traceEvents"];
  if (want != got) {
    const std::string actual_path = fixture_base + ".actual";
    (void)WriteFileAtomically(actual_path, actual.dump(1));
    size_t i = 0;
    while (i < want.size() && i < got.size() && want[i] == got[i]) ++i;
    FAIL() << name << ": " << got.size() << " events, TensorFlow has " << want.size()
           << "; first difference at event " << i << "\n  expected: "
           << (i < want.size() ? want[i].dump() : "<none>")
           << "\n  actual:   " << (i < got.size() ? got[i].dump() : "<none>")
           << "\n  full export written to " << actual_path;
  }
  EXPECT_EQ(expected.size(), actual.size()) << "top-level keys differ";
}

INSTANTIATE_TEST_SUITE_P(Fixtures, TfTimelineExportTest,
                         ::testing::Values("ptb_lstm_tf1_gpu_step", "two_colon_gpu",
                                           "memory_labels", "inputs", "zero_and_missing",
                                           "quirks", "lstm_small_step3"));

TEST(TfTimelineExportTest, NeedsAStepStatsSource) {
  auto trace = ReadTraceFromBytes(R"([{"ph":"X","name":"a","pid":1,"tid":1,"ts":1,"dur":2}])",
                                  "small.json");
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  auto exported = ExportTfTimelineJson(*trace);
  ASSERT_FALSE(exported.ok());
  EXPECT_NE(exported.status().message().find("step stats"), std::string::npos);
}

}  // namespace
}  // namespace stepscope::trace
