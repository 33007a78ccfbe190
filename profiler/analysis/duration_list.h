// Nanosecond values kept for exact statistics on traces of tens of millions of slices. Values in
// [0, 4.3 s] gather 4 bytes each until there are 65536 of them, which are then sorted and kept as
// a run of delta-coded bytes (sorted durations lie close together: about a byte each); the rest
// (negative launch delays, gaps past 4.3 s) are kept whole. The statistics of several lists
// together are read by merging their runs in order, so a value is kept once however many
// figures (a stream's, a cause's, the whole trace's) count it, and nothing is gathered.
#pragma once

#include <cstdint>
#include <vector>

#include "base/mapped_array.h"

namespace stepscope::analysis {

class DurationList {
 public:
  static constexpr size_t kRunValues = 65536;

  void Add(int64_t ns) {
    if (ns >= 0 && ns <= int64_t{UINT32_MAX}) {
      pending_.push_back(static_cast<uint32_t>(ns));
      if (pending_.size() == kRunValues) SealRun();
    } else {
      wide_.push_back(ns);
    }
  }
  void CopyFrom(const DurationList& other);
  size_t size() const { return sealed_ + pending_.size() + wide_.size(); }
  bool empty() const { return size() == 0; }
  // Before reading: the values not yet in a run become one, the wide ones are sorted.
  void Sort();

  // A sorted run: its first value, then count - 1 deltas as LEB128 bytes from `offset`.
  struct Run {
    size_t offset = 0;
    uint32_t count = 0, first = 0;
  };
  const std::vector<Run>& runs() const { return runs_; }
  const uint8_t* run_bytes() const { return bytes_.data(); }
  const std::vector<int64_t>& wide() const { return wide_; }  // sorted once Sort() ran

 private:
  void SealRun();

  std::vector<uint32_t> pending_;
  std::vector<Run> runs_;
  MappedArray<uint8_t> bytes_;
  size_t sealed_ = 0;  // values in runs
  std::vector<int64_t> wide_;
};

// Count, total, least, greatest and the 50th and 95th percentiles (linear-interpolated, as
// statistics.h Quantile) of the values of sorted lists taken together: their runs are merged up
// to the 95th percentile's position, nothing is gathered.
struct MergedStats {
  int64_t count = 0, total_ns = 0, min_ns = 0, max_ns = 0;
  double p50_ns = 0, p95_ns = 0;
};
MergedStats StatsOfSorted(const std::vector<const DurationList*>& lists);

}  // namespace stepscope::analysis
