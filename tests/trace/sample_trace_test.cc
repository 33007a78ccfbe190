// The real TensorFlow 1.x GPU step of the PTB LSTM (samples/ptb_lstm_tf1_gpu_step.pbtxt):
// exact counts, op-type breakdown, format detection, lossless round trips.
#include <gtest/gtest.h>

#include <map>

#include "base/file_io.h"
#include "profiler/analysis/summary.h"
#include "profiler/formats/reader.h"
#include "profiler/formats/step_stats/step_stats_io.h"
#include "profiler/formats/step_stats/step_stats_payload.h"
#include "profiler/formats/writer.h"
#include "stepscope/tf/run_metadata.pb.h"
#include "test_util.h"

namespace stepscope::trace {
namespace {

using testing::DataPath;

const Trace& Sample() {
  static const Trace* trace = [] {
    auto read = ReadTrace(DataPath("ptb_lstm_tf1_gpu_step.pbtxt"));
    EXPECT_TRUE(read.ok()) << read.status().message();
    return new Trace(std::move(read).value());
  }();
  return *trace;
}

TEST(SampleTraceTest, DevicesAndNodeCounts) {
  const Trace& trace = Sample();
  EXPECT_EQ(trace.source_format(), SourceFormat::kStepStatsText);
  const auto metadata = LoadRunMetadata(trace);
  const auto& step = metadata->step_stats();
  std::map<std::string, int> nodes;
  for (const auto& device : step.dev_stats()) nodes[device.device()] = device.node_stats_size();
  const std::map<std::string, int> expected = {
      {"/device:GPU:0/stream:13", 739},
      {"/device:GPU:0/stream:14", 8},
      {"/device:GPU:0/stream:15", 8},
      {"/device:GPU:0/stream:all", 729},
      {"/device:GPU:0/memcpy", 26},
      {"/job:localhost/replica:0/task:0/device:CPU:0", 21},
      {"/job:localhost/replica:0/task:0/device:GPU:0", 556},
  };
  EXPECT_EQ(nodes, expected);
  EXPECT_EQ(trace.slices().size(), 2087u);

  const analysis::Summary summary = analysis::Summarize(trace);
  EXPECT_EQ(summary.nodes, 2087);
  ASSERT_EQ(summary.devices.size(), 7u);
  std::map<std::string, int64_t> from_summary;
  for (const auto& device : summary.devices) from_summary[device.name] = device.nodes;
  for (const auto& [name, count] : expected) EXPECT_EQ(from_summary[name], count) << name;
}

TEST(SampleTraceTest, AggregateLanesAreMarkedAsDuplicates) {
  const Trace& trace = Sample();
  int64_t duplicates = 0;
  for (const Slice& s : trace.slices()) duplicates += s.duplicate() ? 1 : 0;
  // Every /stream:all kernel and every /memcpy copy has its twin on a stream lane.
  EXPECT_EQ(duplicates, 729 + 26);
  EXPECT_EQ(trace.import_stats().Get("gpu_aggregate_lane_duplicates_marked"), 755);
}

TEST(SampleTraceTest, OpTypeBreakdownMatchesTheModel) {
  // One step of the small PTB config on one GPU (docs/trainers.md §6): 2 layers x 20 steps.
  const analysis::Summary summary = analysis::Summarize(Sample());
  std::map<std::pair<std::string, std::string>, int64_t> counts;
  for (const auto& op : summary.op_types) counts[{op.where, op.op_type}] = op.count;
  EXPECT_EQ((counts[{"ops", "LSTMBlockCell"}]), 40);
  EXPECT_EQ((counts[{"ops", "LSTMBlockCellGrad"}]), 40);
  EXPECT_EQ((counts[{"ops", "ApplyGradientDescent"}]), 6);
  EXPECT_EQ((counts[{"ops", "L2Loss"}]), 7);
  // Kernels: each LSTMBlockCell launches 3 kernels on the compute stream.
  EXPECT_EQ((counts[{"gpu", "LSTMBlockCell"}]), 120);
  // Sorted by total time, descending.
  for (size_t i = 1; i < summary.op_types.size(); ++i) {
    EXPECT_GE(summary.op_types[i - 1].total_ns, summary.op_types[i].total_ns);
  }
}

TEST(SampleTraceTest, MemcpyBytesEqualTheLabelsOfTheStreamRecords) {
  // Independent count straight from the proto: stream lanes only (not the /memcpy repeat).
  const auto metadata = LoadRunMetadata(Sample());
  const auto& step = metadata->step_stats();
  std::map<std::string, std::pair<int64_t, int64_t>> expected;  // kind -> (count, bytes)
  for (const auto& device : step.dev_stats()) {
    if (device.device().find("/stream:") == std::string::npos ||
        device.device().find("/stream:all") != std::string::npos) {
      continue;
    }
    for (const auto& node : device.node_stats()) {
      const std::string& label = node.timeline_label();
      if (label.rfind("MEMCPY", 0) != 0) continue;
      const std::string kind = label.substr(6, label.find(' ') - 6);
      const int64_t bytes = std::stoll(label.substr(label.find(' ') + 1));
      ++expected[kind].first;
      expected[kind].second += bytes;
    }
  }
  ASSERT_EQ(expected.size(), 3u);  // HtoD, DtoH, DtoD
  const analysis::Summary summary = analysis::Summarize(Sample());
  ASSERT_EQ(summary.memcpy.size(), expected.size());
  for (const auto& m : summary.memcpy) {
    EXPECT_EQ(m.count, expected[m.kind].first) << m.kind;
    EXPECT_EQ(m.bytes, expected[m.kind].second) << m.kind;
  }
}

TEST(SampleTraceTest, AllocatorPeakAgreesWithRecordedBytesInUse) {
  const Trace& trace = Sample();
  int64_t max_in_use = 0;
  const auto metadata = LoadRunMetadata(trace);
  for (const auto& device : metadata->step_stats().dev_stats()) {
    for (const auto& node : device.node_stats()) {
      for (const auto& memory : node.memory()) {
        if (memory.allocator_name() == "GPU_0_bfc") {
          max_in_use = std::max(max_in_use, memory.allocator_bytes_in_use());
        }
      }
    }
  }
  const analysis::Summary summary = analysis::Summarize(trace);
  const analysis::AllocatorPeak* gpu = nullptr;
  for (const auto& a : summary.allocators) {
    if (a.allocator == "GPU_0_bfc") gpu = &a;
  }
  ASSERT_NE(gpu, nullptr);
  // The record curve is finer than node-end samples, so its peak is at least theirs, and it is
  // anchored on them, so not far above.
  EXPECT_GE(gpu->peak_bytes, max_in_use);
  EXPECT_LE(gpu->peak_bytes, max_in_use + max_in_use / 50);
  EXPECT_GT(gpu->live_tensors_total, 0);
  EXPECT_EQ(gpu->live_at_peak.front().bytes, 8000000);  // 10000 x 200 fp32 softmax weights
}

TEST(SampleTraceTest, TextBinaryTextIsIdentity) {
  const Trace& trace = Sample();
  auto text = Serialize(trace, OutputFormat::kRunMetadataText);
  ASSERT_TRUE(text.ok());
  auto binary = Serialize(trace, OutputFormat::kRunMetadataBinary);
  ASSERT_TRUE(binary.ok());
  auto from_binary = ReadTraceFromBytes(*binary, "sample.pb");
  ASSERT_TRUE(from_binary.ok()) << from_binary.status().message();
  EXPECT_EQ(from_binary->source_format(), SourceFormat::kRunMetadataBinary);
  EXPECT_EQ(from_binary->slices().size(), 2087u);
  auto text_again = Serialize(*from_binary, OutputFormat::kRunMetadataText);
  ASSERT_TRUE(text_again.ok());
  EXPECT_EQ(*text, *text_again);
  // And our text parses back to the same binary.
  auto from_text = ReadTraceFromBytes(*text, "sample.pbtxt");
  ASSERT_TRUE(from_text.ok()) << from_text.status().message();
  EXPECT_EQ(from_text->source_format(), SourceFormat::kRunMetadataText);
  EXPECT_EQ(*Serialize(*from_text, OutputFormat::kRunMetadataBinary), *binary);
}

TEST(SampleTraceTest, BareBinaryStepStatsIsDetectedAndGzipIsTransparent) {
  std::string bare;
  ASSERT_TRUE(LoadRunMetadata(Sample())->step_stats().SerializeToString(&bare));
  auto trace = ReadTraceFromBytes(bare, "bare.pb");
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  EXPECT_EQ(trace->source_format(), SourceFormat::kStepStatsBinary);
  EXPECT_EQ(trace->slices().size(), 2087u);

  const auto path = (testing::ScratchDir("sample") / "bare.pb.gz").string();
  ASSERT_TRUE(WriteFileAtomically(path, bare, /*gzip=*/true).ok());
  auto gz = ReadTrace(path);
  ASSERT_TRUE(gz.ok()) << gz.status().message();
  EXPECT_EQ(gz->slices().size(), 2087u);
}

TEST(SampleTraceTest, UnknownBinaryFieldsSurvivePbToPb) {
  tf::RunMetadata metadata = *LoadRunMetadata(Sample());
  // A field TensorFlow might add one day, on a node and at the top level.
  metadata.mutable_step_stats()->mutable_dev_stats(0)->mutable_node_stats(0)
      ->GetReflection()->MutableUnknownFields(
          metadata.mutable_step_stats()->mutable_dev_stats(0)->mutable_node_stats(0))
      ->AddVarint(77, 12345);
  std::string bytes;
  ASSERT_TRUE(metadata.SerializeToString(&bytes));
  auto trace = ReadTraceFromBytes(bytes, "future.pb");
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  EXPECT_EQ(trace->import_stats().Get("unknown_binary_fields_kept"), 1);
  auto again = Serialize(*trace, OutputFormat::kRunMetadataBinary);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, bytes);
}

}  // namespace
}  // namespace stepscope::trace
