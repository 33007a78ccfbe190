// Bandwidth per collective (analysis/collective_bandwidth.h): nccl-tests' factors and the names
// the sources give collectives and dtypes; a constructed NCCL trace whose sizes, durations and
// overlaps give every figure by hand; real two-process gloo traces and a real stepscope-train
// trace against a recount of their raw events.
#include "profiler/analysis/collective_bandwidth.h"

#include <gtest/gtest.h>

#include <vector>

#include "profiler/formats/reader.h"
#include "test_util.h"

namespace stepscope::analysis {
namespace {

using testing::DataPath;

trace::Trace Read(const std::string& name) {
  auto trace = trace::ReadTrace(DataPath(name));
  EXPECT_TRUE(trace.ok()) << trace.status().message();
  return std::move(trace).value();
}

const CollectiveRow* FindRow(const CollectiveBandwidth& result, int32_t rank, std::string_view name,
                             std::string_view dtype, int64_t bytes) {
  for (const CollectiveRow& row : result.rows) {
    if (row.rank == rank && row.name == name && row.dtype == dtype && row.bytes == bytes) return &row;
  }
  return nullptr;
}

TEST(CollectiveBandwidthTest, BusFactorsAreNcclTests) {
  EXPECT_DOUBLE_EQ(*BusBandwidthFactor(CollectiveKind::kAllReduce, 8), 2.0 * 7 / 8);
  EXPECT_DOUBLE_EQ(*BusBandwidthFactor(CollectiveKind::kAllReduce, 2), 1.0);
  EXPECT_DOUBLE_EQ(*BusBandwidthFactor(CollectiveKind::kAllReduce, 1), 0.0);
  EXPECT_DOUBLE_EQ(*BusBandwidthFactor(CollectiveKind::kAllGather, 4), 0.75);
  EXPECT_DOUBLE_EQ(*BusBandwidthFactor(CollectiveKind::kReduceScatter, 16), 15.0 / 16);
  EXPECT_DOUBLE_EQ(*BusBandwidthFactor(CollectiveKind::kAllToAll, 4), 0.75);
  EXPECT_DOUBLE_EQ(*BusBandwidthFactor(CollectiveKind::kBroadcast, 64), 1.0);
  EXPECT_DOUBLE_EQ(*BusBandwidthFactor(CollectiveKind::kSendRecv, 2), 1.0);
  EXPECT_FALSE(BusBandwidthFactor(CollectiveKind::kBarrier, 8));
  EXPECT_FALSE(BusBandwidthFactor(CollectiveKind::kOther, 8));
  EXPECT_FALSE(BusBandwidthFactor(CollectiveKind::kAllReduce, 0));
}

TEST(CollectiveBandwidthTest, NvlinkPeaksOneDirectionFromTheDatasheets) {
  EXPECT_DOUBLE_EQ(NvlinkPeakOf("NVIDIA H100 80GB HBM3")->bytes_per_s.value(), 450e9);
  EXPECT_DOUBLE_EQ(NvlinkPeakOf("NVIDIA A100-SXM4-80GB")->bytes_per_s.value(), 300e9);
  EXPECT_DOUBLE_EQ(NvlinkPeakOf("nvidia h200")->bytes_per_s.value(), 450e9);
  EXPECT_DOUBLE_EQ(NvlinkPeakOf("NVIDIA B200")->bytes_per_s.value(), 900e9);
  EXPECT_NE(NvlinkPeakOf("NVIDIA H100 80GB HBM3")->source.find("H100 SXM"), std::string::npos);
  EXPECT_FALSE(NvlinkPeakOf("NVIDIA A100-PCIE-40GB"));  // NVLink there is an optional bridge
  EXPECT_FALSE(NvlinkPeakOf("Tesla T4"));
  EXPECT_FALSE(NvlinkPeakOf(""));
  // --link-peak wins over the device; an unknown device says so.
  const trace::Trace trace = Read("collectives/nccl_constructed.json");
  EXPECT_DOUBLE_EQ(*ComputeCollectiveBandwidth(trace, {.device_name = "NVIDIA H100 80GB HBM3"}).link.bytes_per_s, 450e9);
  EXPECT_DOUBLE_EQ(*ComputeCollectiveBandwidth(trace, {.link_peak_bytes_per_s = 1e9, .device_name = "NVIDIA B200"})
                        .link.bytes_per_s,
                   1e9);
  const CollectiveBandwidth unknown = ComputeCollectiveBandwidth(trace, {.device_name = "Tesla T4"});
  EXPECT_FALSE(unknown.link.bytes_per_s);
  EXPECT_EQ(unknown.link.source, "unknown for Tesla T4: pass --link-peak GB/s");
  for (const CollectiveRow& row : unknown.rows) EXPECT_FALSE(row.busbw_share_of_peak);
}

TEST(CollectiveBandwidthTest, KindsAndDtypesAsTheSourcesWriteThem) {
  EXPECT_EQ(CollectiveKindOf("allreduce"), CollectiveKind::kAllReduce);
  EXPECT_EQ(CollectiveKindOf("ALLREDUCE"), CollectiveKind::kAllReduce);
  EXPECT_EQ(CollectiveKindOf("all_reduce"), CollectiveKind::kAllReduce);
  EXPECT_EQ(CollectiveKindOf("ncclDevKernel_AllReduce_Sum_f32_RING_LL(x)"), CollectiveKind::kAllReduce);
  EXPECT_EQ(CollectiveKindOf("_allgather_base"), CollectiveKind::kAllGather);
  EXPECT_EQ(CollectiveKindOf("all_gather_into_tensor_coalesced"), CollectiveKind::kAllGather);
  EXPECT_EQ(CollectiveKindOf("reduce_scatter_tensor_coalesced"), CollectiveKind::kReduceScatter);
  EXPECT_EQ(CollectiveKindOf("ncclKernel_ReduceScatter_RING_LL_Sum_half"), CollectiveKind::kReduceScatter);
  EXPECT_EQ(CollectiveKindOf("all_to_all"), CollectiveKind::kAllToAll);
  EXPECT_EQ(CollectiveKindOf("broadcast"), CollectiveKind::kBroadcast);
  EXPECT_EQ(CollectiveKindOf("ncclDevKernel_SendRecv"), CollectiveKind::kSendRecv);
  EXPECT_EQ(CollectiveKindOf("reduce"), CollectiveKind::kReduce);
  EXPECT_EQ(CollectiveKindOf("barrier"), CollectiveKind::kBarrier);
  EXPECT_EQ(CollectiveKindOf("PACK"), CollectiveKind::kOther);
  EXPECT_EQ(DtypeBytes("Float"), 4);
  EXPECT_EQ(DtypeBytes("float"), 4);
  EXPECT_EQ(DtypeBytes("c10::BFloat16"), 2);
  EXPECT_EQ(DtypeBytes("Half"), 2);
  EXPECT_EQ(DtypeBytes("double"), 8);
  EXPECT_EQ(DtypeBytes("long int"), 8);
  EXPECT_EQ(DtypeBytes("Float8_e4m3fn"), 1);
  EXPECT_EQ(DtypeBytes("DT_FLOAT"), 4);
  EXPECT_EQ(DtypeBytes("TensorList"), 0);
}

// tests/data/collectives/nccl_constructed.json: rank 3 of 8. On stream 20: an all-reduce of 2^20
// floats in 100 us with a gemm on stream 7 over its second half; an all-gather of 2^17 -> 2^20
// bf16 in 50 us, alone; a reduce-scatter of 2^20 -> 2^17 halves in 25 us, an element-wise
// kernel over its first 10 us; a broadcast of 2^18 floats in a group of 4 in 20 us, under a host
// op (another resource: it hides nothing); an all-reduce kernel without args, 10 us.
TEST(CollectiveBandwidthTest, ConstructedNcclTraceGivesTheHandFigures) {
  const trace::Trace trace = Read("collectives/nccl_constructed.json");
  const CollectiveBandwidth result = ComputeCollectiveBandwidth(trace, {.link_peak_bytes_per_s = 100e9});
  ASSERT_EQ(result.rows.size(), 5u);
  ASSERT_EQ(result.calls.size(), 5u);

  const CollectiveRow* all_reduce = FindRow(result, 3, "all_reduce", "Float", 4 << 20);
  ASSERT_NE(all_reduce, nullptr);
  EXPECT_EQ(all_reduce->group_size, 8);
  EXPECT_EQ(all_reduce->source, "nccl_kernel");
  EXPECT_EQ(all_reduce->algorithm, "ring_ll");
  EXPECT_EQ(all_reduce->time_ns, 100'000);
  EXPECT_EQ(all_reduce->exposed_ns, 50'000);
  EXPECT_DOUBLE_EQ(*all_reduce->algbw_bytes_per_s, 4194304 / 100e-6);           // 41.94 GB/s
  EXPECT_DOUBLE_EQ(*all_reduce->busbw_bytes_per_s, 4194304 / 100e-6 * 14 / 8);  // 73.40 GB/s
  EXPECT_DOUBLE_EQ(*all_reduce->busbw_share_of_peak, 4194304 / 100e-6 * 14 / 8 / 100e9);

  // The gathered output: 2^20 bf16.
  const CollectiveRow* all_gather = FindRow(result, 3, "all_gather", "BFloat16", 2 << 20);
  ASSERT_NE(all_gather, nullptr);
  EXPECT_EQ(all_gather->exposed_ns, 50'000);
  EXPECT_DOUBLE_EQ(*all_gather->busbw_bytes_per_s, 2097152 / 50e-6 * 7 / 8);

  // The scattered input: 2^20 halves.
  const CollectiveRow* reduce_scatter = FindRow(result, 3, "reduce_scatter", "Half", 2 << 20);
  ASSERT_NE(reduce_scatter, nullptr);
  EXPECT_EQ(reduce_scatter->exposed_ns, 15'000);
  EXPECT_DOUBLE_EQ(*reduce_scatter->busbw_bytes_per_s, 2097152 / 25e-6 * 7 / 8);

  const CollectiveRow* broadcast = FindRow(result, 3, "broadcast", "Float", 1 << 20);
  ASSERT_NE(broadcast, nullptr);
  EXPECT_EQ(broadcast->group_size, 4);
  EXPECT_EQ(broadcast->exposed_ns, 20'000);
  EXPECT_DOUBLE_EQ(*broadcast->busbw_bytes_per_s, *broadcast->algbw_bytes_per_s);

  // No args: counted with its time, its size and bandwidths unknown, the group the world's.
  const CollectiveRow* unsized = FindRow(result, 3, "all_reduce", "", -1);
  ASSERT_NE(unsized, nullptr);
  EXPECT_EQ(unsized->time_ns, 10'000);
  EXPECT_EQ(unsized->group_size, 8);
  EXPECT_EQ(unsized->total_bytes, -1);
  EXPECT_FALSE(unsized->algbw_bytes_per_s);
  EXPECT_FALSE(unsized->busbw_bytes_per_s);

  EXPECT_EQ(result.totals.calls, 5);
  EXPECT_EQ(result.totals.sized_calls, 4);
  EXPECT_EQ(result.totals.bytes, (4 << 20) + (2 << 20) + (2 << 20) + (1 << 20));
  EXPECT_EQ(result.totals.time_ns, 205'000);
  EXPECT_EQ(result.totals.exposed_ns, 145'000);
  EXPECT_EQ(result.link.source, "--link-peak");
  ASSERT_EQ(result.notes.size(), 2u);
  EXPECT_NE(result.notes[0].find("1 collective(s) without a recorded size"), std::string::npos);
}

// Real: two gloo processes (tests/data/collectives/make_gloo_traces.py). Expected figures are a
// recount of each file's raw events (`gloo:*` spans: size = Input Dims x Input type, x2 for the
// all-gather; exposed = the span less the cpu_ops of the process outside gloo's spans and c10d's
// calls; microseconds scaled to ns), not this code's output.
TEST(CollectiveBandwidthTest, RealGlooTracesOfTwoRanks) {
  std::vector<trace::Trace> traces;
  traces.push_back(Read("collectives/gloo_collectives_rank0.json.gz"));
  traces.push_back(Read("collectives/gloo_collectives_rank1.json.gz"));
  const CollectiveBandwidth result = ComputeCollectiveBandwidth(traces);
  ASSERT_EQ(result.rows.size(), 10u);
  EXPECT_EQ(result.totals.calls, 14);
  EXPECT_EQ(result.totals.sized_calls, 14);
  EXPECT_FALSE(result.link.bytes_per_s);

  // Rank 0: three all-reduces of 4 MiB, the third asynchronous under four matmuls.
  const CollectiveRow* big = FindRow(result, 0, "all_reduce", "float", 4194304);
  ASSERT_NE(big, nullptr);
  EXPECT_EQ(big->source, "gloo");
  EXPECT_EQ(big->group_size, 2);
  EXPECT_EQ(big->count, 3);
  EXPECT_EQ(big->time_ns, 28'921'617);
  EXPECT_EQ(big->exposed_ns, 14'558'299);
  EXPECT_DOUBLE_EQ(*big->algbw_bytes_per_s, 3 * 4194304 / 28'921'617e-9);
  EXPECT_DOUBLE_EQ(*big->busbw_bytes_per_s, *big->algbw_bytes_per_s);  // 2(n-1)/n = 1 for n = 2

  const CollectiveRow* gather = FindRow(result, 0, "all_gather", "float", 524288);
  ASSERT_NE(gather, nullptr);
  EXPECT_EQ(gather->time_ns, 8'795'681);
  EXPECT_EQ(gather->exposed_ns, 8'795'681);  // gloo's own copies inside its span hide nothing
  EXPECT_DOUBLE_EQ(*gather->busbw_bytes_per_s, 524288 / 8'795'681e-9 / 2);

  const CollectiveRow* doubles = FindRow(result, 1, "all_reduce", "double", 32768);
  ASSERT_NE(doubles, nullptr);
  EXPECT_EQ(doubles->time_ns, 934'821);

  const CollectiveRow* big1 = FindRow(result, 1, "all_reduce", "float", 4194304);
  ASSERT_NE(big1, nullptr);
  EXPECT_EQ(big1->time_ns, 137'920'362);
  EXPECT_EQ(big1->exposed_ns, 117'253'491);
  EXPECT_NE(FindRow(result, 1, "broadcast", "float", 4194304), nullptr);
}

// Real: stepscope-train on two CPU devices (tests/data/trainer/lstm_small_cpu2_step3.pb.gz):
// each device records six ring all-reduces; the softmax weights' (8,000,000 bytes) took
// 24,712,792 ns (the record's nanosecond times), under no op of its device.
TEST(CollectiveBandwidthTest, TrainerAllReduceRecords) {
  const trace::Trace trace = Read("trainer/lstm_small_cpu2_step3.pb.gz");
  const CollectiveBandwidth result = ComputeCollectiveBandwidth(trace);
  EXPECT_EQ(result.totals.calls, 12);
  EXPECT_EQ(result.totals.sized_calls, 12);
  EXPECT_EQ(result.rows.size(), 8u);  // per device: 4 sizes
  const CollectiveRow* softmax = FindRow(result, 0, "all_reduce", "", 8'000'000);
  ASSERT_NE(softmax, nullptr);
  EXPECT_EQ(softmax->source, "stepscope");
  EXPECT_EQ(softmax->algorithm, "ring");
  EXPECT_EQ(softmax->group_size, 2);
  EXPECT_EQ(softmax->count, 1);
  EXPECT_EQ(softmax->time_ns, 24'712'792);
  EXPECT_EQ(softmax->exposed_ns, 24'712'792);
  EXPECT_DOUBLE_EQ(*softmax->busbw_bytes_per_s, 8e6 / 24'712'792e-9);

  // Two step files of one rank fill the same rows.
  std::vector<trace::Trace> steps;
  steps.push_back(Read("trainer/lstm_small_cpu2_step3.pb.gz"));
  steps.push_back(Read("trainer/lstm_small_cpu2_step3.pb.gz"));
  const CollectiveBandwidth both = ComputeCollectiveBandwidth(steps);
  EXPECT_EQ(both.rows.size(), 8u);
  const CollectiveRow* twice = FindRow(both, 0, "all_reduce", "", 8'000'000);
  ASSERT_NE(twice, nullptr);
  EXPECT_EQ(twice->count, 2);
  EXPECT_EQ(twice->time_ns, 2 * 24'712'792);
  EXPECT_DOUBLE_EQ(*twice->busbw_bytes_per_s, *softmax->busbw_bytes_per_s);
}

// tests/data/analysis/ranks: per rank, the trainer's NCCL all-reduce record (4 MiB, group 2, on
// the collectives lane, 200 us) and the NCCL kernel it launched (same correlation id, 180 us on
// stream 9, 100 us of it under the conv kernels): one collective, timed by its kernel and sized
// by its record; exposed 80 us, as `overlap` reports the GPU lanes.
TEST(CollectiveBandwidthTest, TrainerRecordAndItsNcclKernelAreOneCollective) {
  std::vector<trace::Trace> traces;
  traces.push_back(Read("analysis/ranks/rank0.pbtxt"));
  traces.push_back(Read("analysis/ranks/rank1.pbtxt"));
  const CollectiveBandwidth result = ComputeCollectiveBandwidth(traces);
  ASSERT_EQ(result.calls.size(), 2u);
  for (int32_t rank = 0; rank < 2; ++rank) {
    const CollectiveRow* row = FindRow(result, rank, "all_reduce", "", 4194304);
    ASSERT_NE(row, nullptr) << rank;
    EXPECT_EQ(row->source, "nccl_kernel");
    EXPECT_EQ(row->algorithm, "ring_ll");
    EXPECT_EQ(row->group_size, 2);
    EXPECT_EQ(row->count, 1);
    EXPECT_EQ(row->time_ns, 180'000);
    EXPECT_EQ(row->exposed_ns, 80'000);
    EXPECT_DOUBLE_EQ(*row->busbw_bytes_per_s, 4194304 / 180e-6);
  }
  ASSERT_EQ(result.notes.size(), 1u);
  EXPECT_EQ(result.notes[0], "2 collective record(s) counted as the NCCL kernel they launched (its time, their size)");
}

// Real: stepscope-train with Horovod-style fusion on two CPU devices
// (tests/data/collectives/lstm_small_cpu2_fusion_step3.pb.gz): per device, ring all-reduces of
// single gradients and of one fusion buffer of 1,286,400 bytes (141,711 ns), whose copies in and
// out of the buffer are collective records with no bus factor (their own bandwidth only).
TEST(CollectiveBandwidthTest, TrainerFusionRecords) {
  const trace::Trace trace = Read("collectives/lstm_small_cpu2_fusion_step3.pb.gz");
  const CollectiveBandwidth result = ComputeCollectiveBandwidth(trace);
  EXPECT_EQ(result.totals.calls, 12);
  EXPECT_EQ(result.rows.size(), 12u);  // per device: 4 all-reduce sizes, the copy in, the copy out
  const CollectiveRow* fused = FindRow(result, 0, "all_reduce", "", 1'286'400);
  ASSERT_NE(fused, nullptr);
  EXPECT_EQ(fused->count, 1);
  EXPECT_EQ(fused->time_ns, 141'711);
  EXPECT_DOUBLE_EQ(*fused->busbw_bytes_per_s, 1'286'400 / 141'711e-9);
  const CollectiveRow* copy_in = FindRow(result, 0, "MEMCPY_IN_FUSION_BUFFER", "", 1'286'400);
  ASSERT_NE(copy_in, nullptr);
  EXPECT_EQ(copy_in->time_ns, 305'344);
  EXPECT_DOUBLE_EQ(*copy_in->algbw_bytes_per_s, 1'286'400 / 305'344e-9);
  EXPECT_FALSE(copy_in->busbw_bytes_per_s);
  ASSERT_NE(FindRow(result, 0, "MEMCPY_OUT_FUSION_BUFFER", "", 1'286'400), nullptr);
}

// Real: stepscope-train across two MPI processes (tests/data/collectives/lstm_small_mpi2_step3_*):
// each rank's ring all-reduces over MPI, one file a rank; the softmax weights' (8,000,000 bytes)
// took 153,766,436 ns on rank 0 and 153,757,963 ns on rank 1 (the records' own times).
TEST(CollectiveBandwidthTest, TrainerMpiRanks) {
  std::vector<trace::Trace> traces;
  traces.push_back(Read("collectives/lstm_small_mpi2_step3_rank1.pb.gz"));  // ranks by record, not order
  traces.push_back(Read("collectives/lstm_small_mpi2_step3_rank0.pb.gz"));
  const CollectiveBandwidth result = ComputeCollectiveBandwidth(traces);
  EXPECT_EQ(result.totals.calls, 12);
  EXPECT_EQ(result.rows.size(), 8u);
  EXPECT_EQ(result.rows.front().rank, 0);
  const int64_t expected_ns[2] = {153'766'436, 153'757'963};
  for (int32_t rank = 0; rank < 2; ++rank) {
    const CollectiveRow* softmax = FindRow(result, rank, "all_reduce", "", 8'000'000);
    ASSERT_NE(softmax, nullptr) << rank;
    EXPECT_EQ(softmax->group_size, 2);
    EXPECT_EQ(softmax->time_ns, expected_ns[rank]);
    EXPECT_DOUBLE_EQ(*softmax->busbw_bytes_per_s, 8e6 / (static_cast<double>(expected_ns[rank]) * 1e-9));
  }
}

TEST(CollectiveBandwidthTest, TraceWithoutCollectivesSaysSo) {
  const trace::Trace trace = Read("kineto/alexnet_launches.json");
  const CollectiveBandwidth result = ComputeCollectiveBandwidth(trace);
  EXPECT_TRUE(result.rows.empty());
  EXPECT_EQ(result.totals.calls, 0);
  ASSERT_EQ(result.notes.size(), 1u);
  EXPECT_EQ(result.notes[0], "no collectives in the trace");
}

}  // namespace
}  // namespace stepscope::analysis
