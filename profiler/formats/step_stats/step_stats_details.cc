// The StepStats payload's decoder of slice details (trace_payload.h: PayloadDetails): a slice's
// NodeExecStats, read from the node store one block at a time, turned into the model's typed
// details (DetailReader's view). The one place that reads TensorFlow's per-op fields for them.
#include <algorithm>
#include <cctype>
#include <climits>

#include "profiler/formats/step_stats/node_reader.h"
#include "profiler/formats/step_stats/step_stats_payload.h"
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
  if (needed & kDetailInputShapes) fields |= kNodeInputTensors;
  return fields;
}

}  // namespace

namespace {

// One parsed node at a time (the last slice asked for), and what was derived from it.
class StepStatsDetails final : public PayloadDetails {
 public:
  StepStatsDetails(const Trace& trace, const StepStatsPayload& payload, uint32_t needed)
      : trace_(trace), payload_(payload), needed_(needed), nodes_(trace, NodeFields(needed)) {}

  std::optional<MemcpyDetails> Copy(uint32_t slice) override;
  std::optional<KernelArgs> Kernel(uint32_t slice) override;
  LaunchGeometry Geometry(uint32_t slice) override;
  std::span<const TensorOutput> Outputs(uint32_t slice) override;
  std::span<const AllocatorUse> Allocators(uint32_t slice) override;
  std::optional<OpMemory> Memory(uint32_t slice) override;
  std::span<const std::string_view> Inputs(uint32_t slice) override;
  std::span<const TensorInput> InputShapes(uint32_t slice) override;
  std::vector<GraphTensor> GraphTensors() override;
  std::string_view Label(uint32_t slice) override;
  std::optional<LaunchRecord> Launch(uint32_t slice) override;
  std::optional<CollectiveDetails> Collective(uint32_t slice) override;
  uint64_t Correlation(uint32_t slice) override;

 private:
  const tf::NodeExecStats* Node(uint32_t slice) {
    if (slice != slice_) {
      slice_ = slice;
      node_ = nodes_.Get(slice);
    }
    return node_;
  }

  const Trace& trace_;
  const StepStatsPayload& payload_;
  uint32_t needed_;
  NodeReader nodes_;
  uint32_t slice_ = UINT32_MAX;
  const tf::NodeExecStats* node_ = nullptr;
  std::vector<TensorOutput> outputs_;
  std::vector<int64_t> dims_;
  std::vector<AllocatorUse> allocators_;
  std::vector<AllocationRecord> records_;
  std::vector<std::string_view> inputs_;
  std::vector<TensorInput> input_shapes_;
  std::vector<int64_t> input_dims_;
};

}  // namespace

std::optional<MemcpyDetails> StepStatsDetails::Copy(uint32_t slice) {
  if (trace_.slices()[slice].kind != SliceKind::kMemcpy) return std::nullopt;
  const tf::NodeExecStats* node = Node(slice);
  if (node != nullptr) return MemcpyFromNode(trace_, slice, *node);
  // A node in a block with no copy fields and no labels: what its op type says.
  if (payload_.entry(slice) != NodeRef::kNone) return MemcpyFromOpType(trace_, slice);
  return std::nullopt;
}

