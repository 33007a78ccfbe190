// A trace's lossless per-format payload: what a reader keeps of its source beyond the model, so
// that writing the same format back loses nothing (a StepStats trace keeps every NodeExecStats,
// compressed). The model sees it only through this interface: DetailReader asks it for the
// details of slices whose source keeps them there rather than in the trace's detail tables, the
// details pane for a slice's source record, and memory reports for its size. What the payload
// holds and how it is read as such is its format's business (profiler/formats/<format>/); the
// model names no format's types.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "profiler/trace/kernel_args_table.h"
#include "profiler/trace/node_ref.h"
#include "profiler/trace/slice_details.h"

namespace stepscope::trace {

class Trace;

// One pass's decoder of the payload's slice details (DetailReader's source for a slice the
// trace's own tables do not describe). Not shared between threads; what it returns is valid until
// its next call. Each method answers for the slice's own record only: DetailReader looks at the
// trace's kernel and transfer arguments first.
class PayloadDetails {
 public:
  virtual ~PayloadDetails() = default;
  virtual std::optional<MemcpyDetails> Copy(uint32_t slice) = 0;
  virtual std::optional<KernelArgs> Kernel(uint32_t slice) = 0;
  virtual LaunchGeometry Geometry(uint32_t slice) = 0;
  virtual std::span<const TensorOutput> Outputs(uint32_t slice) = 0;
  virtual std::span<const AllocatorUse> Allocators(uint32_t slice) = 0;
  virtual std::optional<OpMemory> Memory(uint32_t slice) = 0;
  virtual std::span<const std::string_view> Inputs(uint32_t slice) = 0;
  // The inputs' dtypes and shapes when the source recorded them; none by default.
  virtual std::span<const TensorInput> InputShapes(uint32_t /*slice*/) { return {}; }
  // The tensors the run's graphs describe (DetailReader::GraphTensors); none by default.
  virtual std::vector<GraphTensor> GraphTensors() { return {}; }
  virtual std::string_view Label(uint32_t slice) = 0;
  virtual std::optional<LaunchRecord> Launch(uint32_t slice) = 0;
  virtual std::optional<CollectiveDetails> Collective(uint32_t slice) = 0;
  virtual uint64_t Correlation(uint32_t slice) = 0;
};

class TracePayload {
 public:
  virtual ~TracePayload() = default;
  // The record kind, for messages and the details pane ("StepStats").
  virtual std::string_view name() const = 0;
  // Bytes held, for memory reports and benchmarks.
  virtual size_t memory_bytes() const = 0;
  // Where a slice came from in the source's records; invalid when it has none.
  virtual NodeRef SourceRef(uint32_t slice) const = 0;
  // A decoder for one pass that asks for `needed` (DetailKind bits) and nothing else.
  virtual std::unique_ptr<PayloadDetails> OpenDetails(const Trace& trace, uint32_t needed) const = 0;
  // The slice's source record field by field (slice_details.h: SourceRecord); empty when none.
  virtual std::vector<RecordField> SourceRecord(const Trace& trace, uint32_t slice, std::string* title) const = 0;
};

// Makes a trace's payload once TraceBuilder::Build has put the slices in their final order:
// `slice_refs` holds each slice's source reference in that order (empty when the reader gave
// none), `slice_count` the number of slices.
using PayloadFactory =
    std::function<std::shared_ptr<const TracePayload>(std::span<const NodeRef> slice_refs, size_t slice_count)>;

}  // namespace stepscope::trace
