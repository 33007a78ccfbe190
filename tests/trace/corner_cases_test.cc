// The hand-made corner cases of tests/data/corner (see its README): what our model makes of
// them, beyond the tf-timeline equality checked in tf_timeline_export_test.cc.
#include <gtest/gtest.h>

#include <map>

#include "profiler/analysis/summary.h"
#include "profiler/formats/reader.h"
#include "profiler/formats/step_stats/step_stats_payload.h"
#include "stepscope/tf/run_metadata.pb.h"
#include "test_util.h"

namespace stepscope::trace {
namespace {

Trace Load(const std::string& name) {
  auto trace = ReadTrace(testing::DataPath("corner/" + name));
  EXPECT_TRUE(trace.ok()) << trace.status().message();
  return std::move(trace).value();
}

std::map<std::pair<std::string, std::string>, int64_t> OpCounts(const Trace& trace) {
  std::map<std::pair<std::string, std::string>, int64_t> counts;
  for (const auto& op : analysis::Summarize(trace).op_types) counts[{op.where, op.op_type}] = op.count;
  return counts;
}

TEST(CornerCasesTest, TwoColonGpuNamesAndEveryMemcpyKind) {
  const Trace trace = Load("two_colon_gpu.pbtxt");
  auto counts = OpCounts(trace);
  EXPECT_EQ((counts[{"gpu", "Conv2D"}]), 1);  // "foo/bar:Conv2D:Conv2D" on a stream lane
  const analysis::Summary summary = analysis::Summarize(trace);
  std::map<std::string, int64_t> kinds;
  for (const auto& m : summary.memcpy) kinds[m.kind] = m.count;
  for (const char* kind : {"HtoD", "DtoH", "HtoA", "AtoH", "AtoA", "AtoD", "DtoA", "DtoD", "HtoH", "PtoP"}) {
    EXPECT_GE(kinds[kind], 1) << kind;
  }
  // The /memcpy lane repeats stream copies: counted once.
  EXPECT_EQ(kinds["HtoD"], 2);
}

// A CPU device's /memcpy lane (our CPU towers copy between devices there) holds the host's
// copies, recorded nowhere else: a host lane, never a GPU stream, and its copies count once.
TEST(CornerCasesTest, ACpuDevicesMemcpyLaneIsTheHosts) {
  auto read = ReadTraceFromBytes(R"pb(step_stats {
    dev_stats { device: "/job:localhost/replica:0/task:0/device:CPU:0"
      node_stats { node_name: "matmul" all_start_micros: 100 all_end_rel_micros: 50 timeline_label: "matmul = MatMul()" } }
    dev_stats { device: "/job:localhost/replica:0/task:0/device:CPU:0/memcpy"
      node_stats { node_name: "edge_1_matmul:MEMCPYHtoH" all_start_micros: 160 all_end_rel_micros: 10
                   timeline_label: "MEMCPYHtoH 4096 bytes" } } })pb",
                                 "cpu_memcpy.pbtxt");
  ASSERT_TRUE(read.ok()) << read.status().message();
  const Trace& trace = *read;
  int host_memcpy_lanes = 0;
  for (const Track& track : trace.tracks()) {
    EXPECT_FALSE(IsGpuLane(track.kind)) << trace.str(track.full_name);
    host_memcpy_lanes += track.kind == TrackKind::kHostMemcpy;
  }
  EXPECT_EQ(host_memcpy_lanes, 1);
  const analysis::Summary summary = analysis::Summarize(trace);
  for (const auto& usage : summary.usage) EXPECT_NE(usage.lanes, "gpu streams");
  ASSERT_EQ(summary.memcpy.size(), 1u);
  EXPECT_EQ(summary.memcpy[0].count, 1);
}

TEST(CornerCasesTest, MemoryPrefixedLabelsStillGiveTheOpType) {
  const Trace trace = Load("memory_labels.pbtxt");
  auto counts = OpCounts(trace);
  EXPECT_EQ((counts[{"ops", "MatMul"}]), 1);
  EXPECT_EQ((counts[{"ops", "unknown"}]), 0);
  const analysis::Summary summary = analysis::Summarize(trace);
  bool gpu_bfc = false;
  for (const auto& a : summary.allocators) {
    if (a.allocator != "GPU_0_bfc") continue;
    gpu_bfc = true;
    EXPECT_EQ(a.curve_origin, "allocation_records+allocator_bytes_in_use+peak_bytes");
    EXPECT_GT(a.peak_bytes, 0);
  }
  EXPECT_TRUE(gpu_bfc);
}

TEST(CornerCasesTest, ControlAndPartitionInputs) {
  const Trace trace = Load("inputs.pbtxt");
  // Labels without a closing ')' or not matching at all are counted, not guessed.
  EXPECT_EQ(trace.import_stats().Get("op_type_unknown_label"), 4);
  int64_t dataflow = 0;
  for (const Flow& flow : trace.flows()) dataflow += flow.kind == FlowKind::kDataflow ? 1 : 0;
  EXPECT_GT(dataflow, 0);
  for (const Flow& flow : trace.flows()) {
    // A flow never starts at its own consumer.
    EXPECT_NE(flow.from_slice, flow.to_slice);
  }
}

TEST(CornerCasesTest, ZeroDurationsAndOutputsWithoutAllocations) {
  const Trace trace = Load("zero_and_missing.pbtxt");
  int64_t zero = 0;
  for (const Slice& s : trace.slices()) zero += s.dur_ns == 0 ? 1 : 0;
  EXPECT_GT(zero, 0);
  const analysis::Summary summary = analysis::Summarize(trace);
  EXPECT_EQ(summary.nodes, 18);
  for (const auto& a : summary.allocators) {
    for (const auto& t : a.live_at_peak) EXPECT_FALSE(t.name.empty());
  }
}

TEST(CornerCasesTest, QuirksLoadWithGraphsAndCostGraph) {
  const Trace trace = Load("quirks.pbtxt");
  // cost_graph / partition_graphs / function_graphs are TensorFlow's schema: read and kept.
  EXPECT_EQ(trace.import_stats().Get("unmodelled_text_fields_skipped"), 0);
  const auto metadata = LoadRunMetadata(trace);
  EXPECT_TRUE(metadata->has_session_metadata());
  ASSERT_EQ(metadata->partition_graphs_size(), 1);
  EXPECT_EQ(metadata->partition_graphs(0).node(0).op(), "Const");
  EXPECT_EQ(metadata->cost_graph().node(0).compute_cost(), 2);
  EXPECT_EQ(metadata->function_graphs(0).partition_graphs(0).node(0).name(), "f0");
  EXPECT_EQ(trace.slices().size(), 13u);
}

}  // namespace
}  // namespace stepscope::trace
