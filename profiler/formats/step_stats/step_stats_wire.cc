// The one-pass wire scan of binary step stats: each node's import fields and its own bytes for
// the node store, no message built per node (step_stats_wire.h).
#include "profiler/formats/step_stats/step_stats_wire.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/stubs/common.h>
#include <google/protobuf/stubs/logging.h>

#include <algorithm>
#include <climits>
#include <unordered_map>

#include "base/check.h"
#include "profiler/formats/common/proto_wire.h"
#include "profiler/formats/step_stats/step_stats_times.h"
#include "profiler/formats/step_stats/step_stats_io.h"
#include "stepscope/tf/run_metadata.pb.h"

namespace stepscope::trace {
namespace {

namespace pb = google::protobuf;
using wire::Field;

// Field numbers the scan reads (docs/formats.md §1.2, §1.3).
namespace run_metadata { enum : uint32_t { kStepStats = 1 }; }
namespace step_stats { enum : uint32_t { kDevStats = 1 }; }
namespace device_stats { enum : uint32_t { kNodeStats = 2 }; }
namespace node_stats {
enum : uint32_t {
  kNodeName = 1, kAllStartMicros = 2, kAllEndRelMicros = 5, kMemory = 6, kOutput = 7, kTimelineLabel = 8,
  kThreadId = 10, kMemoryStats = 12, kAllStartNanos = 13, kAllEndRelNanos = 16,
  kOpType = 1000, kKernel = 1001, kCollective = 1002, kMemcpy = 1003, kCorrelationId = 1004, kInput = 1005,
  kInputTensor = 1006,
};
}
namespace allocator_memory { enum : uint32_t { kAllocatorName = 1, kPeakBytes = 3, kBytesInUse = 5, kRecords = 6 }; }
namespace allocation_record { enum : uint32_t { kMicros = 1, kBytes = 2 }; }

// The check protobuf's parser makes on every proto3 string (it refuses the message otherwise).
bool IsValidProtoUtf8(std::string_view text) {
  return pb::internal::IsStructurallyValidUTF8(text.data(), static_cast<int>(text.size()));
}

wire::WireType WireTypeOf(const pb::FieldDescriptor& field) {
  switch (field.type()) {
    case pb::FieldDescriptor::TYPE_DOUBLE:
    case pb::FieldDescriptor::TYPE_FIXED64:
    case pb::FieldDescriptor::TYPE_SFIXED64: return wire::kFixed64;
    case pb::FieldDescriptor::TYPE_FLOAT:
    case pb::FieldDescriptor::TYPE_FIXED32:
    case pb::FieldDescriptor::TYPE_SFIXED32: return wire::kFixed32;
    case pb::FieldDescriptor::TYPE_STRING:
    case pb::FieldDescriptor::TYPE_BYTES:
    case pb::FieldDescriptor::TYPE_MESSAGE: return wire::kLength;
    case pb::FieldDescriptor::TYPE_GROUP: return wire::kStartGroup;
    default: return wire::kVarint;
  }
}

// What protobuf's parser expects of each field of NodeExecStats and the messages inside it,
// built once from the generated descriptors, so that a field added to the schema is checked
// without a change here.
class Schema {
 public:
  struct Rule {
    bool known = false;
    wire::WireType type = wire::kVarint;
    bool packable = false;  // a repeated number: arrives packed (length-delimited) or one by one
    bool utf8 = false;      // a proto3 string
    int message = -1;       // a message: index of its type
  };

  static const Schema& Get() {
    static const Schema schema;
    return schema;
  }

  int node() const { return node_; }
  int allocator_memory() const { return allocator_memory_; }
  int allocation_record() const { return allocation_record_; }

  const Rule& Find(int type, uint32_t number) const {
    const Type& t = types_[static_cast<size_t>(type)];
    if (number < t.dense.size()) return t.dense[number];
    for (const auto& [n, rule] : t.sparse) {
      if (n == number) return rule;
    }
    return unknown_;
  }

