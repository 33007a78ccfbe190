// The N items that rank highest of a stream too long to keep (a gap per kernel in a trace of
// millions): a bounded heap with the lowest kept item on top. Of items that rank equal, the one
// offered first ranks higher, so the outcome does not depend on the heap's order.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace stepscope {

template <typename T, typename RanksHigher>
class LargestN {
 public:
  // `ranks_higher(a, b)`: a strict weak order, true when a ranks above b.
  LargestN(size_t n, RanksHigher ranks_higher) : n_(n), ranks_higher_(ranks_higher) {}

  void Offer(const T& item) {
    const Entry entry{item, offered_++};
    if (kept_.size() < n_) {
      kept_.push_back(entry);
      std::push_heap(kept_.begin(), kept_.end(), EntryRanksHigher());
    } else if (!kept_.empty() && EntryRanksHigher()(entry, kept_.front())) {
      std::pop_heap(kept_.begin(), kept_.end(), EntryRanksHigher());
      kept_.back() = entry;
      std::push_heap(kept_.begin(), kept_.end(), EntryRanksHigher());
    }
  }

  // The kept items, highest first.
  std::vector<T> TakeSorted() {
    std::sort(kept_.begin(), kept_.end(), EntryRanksHigher());
    std::vector<T> items;
    items.reserve(kept_.size());
    for (Entry& entry : kept_) items.push_back(std::move(entry.item));
    kept_.clear();
    return items;
  }

 private:
  struct Entry {
    T item;
    uint64_t offered;
  };
  auto EntryRanksHigher() const {
    return [this](const Entry& a, const Entry& b) {
      if (ranks_higher_(a.item, b.item)) return true;
      if (ranks_higher_(b.item, a.item)) return false;
      return a.offered < b.offered;
    };
  }

  size_t n_;
  RanksHigher ranks_higher_;
  std::vector<Entry> kept_;
  uint64_t offered_ = 0;
};

}  // namespace stepscope
