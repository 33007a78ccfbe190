// How a Trace keeps its Kineto kernel arguments (KernelArgs): the launch configuration (grid,
// block, registers, shared memory, device, stream, occupancy) is what the thousands of launches of
// one kernel share, so each distinct one is stored once with the high half of the correlation id
// (the same for 2^32 launches in a row). While a trace is built a launch is a row of 12 bytes:
// its slice, the low half of its correlation id and its configuration's index. Once the rows are
// sorted (Freeze), a row keeps 8 bytes and its slice is a bit among the trace's slices, found by
// counting bits. A trace of 10^6 kernels then holds 8 MB of kernel arguments instead of 64 MB.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <optional>
#include <vector>

#include "base/mapped_array.h"

namespace stepscope::trace {

// A GPU kernel's launch as the PyTorch profiler records it (args of a `kernel` event).
// Absent values are -1 (integers) or NaN (occupancy).
struct KernelArgs {
  int64_t correlation = -1;
  uint32_t slice = 0;
  uint32_t grid[3] = {0, 0, 0};   // 0 when the event had no grid
  uint32_t block[3] = {0, 0, 0};
  int32_t registers_per_thread = -1;
  int32_t shared_memory_bytes = -1;
  int32_t device = -1;
  int32_t stream = -1;
  float blocks_per_sm = -1;
  float warps_per_sm = -1;
  float occupancy_percent = -1;   // "est. achieved occupancy %"
  bool has_grid() const { return grid[0] != 0; }
};
static_assert(sizeof(KernelArgs) == 64, "no padding: a value compares as bytes");

class KernelArgsTable {
 public:
  struct Row {
    uint32_t slice = 0;
    uint32_t launch = 0;  // index of its launch configuration
    uint32_t correlation_low = 0;
  };
  static_assert(sizeof(Row) == 12);

  // Rows come in any order; Find needs them sorted by slice (TraceBuilder::Build sorts them).
  void Add(const KernelArgs& args);
  // Once the rows are sorted by slice and the trace holds `slice_count` slices: each row's slice
  // becomes a bit (TraceBuilder::Build calls this last).
  void Freeze(size_t slice_count);
  size_t size() const { return frozen_ ? entries_.size() : rows_.size(); }
  bool empty() const { return size() == 0; }
  // Row by index (in slice order once sorted); a frozen table finds the slice by counting bits.
  KernelArgs operator[](size_t row) const;
  // The arguments of a slice, nullopt when it has none.
  std::optional<KernelArgs> Find(uint32_t slice) const;
  // Distinct launch configurations.
  size_t launch_count() const { return launches_.size(); }

  // For the builder, which renumbers and sorts the rows with the slices (before Freeze).
  MappedArray<Row>& rows() { return rows_; }

  // Rows as KernelArgs values, in row order.
  class Iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = KernelArgs;
    using difference_type = std::ptrdiff_t;
    Iterator(const KernelArgsTable* table, size_t row);
    KernelArgs operator*() const { return table_->Args(row_, slice_); }
    Iterator& operator++();
    bool operator==(const Iterator& other) const { return row_ == other.row_; }

   private:
    const KernelArgsTable* table_;
    size_t row_;
    uint32_t slice_ = 0;  // of row_ (walked bit by bit in a frozen table)
  };
  Iterator begin() const { return {this, 0}; }
  Iterator end() const { return {this, size()}; }

 private:
  // All of KernelArgs but the slice and the correlation's low half; compared and hashed as bytes
  // (no padding).
  struct Launch {
    uint32_t correlation_high;
    uint32_t grid[3];
    uint32_t block[3];
    int32_t registers_per_thread;
    int32_t shared_memory_bytes;
    int32_t device;
    int32_t stream;
    float blocks_per_sm;
    float warps_per_sm;
    float occupancy_percent;
  };
  static_assert(sizeof(Launch) == 56, "no padding: launches compare as bytes");

  struct Entry {  // a frozen row
    uint32_t launch = 0;
    uint32_t correlation_low = 0;
  };
  static constexpr size_t kWordsPerRankBlock = 8;  // a count of the rows before every 512 slices

  uint32_t Intern(const Launch& launch);
  KernelArgs Args(size_t row, uint32_t slice) const;
  bool HasArgs(uint32_t slice) const { return (present_[slice / 64] >> (slice % 64)) & 1; }
  size_t RowsBefore(uint32_t slice) const;  // frozen: rows of the slices before `slice`
  uint32_t SliceOfRow(size_t row) const;    // frozen
  uint32_t NextSliceWithArgs(uint32_t after) const;  // frozen: the first past `after`

  // While building, then empty; mapped, so that growing never holds two copies (a row per
  // kernel: the import's peak on big Kineto traces while the file is parsed).
  MappedArray<Row> rows_;
  bool frozen_ = false;
  std::vector<Entry> entries_;            // frozen rows, in slice order
  std::vector<uint64_t> present_;         // frozen: a bit per slice, set for those with a row
  std::vector<uint32_t> rank_blocks_;     // frozen: rows before each block of present_
  std::vector<Launch> launches_;
  // Open addressing over launches_: launch index + 1 per slot, 0 for empty; a power of two, at
  // most half full.
  std::vector<uint32_t> slots_;
};

}  // namespace stepscope::trace