  // Whether a field of a known number is as protobuf takes it: its declared wire type (or packed,
  // for a repeated number), valid UTF-8 for a string, and a message that passes Check.
  bool CheckKnown(const Field& field, const Rule& rule, int depth) const {
    if (field.type != rule.type) return rule.packable && field.type == wire::kLength && CheckPacked(field.bytes, rule.type);
    if (rule.utf8) return IsValidProtoUtf8(field.bytes);
    if (rule.message >= 0) return Check(field.bytes, rule.message, depth + 1);
    return true;
  }

  // Whether `bytes`, a message of `type`, parses as it is. Unknown fields are kept as they are;
  // groups are refused (proto3 writes none; protobuf would take them, the other path does).
  bool Check(std::string_view bytes, int type, int depth) const {
    if (depth > kMaxDepth) return false;
    wire::Reader reader(bytes);
    Field field;
    while (reader.Next(field)) {
      const Rule& rule = Find(type, field.number);
      if (rule.known && !CheckKnown(field, rule, depth)) return false;
    }
    return !reader.failed();
  }

 private:
  // protobuf's own recursion limit; the schema nests far less.
  static constexpr int kMaxDepth = 100;

  struct Type {
    std::vector<Rule> dense;                          // by field number, for small numbers
    std::vector<std::pair<uint32_t, Rule>> sparse;    // numbers >= 1000 (stepscope's fields)
  };

  Schema() {
    node_ = Add(*tf::NodeExecStats::descriptor());
    allocator_memory_ = Add(*tf::AllocatorMemoryUsed::descriptor());
    allocation_record_ = Add(*tf::AllocationRecord::descriptor());
    // The fields the scan reads itself must be what it reads them as.
    auto expect = [&](int type, uint32_t number, wire::WireType wire_type) {
      const Rule& rule = Find(type, number);
      STEPSCOPE_CHECK(rule.known && rule.type == wire_type && !rule.packable);
    };
    for (uint32_t number : {node_stats::kNodeName, node_stats::kMemory, node_stats::kOutput, node_stats::kTimelineLabel,
                            node_stats::kMemoryStats, node_stats::kOpType, node_stats::kKernel, node_stats::kCollective,
                            node_stats::kMemcpy, node_stats::kInput}) {
      expect(node_, number, wire::kLength);
    }
    for (uint32_t number : {node_stats::kAllStartMicros, node_stats::kAllEndRelMicros, node_stats::kThreadId,
                            node_stats::kAllStartNanos, node_stats::kAllEndRelNanos, node_stats::kCorrelationId}) {
      expect(node_, number, wire::kVarint);
    }
    expect(allocator_memory_, allocator_memory::kAllocatorName, wire::kLength);
    expect(allocator_memory_, allocator_memory::kRecords, wire::kLength);
    expect(allocator_memory_, allocator_memory::kPeakBytes, wire::kVarint);
    expect(allocator_memory_, allocator_memory::kBytesInUse, wire::kVarint);
    expect(allocation_record_, allocation_record::kMicros, wire::kVarint);
    expect(allocation_record_, allocation_record::kBytes, wire::kVarint);
  }

  int Add(const pb::Descriptor& descriptor) {
    if (auto it = index_.find(&descriptor); it != index_.end()) return it->second;
    const int type = static_cast<int>(types_.size());
    index_.emplace(&descriptor, type);
    types_.emplace_back();
    for (int f = 0; f < descriptor.field_count(); ++f) {
      const pb::FieldDescriptor& field = *descriptor.field(f);
      Rule rule;
      rule.known = true;
      rule.type = WireTypeOf(field);
      rule.packable = field.is_repeated() && rule.type != wire::kLength && rule.type != wire::kStartGroup;
      rule.utf8 = field.type() == pb::FieldDescriptor::TYPE_STRING &&
                  field.file()->syntax() == pb::FileDescriptor::SYNTAX_PROTO3;
      if (field.type() == pb::FieldDescriptor::TYPE_MESSAGE) rule.message = Add(*field.message_type());
      const auto number = static_cast<uint32_t>(field.number());
      Type& t = types_[static_cast<size_t>(type)];  // Add above may have moved types_
      if (number < 64) {
        if (t.dense.size() <= number) t.dense.resize(number + 1);
        t.dense[number] = rule;
      } else {
        t.sparse.emplace_back(number, rule);
      }
    }
    return type;
  }

