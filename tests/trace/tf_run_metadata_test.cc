// Real TensorFlow RunMetadata through our pb and pbtxt writers, and the allocator curve against
// what TensorFlow itself recorded. Fixtures in tests/data/tf_run_metadata were made (and are
// checked) with TensorFlow by scripts/fixtures/make_tf_run_metadata_fixtures.py.
#include <gtest/gtest.h>

#include <google/protobuf/text_format.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/file_io.h"
#include "profiler/analysis/memory_report.h"
#include "profiler/analysis/memory_timeline.h"
#include "profiler/analysis/summary.h"
#include "profiler/formats/reader.h"
#include "profiler/formats/step_stats/node_reader.h"
#include "profiler/formats/step_stats/node_store.h"
#include "profiler/formats/step_stats/step_stats_io.h"
#include "profiler/formats/step_stats/step_stats_payload.h"
#include "profiler/formats/writer.h"
#include "stepscope/tf/run_metadata.pb.h"
#include "test_util.h"

namespace stepscope::trace {
namespace {

using testing::DataPath;

// The file's bytes (a .gz inflated).
std::string Bytes(const std::string& name) {
  auto bytes = ReadFile(DataPath(name));
  EXPECT_TRUE(bytes.ok()) << name;
  return bytes.ok() ? *bytes : std::string();
}

Trace FromBytes(const std::string& bytes, const std::string& name) {
  auto trace = ReadTraceFromBytes(bytes, name);
  EXPECT_TRUE(trace.ok()) << trace.status().message();
  return trace.ok() ? std::move(*trace) : Trace();
}

std::string Write(const Trace& trace, OutputFormat format, const SerializeOptions& options = {},
                  std::vector<std::string>* left_out = nullptr) {
  auto bytes = Serialize(trace, format, options, left_out);
  EXPECT_TRUE(bytes.ok()) << bytes.status().message();
  return bytes.ok() ? *bytes : std::string();
}

int PartitionGraphNodes(const tf::RunMetadata& metadata) {
  int nodes = 0;
  for (const auto& graph : metadata.partition_graphs()) nodes += graph.node_size();
  return nodes;
}

TEST(TfRunMetadataTest, PartitionGraphsSurviveTextBothWays) {
  const std::string original = Bytes("tf_run_metadata/two_cpu_graphs.pb");
  tf::RunMetadata expected;
  ASSERT_TRUE(expected.ParseFromString(original));
  ASSERT_EQ(expected.partition_graphs_size(), 2);
  ASSERT_EQ(PartitionGraphNodes(expected), 34);

  // pb -> pbtxt: the graphs are written, every node of them.
  const Trace from_pb = FromBytes(original, "two_cpu_graphs.pb");
  std::vector<std::string> left_out;
  const std::string text = Write(from_pb, OutputFormat::kRunMetadataText, {}, &left_out);
  EXPECT_TRUE(left_out.empty()) << left_out.front();
  EXPECT_NE(text.find("op: \"_Recv\""), std::string::npos);
  EXPECT_NE(text.find("send_device_incarnation"), std::string::npos);
  EXPECT_NE(text.find("session_metadata"), std::string::npos);
  tf::RunMetadata from_text;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &from_text));
  EXPECT_EQ(PartitionGraphNodes(from_text), 34);

  // pbtxt -> pb: byte-identical to TensorFlow's binary (deterministic serialisation).
  const Trace from_pbtxt = FromBytes(text, "two_cpu_graphs.pbtxt");
  EXPECT_EQ(from_pbtxt.import_stats().Get("unmodelled_text_fields_skipped"), 0);
  const std::string binary = Write(from_pbtxt, OutputFormat::kRunMetadataBinary);
  EXPECT_TRUE(binary == original) << "pb -> pbtxt -> pb changed " << original.size() << " bytes into "
                                  << binary.size();
  // pbtxt -> pb -> pbtxt: the same text.
  EXPECT_TRUE(Write(FromBytes(binary, "back.pb"), OutputFormat::kRunMetadataText) == text);
  // TensorFlow's own text (text_format.MessageToString) reads to the same binary.
  const Trace from_tf_text = FromBytes(Bytes("tf_run_metadata/two_cpu_graphs.pbtxt"), "tf.pbtxt");
  EXPECT_TRUE(Write(from_tf_text, OutputFormat::kRunMetadataBinary) == original);
  EXPECT_TRUE(Write(from_pb, OutputFormat::kRunMetadataBinary) == original);
}

