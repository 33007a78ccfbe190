// How a Trace keeps its Kineto kernel arguments (KernelArgs): the launch configuration (grid,
// block, registers, shared memory, device, stream, occupancy) is what the thousands of launches of
// one kernel share, so each distinct one is stored once and a launch keeps 12 bytes: its slice,
// the low half of its correlation id and which configuration it used (the configuration holds the
// high half, the same for 2^32 launches in a row). A trace of 10^6 kernels then holds 12 MB of
// kernel arguments instead of 64 MB.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <optional>
#include <vector>

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
  size_t size() const { return rows_.size(); }
  bool empty() const { return rows_.empty(); }
  KernelArgs operator[](size_t row) const;
  // The arguments of a slice, nullopt when it has none.
  std::optional<KernelArgs> Find(uint32_t slice) const;
  // Distinct launch configurations.
  size_t launch_count() const { return launches_.size(); }

  // For the builder, which renumbers and sorts the rows with the slices.
  std::vector<Row>& rows() { return rows_; }
  const std::vector<Row>& rows() const { return rows_; }

  // Rows as KernelArgs values, in row order.
  class Iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = KernelArgs;
    using difference_type = std::ptrdiff_t;
    Iterator(const KernelArgsTable* table, size_t row) : table_(table), row_(row) {}
    KernelArgs operator*() const { return (*table_)[row_]; }
    Iterator& operator++() {
      ++row_;
      return *this;
    }
    bool operator==(const Iterator& other) const { return row_ == other.row_; }

   private:
    const KernelArgsTable* table_;
    size_t row_;
  };
  Iterator begin() const { return {this, 0}; }
  Iterator end() const { return {this, rows_.size()}; }

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

  uint32_t Intern(const Launch& launch);

  std::vector<Row> rows_;
  std::vector<Launch> launches_;
  // Open addressing over launches_: launch index + 1 per slot, 0 for empty; a power of two, at
  // most half full.
  std::vector<uint32_t> slots_;
};

}  // namespace stepscope::trace
