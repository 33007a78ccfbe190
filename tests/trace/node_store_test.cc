// The node store: StepStats detail kept compressed and parsed back on demand, losslessly.
#include "profiler/formats/step_stats/node_reader.h"
#include "profiler/formats/step_stats/node_store.h"

#include <gtest/gtest.h>

#include <google/protobuf/stubs/logging.h>

#include "profiler/formats/reader.h"
#include "profiler/formats/step_stats/step_stats_payload.h"
#include "profiler/formats/step_stats/step_stats_wire.h"
#include "stepscope/tf/run_metadata.pb.h"
#include "test_util.h"

namespace stepscope::trace {
namespace {

// Two devices of `nodes` nodes; every third node of device 0 has an output; slices only for
// even nodes, added in reverse, plus one slice without a node.
struct Built {
  std::string original;  // the RunMetadata serialised before the builder took it
  Trace trace;
};

Built BuildTrace(int nodes) {
  auto metadata = std::make_shared<tf::RunMetadata>();
  metadata->mutable_stepscope_session()->set_host("node-store-host");
  for (int d = 0; d < 2; ++d) {
    auto* device = metadata->mutable_step_stats()->add_dev_stats();
    device->set_device("/device:CPU:" + std::to_string(d));
    (*device->mutable_thread_names())[7] = "worker";
    for (int n = 0; n < nodes; ++n) {
      auto* node = device->add_node_stats();
      node->set_node_name("layer_" + std::to_string(n / 10) + "/op_" + std::to_string(n));
      node->set_all_start_micros(1000 + n * 10);
      node->set_all_end_rel_micros(5);
      node->set_timeline_label("op_" + std::to_string(n) + " = MatMul(a, b)");
      if (d == 0 && n % 3 == 0) {
        auto* output = node->add_output();
        output->mutable_tensor_description()->mutable_allocation_description()->set_requested_bytes(64 * n);
      }
    }
  }
  Built built;
  built.original = metadata->SerializeAsString();
  TraceBuilder builder;
  Track track;
  track.name = builder.Intern("ops");
  const uint32_t lane = builder.AddTrack(track);
  for (int d = 1; d >= 0; --d) {
    for (int n = nodes - 1; n >= 0; --n) {
      if (n % 2 != 0) continue;
      SliceRecord slice;
      slice.track = lane;
      slice.start_ns = (1000 + n * 10) * 1000 + int64_t{d} * 1'000'000'000;  // device 1 after device 0
      slice.dur_ns = 1;
      slice.name = builder.Intern("op_" + std::to_string(n));
      builder.AddSlice(slice, NodeRef{static_cast<uint32_t>(d), static_cast<uint32_t>(n)});
    }
  }
  SliceRecord orphan;
  orphan.track = lane;
  orphan.name = builder.Intern("no node");
  builder.AddSlice(orphan);
  SetStepStatsPayload(builder, metadata);
  built.trace = std::move(builder).Build();
  return built;
}

TEST(NodeStoreTest, RebuildsTheRunMetadataExactly) {
  const Built built = BuildTrace(3000);
  const Trace& trace = built.trace;
  ASSERT_TRUE(HasStepStats(trace));
  ASSERT_NE(StepStatsOf(trace), nullptr);
  EXPECT_EQ(StepStatsOf(trace)->store().entry_count(), 6000u);
  EXPECT_GT(StepStatsOf(trace)->store().block_count(), 2u);
  const auto rebuilt = LoadRunMetadata(trace);
  ASSERT_NE(rebuilt, nullptr);
  EXPECT_EQ(rebuilt->SerializeAsString(), built.original);
}

// Enough blocks that helper threads compress most of them (the ThreadSanitizer stage runs
// this): every block lands in its place, so the rebuilt RunMetadata is the original.
TEST(NodeStoreTest, BlocksCompressedOnHelperThreadsStayInOrder) {
  const Built built = BuildTrace(40000);
  ASSERT_NE(StepStatsOf(built.trace), nullptr);
  EXPECT_EQ(StepStatsOf(built.trace)->store().entry_count(), 80000u);
  EXPECT_GE(StepStatsOf(built.trace)->store().block_count(), 32u);
  const auto rebuilt = LoadRunMetadata(built.trace);
  ASSERT_NE(rebuilt, nullptr);
  EXPECT_EQ(rebuilt->SerializeAsString(), built.original);
}

TEST(NodeStoreTest, EachSliceFindsItsOwnNode) {
  const Built built = BuildTrace(3000);
  const Trace& trace = built.trace;
  NodeReader reader(trace);
  int checked = 0;
  for (uint32_t i = 0; i < trace.slices().size(); ++i) {
    const NodeRef ref = trace.node_ref(i);
    const tf::NodeExecStats* node = reader.Get(i);
    if (!ref.valid()) {
      EXPECT_EQ(node, nullptr);
      EXPECT_TRUE(NodeOf(trace, i) == nullptr);
      continue;
    }
    ASSERT_NE(node, nullptr) << i;
    EXPECT_EQ(node->node_name(), "layer_" + std::to_string(ref.node / 10) + "/op_" + std::to_string(ref.node));
    EXPECT_EQ(node->all_start_micros(), 1000 + ref.node * 10);
    const auto single = NodeOf(trace, i);
    ASSERT_NE(single, nullptr);
    EXPECT_EQ(single->SerializeAsString(), node->SerializeAsString());
    ++checked;
  }
  EXPECT_EQ(checked, 3000);
  // Backwards (a block change at every step) gives the same nodes.
  NodeReader backwards(trace);
  for (uint32_t i = static_cast<uint32_t>(trace.slices().size()); i-- > 0;) {
    const tf::NodeExecStats* node = backwards.Get(i);
    if (trace.node_ref(i).valid()) {
      ASSERT_NE(node, nullptr);
      EXPECT_EQ(node->all_start_micros(), 1000 + trace.node_ref(i).node * 10);
    }
  }
}

TEST(NodeStoreTest, AFieldFilterSkipsBlocksWithoutTheField) {
  const Built built = BuildTrace(3000);
  const Trace& trace = built.trace;
  NodeReader outputs(trace, kNodeOutputs);
  int with_output = 0, skipped = 0;
  for (uint32_t i = 0; i < trace.slices().size(); ++i) {
    const tf::NodeExecStats* node = outputs.Get(i);
    if (node == nullptr) {
      if (trace.node_ref(i).valid()) ++skipped;
      continue;
    }
    if (node->output_size() > 0) ++with_output;
  }
  EXPECT_EQ(with_output, 500);  // even nodes of device 0 that are multiples of 3
  EXPECT_GT(skipped, 0);        // device 1's blocks hold no outputs
}

TEST(NodeStoreTest, TheSampleCostsFarLessThanItsParsedNodes) {
  auto trace = ReadTrace(testing::DataPath("ptb_lstm_tf1_gpu_step.pbtxt"));
  ASSERT_TRUE(trace.ok());
  const NodeStore* store = &StepStatsOf(*trace)->store();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->entry_count(), 2087u);
  const double per_node = static_cast<double>(store->memory_bytes()) / static_cast<double>(store->entry_count());
  EXPECT_LT(per_node, 100.0);
  std::printf("sample node store: %zu bytes, %.1f bytes/node\n", store->memory_bytes(), per_node);
}


// The wire scan's way in: nodes handed over one by one as the file is read, four threads of one
// device interleaved, then a second device. Each block holds one thread's nodes (a pass over a
// track reads only its own blocks), every node finds its entry, and the rebuilt RunMetadata is
// the original.
TEST(NodeStoreWriterTest, GroupsEachThreadsNodesAndKeepsEveryNode) {
  tf::RunMetadata metadata;
  constexpr uint32_t kThreads = 4, kNodesPerDevice = 8000;
  for (int d = 0; d < 2; ++d) {
    auto* device = metadata.mutable_step_stats()->add_dev_stats();
    device->set_device("/device:CPU:" + std::to_string(d));
    for (uint32_t n = 0; n < kNodesPerDevice; ++n) {
      auto* node = device->add_node_stats();
      node->set_node_name("op_" + std::to_string(n));
      node->set_thread_id(d == 0 ? n % kThreads : 0);
      node->set_all_start_micros(n);
      if (n % 100 == 0) node->add_output()->set_slot(1);
    }
  }
  const std::string original = metadata.SerializeAsString();
  // The writer keeps views of the nodes' bytes (the scan's input) until Finish.
  std::vector<std::string> serialized;
  NodeStoreWriter writer(2 * kNodesPerDevice);
  for (uint32_t d = 0; d < 2; ++d) {
    for (uint32_t n = 0; n < kNodesPerDevice; ++n) {
      const tf::NodeExecStats& node = metadata.step_stats().dev_stats(static_cast<int>(d)).node_stats(static_cast<int>(n));
      serialized.push_back(node.SerializeAsString());
    }
  }
  for (uint32_t d = 0; d < 2; ++d) {
    for (uint32_t n = 0; n < kNodesPerDevice; ++n) {
      const tf::NodeExecStats& node = metadata.step_stats().dev_stats(static_cast<int>(d)).node_stats(static_cast<int>(n));
      writer.Add(d, n, d * kNodesPerDevice + n, static_cast<uint32_t>(node.thread_id()),
                 serialized[d * kNodesPerDevice + n], node.output_size() > 0 ? uint32_t{kNodeOutputs} : 0u);
    }
  }
  tf::RunMetadata rest = metadata;
  for (auto& device : *rest.mutable_step_stats()->mutable_dev_stats()) device.clear_node_stats();
  // One slice per node, in node order: slice s is global node s.
  std::vector<NodeRef> refs;
  for (uint32_t d = 0; d < 2; ++d) {
    for (uint32_t n = 0; n < kNodesPerDevice; ++n) refs.push_back(NodeRef{d, n});
  }
  const std::vector<uint32_t> device_first_node = {0, kNodesPerDevice, 2 * kNodesPerDevice};
  std::vector<uint32_t> entry_of_node;
  const auto store = writer.Finish(rest.SerializeAsString(), device_first_node, refs, &entry_of_node);
  ASSERT_EQ(store->entry_count(), 2 * kNodesPerDevice);
  ASSERT_EQ(entry_of_node.size(), 2 * kNodesPerDevice);
  EXPECT_GE(store->block_count(), 8u);

  NodeStore::Reader reader(*store);
  std::vector<bool> seen(entry_of_node.size(), false);
  for (uint32_t global = 0; global < entry_of_node.size(); ++global) {
    const uint32_t entry = entry_of_node[global];
    ASSERT_LT(entry, store->entry_count());
    ASSERT_FALSE(seen[entry]) << "two nodes share entry " << entry;
    seen[entry] = true;
    const NodeRef ref = reader.Ref(entry);
    EXPECT_EQ(ref.device, global / kNodesPerDevice);
    EXPECT_EQ(ref.node, global % kNodesPerDevice);
    const tf::NodeExecStats* node = reader.Get(entry);
    ASSERT_NE(node, nullptr);
    EXPECT_EQ(node->node_name(), "op_" + std::to_string(ref.node));
  }
  // Entries of one block: one device, one thread, in file order.
  for (uint32_t entry = 1; entry < store->entry_count(); ++entry) {
    const NodeRef a = reader.Ref(entry - 1), b = reader.Ref(entry);
    if (a.device != b.device || a.node % kThreads != b.node % kThreads || a.device == 1) continue;
    EXPECT_GT(b.node, a.node) << entry;
  }
  uint32_t thread_changes = 0;
  for (uint32_t entry = 1; entry < store->entry_count(); ++entry) {
    const NodeRef a = reader.Ref(entry - 1), b = reader.Ref(entry);
    thread_changes += a.device == 0 && b.device == 0 && a.node % kThreads != b.node % kThreads;
  }
  EXPECT_LE(thread_changes, store->block_count());  // only where a block ends
  const auto rebuilt = store->Rebuild();
  ASSERT_NE(rebuilt, nullptr);
  EXPECT_EQ(rebuilt->SerializeAsString(), original);
}

// A scan that declines its input at the last node drops its writer with blocks handed to the
// helper threads: the scan gives nothing (the protobuf path then reads the file), and nothing
// leaks or races (the ThreadSanitizer stage runs this).
TEST(NodeStoreWriterTest, AScanDeclinedAtTheEndDropsItsStore) {
  tf::RunMetadata metadata;
  auto* device = metadata.mutable_step_stats()->add_dev_stats();
  device->set_device("/device:CPU:0");
  for (int n = 0; n < 3000; ++n) {
    auto* node = device->add_node_stats();
    node->set_node_name("op_" + std::to_string(n));
    node->set_thread_id(static_cast<uint32_t>(n % 3));
    node->set_timeline_label(std::string(200, static_cast<char>('a' + n % 26)));
  }
  std::string bytes = metadata.SerializeAsString();
  ASSERT_TRUE(ScanBinaryStepStats(bytes).has_value());
  device->mutable_node_stats(2999)->set_node_name("op_\xff");  // protobuf refuses this string
  {
    google::protobuf::LogSilencer silence;
    bytes = metadata.SerializeAsString();
  }
  EXPECT_FALSE(ScanBinaryStepStats(bytes).has_value());
}

}  // namespace
}  // namespace stepscope::trace
