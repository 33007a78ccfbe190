// The details of slices that do not fit the compact Slice, in one typed, format-neutral form for
// every consumer (analyses, the viewer, the Chrome and Perfetto writers): a kernel's launch
// geometry and occupancy, a copy's kind and bytes, an op's tensor outputs (shape, dtype, bytes,
// allocation), its allocators' figures and allocation records, its temporary and persistent
// memory, its inputs. Readers fill the trace's tables (kernel and transfer arguments, free-form
// arguments, detail tables); a reader that keeps its source's records as a lossless payload
// (trace_payload.h: StepStats) has the payload derive the same details on demand, so a pass
// decodes only what it asks for and no consumer sees a format's own records. One place derives
// each detail: from stepscope's extension fields, else TensorFlow's labels, else the PyTorch
// profiler's event args and names.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "profiler/trace/detail_tables.h"
#include "profiler/trace/trace.h"

namespace stepscope::trace {

struct MemcpyDetails {
  std::string kind;        // "HtoD", "DtoH", ...
  int64_t bytes = 0;
  std::string src_memory;  // "Pageable", "Pinned", "Device", ...
  std::string dst_memory;
  double bandwidth_gbps = -1;  // as the profiler reported it; -1 when it did not
};

// Kernel launch geometry as the source recorded it: the PyTorch profiler's kernel args, a
// StepStats node's launch record, or TensorFlow 2's label ("grid:1,2,3 block:32,1,1").
// Absent parts are empty texts, so that what a source lacks never reads as zero.
struct LaunchGeometry {
  std::string grid, block, registers;  // "1,2,3", "32,1,1", "64"
  bool operator==(const LaunchGeometry&) const = default;
};

// One output tensor of an op. Views are valid until the DetailReader's next call.
struct TensorOutput {
  int32_t slot = 0;                 // output index: the tensor is "<op>:<slot>" (slot 0: "<op>")
  std::string_view producer;        // the op's name as its source recorded it
  std::string_view dtype;           // "DT_FLOAT"; empty when unknown
  std::span<const int64_t> shape;   // -1 for an unknown dimension; empty for a scalar (kDetailShapes)
  bool unknown_rank = false;        // the source says the rank is unknown (kDetailShapes)
  bool has_allocation = false;      // the fields below were recorded
  int64_t requested_bytes = 0;
  int64_t allocated_bytes = 0;
  int64_t allocation_id = 0;
  std::string_view allocator;       // "GPU_0_bfc"
  // "<producer>:<slot>", or the producer alone for slot 0.
  std::string TensorName() const;
};

// An allocator's figures as one op recorded them.
struct AllocatorUse {
  std::string_view allocator;
  int64_t total_bytes = 0;
  int64_t peak_bytes = 0;
  int64_t live_bytes = 0;
  int64_t bytes_in_use = 0;  // the allocator's, after the op
  std::span<const AllocationRecord> records;
};

// A kernel's launch record as its source wrote it, zeros included (a StepStats node's
// KernelLaunch), for writers that carry the record field for field; Kernel() reads it as
// KernelArgs, with what was not recorded left unset.
struct LaunchRecord {
  uint32_t grid[3] = {0, 0, 0};
  uint32_t block[3] = {0, 0, 0};
  uint32_t registers_per_thread = 0;
  uint32_t static_shared_bytes = 0;
  uint32_t dynamic_shared_bytes = 0;
  uint32_t stream = 0;
  uint32_t device = 0;
};

// What a collective moved and with whom, as its op recorded it. Views are valid until the
// DetailReader's next call.
struct CollectiveDetails {
  std::string_view kind;       // "all_reduce", ...
  std::string_view algorithm;  // "nccl", "ring", ...
  int64_t bytes = 0;
  int32_t group_size = 0;
};

// An op's input as its source recorded it (kDetailInputShapes): the PyTorch profiler's `Input
// Dims`, `Input type` and `Concrete Inputs` by position. Views are valid until the DetailReader's
// next call.
struct TensorInput {
  std::string_view dtype;          // "float", "c10::BFloat16", "Scalar", "TensorList"; empty when unknown
  std::span<const int64_t> shape;  // empty for a scalar, a non-tensor argument or a tensor list
  std::string_view value;          // a non-tensor argument as written ("[2, 2]", "1"); empty when none
};

// A tensor as the run's graphs describe it (a TensorFlow RunMetadata's cost graph and partition
// graphs): what an op's cost needs of tensors the step's records leave without a shape (a
// resource variable's handle, a producer that recorded no output).
struct GraphTensor {
  std::string producer;        // the node's name, as the step's records name it
  int32_t slot = 0;
  std::string dtype;           // "DT_FLOAT" (a reference type as its value type); empty when unknown
  std::vector<int64_t> shape;  // -1 for an unknown dimension; empty for a scalar
  bool unknown_rank = false;
  // The tensor is a resource variable's handle (a VarHandleOp's output) and dtype and shape are
  // the variable's own (its `dtype` and `shape` attributes): what the ops that take the handle read.
  bool variable = false;
  bool operator==(const GraphTensor&) const = default;
};

// An op's temporary and persistent memory.
struct OpMemory {
  int64_t temp_bytes = 0;
  int64_t persistent_bytes = 0;
};

// What a pass asks a DetailReader for: a StepStats trace then decodes nothing else (and skips
// stored blocks none of whose ops has it).
enum DetailKind : uint32_t {
  kDetailKernel = 1u << 0,      // Kernel(), Geometry()
  kDetailCopy = 1u << 1,        // Copy()
  kDetailOutputs = 1u << 2,     // Outputs()
  kDetailShapes = 1u << 3,      // Outputs() with dtype and shape
  kDetailAllocators = 1u << 4,  // Allocators()
  kDetailOpMemory = 1u << 5,    // Memory()
  kDetailInputs = 1u << 6,      // Inputs()
  kDetailLabel = 1u << 7,       // Label()
  kDetailCollective = 1u << 8,  // Collective()
  kDetailCorrelation = 1u << 9, // Correlation()
  kDetailInputShapes = 1u << 10, // InputShapes(), ReportedFlops()
  kDetailAll = 0xffffffffu,
};

class PayloadDetails;  // trace_payload.h

// Reads the details of many slices; cheapest in slice order. One reader per thread; what it
// returns is valid until its next call.
class DetailReader {
 public:
  explicit DetailReader(const Trace& trace, uint32_t needed = kDetailAll);
  ~DetailReader();
  DetailReader(const DetailReader&) = delete;
  DetailReader& operator=(const DetailReader&) = delete;