std::optional<KernelArgs> StepStatsDetails::Kernel(uint32_t slice) {
  const tf::NodeExecStats* node = Node(slice);
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

LaunchGeometry StepStatsDetails::Geometry(uint32_t slice) {
  const tf::NodeExecStats* node = Node(slice);
  if (node == nullptr) return {};
  if (node->has_kernel()) {
    // A launch record: its geometry even when zero (a record says so; a label may not).
    const std::optional<KernelArgs> args = Kernel(slice);
    return {Triple(args->grid), Triple(args->block),
            args->registers_per_thread > 0 ? std::to_string(args->registers_per_thread) : std::string()};
  }
  return {LabelField(node->timeline_label(), " grid:"), LabelField(node->timeline_label(), " block:"), ""};
}

std::span<const TensorOutput> StepStatsDetails::Outputs(uint32_t slice) {
  const tf::NodeExecStats* node = Node(slice);
  if (node == nullptr || node->output_size() == 0) return {};
  auto& outputs = outputs_;
  auto& dims = dims_;
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

std::span<const AllocatorUse> StepStatsDetails::Allocators(uint32_t slice) {
  const tf::NodeExecStats* node = Node(slice);
  if (node == nullptr || node->memory_size() == 0) return {};
  auto& uses = allocators_;
  auto& records = records_;
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

std::optional<OpMemory> StepStatsDetails::Memory(uint32_t slice) {
  const tf::NodeExecStats* node = Node(slice);
  if (node == nullptr || !node->has_memory_stats()) return std::nullopt;
  return OpMemory{node->memory_stats().temp_memory_size(), node->memory_stats().persistent_memory_size()};
}

std::span<const std::string_view> StepStatsDetails::Inputs(uint32_t slice) {
  const tf::NodeExecStats* node = Node(slice);
  if (node == nullptr || node->timeline_label().empty()) return {};
  // The executor's label: "[<memory>] <node> = <OpType>(<inputs>)".
  TfOpLabel label = ParseTfOpLabel(node->timeline_label());
  if (!label.matched) return {};
  inputs_ = std::move(label.inputs);
  return inputs_;
}

// Our trainer's input records: dtype and shape per input, in the order of the node's inputs.
std::span<const TensorInput> StepStatsDetails::InputShapes(uint32_t slice) {
  const tf::NodeExecStats* node = Node(slice);
  if (node == nullptr || node->input_tensor_size() == 0) return {};
  input_shapes_.assign(node->input_tensor_size(), TensorInput{});
  input_dims_.clear();
  std::vector<std::pair<size_t, size_t>> spans;
  for (const tf::TensorDescription& description : node->input_tensor()) {
    spans.emplace_back(input_dims_.size(), description.shape().dim_size());
    for (const auto& dim : description.shape().dim()) input_dims_.push_back(dim.size());
  }
  for (int k = 0; k < node->input_tensor_size(); ++k) {
    const tf::TensorDescription& description = node->input_tensor(k);
    // An empty record (no dtype) stands for an input the op did not hand over.
    input_shapes_[k].dtype = description.dtype() == tf::DT_INVALID ? std::string_view()
                                                                    : std::string_view(tf::DataType_Name(description.dtype()));
    input_shapes_[k].shape = std::span<const int64_t>(input_dims_).subspan(spans[k].first, spans[k].second);
  }
  return input_shapes_;
}

std::string_view StepStatsDetails::Label(uint32_t slice) {
  const tf::NodeExecStats* node = Node(slice);
  return node == nullptr ? std::string_view() : std::string_view(node->timeline_label());
}

std::optional<LaunchRecord> StepStatsDetails::Launch(uint32_t slice) {
  const tf::NodeExecStats* node = Node(slice);
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

std::vector<GraphTensor> StepStatsDetails::GraphTensors() {
  tf::RunMetadata rest;  // parsed only here: the graphs can be as large as the step's records
  if (!rest.ParseFromString(payload_.store().rest())) return {};
  return GraphTensorsOf(rest);
}

std::optional<CollectiveDetails> StepStatsDetails::Collective(uint32_t slice) {
  const tf::NodeExecStats* node = Node(slice);
  if (node == nullptr || !node->has_collective()) return std::nullopt;
  const auto& c = node->collective();
  return CollectiveDetails{c.kind(), c.algorithm(), c.bytes(), c.group_size()};
}

uint64_t StepStatsDetails::Correlation(uint32_t slice) {
  const tf::NodeExecStats* node = Node(slice);
  return node == nullptr ? 0 : node->correlation_id();
}

std::unique_ptr<PayloadDetails> StepStatsPayload::OpenDetails(const Trace& trace, uint32_t needed) const {
  return std::make_unique<StepStatsDetails>(trace, *this, needed);
}

}  // namespace stepscope::trace
