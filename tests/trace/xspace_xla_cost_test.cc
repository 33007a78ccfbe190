// An XLA op's cost on a GPU XSpace reaching the op cost model: the `flops`, `bytes_accessed` and
// `model_flops` stats XLA writes on the device plane's "XLA Ops" line, on the event itself or on
// its event metadata, as integers or doubles, decoded by our reader and costed with the
// xla_hlo_stats source. The XSpace is built with protoc-generated code of xplane.proto.
#include <gtest/gtest.h>

#include <string>

#include "profiler/analysis/op_cost.h"
#include "profiler/formats/xspace/xspace_reader.h"
#include "proto/xplane.pb.h"

namespace stepscope::analysis {
namespace {

namespace xp = tensorflow::profiler;

constexpr int64_t kLineNs = int64_t{1700000000} * 1000000000;

// Stat metadata ids of the GPU plane.
enum : int64_t { kFlopsStat = 11, kBytesStat = 12, kModelFlopsStat = 13, kHloOpStat = 14 };

xp::XStat* AddStat(google::protobuf::RepeatedPtrField<xp::XStat>* stats, int64_t id) {
  xp::XStat* stat = stats->Add();
  stat->set_metadata_id(id);
  return stat;
}

xp::XEvent* AddEvent(xp::XLine* line, int64_t metadata, int64_t offset_ps, int64_t duration_ps) {
  xp::XEvent* e = line->add_events();
  e->set_metadata_id(metadata);
  e->set_offset_ps(offset_ps);
  e->set_duration_ps(duration_ps);
  return e;
}

// A host plane with one thread, and /device:GPU:0 with a stream of kernels and the derived
// "XLA Ops" line, whose three HLO ops carry their costs as XLA writes them:
//   dot.1     on the event: flops, bytes_accessed (int64)
//   fusion.2  on its metadata: flops, bytes_accessed, model_flops (uint64)
//   convolution.3 on the event, as doubles: flops, bytes_accessed, model_flops
xp::XSpace GpuSpaceWithXlaCosts() {
  xp::XSpace space;
  space.add_hostnames("gpuhost");
  xp::XPlane* host = space.add_planes();
  host->set_name("/host:CPU");
  (*host->mutable_event_metadata())[1].set_name("PjitFunction(train_step)");
  xp::XLine* thread = host->add_lines();
  thread->set_id(5);
  thread->set_name("python");
  thread->set_timestamp_ns(kLineNs);
  AddEvent(thread, 1, 0, 40'000'000);

  xp::XPlane* gpu = space.add_planes();
  gpu->set_name("/device:GPU:0");
  (*gpu->mutable_stat_metadata())[kFlopsStat].set_name("flops");
  (*gpu->mutable_stat_metadata())[kBytesStat].set_name("bytes_accessed");
  (*gpu->mutable_stat_metadata())[kModelFlopsStat].set_name("model_flops");
  (*gpu->mutable_stat_metadata())[kHloOpStat].set_name("hlo_op");
  (*gpu->mutable_event_metadata())[1].set_name("sm90_xmma_gemm_f32f32");
  (*gpu->mutable_event_metadata())[2].set_name("loop_add_fusion");
  (*gpu->mutable_event_metadata())[3].set_name("dot.1");
  xp::XEventMetadata& fusion = (*gpu->mutable_event_metadata())[4];
  fusion.set_name("fusion.2");
  AddStat(fusion.mutable_stats(), kFlopsStat)->set_uint64_value(2'097'152);
  AddStat(fusion.mutable_stats(), kBytesStat)->set_uint64_value(3'145'728);
  AddStat(fusion.mutable_stats(), kModelFlopsStat)->set_uint64_value(1'048'576);
  (*gpu->mutable_event_metadata())[5].set_name("convolution.3");

  xp::XLine* stream = gpu->add_lines();
  stream->set_id(7);
  stream->set_name("Stream #7(Compute)");
  stream->set_timestamp_ns(kLineNs);
  AddStat(AddEvent(stream, 1, 1'000'000, 5'000'000)->mutable_stats(), kHloOpStat)->set_str_value("dot.1");
  AddStat(AddEvent(stream, 2, 7'000'000, 2'000'000)->mutable_stats(), kHloOpStat)->set_str_value("fusion.2");

  xp::XLine* ops = gpu->add_lines();
  ops->set_id(100);
  ops->set_name("XLA Ops");
  ops->set_timestamp_ns(kLineNs);
  xp::XEvent* dot = AddEvent(ops, 3, 1'000'000, 5'000'000);
  // 2·M·N·K for a 128x256 by 256x64 matmul; f32 operands and result read/written once.
  AddStat(dot->mutable_stats(), kFlopsStat)->set_int64_value(4'194'304);
  AddStat(dot->mutable_stats(), kBytesStat)->set_int64_value(229'376);
  AddEvent(ops, 4, 7'000'000, 2'000'000);
  xp::XEvent* conv = AddEvent(ops, 5, 10'000'000, 3'000'000);
  AddStat(conv->mutable_stats(), kFlopsStat)->set_double_value(231'211'008.0);
  AddStat(conv->mutable_stats(), kBytesStat)->set_double_value(1'806'336.0);
  AddStat(conv->mutable_stats(), kModelFlopsStat)->set_double_value(231'211'008.0);
  return space;
}

TEST(XSpaceXlaCostTest, XlaOpsLineCostsReachTheOpCostModel) {
  auto trace = trace::ReadXSpace(GpuSpaceWithXlaCosts().SerializeAsString(), "gpuhost.xplane.pb");
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  const OpCostReport report = ComputeOpCosts(*trace);
  struct Want {
    int64_t flops, bytes, model_flops;
  };
  const std::map<std::string, Want> want = {
      {"dot.1", {4'194'304, 229'376, 0}},                     // no model_flops stat: none claimed
      {"fusion.2", {2'097'152, 3'145'728, 1'048'576}},        // read from the event's metadata
      {"convolution.3", {231'211'008, 1'806'336, 231'211'008}},  // doubles
  };
  std::map<std::string, OpCost> got;
  for (const OpCost& cost : report.costs) {
    got[std::string(trace->str(trace->slice_name(trace->slices()[cost.slice])))] = cost;
  }
  ASSERT_EQ(got.size(), want.size());
  for (const auto& [name, w] : want) {
    ASSERT_TRUE(got.contains(name)) << name;
    const OpCost& c = got[name];
    EXPECT_EQ(c.flops, w.flops) << name;
    EXPECT_EQ(c.reported_flops, w.flops) << name;
    EXPECT_EQ(c.bytes, w.bytes) << name;
    EXPECT_EQ(c.model_flops, w.model_flops) << name;
    EXPECT_EQ(c.source, CostSource::kXlaHloStats) << name;
    EXPECT_EQ(trace->tracks()[trace->slices()[c.slice].track].kind, trace::TrackKind::kOther) << name;
    // Typed by instruction, without the ".N" suffix.
    EXPECT_EQ(trace->str(trace->slice_op_type(trace->slices()[c.slice])), name.substr(0, name.find('.'))) << name;
  }
  // The kernels are the stream's work, not ops: the XLA ops are the three costed.
  EXPECT_EQ(report.ops_costed, 3);
  EXPECT_EQ(report.ops_seen, 3);
  EXPECT_TRUE(report.has_shapes);
}

// The same ops without cost stats are not ops of the cost model: nothing claimed.
TEST(XSpaceXlaCostTest, XlaOpsWithoutStatsAreNotCosted) {
  xp::XSpace space = GpuSpaceWithXlaCosts();
  xp::XPlane* gpu = space.mutable_planes(1);
  (*gpu->mutable_event_metadata())[4].clear_stats();
  for (xp::XLine& line : *gpu->mutable_lines()) {
    for (xp::XEvent& e : *line.mutable_events()) {
      if (line.name() == "XLA Ops") e.clear_stats();
    }
  }
  auto trace = trace::ReadXSpace(space.SerializeAsString(), "gpuhost.xplane.pb");
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  const OpCostReport report = ComputeOpCosts(*trace);
  EXPECT_EQ(report.ops_costed, 0);
  EXPECT_FALSE(report.has_shapes);
}

}  // namespace
}  // namespace stepscope::analysis
