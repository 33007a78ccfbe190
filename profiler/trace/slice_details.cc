// The typed details of slices (slice_details.h): from the trace's own tables, and for slices whose
// source keeps them in its lossless payload, from the payload's decoder (trace_payload.h).
#include "profiler/trace/slice_details.h"

#include <algorithm>

#include "profiler/trace/trace_payload.h"

namespace stepscope::trace {
namespace {

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

// The elements of a JSON array as text, top level only: `[[1, 2], [], "a"]` -> "[1, 2]", "[]",
// "\"a\"". Enough for the PyTorch profiler's `Input Dims`, `Input type` and `Concrete Inputs`,
// which hold numbers, strings and arrays of them.
std::vector<std::string_view> JsonArrayElements(std::string_view text) {
  std::vector<std::string_view> elements;
  size_t i = text.find('[');
  if (i == std::string_view::npos) return elements;
  int depth = 0;
  bool in_string = false;
  size_t begin = i + 1;
  for (++i; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    else if (c == '[' || c == '{') ++depth;
    else if ((c == ']' || c == '}') && depth > 0) --depth;
    else if ((c == ',' || c == ']') && depth == 0) {
      std::string_view element = text.substr(begin, i - begin);
      while (!element.empty() && element.front() == ' ') element.remove_prefix(1);
      while (!element.empty() && element.back() == ' ') element.remove_suffix(1);
      if (!element.empty() || c == ',') elements.push_back(element);
      if (c == ']') break;
      begin = i + 1;
    }
  }
  return elements;
}

// A JSON string's contents without its quotes (escapes kept as written: the texts read here have
// none that matter).
std::string_view Unquote(std::string_view text) {
  if (text.size() >= 2 && text.front() == '"' && text.back() == '"') return text.substr(1, text.size() - 2);
  return text;
}

std::string Triple(const uint32_t* v) {
  return std::to_string(v[0]) + "," + std::to_string(v[1]) + "," + std::to_string(v[2]);
}

}  // namespace

std::string TensorOutput::TensorName() const {
  std::string name(producer);
  if (slot != 0) name += ":" + std::to_string(slot);
  return name;
}

// Details come from the trace's tables, or, for a trace with a payload, from the payload's
// decoder, on demand: filling the tables from a StepStats payload at import would cost 40-69
// bytes per slice beside the payload (which lossless output keeps anyway) and 5-21 % more import
// instructions, for details most passes never ask for (docs/design.md, "Slice details: tables or
// payload").
DetailReader::DetailReader(const Trace& trace, uint32_t needed) : trace_(trace), needed_(needed) {
  if (trace.payload() != nullptr) payload_ = trace.payload()->OpenDetails(trace, needed);
  else if (needed & kDetailShapes) output_dims_key_ = trace.strings().Find("Output Dims");
}

DetailReader::~DetailReader() = default;

bool DetailReader::MayHave(uint32_t kinds) const {
  if (payload_ != nullptr) return true;
  const DetailTables& tables = trace_.detail_tables();
  return ((kinds & kDetailKernel) && !trace_.all_kernel_args().empty()) ||
         ((kinds & kDetailCopy) && !trace_.all_transfer_args().empty()) ||
         ((kinds & (kDetailOutputs | kDetailShapes)) && tables.has_outputs()) ||
         ((kinds & kDetailAllocators) && !tables.all_allocators().empty()) ||
         ((kinds & kDetailOpMemory) && !tables.all_op_memory().empty()) ||
         ((kinds & kDetailInputShapes) && !trace_.all_slice_args().empty());
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
  return payload_->Copy(slice);
}

std::optional<KernelArgs> DetailReader::Kernel(uint32_t slice) {
  if (std::optional<KernelArgs> args = trace_.kernel_args(slice)) return args;
  if (payload_ == nullptr) return std::nullopt;
  return payload_->Kernel(slice);
}

LaunchGeometry DetailReader::Geometry(uint32_t slice) {
  if (const std::optional<KernelArgs> args = trace_.kernel_args(slice)) {
    LaunchGeometry geometry;
    if (args->has_grid()) geometry.grid = Triple(args->grid), geometry.block = Triple(args->block);
    if (args->registers_per_thread >= 0) geometry.registers = std::to_string(args->registers_per_thread);
    return geometry;
  }
  if (payload_ == nullptr) return {};
  return payload_->Geometry(slice);
}

std::span<const TensorOutput> DetailReader::Outputs(uint32_t slice) {
  if (payload_ != nullptr) return payload_->Outputs(slice);
  const std::span<const TensorOutput> table = TableOutputs(slice);
  if (!table.empty() || !(needed_ & kDetailShapes)) return table;
  return ArgOutputs(slice);
}

std::span<const AllocatorUse> DetailReader::Allocators(uint32_t slice) {
  if (payload_ == nullptr) return TableAllocators(slice);
  return payload_->Allocators(slice);
}

std::optional<OpMemory> DetailReader::Memory(uint32_t slice) {
  if (payload_ == nullptr) {
    const OpMemoryRow* row = trace_.detail_tables().op_memory(slice);
    if (row == nullptr) return std::nullopt;
    return OpMemory{row->temp_bytes, row->persistent_bytes};
  }
  return payload_->Memory(slice);
}

std::span<const std::string_view> DetailReader::Inputs(uint32_t slice) {
  return payload_ == nullptr ? std::span<const std::string_view>() : payload_->Inputs(slice);
}

std::string_view DetailReader::Label(uint32_t slice) {
  return payload_ == nullptr ? std::string_view() : payload_->Label(slice);
}

std::optional<LaunchRecord> DetailReader::Launch(uint32_t slice) {
  return payload_ == nullptr ? std::nullopt : payload_->Launch(slice);
}

std::optional<CollectiveDetails> DetailReader::Collective(uint32_t slice) {
  return payload_ == nullptr ? std::nullopt : payload_->Collective(slice);
}

// The PyTorch profiler's record_shapes arguments, kept by the Chrome JSON reader as the event's
// free-form arguments: `Input Dims` ([[4, 16], [], [[2, 4], [2, 4]]]: a tensor, a non-tensor, a
// tensor list), `Input type` (["float", "Scalar", "TensorList"]) and `Concrete Inputs` (the
// non-tensor arguments' values as text: ["", "[2, 2]", "1"]).
std::span<const TensorInput> DetailReader::InputShapes(uint32_t slice) {
  if (payload_ != nullptr) return payload_->InputShapes(slice);
  ParseShapeArgs(slice, "Input Dims", "Input type", "Concrete Inputs", inputs_, input_dims_);
  return inputs_;
}

// `dims_key` as `Input Dims`, `types_key` as `Input type`, `values_key` as `Concrete Inputs`
// (empty: none) into `tensors`, whose shapes view `dims_storage`; `tensors` empty when the slice
// has no `dims_key`.
void DetailReader::ParseShapeArgs(uint32_t slice, std::string_view dims_key, std::string_view types_key,
                                  std::string_view values_key, std::vector<TensorInput>& tensors,
                                  std::vector<int64_t>& dims_storage) {
  tensors.clear();
  std::string_view dims_text, types_text, values_text;
  for (const SliceArg& arg : trace_.slice_args(slice)) {
    if (arg.is_number) continue;
    const std::string_view key = trace_.str(arg.key);
    if (key == dims_key) dims_text = trace_.str(arg.value);
    else if (key == types_key) types_text = trace_.str(arg.value);
    else if (!values_key.empty() && key == values_key) values_text = trace_.str(arg.value);
  }
  if (dims_text.empty()) return;
  const std::vector<std::string_view> dims = JsonArrayElements(dims_text);
  const std::vector<std::string_view> types = JsonArrayElements(types_text);
  const std::vector<std::string_view> values = JsonArrayElements(values_text);
  tensors.assign(dims.size(), TensorInput{});
  dims_storage.clear();
  std::vector<std::pair<size_t, size_t>> spans(dims.size(), {0, 0});
  for (size_t k = 0; k < dims.size(); ++k) {
    if (k < types.size()) tensors[k].dtype = Unquote(types[k]);
    if (k < values.size()) tensors[k].value = Unquote(values[k]);
    const std::vector<std::string_view> sizes = JsonArrayElements(dims[k]);
    if (!sizes.empty() && sizes.front().starts_with("[")) {  // a tensor list: no one shape
      if (tensors[k].dtype.empty()) tensors[k].dtype = "TensorList";
      continue;
    }
    spans[k].first = dims_storage.size();
    for (std::string_view size : sizes) {
      int64_t value = 0;
      bool digits = !size.empty();
      for (char c : size) digits = digits && c >= '0' && c <= '9', value = value * 10 + (c - '0');
      dims_storage.push_back(digits ? value : -1);
    }
    spans[k].second = dims_storage.size() - spans[k].first;
  }
  for (size_t k = 0; k < dims.size(); ++k) {
    tensors[k].shape = std::span<const int64_t>(dims_storage).subspan(spans[k].first, spans[k].second);
  }
}

// stepscope's export of a StepStats op to JSON writes its outputs as `Output Dims` and `Output
// type`, by slot; a slot without a type was not recorded.
std::span<const TensorOutput> DetailReader::ArgOutputs(uint32_t slice) {
  if (output_dims_key_ < 0) return {};
  ParseShapeArgs(slice, "Output Dims", "Output type", "", output_args_, output_dims_);
  if (output_args_.empty()) return {};
  outputs_.clear();
  const std::string_view producer = trace_.str(trace_.slice_name(trace_.slices()[slice]));
  for (size_t k = 0; k < output_args_.size(); ++k) {
    if (output_args_[k].dtype.empty()) continue;
    TensorOutput out;
    out.slot = static_cast<int32_t>(k);
    out.producer = producer;
    out.dtype = output_args_[k].dtype;
    out.shape = output_args_[k].shape;
    outputs_.push_back(out);
  }
  return outputs_;
}

std::vector<GraphTensor> DetailReader::GraphTensors() {
  return payload_ != nullptr ? payload_->GraphTensors() : std::vector<GraphTensor>{};
}

int64_t DetailReader::ReportedFlops(uint32_t slice) {
  for (const SliceArg& arg : trace_.slice_args(slice)) {
    if (arg.is_number && trace_.str(arg.key) == "flops") return arg.number;
  }
  return -1;
}

uint64_t DetailReader::Correlation(uint32_t slice) {
  return payload_ == nullptr ? 0 : payload_->Correlation(slice);
}

std::optional<MemcpyDetails> GetMemcpyDetails(const Trace& trace, uint32_t slice) {
  return DetailReader(trace, kDetailCopy).Copy(slice);
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

std::vector<RecordField> SourceRecord(const Trace& trace, uint32_t slice, std::string* title) {
  if (trace.payload() == nullptr || slice >= trace.slices().size()) return {};
  return trace.payload()->SourceRecord(trace, slice, title);
}

}  // namespace stepscope::trace