TEST(TfRunMetadataTest, GraphFieldsNewerThanOurSchemaAreSkippedAndCounted) {
  const std::string text =
      "step_stats { dev_stats { device: \"/device:CPU:0\" node_stats { node_name: \"a\" } } }\n"
      "partition_graphs { node { name: \"a\" op: \"NoOp\" field_from_the_future: 3 } }\n";
  const Trace trace = FromBytes(text, "future.pbtxt");
  EXPECT_EQ(trace.import_stats().Get("unmodelled_text_fields_skipped"), 1);
  EXPECT_EQ(LoadRunMetadata(trace)->partition_graphs(0).node(0).op(), "NoOp");
  // Outside the graphs a misspelt field is still an error.
  EXPECT_FALSE(ReadTraceFromBytes(
                   "step_stats { dev_stats { device: \"/device:CPU:0\" node_stats { node_name: \"a\" "
                   "op_typo: 1 } } }\n",
                   "typo.pbtxt")
                   .ok());
}

TEST(TfRunMetadataTest, DefaultTextIsTensorFlowsSchemaOnly) {
  const std::string original = Bytes("trainer/lstm_small_step3.pb");
  const Trace trace = FromBytes(original, "lstm_small_step3.pb");
  std::vector<std::string> left_out;
  const std::string text = Write(trace, OutputFormat::kRunMetadataText, {}, &left_out);
  // No field TensorFlow's parser would refuse.
  for (const char* field : {"op_type:", "kernel {", "collective {", "memcpy {", "correlation_id:",
                            "input:", "host:", "rank:", "stepscope_session"}) {
    EXPECT_EQ(text.find(field), std::string::npos) << field;
  }
  // Byte-identical to the fixture TensorFlow's text_format.Parse was run on.
  EXPECT_TRUE(text == Bytes("tf_run_metadata/lstm_small_step3.tf.pbtxt.gz"))
      << "rerun scripts/fixtures/make_tf_run_metadata_fixtures.py and its --check";
  ASSERT_EQ(left_out.size(), 1u);
  EXPECT_NE(left_out[0].find("NodeExecStats.op_type (417)"), std::string::npos) << left_out[0];
  EXPECT_NE(left_out[0].find("RunMetadata.stepscope_session (1)"), std::string::npos) << left_out[0];

  // --keep-extensions: our fields by name, and the binary comes back unchanged.
  SerializeOptions keep;
  keep.keep_extensions = true;
  left_out.clear();
  const std::string full = Write(trace, OutputFormat::kRunMetadataText, keep, &left_out);
  EXPECT_TRUE(left_out.empty());
  EXPECT_NE(full.find("op_type: \"GatherV2\""), std::string::npos);
  EXPECT_NE(full.find("stepscope_session {"), std::string::npos);
  EXPECT_TRUE(Write(FromBytes(full, "full.pbtxt"), OutputFormat::kRunMetadataBinary) ==
              Write(trace, OutputFormat::kRunMetadataBinary));
}

// Per allocator, TensorFlow's own maximum allocator_bytes_in_use and peak_bytes.
std::map<std::string, int64_t> MaxInUse(const Trace& trace) {
  std::map<std::string, int64_t> max;
  auto metadata = LoadRunMetadata(trace);
  for (const auto& device : metadata->step_stats().dev_stats()) {
    for (const auto& node : device.node_stats()) {
      for (const auto& memory : node.memory()) {
        max[memory.allocator_name()] = std::max(max[memory.allocator_name()], memory.allocator_bytes_in_use());
      }
    }
  }
  return max;
}

