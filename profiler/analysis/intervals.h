// Interval arithmetic over slices in start order, in memory for a cursor per list rather than an
// interval per slice: the analyses of a 10^7-slice trace measure unions as the slices pass.
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

namespace stepscope::analysis {

// The length of a union of [start, end) intervals fed in order of start.
class UnionInStartOrder {
 public:
  void Add(int64_t start, int64_t end) {
    if (start > end_) {
      if (end_ != INT64_MIN) total_ += end_ - start_;
      start_ = start;
      end_ = end;
    } else {
      end_ = std::max(end_, end);
    }
  }
  int64_t length() const { return total_ + (end_ != INT64_MIN ? end_ - start_ : 0); }

 private:
  int64_t start_ = 0, end_ = INT64_MIN, total_ = 0;
};

// Visits the items of several [begin, end) ranges, each sorted by `start_of`, in start order
// across all of them (ties in no set order): a k-way merge through a heap of one cursor per range.
template <typename Iterator, typename StartOf, typename Visit>
void MergeByStart(std::vector<std::pair<Iterator, Iterator>> ranges, StartOf start_of, Visit visit) {
  std::erase_if(ranges, [](const auto& range) { return range.first == range.second; });
  auto later = [&](const auto& a, const auto& b) { return start_of(*a.first) > start_of(*b.first); };
  std::make_heap(ranges.begin(), ranges.end(), later);
  while (!ranges.empty()) {
    std::pop_heap(ranges.begin(), ranges.end(), later);
    auto& range = ranges.back();
    visit(*range.first);
    if (++range.first == range.second) {
      ranges.pop_back();
    } else {
      std::push_heap(ranges.begin(), ranges.end(), later);
    }
  }
}

}  // namespace stepscope::analysis
