// Invalid UTF-8 in imported traces: the shared repair rule (utf8.h), and step stats (text and
// binary) whose strings are not UTF-8 keeping every node's details, with each repair counted.
#include <google/protobuf/stubs/logging.h>
#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "profiler/formats/common/proto_utf8.h"
#include "profiler/formats/common/utf8.h"
#include "profiler/formats/reader.h"
#include "profiler/formats/step_stats/step_stats_io.h"
#include "profiler/formats/step_stats/step_stats_payload.h"
#include "stepscope/tf/run_metadata.pb.h"

namespace stepscope::trace {
namespace {

const std::string kFffd = "\xEF\xBF\xBD";

TEST(Utf8Test, EachInvalidByteBecomesOneReplacementCharacter) {
  int64_t replaced = -1;
  EXPECT_EQ(RepairUtf8("plain", &replaced), "plain");
  EXPECT_EQ(replaced, 0);
  EXPECT_EQ(RepairUtf8("\xE2\x82\xAC \xF0\x9F\x98\x80 \xC3\xA9", &replaced), "\xE2\x82\xAC \xF0\x9F\x98\x80 \xC3\xA9");
  EXPECT_EQ(replaced, 0);
  EXPECT_EQ(RepairUtf8("a\xFF" "b", &replaced), "a" + kFffd + "b");
  EXPECT_EQ(replaced, 1);
  EXPECT_EQ(RepairUtf8("\xC0\x80", &replaced), kFffd + kFffd);  // overlong NUL
  EXPECT_EQ(replaced, 2);
  EXPECT_EQ(RepairUtf8("\xED\xA0\x80", &replaced), kFffd + kFffd + kFffd);  // surrogate
  EXPECT_EQ(replaced, 3);
  EXPECT_EQ(RepairUtf8("\xF4\x90\x80\x80", &replaced), kFffd + kFffd + kFffd + kFffd);  // past U+10FFFF
  EXPECT_EQ(replaced, 4);
  EXPECT_EQ(RepairUtf8("x\xE2\x82", &replaced), "x" + kFffd + kFffd);  // cut short
  EXPECT_EQ(replaced, 2);
  EXPECT_FALSE(IsValidUtf8("\x80"));
  EXPECT_TRUE(IsValidUtf8(RepairUtf8("\x80\xBF\xFE")));
}

TEST(Utf8Test, RepairedOffsetsMapBackToTheOriginal) {
  const std::string original = "ab\xFF" "cd\xFE" "e";
  const std::string repaired = RepairUtf8(original);
  ASSERT_EQ(repaired, "ab" + kFffd + "cd" + kFffd + "e");
  EXPECT_EQ(Utf8OriginalOffset(original, 0), 0u);
  EXPECT_EQ(Utf8OriginalOffset(original, 2), 2u);   // the first U+FFFD
  EXPECT_EQ(Utf8OriginalOffset(original, 5), 3u);   // 'c'
  EXPECT_EQ(Utf8OriginalOffset(original, 10), 6u);  // 'e'
  EXPECT_EQ(Utf8OriginalOffset(original, repaired.size()), original.size());
}

// Three strings of one node that are not UTF-8 (byte 0xFF in its name, its timeline label and
// an allocator name); the second node is clean and has a valid multi-byte character.
constexpr char kBadStrings[] = R"pb(step_stats {
  dev_stats {
    device: "/job:localhost/replica:0/task:0/device:CPU:0"
    node_stats {
      node_name: "bad\377name"
      all_start_micros: 1000
      all_end_rel_micros: 10
      timeline_label: "bad\377name = MatMul(a, b)"
      memory { allocator_name: "cpu\377" total_bytes: 64 peak_bytes: 64 }
    }
    node_stats {
      node_name: "clean"
      all_start_micros: 1020
      all_end_rel_micros: 5
      timeline_label: "clean = Add(bad\342\202\254name)"
    }
  }
}
)pb";

