// The typed details of slices (slice_details.h): from the trace's own tables, and for StepStats
// traces from the compressed per-op records, decoded here and nowhere else.
#include "profiler/trace/slice_details.h"

#include <algorithm>
#include <cctype>
#include <climits>

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>

#include "profiler/formats/step_stats/node_reader.h"
#include "profiler/formats/step_stats/tf_names.h"
#include "stepscope/tf/run_metadata.pb.h"

namespace stepscope::trace {
namespace {

// Kind from the op type ("MEMCPYHtoD") when the record gives no byte count.
std::optional<MemcpyDetails> MemcpyFromOpType(const Trace& trace, uint32_t slice) {
  std::string_view op = trace.str(trace.slice_op_type(trace.slices()[slice]));
  if (op.substr(0, 6) != "MEMCPY") return std::nullopt;
  MemcpyDetails details;
  details.kind = std::string(op.substr(6));
  return details;
}

std::optional<MemcpyDetails> MemcpyFromNode(const Trace& trace, uint32_t slice, const tf::NodeExecStats& node) {
  MemcpyDetails details;
  if (node.has_memcpy()) {
    details.kind = node.memcpy().kind();
    details.bytes = node.memcpy().bytes();
    details.src_memory = node.memcpy().src_memory();
    details.dst_memory = node.memcpy().dst_memory();
    return details;
  }
  const TfMemcpyLabel label = ParseTfMemcpyLabel(node.timeline_label());
  if (!label.matched) return MemcpyFromOpType(trace, slice);
  details.kind = std::string(label.kind);
  details.bytes = label.bytes;
  details.src_memory = std::string(label.src_memory);
  details.dst_memory = std::string(label.dst_memory);
  return details;
}

// A PyTorch profiler copy: kind and memory kinds from its name, bytes from its args.
MemcpyDetails MemcpyFromArgs(const Trace& trace, uint32_t slice, const TransferArgs& args) {
  CopyName copy = ParseCopyName(trace.str(trace.slice_name(trace.slices()[slice])));
  if (copy.kind.empty()) copy = ParseCopyName(trace.str(trace.slice_op_type(trace.slices()[slice])));
  MemcpyDetails details;
  details.kind = copy.kind.empty() ? "unknown" : copy.kind;
  details.src_memory = copy.src_memory;
  details.dst_memory = copy.dst_memory;
  details.bytes = std::max<int64_t>(args.bytes, 0);
  details.bandwidth_gbps = args.bandwidth_gbps;
  return details;
}

std::string Triple(const uint32_t* v) {
  return std::to_string(v[0]) + "," + std::to_string(v[1]) + "," + std::to_string(v[2]);
}

// "grid:1,2,3" inside a TensorFlow 2 kernel label.
std::string LabelField(std::string_view label, std::string_view key) {
  const size_t at = label.find(key);
  if (at == std::string_view::npos) return "";
  const size_t begin = at + key.size();
  size_t end = begin;
  while (end < label.size() && (std::isdigit(static_cast<unsigned char>(label[end])) || label[end] == ',')) ++end;
  return std::string(label.substr(begin, end - begin));
}

// A StepStats time in µs as ns, within the trace's time limit (2^62 ns), as the StepStats
// import converts every time.
int64_t MicrosToNanos(int64_t micros) {
  constexpr int64_t kLimitMicros = (int64_t{1} << 62) / 1000;
  return std::clamp(micros, -kLimitMicros, kLimitMicros) * 1000;
}

uint32_t NodeFields(uint32_t needed) {
  uint32_t fields = 0;
  if (needed & kDetailKernel) fields |= kNodeKernel | kNodeLabel;
  if (needed & kDetailCopy) fields |= kNodeMemcpy | kNodeLabel;
  if (needed & (kDetailOutputs | kDetailShapes)) fields |= kNodeOutputs;
  if (needed & kDetailAllocators) fields |= kNodeMemory;
  if (needed & kDetailOpMemory) fields |= kNodeMemoryStats;
  if (needed & kDetailInputs) fields |= kNodeLabel;
  if (needed & kDetailLabel) fields |= kNodeLabel;
  if (needed & kDetailCollective) fields |= kNodeCollective;
  if (needed & kDetailCorrelation) fields |= kNodeCorrelation;
  return fields;
}

}  // namespace

std::string TensorOutput::TensorName() const {
  std::string name(producer);
  if (slot != 0) name += ":" + std::to_string(slot);
  return name;
}

// The StepStats records: one parsed node at a time (the last slice asked for), and what was
// derived from it.
struct DetailReader::Payload {
  Payload(const Trace& trace, uint32_t fields) : nodes(trace, fields) {}
  const tf::NodeExecStats* Node(uint32_t slice) {
    if (slice != slice_) {
      slice_ = slice;
      node_ = nodes.Get(slice);
    }
    return node_;
  }
  NodeReader nodes;
  uint32_t slice_ = UINT32_MAX;
  const tf::NodeExecStats* node_ = nullptr;
  std::vector<TensorOutput> outputs;
  std::vector<int64_t> dims;
  std::vector<AllocatorUse> allocators;
  std::vector<AllocationRecord> records;
  std::vector<std::string_view> inputs;
};

DetailReader::DetailReader(const Trace& trace, uint32_t needed) : trace_(trace), needed_(needed) {
  if (trace.has_step_stats()) payload_ = std::make_unique<Payload>(trace, NodeFields(needed));
}

DetailReader::~DetailReader() = default;

bool DetailReader::MayHave(uint32_t kinds) const {
  if (payload_ != nullptr) return true;
  const DetailTables& tables = trace_.detail_tables();
  return ((kinds & kDetailKernel) && !trace_.all_kernel_args().empty()) ||
         ((kinds & kDetailCopy) && !trace_.all_transfer_args().empty()) ||
         ((kinds & (kDetailOutputs | kDetailShapes)) && tables.has_outputs()) ||
         ((kinds & kDetailAllocators) && !tables.all_allocators().empty()) ||
         ((kinds & kDetailOpMemory) && !tables.all_op_memory().empty());
}

std::span<const TensorOutput> DetailReader::TableOutputs(uint32_t slice) {
  const DetailTables& tables = trace_.detail_tables();
  const std::span<const OutputRow> rows = tables.outputs(slice);
  if (rows.empty()) return {};
  outputs_.clear();
  const std::string_view producer = trace_.str(trace_.slice_name(trace_.slices()[slice]));
  for (const OutputRow& row : rows) {
    TensorOutput out;
    out.slot = row.slot;
    out.producer = producer;
    out.dtype = trace_.str(row.dtype);
    out.shape = tables.shape(row);
    out.has_allocation = row.has_allocation;
    out.requested_bytes = row.requested_bytes;
    out.allocated_bytes = row.allocated_bytes;
    out.allocation_id = row.allocation_id;
    out.allocator = trace_.str(row.allocator);
    outputs_.push_back(out);
  }
  return outputs_;
}

std::span<const AllocatorUse> DetailReader::TableAllocators(uint32_t slice) {
  const DetailTables& tables = trace_.detail_tables();
  const std::span<const AllocatorRow> rows = tables.allocators(slice);
  if (rows.empty()) return {};
  allocators_.clear();
  for (const AllocatorRow& row : rows) {
    allocators_.push_back({trace_.str(row.allocator), row.total_bytes, row.peak_bytes, row.live_bytes,
                           row.bytes_in_use, tables.records(row)});
  }
  return allocators_;
}

std::optional<MemcpyDetails> DetailReader::Copy(uint32_t slice) {
  if (trace_.slices()[slice].kind != SliceKind::kMemcpy) return std::nullopt;
  if (const TransferArgs* args = trace_.transfer_args(slice)) return MemcpyFromArgs(trace_, slice, *args);
  if (payload_ == nullptr) return std::nullopt;
  const tf::NodeExecStats* node = payload_->Node(slice);
  if (node != nullptr) return MemcpyFromNode(trace_, slice, *node);
  // A node in a block with no copy fields and no labels: what its op type says.
  if (trace_.node_entry(slice) != NodeRef::kNone) return MemcpyFromOpType(trace_, slice);
  return std::nullopt;
}

std::optional<KernelArgs> DetailReader::Kernel(uint32_t slice) {
  if (std::optional<KernelArgs> args = trace_.kernel_args(slice)) return args;
  if (payload_ == nullptr) return std::nullopt;
  const tf::NodeExecStats* node = payload_->Node(slice);
  if (node == nullptr || !node->has_kernel()) return std::nullopt;
  const auto& k = node->kernel();
  KernelArgs args;
  args.slice = slice;
  args.grid[0] = k.grid_x(), args.grid[1] = k.grid_y(), args.grid[2] = k.grid_z();
  args.block[0] = k.block_x(), args.block[1] = k.block_y(), args.block[2] = k.block_z();
  args.registers_per_thread = k.registers_per_thread() > 0 ? k.registers_per_thread() : -1;
  const int64_t shared = int64_t{k.static_shared_memory()} + k.dynamic_shared_memory();
  if (shared > 0) args.shared_memory_bytes = static_cast<int32_t>(std::min<int64_t>(shared, INT32_MAX));
  args.device = static_cast<int32_t>(k.device_id());
  args.stream = static_cast<int32_t>(k.stream_id());
  if (node->correlation_id() != 0) args.correlation = static_cast<int64_t>(node->correlation_id());
  return args;
}

LaunchGeometry DetailReader::Geometry(uint32_t slice) {
  if (const std::optional<KernelArgs> args = trace_.kernel_args(slice)) {
    LaunchGeometry geometry;
    if (args->has_grid()) geometry.grid = Triple(args->grid), geometry.block = Triple(args->block);
    if (args->registers_per_thread >= 0) geometry.registers = std::to_string(args->registers_per_thread);
    return geometry;
  }
  if (payload_ == nullptr) return {};
  const tf::NodeExecStats* node = payload_->Node(slice);
  if (node == nullptr) return {};
  if (node->has_kernel()) {
    // A launch record: its geometry even when zero (a record says so; a label may not).
    const std::optional<KernelArgs> args = Kernel(slice);
    return {Triple(args->grid), Triple(args->block),
            args->registers_per_thread > 0 ? std::to_string(args->registers_per_thread) : std::string()};
  }
  return {LabelField(node->timeline_label(), " grid:"), LabelField(node->timeline_label(), " block:"), ""};
}

std::span<const TensorOutput> DetailReader::Outputs(uint32_t slice) {
  if (payload_ == nullptr) return TableOutputs(slice);
  const tf::NodeExecStats* node = payload_->Node(slice);
  if (node == nullptr || node->output_size() == 0) return {};
  auto& outputs = payload_->outputs;
  auto& dims = payload_->dims;
  outputs.clear();
  dims.clear();
  const bool shapes = (needed_ & kDetailShapes) != 0;
  std::vector<std::pair<size_t, size_t>> shape_spans;
  for (int k = 0; k < node->output_size(); ++k) {
    const auto& description = node->output(k).tensor_description();
    TensorOutput out;
    out.slot = k;
    out.producer = node->node_name();
    if (description.has_allocation_description()) {
      const auto& allocation = description.allocation_description();
      out.has_allocation = true;
      out.requested_bytes = allocation.requested_bytes();
      out.allocated_bytes = allocation.allocated_bytes();
      out.allocation_id = static_cast<int64_t>(allocation.allocation_id());
      out.allocator = allocation.allocator_name();
    }
    if (shapes) {
      if (tf::DataType_IsValid(description.dtype())) out.dtype = tf::DataType_Name(description.dtype());
      out.unknown_rank = description.shape().unknown_rank();
      const size_t first = dims.size();
      for (const auto& dim : description.shape().dim()) dims.push_back(dim.size());
      shape_spans.emplace_back(first, dims.size() - first);
    }
    outputs.push_back(out);
  }
  // Spans into dims once it has stopped growing.
  for (size_t k = 0; k < shape_spans.size(); ++k) {
    outputs[k].shape = std::span<const int64_t>(dims).subspan(shape_spans[k].first, shape_spans[k].second);
  }
  return outputs;
}

std::span<const AllocatorUse> DetailReader::Allocators(uint32_t slice) {
  if (payload_ == nullptr) return TableAllocators(slice);
  const tf::NodeExecStats* node = payload_->Node(slice);
  if (node == nullptr || node->memory_size() == 0) return {};
  auto& uses = payload_->allocators;
  auto& records = payload_->records;
  uses.clear();
  records.clear();
  std::vector<std::pair<size_t, size_t>> record_spans;
  for (const auto& used : node->memory()) {
    AllocatorUse use;
    use.allocator = used.allocator_name();
    use.total_bytes = used.total_bytes();
    use.peak_bytes = used.peak_bytes();
    use.live_bytes = used.live_bytes();
    use.bytes_in_use = used.allocator_bytes_in_use();
    const size_t first = records.size();
    for (const auto& record : used.allocation_records()) {
      records.push_back({MicrosToNanos(record.alloc_micros()) - trace_.epoch_ns(), record.alloc_bytes()});
    }
    record_spans.emplace_back(first, records.size() - first);
    uses.push_back(use);
  }
  for (size_t k = 0; k < uses.size(); ++k) {
    uses[k].records = std::span<const AllocationRecord>(records).subspan(record_spans[k].first, record_spans[k].second);
  }
  return uses;
}

std::optional<OpMemory> DetailReader::Memory(uint32_t slice) {
  if (payload_ == nullptr) {
    const OpMemoryRow* row = trace_.detail_tables().op_memory(slice);
    if (row == nullptr) return std::nullopt;
    return OpMemory{row->temp_bytes, row->persistent_bytes};
  }
  const tf::NodeExecStats* node = payload_->Node(slice);
  if (node == nullptr || !node->has_memory_stats()) return std::nullopt;
  return OpMemory{node->memory_stats().temp_memory_size(), node->memory_stats().persistent_memory_size()};
}

std::span<const std::string_view> DetailReader::Inputs(uint32_t slice) {
  if (payload_ == nullptr) return {};
  const tf::NodeExecStats* node = payload_->Node(slice);
  if (node == nullptr || node->timeline_label().empty()) return {};
  // The executor's label: "[<memory>] <node> = <OpType>(<inputs>)".
  TfOpLabel label = ParseTfOpLabel(node->timeline_label());
  if (!label.matched) return {};
  payload_->inputs = std::move(label.inputs);
  return payload_->inputs;
}

std::string_view DetailReader::Label(uint32_t slice) {
  if (payload_ == nullptr) return {};
  const tf::NodeExecStats* node = payload_->Node(slice);
  return node == nullptr ? std::string_view() : std::string_view(node->timeline_label());
}

std::optional<LaunchRecord> DetailReader::Launch(uint32_t slice) {
  if (payload_ == nullptr) return std::nullopt;
  const tf::NodeExecStats* node = payload_->Node(slice);
  if (node == nullptr || !node->has_kernel()) return std::nullopt;
  const auto& k = node->kernel();
  LaunchRecord record;
  record.grid[0] = k.grid_x(), record.grid[1] = k.grid_y(), record.grid[2] = k.grid_z();
  record.block[0] = k.block_x(), record.block[1] = k.block_y(), record.block[2] = k.block_z();
  record.registers_per_thread = k.registers_per_thread();
  record.static_shared_bytes = k.static_shared_memory();
  record.dynamic_shared_bytes = k.dynamic_shared_memory();
  record.stream = k.stream_id();
  record.device = k.device_id();
  return record;
}

std::optional<CollectiveDetails> DetailReader::Collective(uint32_t slice) {
  if (payload_ == nullptr) return std::nullopt;
  const tf::NodeExecStats* node = payload_->Node(slice);
  if (node == nullptr || !node->has_collective()) return std::nullopt;
  const auto& c = node->collective();
  return CollectiveDetails{c.kind(), c.algorithm(), c.bytes(), c.group_size()};
}

uint64_t DetailReader::Correlation(uint32_t slice) {
  if (payload_ == nullptr) return 0;
  const tf::NodeExecStats* node = payload_->Node(slice);
  return node == nullptr ? 0 : node->correlation_id();
}

std::optional<MemcpyDetails> GetMemcpyDetails(const Trace& trace, uint32_t slice) {
  if (trace.slices()[slice].kind != SliceKind::kMemcpy) return std::nullopt;
  if (const TransferArgs* args = trace.transfer_args(slice)) return MemcpyFromArgs(trace, slice, *args);
  const std::unique_ptr<tf::NodeExecStats> node = trace.node(slice);
  if (node == nullptr) return std::nullopt;
  return MemcpyFromNode(trace, slice, *node);
}
CopyName ParseCopyName(std::string_view name) {
  CopyName copy;
  // ROCm's copy activities (roctracer): CopyHostToDevice, CopyDeviceToHost, CopyDeviceToDevice.
  for (const auto& [rocm, kind] : {std::pair{"CopyHostToDevice", "HtoD"}, std::pair{"CopyDeviceToHost", "DtoH"},
                                   std::pair{"CopyDeviceToDevice", "DtoD"}, std::pair{"CopyHostToHost", "HtoH"}}) {
    if (name.substr(0, std::string_view(rocm).size()) == rocm) {
      copy.kind = kind;
      return copy;
    }
  }
  if (name.substr(0, 6) == "MEMCPY") {
    copy.kind = std::string(name.substr(6));
    return copy;
  }
  if (name.substr(0, 7) == "Memcpy ") {
    name.remove_prefix(7);
    const size_t space = name.find(' ');
    copy.kind = std::string(name.substr(0, space));
    const size_t open = name.find('(');
    const size_t arrow = name.find(" -> ");
    const size_t close = name.rfind(')');
    if (open != std::string_view::npos && arrow != std::string_view::npos && close != std::string_view::npos &&
        open < arrow && arrow < close) {
      copy.src_memory = std::string(name.substr(open + 1, arrow - open - 1));
      copy.dst_memory = std::string(name.substr(arrow + 4, close - arrow - 4));
    }
  }
  return copy;
}

namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

std::string ScalarText(const Message& message, const FieldDescriptor* field, int i) {
  const Reflection* r = message.GetReflection();
  const bool repeated = field->is_repeated();
  switch (field->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
      return std::to_string(repeated ? r->GetRepeatedInt32(message, field, i) : r->GetInt32(message, field));
    case FieldDescriptor::CPPTYPE_INT64:
      return std::to_string(repeated ? r->GetRepeatedInt64(message, field, i) : r->GetInt64(message, field));
    case FieldDescriptor::CPPTYPE_UINT32:
      return std::to_string(repeated ? r->GetRepeatedUInt32(message, field, i) : r->GetUInt32(message, field));
    case FieldDescriptor::CPPTYPE_UINT64:
      return std::to_string(repeated ? r->GetRepeatedUInt64(message, field, i) : r->GetUInt64(message, field));
    case FieldDescriptor::CPPTYPE_DOUBLE:
      return std::to_string(repeated ? r->GetRepeatedDouble(message, field, i) : r->GetDouble(message, field));
    case FieldDescriptor::CPPTYPE_FLOAT:
      return std::to_string(repeated ? r->GetRepeatedFloat(message, field, i) : r->GetFloat(message, field));
    case FieldDescriptor::CPPTYPE_BOOL:
      return (repeated ? r->GetRepeatedBool(message, field, i) : r->GetBool(message, field)) ? "true" : "false";
    case FieldDescriptor::CPPTYPE_ENUM:
      return std::string((repeated ? r->GetRepeatedEnum(message, field, i) : r->GetEnum(message, field))->name());
    case FieldDescriptor::CPPTYPE_STRING:
      return repeated ? r->GetRepeatedString(message, field, i) : r->GetString(message, field);
    case FieldDescriptor::CPPTYPE_MESSAGE: break;
  }
  return {};
}

// A one-line digest of a message for its parent row ("dtype: DT_FLOAT, shape: [20, 200]").
std::string Digest(const Message& message);

void DescribeMessage(const Message& message, std::vector<RecordField>* out) {
  const Reflection* reflection = message.GetReflection();
  std::vector<const FieldDescriptor*> fields;
  reflection->ListFields(message, &fields);
  for (const FieldDescriptor* field : fields) {
    if (field->is_repeated()) {
      const int count = reflection->FieldSize(message, field);
      RecordField list{std::string(field->name()), std::to_string(count) + (count == 1 ? " item" : " items"), {}};
      for (int i = 0; i < count; ++i) {
        RecordField element{"[" + std::to_string(i) + "]", {}, {}};
        if (field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
          const Message& child = reflection->GetRepeatedMessage(message, field, i);
          element.value = Digest(child);
          DescribeMessage(child, &element.children);
        } else {
          element.value = ScalarText(message, field, i);
        }
        list.children.push_back(std::move(element));
      }
      out->push_back(std::move(list));
    } else if (field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      const Message& child = reflection->GetMessage(message, field);
      RecordField item{std::string(field->name()), Digest(child), {}};
      DescribeMessage(child, &item.children);
      out->push_back(std::move(item));
    } else {
      out->push_back(RecordField{std::string(field->name()), ScalarText(message, field, 0), {}});
    }
  }
}

std::string Digest(const Message& message) {
  std::vector<RecordField> fields;
  DescribeMessage(message, &fields);
  std::string text;
  for (const RecordField& field : fields) {
    if (!field.children.empty() && field.value.find("item") == std::string::npos) continue;
    if (text.size() > 80) {
      text += ", ...";
      break;
    }
    if (!text.empty()) text += ", ";
    text += field.key + ": " + field.value;
  }
  return text;
}

}  // namespace

std::vector<RecordField> SourceRecord(const Trace& trace, uint32_t slice, std::string* title) {
  std::vector<RecordField> fields;
  const std::unique_ptr<tf::NodeExecStats> node = trace.node(slice);
  if (node == nullptr) return fields;
  if (title != nullptr) *title = "NodeExecStats";
  DescribeMessage(*node, &fields);
  return fields;
}

}  // namespace stepscope::trace
