// Binary step stats read straight from the wire (step_stats_wire.h) against the protobuf path
// (ParseStepStats + ImportRunMetadata): the same Trace, field by field, for every binary fixture,
// every text fixture written as binary, generated traces, odd but valid encodings, and damaged
// input (the same error, or the same repaired Trace).
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "base/file_io.h"
#include "profiler/formats/common/proto_wire.h"
#include "profiler/formats/reader.h"
#include "profiler/formats/step_stats/node_reader.h"
#include "profiler/formats/step_stats/node_store.h"
#include "profiler/formats/step_stats/step_stats_import.h"
#include "profiler/formats/step_stats/step_stats_io.h"
#include "profiler/formats/step_stats/step_stats_payload.h"
#include "profiler/formats/writer.h"
#include "profiler/testing/synthetic_trace.h"
#include "stepscope/tf/run_metadata.pb.h"
#include "test_util.h"

namespace stepscope::trace {
namespace {

using testing::DataPath;

// The protobuf path, as ReadStepStats took it before the wire scan.
StatusOr<Trace> ReadWithProtobuf(std::string_view bytes, const std::string& name) {
  ASSIGN_OR_RETURN(ParsedStepStats parsed, ParseStepStats(bytes, name));
  return ImportRunMetadata(std::move(parsed.run_metadata), parsed.format, name, parsed.stats);
}

// The step stats reader as `stepscope` and the viewer use it (the wire scan first).
StatusOr<Trace> ReadAsToday(std::string_view bytes, const std::string& name) {
  return FindTraceReader(DetectedFormat::kStepStats)->read(bytes, name);
}

std::string Deterministic(const tf::RunMetadata& metadata) {
  return SerializeRunMetadata(metadata, StepStatsEncoding::kBinary).value();
}

bool HasField(const tf::NodeExecStats& node, NodeField field) {
  switch (field) {
    case kNodeOutputs: return node.output_size() > 0;
    case kNodeMemory: return node.memory_size() > 0;
    case kNodeMemoryStats: return node.has_memory_stats();
    case kNodeLabel: return !node.timeline_label().empty();
    case kNodeKernel: return node.has_kernel();
    case kNodeMemcpy: return node.has_memcpy();
    case kNodeCollective: return node.has_collective();
    default: return false;
  }
}

void ExpectSameTrace(const Trace& wire, const Trace& message, const std::string& what) {
  SCOPED_TRACE(what);
  ASSERT_EQ(wire.strings().size(), message.strings().size());
  for (StringId id = 0; id < wire.strings().size(); ++id) ASSERT_EQ(wire.str(id), message.str(id)) << id;

  ASSERT_EQ(wire.tracks().size(), message.tracks().size());
  for (size_t t = 0; t < wire.tracks().size(); ++t) {
    const Track& a = wire.tracks()[t];
    const Track& b = message.tracks()[t];
    EXPECT_TRUE(a.name == b.name && a.full_name == b.full_name && a.parent == b.parent && a.kind == b.kind &&
                a.sort_index == b.sort_index && a.lane == b.lane && a.thread_id == b.thread_id &&
                a.source_device == b.source_device && a.concurrent == b.concurrent)
        << "track " << t;
  }

  ASSERT_EQ(wire.slices().size(), message.slices().size());
  NodeReader wire_refs(wire);
  NodeReader message_refs(message);
  for (size_t s = 0; s < wire.slices().size(); ++s) {
    const Slice& a = wire.slices()[s];
    const Slice& b = message.slices()[s];
    ASSERT_TRUE(a.start_ns == b.start_ns && a.dur_ns == b.dur_ns && a.track == b.track &&
                wire.slice_name(a) == message.slice_name(b) && wire.slice_op_type(a) == message.slice_op_type(b) &&
                a.depth == b.depth && a.kind == b.kind && a.flags == b.flags)
        << "slice " << s;
    const NodeRef ra = wire_refs.Ref(static_cast<uint32_t>(s));
    const NodeRef rb = message_refs.Ref(static_cast<uint32_t>(s));
    ASSERT_TRUE(ra.device == rb.device && ra.node == rb.node) << "node ref of slice " << s;
    // Entries differ (the scan's store groups a thread's nodes), but a slice has one or not.
    ASSERT_EQ(StepStatsOf(wire)->entry(static_cast<uint32_t>(s)) == NodeRef::kNone,
              StepStatsOf(message)->entry(static_cast<uint32_t>(s)) == NodeRef::kNone)
        << s;
  }

  ASSERT_EQ(wire.flows().size(), message.flows().size());
  for (size_t f = 0; f < wire.flows().size(); ++f) {
    const Flow& a = wire.flows()[f];
    const Flow& b = message.flows()[f];
    EXPECT_TRUE(a.from_slice == b.from_slice && a.to_slice == b.to_slice && a.kind == b.kind) << "flow " << f;
  }

  ASSERT_EQ(wire.counters().size(), message.counters().size());
  for (size_t c = 0; c < wire.counters().size(); ++c) {
    const CounterSeries& a = wire.counters()[c];
    const CounterSeries& b = message.counters()[c];
    EXPECT_TRUE(a.name == b.name && a.track == b.track && a.unit == b.unit && a.origin == b.origin &&
                a.ts_ns == b.ts_ns && a.values == b.values)
        << "counter " << c;
  }

  EXPECT_EQ(wire.epoch_ns(), message.epoch_ns());
  EXPECT_EQ(wire.span_begin_ns(), message.span_begin_ns());
  EXPECT_EQ(wire.span_end_ns(), message.span_end_ns());
  const StepInfo& a = wire.step_info();
  const StepInfo& b = message.step_info();
  EXPECT_TRUE(a.step == b.step && a.rank == b.rank && a.world_size == b.world_size && a.host == b.host &&
              a.producer == b.producer && a.dropped_records == b.dropped_records && a.clock_sync_ns == b.clock_sync_ns);
  EXPECT_EQ(wire.import_stats().counts(), message.import_stats().counts());
  EXPECT_EQ(wire.source_format(), message.source_format());
  EXPECT_EQ(wire.source_path(), message.source_path());

  // Details: every slice's node, by a reader in slice order and by each field filter.
  ASSERT_EQ(HasStepStats(wire), HasStepStats(message));
  if (!HasStepStats(wire)) return;
  EXPECT_EQ(StepStatsOf(wire)->store().entry_count(), StepStatsOf(message)->store().entry_count());
  NodeReader wire_nodes(wire);
  NodeReader message_nodes(message);
  for (uint32_t s = 0; s < wire.slices().size(); ++s) {
    const tf::NodeExecStats* x = wire_nodes.Get(s);
    const tf::NodeExecStats* y = message_nodes.Get(s);
    ASSERT_EQ(x == nullptr, y == nullptr) << "node of slice " << s;
    if (x != nullptr) {
      ASSERT_EQ(x->SerializeAsString(), y->SerializeAsString()) << "node of slice " << s;
    }
  }
  for (NodeField field : {kNodeOutputs, kNodeMemory, kNodeMemoryStats, kNodeLabel, kNodeKernel, kNodeMemcpy,
                          kNodeCollective}) {
    NodeReader x_reader(wire, field);
    NodeReader y_reader(message, field);
    for (uint32_t s = 0; s < wire.slices().size(); ++s) {
      const tf::NodeExecStats* x = x_reader.Get(s);
      const tf::NodeExecStats* y = y_reader.Get(s);
      ASSERT_EQ(x != nullptr && HasField(*x, field), y != nullptr && HasField(*y, field)) << "field " << field << " slice " << s;
    }
  }
  // The whole RunMetadata again: the same message, so the same bytes written.
  const auto x = LoadRunMetadata(wire);
  const auto y = LoadRunMetadata(message);
  ASSERT_NE(x, nullptr);
  ASSERT_NE(y, nullptr);
  EXPECT_TRUE(Deterministic(*x) == Deterministic(*y)) << "LoadRunMetadata differs";
}

// Both ways on `bytes`: the same Trace, or the same error. Returns whether the wire scan took
// the input (rather than leaving it to protobuf).
bool ExpectSameResult(const std::string& bytes, const std::string& what) {
  auto wire = ReadAsToday(bytes, what);
  auto message = ReadWithProtobuf(bytes, what);
  EXPECT_EQ(wire.ok(), message.ok()) << what << ": " << (wire.ok() ? message : wire).status().message();
  if (wire.ok() && message.ok()) {
    ExpectSameTrace(*wire, *message, what);
  } else if (!wire.ok() && !message.ok()) {
    EXPECT_EQ(wire.status().message(), message.status().message()) << what;
  }
  return ImportBinaryStepStats(bytes, what).has_value();
}

std::string ProjectPath(const std::string& relative) { return DataPath("../../" + relative); }

// Every step stats file of tests/data (binary as it is, text written as binary) and the binary
// seeds of the fuzzer.
std::vector<std::pair<std::string, std::string>> Fixtures() {
  std::vector<std::pair<std::string, std::string>> fixtures;
  std::vector<std::filesystem::path> paths;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(DataPath(""))) {
    if (entry.is_regular_file()) paths.push_back(entry.path());
  }
  for (const auto& entry : std::filesystem::directory_iterator(ProjectPath("fuzz/corpus/pb"))) paths.push_back(entry.path());
  std::sort(paths.begin(), paths.end());
  for (const auto& path : paths) {
    const std::string name = path.filename().string();
    if (!EndsWith(name, ".pb") && !EndsWith(name, ".pb.gz") && !EndsWith(name, ".pbtxt") && !EndsWith(name, ".pbtxt.gz")) {
      continue;
    }
    auto bytes = ReadFile(path.string());
    if (!bytes.ok() || DetectFormat(*bytes) != DetectedFormat::kStepStats) continue;  // XSpace, ...
    if (LooksLikeTextProto(*bytes)) {
      auto trace = ReadWithProtobuf(*bytes, name);
      if (!trace.ok()) continue;
      fixtures.emplace_back(name + " as pb", Serialize(*trace, OutputFormat::kRunMetadataBinary).value());
    } else {
      fixtures.emplace_back(name, *bytes);
    }
  }
  return fixtures;
}

TEST(StepStatsWireTest, EveryFixtureGivesTheSameTrace) {
  const auto fixtures = Fixtures();
  EXPECT_GE(fixtures.size(), 15u);
  int taken = 0;
  for (const auto& [name, bytes] : fixtures) {
    if (ExpectSameResult(bytes, name)) ++taken;
  }
  // All but the seeds that hold invalid UTF-8 (repaired by the protobuf path) are read from the wire.
  EXPECT_GE(taken, static_cast<int>(fixtures.size()) - 2);
  std::printf("%zu fixtures, %d read from the wire\n", fixtures.size(), taken);
}

TEST(StepStatsWireTest, TheRealTf1StepIsReadFromTheWire) {
  const std::string text = ReadFile(DataPath("ptb_lstm_tf1_gpu_step.pbtxt")).value();
  const std::string binary = Serialize(ReadWithProtobuf(text, "tf1").value(), OutputFormat::kRunMetadataBinary).value();
  EXPECT_TRUE(ExpectSameResult(binary, "ptb_lstm_tf1_gpu_step.pb"));
  // As a bare StepStats too.
  tf::RunMetadata metadata;
  ASSERT_TRUE(metadata.ParseFromString(binary));
  EXPECT_TRUE(ExpectSameResult(metadata.step_stats().SerializeAsString(), "bare StepStats"));
}

// Traces from other formats, written as RunMetadata (one device per track, op_type set): what
// `stepscope convert` and `stepscope-view --write-synthetic` write.
TEST(StepStatsWireTest, GeneratedTracesGiveTheSameTrace) {
  for (const char* name : {"pytorch_kineto_alexnet_train.json.gz", "xspace/tf2_keras_mlp_cpu.xplane.pb.gz"}) {
    auto trace = ReadTrace(DataPath(name));
    ASSERT_TRUE(trace.ok()) << name;
    EXPECT_TRUE(ExpectSameResult(Serialize(*trace, OutputFormat::kRunMetadataBinary).value(), name));
  }
}

// Larger generated traces: the viewer's synthetic trace as `--write-synthetic x.pb` writes it, and
// the real TF1 step repeated, each copy after the one before.
TEST(StepStatsWireTest, LargeGeneratedTracesGiveTheSameTrace) {
  EXPECT_TRUE(ExpectSameResult(Serialize(synthetic::MakeSyntheticTrace(50000), OutputFormat::kRunMetadataBinary).value(),
                               "synthetic 50000"));
  const std::string text = ReadFile(DataPath("ptb_lstm_tf1_gpu_step.pbtxt")).value();
  const Trace step = ReadWithProtobuf(text, "tf1").value();
  const auto original = LoadRunMetadata(step);
  tf::RunMetadata copies;
  const int64_t span_micros = (step.span_end_ns() - step.span_begin_ns()) / 1000 + 1000;
  for (const auto& device : original->step_stats().dev_stats()) {
    auto* copy = copies.mutable_step_stats()->add_dev_stats();
    *copy = device;
    copy->clear_node_stats();
    for (int c = 0; c < 6; ++c) {
      for (const auto& node : device.node_stats()) {
        auto* moved = copy->add_node_stats();
        *moved = node;
        moved->set_all_start_micros(node.all_start_micros() + span_micros * c);
      }
    }
  }
  EXPECT_TRUE(ExpectSameResult(copies.SerializeAsString(), "TF1 step 6 times"));
}

// One node's bytes, built by hand.
struct NodeBuilder {
  std::string bytes;
  NodeBuilder& Text(uint32_t number, std::string_view text) {
    wire::Bytes(bytes, number, text);
    return *this;
  }
  NodeBuilder& Number(uint32_t number, uint64_t value) {
    wire::Varint(bytes, number, value);
    return *this;
  }
  NodeBuilder& Raw(std::string_view raw) {
    bytes.append(raw);
    return *this;
  }
};

// A RunMetadata of the given devices (name, node bytes) with `extra` appended at each level.
std::string RunMetadataOf(const std::vector<std::pair<std::string, std::vector<std::string>>>& devices,
                          std::string_view device_extra = {}, std::string_view step_extra = {},
                          std::string_view metadata_extra = {}) {
  std::string step;
  for (const auto& [name, nodes] : devices) {
    std::string device;
    if (!name.empty()) wire::Bytes(device, 1, name);
    for (const std::string& node : nodes) wire::Bytes(device, 2, node);
    device.append(device_extra);
    wire::Bytes(step, 1, device);
  }
  step.append(step_extra);
  std::string metadata;
  wire::Bytes(metadata, 1, step);
  metadata.append(metadata_extra);
  return metadata;
}

std::string Node(std::string_view name, int64_t start_micros, int64_t duration_micros, std::string_view label = {}) {
  NodeBuilder node;
  node.Text(1, name).Number(2, static_cast<uint64_t>(start_micros)).Number(5, static_cast<uint64_t>(duration_micros));
  if (!label.empty()) node.Text(8, label);
  return node.bytes;
}

std::string Unknowns() {
  std::string extra;
  wire::Varint(extra, 77, 5);
  wire::Fixed64(extra, 78, 0x1234);
  wire::Bytes(extra, 79, "kept");
  wire::Tag(extra, 80, wire::kFixed32);
  extra.append("\x01\x02\x03\x04", 4);
  return extra;
}

TEST(StepStatsWireTest, OddButValidEncodingsGiveTheSameTrace) {
  const std::string gpu = "/job:localhost/replica:0/task:0/device:GPU:0";
  const std::string cpu = "/job:localhost/replica:0/task:0/device:CPU:0";
  // Fields out of order, repeated singular fields (the last wins), unknown fields at every level,
  // negative times, nanos beside micros, inputs, correlation ids, an empty memory_stats.
  std::vector<std::string> nodes;
  nodes.push_back(NodeBuilder()
                      .Number(5, 7)
                      .Text(8, "a = MatMul(x, y)")
                      .Text(1, "first name")
                      .Number(2, 1000)
                      .Text(1, "a")
                      .Raw(Unknowns())
                      .Number(10, 3)
                      .Text(12, "")
                      .bytes);
  nodes.push_back(NodeBuilder().Text(1, "b").Number(2, 1003).Number(5, 2).Text(1005, "a").Text(1005, "^x").Number(1004, 9).bytes);
  nodes.push_back(NodeBuilder().Text(1, "c").Number(2, static_cast<uint64_t>(-5)).Number(13, 1'000'000'500).Number(16, 99).bytes);
  nodes.push_back(NodeBuilder().Text(1, "d").Number(2, 1010).Number(5, 4).Text(1000, "Conv2D").Number(10, 0x7fffffffffULL).bytes);
  // A collective with its peers unpacked, and a memcpy record.
  std::string collective;
  wire::Bytes(collective, 1, "all_reduce");
  wire::Varint(collective, 4, 0);
  wire::Varint(collective, 4, 1);
  wire::Varint(collective, 4, static_cast<uint64_t>(-1));
  nodes.push_back(NodeBuilder().Text(1, "allreduce").Number(2, 1020).Number(5, 3).Text(1002, collective).bytes);
  // Memory: allocation records (one with an unknown field), peak, bytes in use.
  std::string record;
  wire::Varint(record, 1, 1005);
  wire::Varint(record, 2, 256);
  wire::Varint(record, 9, 1);
  std::string memory;
  wire::Bytes(memory, 1, "GPU_0_bfc");
  wire::Varint(memory, 3, 512);
  wire::Bytes(memory, 6, record);
  wire::Varint(memory, 5, 4096);
  wire::Varint(memory, 2, 300);
  nodes.push_back(NodeBuilder().Text(1, "alloc").Number(2, 1004).Number(5, 2).Text(6, memory).Text(6, memory).bytes);

  std::vector<std::string> kernels;
  kernels.push_back(Node("a:MatMul", 1001, 3));
  std::string kernel;
  wire::Varint(kernel, 1, 80);
  kernels.push_back(NodeBuilder().Text(1, "b:Conv2D").Number(2, 1004).Number(5, 1).Text(1001, kernel).Number(1004, 9).bytes);
  kernels.push_back(Node("edge_1_a:MEMCPYHtoD", 1006, 1, "MEMCPYHtoD 64 bytes (Pageable to Device)"));

  std::string thread_name;
  wire::Varint(thread_name, 1, 3);
  wire::Bytes(thread_name, 2, "worker");
  std::string thread_names;
  wire::Bytes(thread_names, 3, thread_name);

  const std::string metadata = RunMetadataOf({{gpu, nodes}, {"/device:GPU:0/stream:14", kernels},
                                              {"/device:GPU:0/stream:all", kernels}, {cpu, {Node("e", 1000, 1)}}},
                                             thread_names + Unknowns(), Unknowns(), Unknowns());
  EXPECT_TRUE(ExpectSameResult(metadata, "odd encodings"));
  const auto trace = ReadAsToday(metadata, "odd encodings");
  ASSERT_TRUE(trace.ok());
  // Four unknown fields in the RunMetadata, the StepStats, each of the four devices and one node.
  EXPECT_EQ(trace->import_stats().Get("unknown_binary_fields_kept"), 4 * (1 + 1 + 4 + 1));

  // step_stats twice (protobuf merges them: their devices follow one another).
  std::string twice = metadata;
  twice.append(RunMetadataOf({{cpu, {Node("f", 1000, 1)}}}));
  EXPECT_TRUE(ExpectSameResult(twice, "step_stats twice"));
  // A device with no nodes; a node of nothing but a name.
  EXPECT_TRUE(ExpectSameResult(RunMetadataOf({{cpu, {}}, {gpu, {NodeBuilder().Text(1, "x").bytes}}}), "sparse"));
}

// What the scan leaves to protobuf: the same outcome all the same.
TEST(StepStatsWireTest, WhatTheScanDeclinesGivesTheSameResult) {
  const std::string cpu = "/job:localhost/replica:0/task:0/device:CPU:0";
  struct Case {
    const char* what;
    std::string bytes;
  };
  std::string bad_memory;
  wire::Bytes(bad_memory, 1, "GPU_\xff_bfc");
  std::string bad_record;
  wire::Bytes(bad_record, 1, "x");  // a string where a number is declared
  std::string memory_with_bad_record;
  wire::Bytes(memory_with_bad_record, 6, bad_record);
  std::string group;
  wire::Tag(group, 90, wire::kStartGroup);
  wire::Varint(group, 1, 1);
  wire::Tag(group, 90, wire::kEndGroup);
  const std::vector<Case> cases = {
      {"invalid UTF-8 in a node name", RunMetadataOf({{cpu, {Node("a\xff" "b", 1, 1)}}})},
      {"invalid UTF-8 in a label", RunMetadataOf({{cpu, {Node("a", 1, 1, "a = Op(\xc0)")}}})},
      {"invalid UTF-8 in an allocator", RunMetadataOf({{cpu, {NodeBuilder().Text(1, "a").Text(6, bad_memory).bytes}}})},
      {"invalid UTF-8 in a device", RunMetadataOf({{"/device:CPU:\xff", {Node("a", 1, 1)}}})},
      {"a number sent as bytes", RunMetadataOf({{cpu, {NodeBuilder().Text(1, "a").Text(10, "3").bytes}}})},
      {"a record field of the wrong type", RunMetadataOf({{cpu, {NodeBuilder().Text(1, "a").Text(6, memory_with_bad_record).bytes}}})},
      {"a group in a node", RunMetadataOf({{cpu, {NodeBuilder().Text(1, "a").Raw(group).bytes}}})},
      {"a node without a name", RunMetadataOf({{cpu, {Node("a", 1, 1), NodeBuilder().Number(2, 5).bytes}}})},
      {"a device without a name", RunMetadataOf({{"", {Node("a", 1, 1)}}})},
      {"no devices", RunMetadataOf({})},
      {"step_stats as a number", std::string("\x08\x01", 2)},
      {"a tag cut short", RunMetadataOf({{cpu, {Node("a", 1, 1)}}}) + "\x80"},
  };
  for (const Case& c : cases) EXPECT_FALSE(ExpectSameResult(c.bytes, c.what)) << c.what;
}

TEST(StepStatsWireTest, CutFilesGiveTheSameError) {
  const std::string text = ReadFile(DataPath("ptb_lstm_tf1_gpu_step.pbtxt")).value();
  const std::string binary = Serialize(ReadWithProtobuf(text, "tf1").value(), OutputFormat::kRunMetadataBinary).value();
  for (size_t cut = 1; cut < binary.size(); cut += 4099) ExpectSameResult(binary.substr(0, cut), "cut at " + std::to_string(cut));
  for (size_t cut = 1; cut < 200; cut += 7) ExpectSameResult(binary.substr(0, cut), "cut at " + std::to_string(cut));
}

// Random damage to a small real trace (stepscope-train's): whatever protobuf makes of it, so does
// the scan.
TEST(StepStatsWireTest, DamagedBytesGiveTheSameResult) {
  const std::string original = ReadFile(DataPath("../../fuzz/corpus/pb/memory_labels.pb")).value();
  std::mt19937 random(7);
  int taken = 0;
  for (int round = 0; round < 400; ++round) {
    std::string bytes = original;
    const int changes = 1 + static_cast<int>(random() % 3);
    for (int c = 0; c < changes; ++c) {
      const size_t at = random() % bytes.size();
      switch (random() % 4) {
        case 0: bytes[at] = static_cast<char>(random()); break;
        case 1: bytes.erase(at, 1 + random() % 4); break;
        case 2: bytes.insert(at, 1, static_cast<char>(random())); break;
        // Varints keep their length: mostly other values, tags, lengths or text, still well formed.
        default: bytes[at] = static_cast<char>((static_cast<uint8_t>(bytes[at]) & 0x80) | (random() & 0x7f)); break;
      }
      if (bytes.empty()) bytes = "\x0a";
    }
    if (ExpectSameResult(bytes, "damaged round " + std::to_string(round))) ++taken;
    if (HasFailure()) break;
  }
  std::printf("damaged inputs the scan took: %d of 400\n", taken);
}

}  // namespace
}  // namespace stepscope::trace