void ExpectRepairedDetails(const Trace& trace) {
  ASSERT_EQ(trace.slices().size(), 2u);
  EXPECT_EQ(trace.import_stats().Get(kInvalidUtf8StringsRepaired), 3);
  uint32_t bad = trace.str(trace.slice_name(trace.slices()[0])) == "clean" ? 1 : 0;
  EXPECT_EQ(trace.str(trace.slice_name(trace.slices()[bad])), "bad" + kFffd + "name");
  const auto node = NodeOf(trace, bad);
  ASSERT_NE(node, nullptr) << "the node's details were lost";
  EXPECT_EQ(node->node_name(), "bad" + kFffd + "name");
  EXPECT_EQ(node->timeline_label(), "bad" + kFffd + "name = MatMul(a, b)");
  ASSERT_EQ(node->memory_size(), 1);
  EXPECT_EQ(node->memory(0).allocator_name(), "cpu" + kFffd);
  EXPECT_EQ(node->memory(0).total_bytes(), 64);
  const auto clean = NodeOf(trace, 1 - bad);
  ASSERT_NE(clean, nullptr);
  EXPECT_EQ(clean->timeline_label(), "clean = Add(bad\xE2\x82\xAC" "name)");  // valid UTF-8 stays

  // The whole RunMetadata comes back (what pb export and merge use), and a pb export reads
  // back with nothing left to repair.
  const auto metadata = LoadRunMetadata(trace);
  ASSERT_NE(metadata, nullptr);
  EXPECT_EQ(metadata->step_stats().dev_stats(0).node_stats_size(), 2);
  auto binary = SerializeRunMetadata(*metadata, StepStatsEncoding::kBinary);
  ASSERT_TRUE(binary.ok());
  auto again = ReadTraceFromBytes(*binary, "again.pb");
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(again->import_stats().Get(kInvalidUtf8StringsRepaired), 0);
  ASSERT_NE(NodeOf(*again, bad), nullptr);
  EXPECT_EQ(NodeOf(*again, bad)->memory(0).allocator_name(), "cpu" + kFffd);
}

TEST(StepStatsUtf8Test, TextWithInvalidUtf8KeepsNodeDetails) {
  auto trace = ReadTraceFromBytes(kBadStrings, "bad_utf8.pbtxt");
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  EXPECT_EQ(trace->source_format(), SourceFormat::kRunMetadataText);
  ExpectRepairedDetails(*trace);
}

// The binary form of kBadStrings: serialised with 'X' where 0xFF belongs (protobuf will not
// serialise invalid UTF-8 faithfully on purpose), then patched on the wire.
std::string BadBinary() {
  std::string text = kBadStrings;
  for (size_t at = text.find("\\377"); at != std::string::npos; at = text.find("\\377")) text.replace(at, 4, "X");
  auto parsed = ParseStepStats(text, "valid.pbtxt");
  EXPECT_TRUE(parsed.ok()) << parsed.status().message();
  std::string bytes;
  EXPECT_TRUE(parsed->run_metadata->SerializeToString(&bytes));
  int patched = 0;
  for (const std::string_view valid : {"badXname", "cpuX"}) {
    for (size_t at = bytes.find(valid); at != std::string::npos; at = bytes.find(valid, at + 1)) {
      bytes[at + 3] = '\xFF';
      ++patched;
    }
  }
  EXPECT_EQ(patched, 3);  // node_name, timeline_label, allocator_name
  return bytes;
}

TEST(StepStatsUtf8Test, BinaryWithInvalidUtf8KeepsNodeDetails) {
  const std::string bytes = BadBinary();
  tf::RunMetadata strict;
  google::protobuf::LogSilencer quiet;  // protobuf logs the refusal expected here
  EXPECT_FALSE(strict.ParseFromString(bytes)) << "protobuf accepted invalid UTF-8: the test input is not what it claims";
  auto trace = ReadTraceFromBytes(bytes, "bad_utf8.pb");
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  EXPECT_EQ(trace->source_format(), SourceFormat::kRunMetadataBinary);
  ExpectRepairedDetails(*trace);
}