// The curve passes through (or, where nodes end together, above) every in-use sample TensorFlow
// recorded, never drops below a node's peak_bytes while it runs, and its peak is never below
// TensorFlow's maximum.
void ExpectCurveHonoursRecordedMemory(const Trace& trace) {
  const auto timelines = analysis::ComputeMemoryTimelines(trace);
  std::map<std::string, const analysis::AllocatorTimeline*> by_name;
  for (const auto& t : timelines) by_name[t.allocator] = &t;
  NodeReader nodes(trace, kNodeMemory);
  int64_t samples = 0;
  for (uint32_t i = 0; i < trace.slices().size(); ++i) {
    const tf::NodeExecStats* node = nodes.Get(i);
    if (node == nullptr) continue;
    const Slice& s = trace.slices()[i];
    for (const auto& memory : node->memory()) {
      auto it = by_name.find(memory.allocator_name());
      if (memory.allocator_bytes_in_use() > 0) {
        ASSERT_NE(it, by_name.end()) << memory.allocator_name();
        EXPECT_GE(analysis::BytesAt(it->second->curve, s.end_ns()), memory.allocator_bytes_in_use())
            << node->node_name();
        ++samples;
      }
      if (memory.peak_bytes() > 0 && it != by_name.end()) {
        int64_t highest = analysis::BytesAt(it->second->curve, s.start_ns);
        for (const auto& p : it->second->curve) {
          if (p.time_ns >= s.start_ns && p.time_ns <= s.end_ns()) highest = std::max(highest, p.bytes);
        }
        EXPECT_GE(highest, memory.peak_bytes()) << node->node_name();
      }
    }
  }
  EXPECT_GT(samples, 0);
  const auto summary = analysis::Summarize(trace);
  for (const auto& [allocator, max] : MaxInUse(trace)) {
    if (max == 0) continue;
    bool found = false;
    for (const auto& peak : summary.allocators) {
      if (peak.allocator != allocator) continue;
      found = true;
      EXPECT_GE(peak.peak_bytes, max) << allocator;
      const auto sources = analysis::CurveSources(peak.curve_origin);
      EXPECT_NE(std::find(sources.begin(), sources.end(), "allocator_bytes_in_use"), sources.end());
    }
    EXPECT_TRUE(found) << allocator;
  }
}

TEST(TfRunMetadataTest, LstmStepPeakNeverBelowTensorFlowsInUse) {
  const Trace trace = FromBytes(Bytes("tf_run_metadata/lstm_lm_step.pb.gz"), "lstm_lm_step.pb.gz");
  ExpectCurveHonoursRecordedMemory(trace);
  // What TensorFlow recorded (the script computed it with TensorFlow), and the report's own figure.
  const auto expected = nlohmann::json::parse(Bytes("tf_run_metadata/lstm_lm_step.in_use.json"));
  const auto reports = analysis::ComputeMemoryReport(trace);
  ASSERT_EQ(reports.size(), expected.size());
  for (const auto& report : reports) {
    const auto& tf_figures = expected.at(report.timeline.allocator);
    EXPECT_EQ(report.max_allocator_bytes_in_use, tf_figures.at("max_allocator_bytes_in_use").get<int64_t>());
    EXPECT_EQ(report.max_op_peak_bytes, tf_figures.at("max_peak_bytes").get<int64_t>());
    EXPECT_GE(report.timeline.peak_bytes, report.max_allocator_bytes_in_use);
    EXPECT_EQ(report.timeline.sources,
              (std::vector<std::string>{"allocation_records", "allocator_bytes_in_use", "peak_bytes"}));
  }
}

TEST(TfRunMetadataTest, GpuSampleAndTrainerPeaksNeverBelowRecordedInUse) {
  ExpectCurveHonoursRecordedMemory(FromBytes(Bytes("ptb_lstm_tf1_gpu_step.pbtxt"), "ptb.pbtxt"));
  ExpectCurveHonoursRecordedMemory(FromBytes(Bytes("trainer/lstm_small_step3.pb"), "trainer.pb"));
}

}  // namespace
}  // namespace stepscope::trace