  static bool CheckPacked(std::string_view payload, wire::WireType type) {
    if (type == wire::kFixed64) return payload.size() % 8 == 0;
    if (type == wire::kFixed32) return payload.size() % 4 == 0;
    size_t pos = 0;
    uint64_t value = 0;
    while (pos < payload.size()) {
      if (!ReadVarint(payload, pos, value)) return false;
    }
    return true;
  }

  std::vector<Type> types_;
  std::unordered_map<const pb::Descriptor*, int> index_;
  Rule unknown_;
  int node_ = 0, allocator_memory_ = 0, allocation_record_ = 0;
};

// One pass over the input; every member function returns false where the scan declines.
class Scanner {
 public:
  Scanner(std::string_view bytes, WireStepStats& out) : bytes_(bytes), out_(out), schema_(Schema::Get()) {}

  bool Run() {
    const size_t nodes = CountNodes();
    nodes_counted_ = nodes;
    out_.nodes.reserve(nodes);
    out_.store = std::make_unique<NodeStoreWriter>(nodes);
    if (BinaryLooksLikeBareStepStats(bytes_)) {
      out_.format = SourceFormat::kStepStatsBinary;
      std::string step;
      if (!StepStats(bytes_, 0, step)) return false;
      wire::Bytes(out_.rest, run_metadata::kStepStats, step);
      return true;
    }
    out_.format = SourceFormat::kRunMetadataBinary;
    wire::Reader reader(bytes_);
    Field field;
    while (reader.Next(field)) {
      if (field.number != run_metadata::kStepStats) {
        out_.rest.append(Raw(bytes_, 0, field, reader));
        continue;
      }
      if (field.type != wire::kLength) return false;
      std::string step;
      if (!StepStats(field.bytes, static_cast<size_t>(field.value), step)) return false;
      wire::Bytes(out_.rest, run_metadata::kStepStats, step);
    }
    return !reader.failed();
  }

  int64_t unknown_node_fields() const { return unknown_node_fields_; }

 private:
  // The node_stats of the input, counted ahead so that the columns are allocated once (a
  // million-node step would otherwise copy them as they grow); 0 on damage, which Run declines.
  size_t CountNodes() const {
    const bool bare = BinaryLooksLikeBareStepStats(bytes_);
    size_t nodes = 0;
    auto count_step = [&](std::string_view step) {
      wire::Reader devices(step);
      Field device;
      while (devices.Next(device)) {
        if (device.number != step_stats::kDevStats || device.type != wire::kLength) continue;
        wire::Reader fields(device.bytes);
        Field field;
        while (fields.Next(field)) nodes += field.number == device_stats::kNodeStats;
      }
    };
    if (bare) {
      count_step(bytes_);
    } else {
      wire::Reader reader(bytes_);
      Field field;
      while (reader.Next(field)) {
        if (field.number == run_metadata::kStepStats && field.type == wire::kLength) count_step(field.bytes);
      }
    }
    return nodes;
  }

  // The whole field (tag to end) that `reader` has just read from `bytes` (at `base` in the input).
  static std::string_view Raw(std::string_view bytes, size_t base, const Field& field, const wire::Reader& reader) {
    return bytes.substr(field.offset - base, reader.position() - field.offset);
  }

  // A StepStats, written to `rest` without its nodes.
  bool StepStats(std::string_view bytes, size_t base, std::string& rest) {
    wire::Reader reader(bytes, base);
    Field field;
    while (reader.Next(field)) {
      if (field.number != step_stats::kDevStats) {
        rest.append(Raw(bytes, base, field, reader));
        continue;
      }
      if (field.type != wire::kLength) return false;
      std::string device;
      if (!Device(field.bytes, static_cast<size_t>(field.value), device)) return false;
      wire::Bytes(rest, step_stats::kDevStats, device);
    }
    return !reader.failed();
  }