TEST(StepStatsUtf8Test, DeviceAndThreadNamesAreRepairedToo) {
  const std::string text = R"pb(step_stats {
  dev_stats {
    device: "/job:localhost/replica:0/task:0/device:CPU:0\377"
    thread_names { key: 7 value: "worker\xfe" }  # hex escape
    node_stats { node_name: "n" all_start_micros: 1 all_end_rel_micros: 2 thread_id: 7 }
  }
}
)pb";
  auto trace = ReadTraceFromBytes(text, "devices.pbtxt");
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  EXPECT_EQ(trace->import_stats().Get(kInvalidUtf8StringsRepaired), 2);
  ASSERT_NE(NodeOf(*trace, 0), nullptr);
  const auto metadata = LoadRunMetadata(*trace);
  ASSERT_NE(metadata, nullptr) << "the rest of the RunMetadata did not parse back";
  const auto& device = metadata->step_stats().dev_stats(0);
  EXPECT_EQ(device.device(), "/job:localhost/replica:0/task:0/device:CPU:0" + kFffd);
  ASSERT_EQ(device.thread_names().count(7), 1u);
  EXPECT_EQ(device.thread_names().at(7), "worker" + kFffd);
}

TEST(StepStatsUtf8Test, BrokenBinaryIsStillAnErrorNamingTheFile) {
  std::string bytes = BadBinary();
  bytes.resize(bytes.size() - 5);  // cut inside the last node: not a UTF-8 problem
  auto trace = ReadTraceFromBytes(bytes, "cut.pb");
  ASSERT_FALSE(trace.ok());
  EXPECT_NE(trace.status().message().find("cut.pb"), std::string::npos) << trace.status().message();
}

TEST(ProtoUtf8Test, WireRepairGrowsTheEnclosingLengths) {
  tf::RunMetadata metadata;
  auto* node = metadata.mutable_step_stats()->add_dev_stats()->add_node_stats();
  node->set_node_name(std::string(200, 'a'));  // a length varint of two bytes
  node->add_output()->mutable_tensor_description()->mutable_allocation_description()->set_allocator_name("gpuX");
  std::string bytes = metadata.SerializeAsString();
  bytes[bytes.find("gpuX") + 3] = '\x80';
  bytes[bytes.find(std::string(200, 'a')) + 100] = '\xC1';
  std::string repaired;
  int64_t count = 0;
  ASSERT_TRUE(RepairInvalidUtf8InWireFormat(bytes, *tf::RunMetadata::descriptor(), &repaired, &count));
  EXPECT_EQ(count, 2);
  tf::RunMetadata back;
  ASSERT_TRUE(back.ParseFromString(repaired));
  const auto& back_node = back.step_stats().dev_stats(0).node_stats(0);
  EXPECT_EQ(back_node.node_name(), std::string(100, 'a') + kFffd + std::string(99, 'a'));
  EXPECT_EQ(back_node.output(0).tensor_description().allocation_description().allocator_name(), "gpu" + kFffd);

  EXPECT_FALSE(RepairInvalidUtf8InWireFormat(bytes.substr(0, bytes.size() - 3), *tf::RunMetadata::descriptor(),
                                             &repaired, &count));
}

TEST(ProtoUtf8Test, ReflectionRepairCountsStringsAndLeavesValidOnesAlone) {
  tf::RunMetadata metadata;
  auto* device = metadata.mutable_step_stats()->add_dev_stats();
  device->set_device("/device:CPU:0");
  auto* node = device->add_node_stats();
  node->set_node_name("ok \xE2\x82\xAC");
  node->add_input("in\xFF\xFF");  // repeated string: one string, two bytes
  node->add_input("fine");
  EXPECT_EQ(RepairInvalidUtf8Strings(metadata), 1);
  EXPECT_EQ(node->input(0), "in" + kFffd + kFffd);
  EXPECT_EQ(node->input(1), "fine");
  EXPECT_EQ(node->node_name(), "ok \xE2\x82\xAC");
  EXPECT_EQ(RepairInvalidUtf8Strings(metadata), 0);
}

}  // namespace
}  // namespace stepscope::trace
