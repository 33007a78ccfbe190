// The node store: StepStats detail kept deflated and parsed back on demand, losslessly.
#include "profiler/trace/node_store.h"

#include <gtest/gtest.h>

#include "profiler/trace/reader.h"
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
  builder.SetRunMetadata(metadata);
  built.trace = std::move(builder).Build();
  return built;
}

TEST(NodeStoreTest, RebuildsTheRunMetadataExactly) {
  const Built built = BuildTrace(3000);
  const Trace& trace = built.trace;
  ASSERT_TRUE(trace.has_step_stats());
  ASSERT_NE(trace.node_store(), nullptr);
  EXPECT_EQ(trace.node_store()->entry_count(), 6000u);
  EXPECT_GT(trace.node_store()->block_count(), 2u);
  const auto rebuilt = trace.LoadRunMetadata();
  ASSERT_NE(rebuilt, nullptr);
  EXPECT_EQ(rebuilt->SerializeAsString(), built.original);
}

// Enough blocks that helper threads compress most of them (the ThreadSanitizer stage runs
// this): every block lands in its place, so the rebuilt RunMetadata is the original.
TEST(NodeStoreTest, BlocksCompressedOnHelperThreadsStayInOrder) {
  const Built built = BuildTrace(40000);
  ASSERT_NE(built.trace.node_store(), nullptr);
  EXPECT_EQ(built.trace.node_store()->entry_count(), 80000u);
  EXPECT_GE(built.trace.node_store()->block_count(), 32u);
  const auto rebuilt = built.trace.LoadRunMetadata();
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
      EXPECT_TRUE(trace.node(i) == nullptr);
      continue;
    }
    ASSERT_NE(node, nullptr) << i;
    EXPECT_EQ(node->node_name(), "layer_" + std::to_string(ref.node / 10) + "/op_" + std::to_string(ref.node));
    EXPECT_EQ(node->all_start_micros(), 1000 + ref.node * 10);
    const auto single = trace.node(i);
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
  const NodeStore* store = trace->node_store();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->entry_count(), 2087u);
  const double per_node = static_cast<double>(store->memory_bytes()) / static_cast<double>(store->entry_count());
  EXPECT_LT(per_node, 100.0);
  std::printf("sample node store: %zu bytes, %.1f bytes/node\n", store->memory_bytes(), per_node);
}

}  // namespace
}  // namespace stepscope::trace