  bool Device(std::string_view bytes, size_t base, std::string& rest) {
    out_.device_first_node.push_back(static_cast<uint32_t>(out_.nodes.size()));
    wire::Reader reader(bytes, base);
    Field field;
    while (reader.Next(field)) {
      if (field.number != device_stats::kNodeStats) {
        rest.append(Raw(bytes, base, field, reader));
        continue;
      }
      if (field.type != wire::kLength || !Node(field)) return false;
    }
    return !reader.failed();
  }

  bool Node(const Field& at) {
    WireNode node;
    node.first_input = static_cast<uint32_t>(out_.inputs.size());
    node.first_memory = static_cast<uint32_t>(out_.memory.size());
    int64_t start_micros = 0, end_rel_micros = 0, start_nanos = 0, end_rel_nanos = 0;
    const int type = schema_.node();
    wire::Reader reader = wire::Nested(at);
    Field field;
    auto text = [&](uint32_t& where, uint32_t& size) {
      if (field.type != wire::kLength || !IsValidProtoUtf8(field.bytes)) return false;
      where = static_cast<uint32_t>(field.value);
      size = static_cast<uint32_t>(field.bytes.size());
      return true;
    };
    auto number = [&](auto& value) {
      value = static_cast<std::remove_reference_t<decltype(value)>>(field.value);
      return field.type == wire::kVarint;
    };
    while (reader.Next(field)) {
      bool ok = true;
      switch (field.number) {
        case node_stats::kNodeName: ok = text(node.name_at, node.name_size); break;
        case node_stats::kTimelineLabel: ok = text(node.label_at, node.label_size); break;
        case node_stats::kOpType: ok = text(node.op_type_at, node.op_type_size); break;
        case node_stats::kAllStartMicros: ok = number(start_micros); break;
        case node_stats::kAllEndRelMicros: ok = number(end_rel_micros); break;
        case node_stats::kAllStartNanos: ok = number(start_nanos); break;
        case node_stats::kAllEndRelNanos: ok = number(end_rel_nanos); break;
        case node_stats::kThreadId: ok = number(node.thread_id); break;
        case node_stats::kCorrelationId: ok = number(node.correlation_id); break;
        case node_stats::kInput:
          ok = field.type == wire::kLength && IsValidProtoUtf8(field.bytes);
          out_.inputs.push_back(field.bytes);
          ++node.input_count;
          break;
        case node_stats::kMemory:
          ok = field.type == wire::kLength && Memory(field);
          ++node.memory_count;
          node.fields |= kNodeMemory;
          break;
        default: {
          const Schema::Rule& rule = schema_.Find(type, field.number);
          if (!rule.known) {
            ++unknown_node_fields_;
            break;
          }
          ok = schema_.CheckKnown(field, rule, 0);
          switch (field.number) {
            case node_stats::kOutput: node.fields |= kNodeOutputs; break;
            case node_stats::kMemoryStats: node.fields |= kNodeMemoryStats; break;
            case node_stats::kKernel: node.fields |= kNodeKernel; break;
            case node_stats::kMemcpy: node.fields |= kNodeMemcpy; break;
            case node_stats::kCollective: node.fields |= kNodeCollective; break;
            case node_stats::kInputTensor: node.fields |= kNodeInputTensors; break;
            default: break;
          }
        }
      }
      if (!ok) return false;
    }
    // A node without a name is an error the other path names.
    if (reader.failed() || node.name_size == 0) return false;
    if (node.label_size > 0) node.fields |= kNodeLabel;
    if (node.correlation_id != 0) node.fields |= kNodeCorrelation;
    node.start_ns = start_nanos != 0 ? ClampTimeNs(start_nanos) : MicrosToNanos(start_micros);
    node.dur_ns = start_nanos != 0 || end_rel_nanos != 0 ? ClampTimeNs(end_rel_nanos) : MicrosToNanos(end_rel_micros);
    // CountNodes counted what Device walks, unless the input is damaged past where it looked.
    const auto global = static_cast<uint32_t>(out_.nodes.size());
    if (global >= nodes_counted_) return false;
    const uint32_t device = static_cast<uint32_t>(out_.device_first_node.size()) - 1;
    out_.store->Add(device, global - out_.device_first_node.back(), global, node.thread_id, at.bytes, node.fields);
    out_.nodes.push_back(node);
    return true;
  }

