#include "profiler/analysis/duration_list.h"

#include <algorithm>

namespace stepscope::analysis {

void DurationList::CopyFrom(const DurationList& other) {
  narrow_.resize(other.narrow_.size());
  std::copy(other.narrow_.begin(), other.narrow_.end(), narrow_.begin());
  wide_ = other.wide_;
  negative_ = other.negative_;
}

void DurationList::Sort() {
  std::sort(narrow_.begin(), narrow_.end());
  std::sort(wide_.begin(), wide_.end());
  negative_ = static_cast<size_t>(std::lower_bound(wide_.begin(), wide_.end(), 0) - wide_.begin());
}

int64_t DurationList::operator[](size_t k) const {
  if (k < negative_) return wide_[k];
  k -= negative_;
  if (k < narrow_.size()) return int64_t{narrow_[k]};
  return wide_[negative_ + k - narrow_.size()];
}

MergedStats StatsOfSorted(const std::vector<const DurationList*>& lists) {
  // A cursor per non-empty part: a list's narrow values, its wide ones.
  struct Cursor {
    const uint32_t* narrow;
    const int64_t* wide;
    size_t size, at;
    int64_t value(size_t i) const { return narrow != nullptr ? int64_t{narrow[i]} : wide[i]; }
    int64_t value() const { return value(at); }
  };
  std::vector<Cursor> cursors;
  MergedStats stats;
  for (const DurationList* list : lists) {
    if (!list->narrow().empty()) cursors.push_back({list->narrow().data(), nullptr, list->narrow().size(), 0});
    if (!list->wide().empty()) cursors.push_back({nullptr, list->wide().data(), list->wide().size(), 0});
  }
  if (cursors.empty()) return stats;
  stats.min_ns = cursors[0].value(0);
  stats.max_ns = cursors[0].value(cursors[0].size - 1);
  for (const Cursor& c : cursors) {
    stats.count += static_cast<int64_t>(c.size);
    for (size_t i = 0; i < c.size; ++i) stats.total_ns += c.value(i);
    stats.min_ns = std::min(stats.min_ns, c.value(0));  // sorted: the first and the last
    stats.max_ns = std::max(stats.max_ns, c.value(c.size - 1));
  }
  // The order statistics each percentile interpolates between.
  const auto n = static_cast<size_t>(stats.count);
  struct Wanted {
    double fraction, position;
    size_t below;
    int64_t lower = 0, upper = 0;
  };
  Wanted wanted[2] = {{0.5, 0, 0}, {0.95, 0, 0}};
  size_t last = 0;
  for (Wanted& w : wanted) {
    w.position = w.fraction * static_cast<double>(n - 1);
    w.below = static_cast<size_t>(w.position);
    last = std::max(last, std::min(w.below + 1, n - 1));
  }
  auto greater = [&](size_t a, size_t b) { return cursors[a].value() > cursors[b].value(); };
  std::vector<size_t> heap(cursors.size());
  for (size_t i = 0; i < heap.size(); ++i) heap[i] = i;
  std::make_heap(heap.begin(), heap.end(), greater);
  for (size_t rank = 0; rank <= last; ++rank) {
    std::pop_heap(heap.begin(), heap.end(), greater);
    Cursor& c = cursors[heap.back()];
    const int64_t value = c.value();
    for (Wanted& w : wanted) {
      if (rank == w.below) w.lower = value;
      if (rank == w.below + 1) w.upper = value;
    }
    if (++c.at == c.size) {
      heap.pop_back();
    } else {
      std::push_heap(heap.begin(), heap.end(), greater);
    }
  }
  auto percentile = [&](const Wanted& w) {
    if (w.below + 1 >= n) return static_cast<double>(w.lower);
    const double weight = w.position - static_cast<double>(w.below);
    return static_cast<double>(w.lower) * (1 - weight) + static_cast<double>(w.upper) * weight;
  };
  stats.p50_ns = percentile(wanted[0]);
  stats.p95_ns = percentile(wanted[1]);
  return stats;
}

}  // namespace stepscope::analysis
