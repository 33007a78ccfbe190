// Compact nanosecond lists for exact quantiles on huge traces (duration_list.h).
#include "profiler/analysis/duration_list.h"

#include <algorithm>

namespace stepscope::analysis {

void DurationList::CopyFrom(const DurationList& other) {
  pending_ = other.pending_;
  runs_ = other.runs_;
  bytes_.resize(other.bytes_.size());
  std::copy(other.bytes_.begin(), other.bytes_.end(), bytes_.begin());
  sealed_ = other.sealed_;
  wide_ = other.wide_;
}

void DurationList::SealRun() {
  if (pending_.empty()) return;
  std::sort(pending_.begin(), pending_.end());
  runs_.push_back({bytes_.size(), static_cast<uint32_t>(pending_.size()), pending_[0]});
  for (size_t i = 1; i < pending_.size(); ++i) {
    uint32_t delta = pending_[i] - pending_[i - 1];
    while (delta >= 0x80) {
      bytes_.push_back(static_cast<uint8_t>(delta | 0x80));
      delta >>= 7;
    }
    bytes_.push_back(static_cast<uint8_t>(delta));
  }
  sealed_ += pending_.size();
  pending_.clear();
}

void DurationList::Sort() {
  SealRun();
  // The last run's buffer is not needed again (a list is read once it is sorted).
  std::vector<uint32_t>().swap(pending_);
  std::sort(wide_.begin(), wide_.end());
}

namespace {

// Reads one part of a list in order: a run (decoding its deltas) or the wide values.
class SortedCursor {
 public:
  SortedCursor(const DurationList::Run& run, const uint8_t* bytes)
      : next_byte_(bytes + run.offset), left_(run.count), value_(run.first), run_(true) {}
  SortedCursor(const int64_t* wide, size_t count) : wide_(wide), left_(count), value_(wide[0]) {}
  int64_t value() const { return value_; }
  // Moves to the next value; false at the end.
  bool Next() {
    if (--left_ == 0) return false;
    if (!run_) {
      value_ = *++wide_;
      return true;
    }
    uint32_t delta = 0;
    for (int shift = 0;; shift += 7) {
      const uint8_t byte = *next_byte_++;
      delta |= static_cast<uint32_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) break;
    }
    value_ += delta;
    return true;
  }

 private:
  const uint8_t* next_byte_ = nullptr;
  const int64_t* wide_ = nullptr;
  size_t left_ = 0;
  int64_t value_ = 0;
  bool run_ = false;
};

std::vector<SortedCursor> CursorsOf(const std::vector<const DurationList*>& lists) {
  std::vector<SortedCursor> cursors;
  for (const DurationList* list : lists) {
    for (const DurationList::Run& run : list->runs()) cursors.emplace_back(run, list->run_bytes());
    if (!list->wide().empty()) cursors.emplace_back(list->wide().data(), list->wide().size());
  }
  return cursors;
}

}  // namespace

MergedStats StatsOfSorted(const std::vector<const DurationList*>& lists) {
  MergedStats stats;
  for (const DurationList* list : lists) stats.count += static_cast<int64_t>(list->size());
  if (stats.count == 0) return stats;
  // First pass: total and extremes.
  bool first = true;
  for (SortedCursor& c : CursorsOf(lists)) {
    const int64_t least = c.value();
    int64_t value = least;
    do {
      value = c.value();
      stats.total_ns += value;
    } while (c.Next());
    stats.min_ns = first ? least : std::min(stats.min_ns, least);
    stats.max_ns = first ? value : std::max(stats.max_ns, value);
    first = false;
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
  std::vector<SortedCursor> cursors = CursorsOf(lists);
  auto greater = [&](size_t a, size_t b) { return cursors[a].value() > cursors[b].value(); };
  std::vector<size_t> heap(cursors.size());
  for (size_t i = 0; i < heap.size(); ++i) heap[i] = i;
  std::make_heap(heap.begin(), heap.end(), greater);
  for (size_t rank = 0; rank <= last; ++rank) {
    std::pop_heap(heap.begin(), heap.end(), greater);
    SortedCursor& c = cursors[heap.back()];
    const int64_t value = c.value();
    for (Wanted& w : wanted) {
      if (rank == w.below) w.lower = value;
      if (rank == w.below + 1) w.upper = value;
    }
    if (c.Next()) {
      std::push_heap(heap.begin(), heap.end(), greater);
    } else {
      heap.pop_back();
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
