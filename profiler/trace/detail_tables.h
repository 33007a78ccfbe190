// The typed per-op memory details a reader fills when its format carries them (tensor outputs
// with shape, dtype and allocation; allocators' figures and allocation records; an op's
// temporary and persistent memory), in compact rows sorted by slice that hold only the slices
// that have them. Strings are the trace's (StringId), shapes and records live in one array each.
// A trace with a lossless payload (trace_payload.h: StepStats) keeps these in its payload
// instead, which DetailReader (slice_details.h) decodes into the same shape on demand.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "profiler/trace/string_table.h"

namespace stepscope::trace {

// One output tensor of an op.
struct OutputRow {
  uint32_t slice = 0;
  int32_t slot = 0;
  StringId dtype = 0;        // "DT_FLOAT"; 0 (the empty string) when unknown
  StringId allocator = 0;
  uint32_t shape_begin = 0;  // into DetailTables::dims()
  uint32_t rank = 0;
  int64_t requested_bytes = 0;
  int64_t allocated_bytes = 0;
  int64_t allocation_id = 0;
  bool has_allocation = false;
};

// An allocation (bytes > 0) or release (bytes < 0): absolute ns while a trace is built, relative
// to the epoch once built.
struct AllocationRecord {
  int64_t ns = 0;
  int64_t bytes = 0;
};

// An allocator's figures as one op recorded them.
struct AllocatorRow {
  uint32_t slice = 0;
  StringId allocator = 0;
  int64_t total_bytes = 0, peak_bytes = 0, live_bytes = 0, bytes_in_use = 0;
  uint32_t records_begin = 0, records_count = 0;  // into DetailTables::records()
};

// An op's temporary and persistent memory.
struct OpMemoryRow {
  uint32_t slice = 0;
  int64_t temp_bytes = 0, persistent_bytes = 0;
};

class DetailTables {
 public:
  // Building (slices are a TraceBuilder's indices until Build sorts and renumbers them).
  void AddOutput(OutputRow row, std::span<const int64_t> shape);
  void AddAllocator(AllocatorRow row, std::span<const AllocationRecord> records);
  void AddOpMemory(const OpMemoryRow& row) { op_memory_.push_back(row); }
  void Renumber(const std::function<void(uint32_t&)>& renumber);
  // For readers that resolve slice indices themselves (TrackSliceBuffer::Resolve).
  std::vector<OutputRow>& mutable_outputs() { return outputs_; }
  std::vector<AllocatorRow>& mutable_allocators() { return allocators_; }
  std::vector<OpMemoryRow>& mutable_op_memory() { return op_memory_; }
  // Sorts the rows by slice, keeping each slice's order, and moves the records' times onto the
  // epoch (TraceBuilder::Build).
  void Finish(int64_t epoch_ns);

  bool empty() const { return outputs_.empty() && allocators_.empty() && op_memory_.empty(); }
  bool has_outputs() const { return !outputs_.empty(); }
  std::span<const OutputRow> outputs(uint32_t slice) const;
  std::span<const AllocatorRow> allocators(uint32_t slice) const;
  const OpMemoryRow* op_memory(uint32_t slice) const;
  std::span<const int64_t> shape(const OutputRow& row) const { return {dims_.data() + row.shape_begin, row.rank}; }
  std::span<const AllocationRecord> records(const AllocatorRow& row) const {
    return {records_.data() + row.records_begin, row.records_count};
  }
  const std::vector<OutputRow>& all_outputs() const { return outputs_; }
  const std::vector<AllocatorRow>& all_allocators() const { return allocators_; }
  const std::vector<OpMemoryRow>& all_op_memory() const { return op_memory_; }

 private:
  std::vector<OutputRow> outputs_;
  std::vector<AllocatorRow> allocators_;
  std::vector<OpMemoryRow> op_memory_;
  std::vector<int64_t> dims_;
  std::vector<AllocationRecord> records_;
};

}  // namespace stepscope::trace