  // Whether any slice may have details of these kinds (DetailKind bits): a pass that would
  // allocate for them skips a trace that has none.
  bool MayHave(uint32_t kinds) const;

  // A copy's details (kMemcpy slices only); nullopt when its source says nothing of it.
  std::optional<MemcpyDetails> Copy(uint32_t slice);
  // A kernel's launch as a KernelArgs value; nullopt when the source recorded none.
  std::optional<KernelArgs> Kernel(uint32_t slice);
  // A kernel's launch geometry as text; empty fields when the source has none.
  LaunchGeometry Geometry(uint32_t slice);
  // An op's outputs; from a JSON trace's `Output Dims` / `Output type` args (stepscope's export
  // of a StepStats op) when it has no output records and kDetailShapes was asked for.
  std::span<const TensorOutput> Outputs(uint32_t slice);
  std::span<const AllocatorUse> Allocators(uint32_t slice);
  std::optional<OpMemory> Memory(uint32_t slice);
  // An op's inputs as its source named them ("MatMul", "x:1", "^ctrl"); empty when unknown.
  std::span<const std::string_view> Inputs(uint32_t slice);
  // The op's label as its source wrote it (TensorFlow's timeline label); empty when none.
  std::string_view Label(uint32_t slice);
  // The op's launch record field for field (kDetailKernel); nullopt when it has none.
  std::optional<LaunchRecord> Launch(uint32_t slice);
  std::optional<CollectiveDetails> Collective(uint32_t slice);
  // An op's inputs' shapes, dtypes and scalar values by position; empty when the source recorded
  // none (a StepStats op names its inputs only: Inputs(), their shapes are their producers').
  std::span<const TensorInput> InputShapes(uint32_t slice);
  // Every tensor the run's graphs give a dtype or shape, one per (producer, slot): the cost
  // graph's output_info first, then the partition graphs' `_output_shapes`; a VarHandleOp's
  // output as the variable it refers to. Empty when the source has no graphs.
  std::vector<GraphTensor> GraphTensors();
  // The floating-point operations the source itself counted for the op (the PyTorch profiler's
  // `flops` argument with_flops, an XLA op's `flops` stat); -1 when none.
  int64_t ReportedFlops(uint32_t slice);
  // The correlation id the op's own record carries (a StepStats node's; kernel and transfer
  // args have theirs); 0 when none.
  uint64_t Correlation(uint32_t slice);

 private:
  std::span<const TensorOutput> TableOutputs(uint32_t slice);
  std::span<const AllocatorUse> TableAllocators(uint32_t slice);
  std::span<const TensorOutput> ArgOutputs(uint32_t slice);
  void ParseShapeArgs(uint32_t slice, std::string_view dims_key, std::string_view types_key,
                      std::string_view values_key, std::vector<TensorInput>& tensors,
                      std::vector<int64_t>& dims_storage);

  const Trace& trace_;
  uint32_t needed_;
  std::unique_ptr<PayloadDetails> payload_;  // the trace payload's decoder; null without one
  std::vector<TensorOutput> outputs_;     // from the trace's tables
  std::vector<TensorInput> inputs_;       // from the trace's free-form arguments
  std::vector<int64_t> input_dims_;
  std::vector<TensorInput> output_args_;  // `Output Dims` / `Output type` of a JSON op
  // The id of the key "Output Dims" in the trace's strings; -1 when no slice has it (a PyTorch
  // trace: its ops' args are then not scanned for outputs).
  int64_t output_dims_key_ = -1;
  std::vector<int64_t> output_dims_;
  std::vector<AllocatorUse> allocators_;
};

// For one slice.
std::optional<MemcpyDetails> GetMemcpyDetails(const Trace& trace, uint32_t slice);

// Kind and memory kinds from a copy's name: PyTorch writes "Memcpy HtoD (Pageable -> Device)",
// TensorFlow "MEMCPYHtoD". Empty kind when the name is neither.
struct CopyName {
  std::string kind, src_memory, dst_memory;
};
CopyName ParseCopyName(std::string_view name);

// A slice's source record as the reader kept it, field by field (a StepStats node: every field
// of its NodeExecStats), for a details pane that leaves nothing out. Empty when the slice has
// none; `title` names the record ("NodeExecStats").
struct RecordField {
  std::string key;
  std::string value;
  std::vector<RecordField> children;
};
std::vector<RecordField> SourceRecord(const Trace& trace, uint32_t slice, std::string* title);

}  // namespace stepscope::trace
