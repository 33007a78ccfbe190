// The trace model's typed details (slice_details.h, detail_tables.h): tables a reader fills
// follow their slices through Build's sort, and a StepStats trace's payload reads back as the
// same typed records as its RunMetadata says.
#include <gtest/gtest.h>

#include <map>

#include "profiler/analysis/memory_report.h"
#include "profiler/formats/perfetto/perfetto_proto.h"
#include "profiler/formats/reader.h"
#include "profiler/formats/step_stats/node_store.h"
#include "profiler/formats/step_stats/step_stats_payload.h"
#include "profiler/trace/detail_tables.h"
#include "profiler/trace/slice_details.h"
#include "stepscope/tf/run_metadata.pb.h"
#include "test_util.h"

namespace stepscope::trace {
namespace {

TEST(DetailTablesTest, RowsFollowTheirSlicesThroughBuild) {
  TraceBuilder builder;
  Track track;
  track.name = builder.Intern("ops");
  const uint32_t t = builder.AddTrack(track);
  auto add = [&](int64_t start, const char* name) {
    SliceRecord s;
    s.start_ns = start;
    s.dur_ns = 10;
    s.track = t;
    s.name = s.op_type = builder.Intern(name);
    return builder.AddSlice(s);
  };
  const uint32_t late = add(5'000, "late");  // added first, sorted last
  add(1'000, "early");
  OutputRow out;
  out.slice = late;
  out.slot = 1;
  out.dtype = builder.Intern("DT_FLOAT");
  out.allocator = builder.Intern("GPU_0_bfc");
  out.has_allocation = true;
  out.requested_bytes = 4000;
  out.allocated_bytes = 4096;
  out.allocation_id = 7;
  const int64_t shape[] = {10, 100};
  builder.detail_tables().AddOutput(out, shape);
  AllocatorRow allocator;
  allocator.slice = late;
  allocator.allocator = out.allocator;
  allocator.peak_bytes = 4096;
  allocator.bytes_in_use = 8192;
  const AllocationRecord records[] = {{5'002, 4096}, {5'008, -4096}};
  builder.detail_tables().AddAllocator(allocator, records);
  builder.detail_tables().AddOpMemory({late, 256, 512});
  const Trace trace = std::move(builder).Build();

  ASSERT_EQ(trace.slices().size(), 2u);
  ASSERT_EQ(trace.str(trace.slice_name(trace.slices()[1])), "late");
  DetailReader details(trace);
  EXPECT_TRUE(details.MayHave(kDetailOutputs));
  EXPECT_TRUE(details.Outputs(0).empty());
  const auto outputs = details.Outputs(1);
  ASSERT_EQ(outputs.size(), 1u);
  EXPECT_EQ(outputs[0].TensorName(), "late:1");
  EXPECT_EQ(outputs[0].dtype, "DT_FLOAT");
  EXPECT_EQ(std::vector<int64_t>(outputs[0].shape.begin(), outputs[0].shape.end()), (std::vector<int64_t>{10, 100}));
  EXPECT_EQ(outputs[0].allocator, "GPU_0_bfc");
  EXPECT_EQ(outputs[0].allocated_bytes, 4096);
  EXPECT_EQ(outputs[0].allocation_id, 7);
  const auto uses = details.Allocators(1);
  ASSERT_EQ(uses.size(), 1u);
  EXPECT_EQ(uses[0].bytes_in_use, 8192);
  ASSERT_EQ(uses[0].records.size(), 2u);
  // Record times move onto the epoch (the earliest slice, at 1000 ns) with the slices.
  EXPECT_EQ(uses[0].records[0].ns, 4'002);
  EXPECT_EQ(uses[0].records[1].bytes, -4096);
  ASSERT_TRUE(details.Memory(1).has_value());
  EXPECT_EQ(details.Memory(1)->persistent_bytes, 512);
  EXPECT_FALSE(details.Memory(0).has_value());
}

TEST(DetailTablesTest, AStepStatsPayloadReadsAsTheSameTypedRecords) {
  auto read = ReadTrace(testing::DataPath("ptb_lstm_tf1_gpu_step.pbtxt"));
  ASSERT_TRUE(read.ok()) << read.status().message();
  const Trace& trace = *read;
  // The independent count: every output with an allocation, and every allocation record, in
  // the RunMetadata the payload rebuilds.
  const auto metadata = LoadRunMetadata(trace);
  int64_t outputs = 0, requested = 0, records = 0, temp = 0;
  for (const auto& device : metadata->step_stats().dev_stats()) {
    for (const auto& node : device.node_stats()) {
      for (const auto& output : node.output()) {
        if (!output.tensor_description().has_allocation_description()) continue;
        ++outputs;
        requested += output.tensor_description().allocation_description().requested_bytes();
      }
      for (const auto& memory : node.memory()) records += memory.allocation_records_size();
      temp += node.memory_stats().temp_memory_size();
    }
  }
  ASSERT_GT(outputs, 100);
  DetailReader details(trace, kDetailOutputs | kDetailShapes | kDetailAllocators | kDetailOpMemory);
  int64_t got_outputs = 0, got_requested = 0, got_records = 0, got_temp = 0, shaped = 0;
  for (uint32_t i = 0; i < trace.slices().size(); ++i) {
    for (const TensorOutput& output : details.Outputs(i)) {
      if (!output.dtype.empty()) ++shaped;
      if (!output.has_allocation) continue;
      ++got_outputs;
      got_requested += output.requested_bytes;
    }
    for (const AllocatorUse& use : details.Allocators(i)) got_records += static_cast<int64_t>(use.records.size());
    if (auto memory = details.Memory(i)) got_temp += memory->temp_bytes;
  }
  EXPECT_EQ(got_outputs, outputs);
  EXPECT_EQ(got_requested, requested);
  EXPECT_EQ(got_records, records);
  EXPECT_EQ(got_temp, temp);
  EXPECT_GT(shaped, 100);
}

// What the Chrome JSON and Perfetto writers carry of a StepStats op (label, launch record,
// collective, correlation id) reads back from DetailReader as each slice's own node says.
TEST(DetailTablesTest, AStepStatsPayloadReadsBackItsLabelsLaunchesAndCollectives) {
  for (const char* name : {"analysis/ranks/rank0.pbtxt", "ptb_lstm_tf1_gpu_step.pbtxt"}) {
    auto read = ReadTrace(testing::DataPath(name));
    ASSERT_TRUE(read.ok()) << read.status().message();
    const Trace& trace = *read;
    DetailReader details(trace, kDetailLabel | kDetailKernel | kDetailCollective | kDetailCorrelation);
    int labels = 0, launches = 0, collectives = 0, correlations = 0;
    for (uint32_t i = 0; i < trace.slices().size(); ++i) {
      const std::unique_ptr<tf::NodeExecStats> node = NodeOf(trace, i);
      if (node == nullptr) {
        EXPECT_TRUE(details.Label(i).empty());
        EXPECT_FALSE(details.Launch(i).has_value());
        continue;
      }
      EXPECT_EQ(details.Label(i), node->timeline_label()) << name << " slice " << i;
      labels += !node->timeline_label().empty();
      const std::optional<LaunchRecord> launch = details.Launch(i);
      ASSERT_EQ(launch.has_value(), node->has_kernel()) << name << " slice " << i;
      if (launch) {
        ++launches;
        const auto& k = node->kernel();
        EXPECT_EQ(launch->grid[0], k.grid_x());
        EXPECT_EQ(launch->grid[2], k.grid_z());
        EXPECT_EQ(launch->block[0], k.block_x());
        EXPECT_EQ(launch->registers_per_thread, k.registers_per_thread());
        EXPECT_EQ(launch->static_shared_bytes + launch->dynamic_shared_bytes,
                  k.static_shared_memory() + k.dynamic_shared_memory());
        EXPECT_EQ(launch->stream, k.stream_id());
      }
      const std::optional<CollectiveDetails> collective = details.Collective(i);
      ASSERT_EQ(collective.has_value(), node->has_collective()) << name << " slice " << i;
      if (collective) {
        ++collectives;
        EXPECT_EQ(collective->kind, node->collective().kind());
        EXPECT_EQ(collective->algorithm, node->collective().algorithm());
        EXPECT_EQ(collective->bytes, node->collective().bytes());
        EXPECT_EQ(collective->group_size, node->collective().group_size());
      }
      EXPECT_EQ(details.Correlation(i), node->correlation_id()) << name << " slice " << i;
      correlations += node->correlation_id() != 0;
    }
    EXPECT_GT(labels + launches + collectives + correlations, 0) << name;
    if (std::string_view(name).find("rank0") != std::string_view::npos) {
      EXPECT_GT(launches, 0);
      EXPECT_GT(collectives, 0);
      EXPECT_GT(correlations, 0);
    } else {
      EXPECT_GT(labels, 100);
    }
  }
}

// Totals of the typed memory details over the slices that are not aggregate repeats.
struct DetailTotals {
  int64_t outputs = 0, requested = 0, dims = 0, records = 0, record_bytes = 0, temp = 0, persistent = 0;
  bool operator==(const DetailTotals&) const = default;
};
DetailTotals Totals(const Trace& trace) {
  DetailTotals totals;
  DetailReader details(trace, kDetailOutputs | kDetailShapes | kDetailAllocators | kDetailOpMemory);
  for (uint32_t i = 0; i < trace.slices().size(); ++i) {
    if (trace.slices()[i].duplicate()) continue;
    for (const TensorOutput& output : details.Outputs(i)) {
      totals.dims += static_cast<int64_t>(output.shape.size());
      if (!output.has_allocation) continue;
      ++totals.outputs;
      totals.requested += output.requested_bytes;
    }
    for (const AllocatorUse& use : details.Allocators(i)) {
      for (const AllocationRecord& r : use.records) {
        ++totals.records;
        totals.record_bytes += r.bytes;
      }
    }
    if (auto memory = details.Memory(i)) {
      totals.temp += memory->temp_bytes;
      totals.persistent += memory->persistent_bytes;
    }
  }
  return totals;
}

TEST(DetailTablesTest, APerfettoRoundTripKeepsTheMemoryDetails) {
  auto read = ReadTrace(testing::DataPath("ptb_lstm_tf1_gpu_step.pbtxt"));
  ASSERT_TRUE(read.ok()) << read.status().message();
  auto back = ReadPerfettoProto(ExportPerfettoProto(*read), "round trip");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_FALSE(HasStepStats(*back));
  const DetailTotals source = Totals(*read), copy = Totals(*back);
  EXPECT_GT(source.outputs, 100);
  EXPECT_GT(source.records, 100);
  EXPECT_EQ(copy.outputs, source.outputs);
  EXPECT_EQ(copy.requested, source.requested);
  EXPECT_EQ(copy.dims, source.dims);
  EXPECT_EQ(copy.records, source.records);
  EXPECT_EQ(copy.record_bytes, source.record_bytes);
  EXPECT_EQ(copy.temp, source.temp);
  EXPECT_EQ(copy.persistent, source.persistent);
  EXPECT_EQ(back->import_stats().Get("perfetto_detail_annotation_kept_as_arg"), 0);
  // The memory report reads the same figures from either.
  const auto before = analysis::ComputeMemoryReport(*read, 5);
  const auto after = analysis::ComputeMemoryReport(*back, 5);
  ASSERT_EQ(after.size(), before.size());
  for (size_t a = 0; a < before.size(); ++a) {
    EXPECT_EQ(after[a].timeline.allocator, before[a].timeline.allocator);
    EXPECT_EQ(after[a].live_tensors, before[a].live_tensors) << before[a].timeline.allocator;
    EXPECT_EQ(after[a].temp_bytes, before[a].temp_bytes);
    EXPECT_EQ(after[a].max_op_peak_bytes, before[a].max_op_peak_bytes);
  }
}

}  // namespace
}  // namespace stepscope::trace
