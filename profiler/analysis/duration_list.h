// Nanosecond values kept for exact statistics on traces of tens of millions of slices: a list
// takes 4 bytes a value in [0, 4.3 s] and 8 for the rest (negative launch delays, long gaps), in
// mapped memory so that a list of millions grows without a second copy. The statistics of several
// lists together are read by merging them sorted, so a value is kept once however many figures
// (a stream's, a cause's, the whole trace's) count it.
#pragma once

#include <cstdint>
#include <vector>

#include "base/mapped_array.h"

namespace stepscope::analysis {

class DurationList {
 public:
  void Add(int64_t ns) {
    if (ns >= 0 && ns <= int64_t{UINT32_MAX}) {
      narrow_.push_back(static_cast<uint32_t>(ns));
    } else {
      wide_.push_back(ns);
    }
  }
  void CopyFrom(const DurationList& other);
  size_t size() const { return narrow_.size() + wide_.size(); }
  bool empty() const { return size() == 0; }
  void Sort();
  // Once sorted: the k-th smallest value.
  int64_t operator[](size_t k) const;
  const MappedArray<uint32_t>& narrow() const { return narrow_; }
  const std::vector<int64_t>& wide() const { return wide_; }

 private:
  MappedArray<uint32_t> narrow_;
  std::vector<int64_t> wide_;
  size_t negative_ = 0;  // once sorted: the wide values below 0, which precede the narrow ones
};

// Count, total, least, greatest and the 50th and 95th percentiles (linear-interpolated, as
// statistics.h Quantile) of the values of sorted lists taken together: the lists are merged up to
// the 95th percentile's position, nothing is gathered.
struct MergedStats {
  int64_t count = 0, total_ns = 0, min_ns = 0, max_ns = 0;
  double p50_ns = 0, p95_ns = 0;
};
MergedStats StatsOfSorted(const std::vector<const DurationList*>& lists);

}  // namespace stepscope::analysis