  // An AllocatorMemoryUsed: its allocator, peak, bytes in use and allocation records.
  bool Memory(const Field& at) {
    WireAllocatorMemory memory;
    memory.first_record = static_cast<uint32_t>(out_.records.size());
    const int type = schema_.allocator_memory();
    wire::Reader reader = wire::Nested(at);
    Field field;
    while (reader.Next(field)) {
      bool ok = true;
      switch (field.number) {
        case allocator_memory::kAllocatorName:
          ok = field.type == wire::kLength && IsValidProtoUtf8(field.bytes);
          memory.allocator = field.bytes;
          break;
        case allocator_memory::kPeakBytes:
          ok = field.type == wire::kVarint;
          memory.peak = static_cast<int64_t>(field.value);
          break;
        case allocator_memory::kBytesInUse:
          ok = field.type == wire::kVarint;
          memory.in_use = static_cast<int64_t>(field.value);
          break;
        case allocator_memory::kRecords:
          ok = field.type == wire::kLength && Record(field);
          break;
        default: {
          const Schema::Rule& rule = schema_.Find(type, field.number);
          ok = !rule.known || schema_.CheckKnown(field, rule, 1);
        }
      }
      if (!ok) return false;
    }
    if (reader.failed()) return false;
    memory.record_count = static_cast<uint32_t>(out_.records.size() - memory.first_record);
    out_.memory.push_back(memory);
    return true;
  }

  bool Record(const Field& at) {
    WireAllocationRecord record;
    const int type = schema_.allocation_record();
    wire::Reader reader = wire::Nested(at);
    Field field;
    while (reader.Next(field)) {
      bool ok = true;
      switch (field.number) {
        case allocation_record::kMicros:
          ok = field.type == wire::kVarint;
          record.micros = static_cast<int64_t>(field.value);
          break;
        case allocation_record::kBytes:
          ok = field.type == wire::kVarint;
          record.bytes = static_cast<int64_t>(field.value);
          break;
        default: {
          const Schema::Rule& rule = schema_.Find(type, field.number);
          ok = !rule.known || schema_.CheckKnown(field, rule, 2);
        }
      }
      if (!ok) return false;
    }
    if (reader.failed()) return false;
    out_.records.push_back(record);
    return true;
  }

  std::string_view bytes_;
  WireStepStats& out_;
  const Schema& schema_;
  int64_t unknown_node_fields_ = 0;
  size_t nodes_counted_ = 0;
};

}  // namespace

std::optional<WireStepStats> ScanBinaryStepStats(std::string_view bytes) {
  // protobuf's limit on one message, which the other path keeps (and offsets here fit in 32 bits).
  if (bytes.size() > static_cast<size_t>(INT32_MAX)) return std::nullopt;
  WireStepStats step;
  Scanner scanner(bytes, step);
  if (!scanner.Run()) return std::nullopt;
  std::vector<uint32_t>& first_node = step.device_first_node;
  if (first_node.empty()) return std::nullopt;
  first_node.push_back(static_cast<uint32_t>(step.nodes.size()));
  for (WireAllocatorMemory& memory : step.memory) {
    memory.records = {step.records.data() + memory.first_record, memory.record_count};
  }
  // The rest is small (devices, thread names, session, graphs): protobuf parses it, and checks it
  // as it would have in the whole file.
  step.rest_message = std::make_shared<tf::RunMetadata>();
  {
    pb::LogSilencer silence;
    if (!step.rest_message->ParseFromString(step.rest)) return std::nullopt;
  }
  const auto& devices = step.rest_message->step_stats().dev_stats();
  if (static_cast<size_t>(devices.size()) + 1 != first_node.size()) return std::nullopt;
  for (const auto& device : devices) {
    if (device.device().empty()) return std::nullopt;
  }
  step.stats.Add("unknown_binary_fields_kept",
                 CountUnknownBinaryFields(*step.rest_message) + scanner.unknown_node_fields());
  return step;
}

}  // namespace stepscope::trace
