// XSpace import against XSpace decoded by protoc-generated code of XSpace's schema
// (tests/trace/proto/xplane.proto): the real TensorFlow 2 and JAX fixtures of tests/data/xspace
// (tests/data/xspace/README.md), a hand-made GPU plane (kernels, copies, launches), a run
// directory with two hosts, and damaged files.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <iterator>
#include <map>
#include <set>

#include "base/file_io.h"
#include "profiler/formats/common/format_sniff.h"
#include "profiler/formats/reader.h"
#include "profiler/formats/xspace/xspace_reader.h"
#include "test_util.h"
#include "proto/xplane.pb.h"

namespace stepscope::trace {
namespace {

namespace xp = tensorflow::profiler;

std::string Fixture(const std::string& name) {
  auto bytes = ReadFile(testing::DataPath("xspace/" + name));
  EXPECT_TRUE(bytes.ok()) << bytes.status().message();
  return bytes.ok() ? *bytes : std::string();
}

// Per event of the decoded XSpace: its plane, line and metadata name.
struct Expected {
  int64_t events = 0;
  std::multiset<std::string> names;  // metadata names
  std::map<std::string, int64_t> per_line;
};

Expected FromProtoc(const xp::XSpace& space) {
  Expected e;
  for (const xp::XPlane& plane : space.planes()) {
    for (const xp::XLine& line : plane.lines()) {
      for (const xp::XEvent& event : line.events()) {
        if (event.data_case() == xp::XEvent::kNumOccurrences) continue;
        ++e.events;
        const auto meta = plane.event_metadata().find(event.metadata_id());
        std::string name = meta == plane.event_metadata().end() ? "" : meta->second.name();
        // "Op:Op" (a node named as its type) reads as node = type = "Op".
        const size_t colon = name.rfind(':');
        if (colon != std::string::npos && name.substr(0, colon) == name.substr(colon + 1)) name.resize(colon);
        e.names.insert(name);
        ++e.per_line[line.display_name().empty() ? line.name() : line.display_name()];
      }
    }
  }
  return e;
}

// The metadata name a slice came from: node:OpType for TensorFlow ops, else the name.
std::string SourceName(const Trace& trace, const Slice& s) {
  const std::string_view name = trace.str(trace.slice_name(s)), type = trace.str(trace.slice_op_type(s));
  if (name.substr(0, 13) == "ProfilerStep#") return std::string(type);  // a step annotation
  const bool hlo = type.size() < name.size() && name.substr(0, type.size()) == type && name[type.size()] == '.';
  if (s.kind == SliceKind::kOp && name != type && !hlo) return std::string(name) + ":" + std::string(type);
  return std::string(name);
}

void CheckAgainstProtoc(const std::string& file, int64_t expected_events) {
  const std::string bytes = Fixture(file);
  xp::XSpace space;
  ASSERT_TRUE(space.ParseFromString(bytes));
  const Expected want = FromProtoc(space);
  EXPECT_EQ(want.events, expected_events);  // the count protoc decodes, noted for the record
  EXPECT_EQ(DetectFormat(bytes), DetectedFormat::kXSpace);
  auto trace = ReadTraceFromBytes(bytes, file);
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  EXPECT_EQ(trace->source_format(), SourceFormat::kXSpace);
  EXPECT_EQ(static_cast<int64_t>(trace->slices().size()), want.events);
  std::multiset<std::string> got;
  std::map<std::string, int64_t> per_line;
  for (const Slice& s : trace->slices()) {
    got.insert(SourceName(*trace, s));
    const Track& t = trace->tracks()[s.track];
    ++per_line[std::string(trace->str(t.name))];
  }
  // Lanes that overlap are split (name " #2"): count them under their line.
  std::map<std::string, int64_t> merged;
  for (const auto& [name, n] : per_line) merged[name.substr(0, name.find(" #"))] += n;
  EXPECT_EQ(merged, want.per_line);
  std::vector<std::string> missing, extra;
  std::set_difference(want.names.begin(), want.names.end(), got.begin(), got.end(), std::back_inserter(missing));
  std::set_difference(got.begin(), got.end(), want.names.begin(), want.names.end(), std::back_inserter(extra));
  EXPECT_TRUE(missing.empty()) << missing.size() << " names missing, e.g. " << (missing.empty() ? "" : missing[0]);
  EXPECT_TRUE(extra.empty()) << extra.size() << " names not in the XSpace, e.g. " << (extra.empty() ? "" : extra[0]);
  // One host (the XSpace's hostname), CPU device, lanes per thread with their ids.
  ASSERT_GE(trace->tracks().size(), 3u);
  EXPECT_EQ(trace->tracks()[0].kind, TrackKind::kHost);
  EXPECT_EQ(trace->str(trace->tracks()[0].name), space.hostnames(0));
  EXPECT_EQ(trace->str(trace->tracks()[1].name), "CPU");
  EXPECT_EQ(trace->str(trace->tracks()[1].full_name), "/host:CPU");
  // Times are on the epoch (the profile start added to normalised lines): after 2020.
  EXPECT_GT(trace->epoch_ns(), int64_t{1577836800} * 1000000000);
}

// tests/data/xspace/tf2_keras_mlp_cpu.xplane.pb.gz: a Keras MLP's 3 training steps on the CPU
// (TensorFlow 2.21.0): 705 events on 3 lines (python 375, two tf_Compute executor threads 220 and
// 110), as protoc decodes them.
TEST(XSpaceReaderTest, TensorFlowKerasStepsMatchProtoc) {
  CheckAgainstProtoc("tf2_keras_mlp_cpu.xplane.pb.gz", 705);
  auto trace = ReadTrace(testing::DataPath("xspace/tf2_keras_mlp_cpu.xplane.pb.gz"));
  ASSERT_TRUE(trace.ok());
  // TensorFlow ops: node name and op type from "node:OpType"; the framework's spans are
  // annotations; the train step annotation too (it carries step_num).
  std::map<std::string, int64_t> ops;
  int64_t annotations = 0, steps = 0;
  for (const Slice& s : trace->slices()) {
    if (s.kind == SliceKind::kOp) ++ops[std::string(trace->str(trace->slice_op_type(s)))];
    if (s.kind == SliceKind::kAnnotation) ++annotations;
    if (s.kind == SliceKind::kAnnotation && trace->str(trace->slice_op_type(s)) == "train") {
      EXPECT_EQ(trace->str(trace->slice_name(s)), "ProfilerStep#" + std::to_string(steps));
      ++steps;
    }
  }
  EXPECT_EQ(steps, 3);
  EXPECT_EQ(ops["_MklNativeFusedMatMul"], 6);  // two Dense layers x 3 steps
  EXPECT_EQ(ops["_MklMatMul"], 9);
  EXPECT_EQ(ops["BiasAddGrad"], 6);
  EXPECT_GT(annotations, 0);
  bool found = false;
  for (uint32_t i = 0; i < trace->slices().size(); ++i) {
    const Slice& s = trace->slices()[i];
    if (trace->str(trace->slice_name(s)) == "sequential_1/dense_1/Relu" &&
        trace->str(trace->slice_op_type(s)) == "_MklNativeFusedMatMul") {
      found = true;
      EXPECT_EQ(s.kind, SliceKind::kOp);
    }
  }
  EXPECT_TRUE(found);
  // Stats are arguments: the executor's step ids ride along.
  int64_t step_ids = 0;
  for (const SliceArg& a : trace->all_slice_args()) step_ids += trace->str(a.key) == "step_id";
  EXPECT_GT(step_ids, 0);
}

// tests/data/xspace/jax_mlp_cpu.xplane.pb.gz: a jitted MLP training step, 3 steps (jax 0.10.2, CPU):
// 207 events (python 70, the PjRt CPU client thread 137), XLA ops with hlo_op/hlo_module stats.
TEST(XSpaceReaderTest, JaxJittedStepsMatchProtoc) {
  CheckAgainstProtoc("jax_mlp_cpu.xplane.pb.gz", 207);
  auto trace = ReadTrace(testing::DataPath("xspace/jax_mlp_cpu.xplane.pb.gz"));
  ASSERT_TRUE(trace.ok());
  std::map<std::string, int64_t> ops;
  for (const Slice& s : trace->slices()) {
    if (s.kind == SliceKind::kOp) ++ops[std::string(trace->str(trace->slice_op_type(s)))];
  }
  // XLA instructions: "dot.1" counts as op type "dot"; each of the 3 steps runs 2 dots.
  EXPECT_EQ(ops["dot"], 6);
  EXPECT_EQ(ops["ynn_fusion"], 9);
  int64_t hlo_modules = 0;
  for (const SliceArg& a : trace->all_slice_args()) {
    hlo_modules += trace->str(a.key) == "hlo_module" && a.Text(trace->strings()).find("train_step") != std::string::npos;
  }
  EXPECT_GT(hlo_modules, 0);
}

// A GPU plane as TensorFlow's GPU tracer writes it: a stream line with a kernel (tf_op,
// kernel_details, correlation_id) and a copy (memcpy_details), the launch on a host thread with
// the same correlation id, and a derived "XLA Ops" line.
xp::XSpace GpuSpace() {
  xp::XSpace space;
  space.add_hostnames("gpuhost");
  xp::XPlane* host = space.add_planes();
  host->set_name("/host:CPU");
  (*host->mutable_stat_metadata())[1].set_name("correlation_id");
  (*host->mutable_event_metadata())[1].set_name("cudaLaunchKernel");
  (*host->mutable_event_metadata())[2].set_name("dense/MatMul:MatMul");
  xp::XLine* thread = host->add_lines();
  thread->set_id(77);
  thread->set_name("tf_executor");
  thread->set_timestamp_ns(int64_t{1700000000} * 1000000000);
  xp::XEvent* op = thread->add_events();
  op->set_metadata_id(2);
  op->set_offset_ps(0);
  op->set_duration_ps(10'000'000);
  xp::XEvent* launch = thread->add_events();
  launch->set_metadata_id(1);
  launch->set_offset_ps(1'000'000);
  launch->set_duration_ps(2'000'000);
  xp::XStat* corr = launch->add_stats();
  corr->set_metadata_id(1);
  corr->set_uint64_value(4242);

  xp::XPlane* gpu = space.add_planes();
  gpu->set_name("/device:GPU:0");
  (*gpu->mutable_stat_metadata())[1].set_name("correlation_id");
  (*gpu->mutable_stat_metadata())[2].set_name("tf_op");
  (*gpu->mutable_stat_metadata())[3].set_name("kernel_details");
  (*gpu->mutable_stat_metadata())[4].set_name("memcpy_details");
  (*gpu->mutable_event_metadata())[1].set_name("volta_sgemm_128x64_nn");
  (*gpu->mutable_event_metadata())[2].set_name("MemcpyH2D");
  (*gpu->mutable_event_metadata())[3].set_name("dense/MatMul");
  xp::XLine* stream = gpu->add_lines();
  stream->set_id(7);
  stream->set_name("Stream #7(Compute)");
  stream->set_timestamp_ns(int64_t{1700000000} * 1000000000);
  xp::XEvent* kernel = stream->add_events();
  kernel->set_metadata_id(1);
  kernel->set_offset_ps(4'000'000);
  kernel->set_duration_ps(3'500'500);
  auto add_stat = [](xp::XEvent* e, int64_t id) {
    xp::XStat* stat = e->add_stats();
    stat->set_metadata_id(id);
    return stat;
  };
  add_stat(kernel, 1)->set_uint64_value(4242);
  add_stat(kernel, 2)->set_str_value("dense/MatMul:MatMul");
  add_stat(kernel, 3)->set_str_value("regs:64 static_shared:1024 dynamic_shared:2048 grid:80,2,1 block:128,1,1 occ_pct:50.0");
  xp::XEvent* copy = stream->add_events();
  copy->set_metadata_id(2);
  copy->set_offset_ps(8'000'000);
  copy->set_duration_ps(1'000'000);
  add_stat(copy, 4)->set_str_value("kind:HtoD size:4096 dest:0 async:1");
  xp::XLine* derived = gpu->add_lines();
  derived->set_name("XLA Ops");
  derived->set_timestamp_ns(int64_t{1700000000} * 1000000000);
  xp::XEvent* xla = derived->add_events();
  xla->set_metadata_id(3);
  xla->set_offset_ps(4'000'000);
  xla->set_duration_ps(3'500'500);
  return space;
}

TEST(XSpaceReaderTest, GpuKernelsCopiesAndLaunches) {
  const std::string bytes = GpuSpace().SerializeAsString();
  EXPECT_EQ(DetectFormat(bytes), DetectedFormat::kXSpace);
  auto trace = ReadXSpace(bytes, "gpuhost.xplane.pb");
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  ASSERT_EQ(trace->slices().size(), 5u);
  int kernels = 0, copies = 0, annotations = 0;
  for (uint32_t i = 0; i < trace->slices().size(); ++i) {
    const Slice& s = trace->slices()[i];
    const Track& t = trace->tracks()[s.track];
    if (s.kind == SliceKind::kKernel) {
      ++kernels;
      EXPECT_EQ(trace->str(trace->slice_name(s)), "dense/MatMul");  // the op that launched it (tf_op)
      EXPECT_EQ(trace->str(trace->slice_op_type(s)), "MatMul");
      EXPECT_EQ(t.kind, TrackKind::kGpuStream);
      EXPECT_EQ(trace->str(t.name), "Stream #7(Compute)");
      EXPECT_EQ(trace->str(trace->tracks()[t.parent].name), "GPU:0");
      EXPECT_EQ(s.dur_ns, 3500);  // 4'000'000 ps + 3'500'500 ps ends at 7500.5 ns: floored
      const std::optional<KernelArgs> k = trace->kernel_args(i);
      ASSERT_TRUE(k.has_value());
      EXPECT_EQ(k->grid[0], 80u);
      EXPECT_EQ(k->grid[1], 2u);
      EXPECT_EQ(k->block[0], 128u);
      EXPECT_EQ(k->registers_per_thread, 64);
      EXPECT_EQ(k->shared_memory_bytes, 3072);
      EXPECT_EQ(k->correlation, 4242);
    }
    if (s.kind == SliceKind::kMemcpy) {
      ++copies;
      ASSERT_NE(trace->transfer_args(i), nullptr);
      EXPECT_EQ(trace->transfer_args(i)->bytes, 4096);
    }
    if (s.kind == SliceKind::kAnnotation) ++annotations;  // the derived XLA Ops line
  }
  EXPECT_EQ(kernels, 1);
  EXPECT_EQ(copies, 1);
  EXPECT_EQ(annotations, 1);
  ASSERT_EQ(trace->flows().size(), 1u);
  const Flow& flow = trace->flows()[0];
  EXPECT_EQ(flow.kind, FlowKind::kLaunch);
  EXPECT_EQ(trace->slices()[flow.from_slice].kind, SliceKind::kRuntime);
  EXPECT_EQ(trace->str(trace->slice_name(trace->slices()[flow.from_slice])), "cudaLaunchKernel");
  EXPECT_EQ(trace->slices()[flow.to_slice].kind, SliceKind::kKernel);
  EXPECT_EQ(trace->tracks()[trace->slices()[flow.from_slice].track].thread_id, 77);
}

TEST(XSpaceReaderTest, RunDirectoryReadsOneHostPerFile) {
  const auto dir = testing::ScratchDir("xspace") / "plugins" / "profile" / "run1";
  std::filesystem::create_directories(dir);
  xp::XSpace a = GpuSpace();
  xp::XSpace b = GpuSpace();  // the same hostname inside: the file names tell the hosts apart
  ASSERT_TRUE(WriteFileAtomically((dir / "gpuhost.xplane.pb").string(), a.SerializeAsString()).ok());
  ASSERT_TRUE(WriteFileAtomically((dir / "otherhost.xplane.pb").string(), b.SerializeAsString(), true).ok());
  ASSERT_TRUE(WriteFileAtomically((dir / "notes.txt").string(), "not a trace").ok());
  auto trace = ReadTrace(dir.string());
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  EXPECT_EQ(trace->slices().size(), 10u);
  std::set<std::string> hosts;
  for (const Track& t : trace->tracks()) {
    if (t.kind == TrackKind::kHost) hosts.insert(std::string(trace->str(t.name)));
  }
  EXPECT_EQ(hosts, (std::set<std::string>{"gpuhost", "otherhost"}));
  EXPECT_EQ(trace->flows().size(), 2u);
}

TEST(XSpaceReaderTest, DamageNamesTheFileAndOffset) {
  const std::string bytes = Fixture("tf2_keras_mlp_cpu.xplane.pb.gz");
  for (size_t cut : {bytes.size() - 3, bytes.size() / 2, size_t{100}}) {
    SCOPED_TRACE(cut);
    const std::string truncated = bytes.substr(0, cut);
    EXPECT_EQ(DetectFormat(truncated), DetectedFormat::kXSpace);
    auto trace = ReadTraceFromBytes(truncated, "cut.xplane.pb");
    ASSERT_FALSE(trace.ok());
    EXPECT_EQ(trace.status().code(), StatusCode::kInvalidInput);
    EXPECT_NE(trace.status().message().find("cut.xplane.pb: offset "), std::string::npos) << trace.status().message();
    EXPECT_NE(trace.status().message().find("XSpace"), std::string::npos);
  }
}

TEST(XSpaceReaderTest, SniffingTellsTheProtobufFormatsApart) {
  const std::string xspace = Fixture("jax_mlp_cpu.xplane.pb.gz");
  EXPECT_EQ(SniffProtobuf(xspace), ProtoFormat::kXSpace);
  auto step = ReadFile(testing::DataPath("tf_run_metadata/two_cpu_graphs.pb"));
  ASSERT_TRUE(step.ok());
  EXPECT_EQ(SniffProtobuf(*step), ProtoFormat::kStepStats);
  EXPECT_FALSE(FitsXSpace(*step));
  EXPECT_FALSE(FitsStepStats(xspace));
  EXPECT_FALSE(FitsPerfettoTrace(xspace));
  // Every table entry has a name, a sniff and a reader; names are unique.
  std::set<std::string_view> names;
  for (const TraceReaderEntry& entry : TraceReaders()) {
    EXPECT_TRUE(names.insert(entry.name).second);
    EXPECT_NE(entry.sniff, nullptr);
    EXPECT_NE(entry.read, nullptr);
    EXPECT_EQ(FindTraceReader(entry.format), &entry);
  }
  EXPECT_EQ(names.size(), 4u);
  EXPECT_EQ(DetectFormat(std::string("\x0f\x01\x02", 3)), DetectedFormat::kUnknown);
}

}  // namespace
}  // namespace stepscope::trace
