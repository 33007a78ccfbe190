// Kineto kernel arguments stored once per launch configuration (kernel_args_table.h).
#include "profiler/trace/kernel_args_table.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <string_view>
#include <utility>

#include "base/free_storage.h"

namespace stepscope::trace {
namespace {

size_t HashBytes(const void* data, size_t size) {
  return std::hash<std::string_view>()(std::string_view(static_cast<const char*>(data), size));
}

}  // namespace

void KernelArgsTable::Add(const KernelArgs& args) {
  Launch launch;
  const auto correlation = static_cast<uint64_t>(args.correlation);
  launch.correlation_high = static_cast<uint32_t>(correlation >> 32);
  std::copy(std::begin(args.grid), std::end(args.grid), launch.grid);
  std::copy(std::begin(args.block), std::end(args.block), launch.block);
  launch.registers_per_thread = args.registers_per_thread;
  launch.shared_memory_bytes = args.shared_memory_bytes;
  launch.device = args.device;
  launch.stream = args.stream;
  launch.blocks_per_sm = args.blocks_per_sm;
  launch.warps_per_sm = args.warps_per_sm;
  launch.occupancy_percent = args.occupancy_percent;
  rows_.push_back(Row{args.slice, Intern(launch), static_cast<uint32_t>(correlation)});
}

uint32_t KernelArgsTable::Intern(const Launch& launch) {
  if (2 * (launches_.size() + 1) > slots_.size()) {
    // Grow to keep the table at most half full, placing every launch again.
    slots_.assign(std::max<size_t>(64, 2 * slots_.size()), 0);
    const size_t mask = slots_.size() - 1;
    for (uint32_t i = 0; i < launches_.size(); ++i) {
      size_t slot = HashBytes(&launches_[i], sizeof(Launch)) & mask;
      while (slots_[slot] != 0) slot = (slot + 1) & mask;
      slots_[slot] = i + 1;
    }
  }
  const size_t mask = slots_.size() - 1;
  for (size_t slot = HashBytes(&launch, sizeof(Launch)) & mask;; slot = (slot + 1) & mask) {
    if (slots_[slot] == 0) {
      launches_.push_back(launch);
      slots_[slot] = static_cast<uint32_t>(launches_.size());
      return slots_[slot] - 1;
    }
    if (std::memcmp(&launches_[slots_[slot] - 1], &launch, sizeof(Launch)) == 0) return slots_[slot] - 1;
  }
}

void KernelArgsTable::Freeze(size_t slice_count) {
  if (frozen_) return;
  frozen_ = true;
  if (rows_.empty()) return;
  present_.assign((slice_count + 63) / 64, 0);
  entries_.reserve(rows_.size());
  for (size_t r = 0; r < rows_.size(); ++r) {
    const Row& row = rows_[r];
    // A slice keeps its first row, the one Find gave before (a reader adds one per kernel).
    if (row.slice >= slice_count || (r > 0 && rows_[r - 1].slice == row.slice)) continue;
    present_[row.slice / 64] |= uint64_t{1} << (row.slice % 64);
    entries_.push_back({row.launch, row.correlation_low});
  }
  FreeStorage(rows_);
  rank_blocks_.reserve(present_.size() / kWordsPerRankBlock + 1);
  uint32_t before = 0;
  for (size_t w = 0; w < present_.size(); ++w) {
    if (w % kWordsPerRankBlock == 0) rank_blocks_.push_back(before);
    before += static_cast<uint32_t>(std::popcount(present_[w]));
  }
}

size_t KernelArgsTable::RowsBefore(uint32_t slice) const {
  const size_t word = slice / 64;
  size_t rows = rank_blocks_[word / kWordsPerRankBlock];
  for (size_t w = word / kWordsPerRankBlock * kWordsPerRankBlock; w < word; ++w) rows += std::popcount(present_[w]);
  return rows + std::popcount(present_[word] & ((uint64_t{1} << (slice % 64)) - 1));
}

uint32_t KernelArgsTable::SliceOfRow(size_t row) const {
  // The last block with at most `row` rows before it holds the row's slice.
  const size_t block = static_cast<size_t>(
      std::upper_bound(rank_blocks_.begin(), rank_blocks_.end(), row) - rank_blocks_.begin() - 1);
  size_t left = row - rank_blocks_[block];
  for (size_t w = block * kWordsPerRankBlock;; ++w) {
    uint64_t bits = present_[w];
    const auto count = static_cast<size_t>(std::popcount(bits));
    if (left >= count) {
      left -= count;
      continue;
    }
    for (; left > 0; --left) bits &= bits - 1;  // drop the lowest set bits before the row's
    return static_cast<uint32_t>(w * 64 + std::countr_zero(bits));
  }
}

uint32_t KernelArgsTable::NextSliceWithArgs(uint32_t after) const {
  size_t word = (size_t{after} + 1) / 64;
  uint64_t bits = word < present_.size() ? present_[word] & (~uint64_t{0} << ((after + 1) % 64)) : 0;
  while (bits == 0 && ++word < present_.size()) bits = present_[word];
  return bits == 0 ? 0 : static_cast<uint32_t>(word * 64 + std::countr_zero(bits));
}

KernelArgs KernelArgsTable::operator[](size_t row) const {
  return Args(row, frozen_ ? SliceOfRow(row) : rows_[row].slice);
}

KernelArgs KernelArgsTable::Args(size_t row, uint32_t slice) const {
  const auto [launch_index, correlation_low] =
      frozen_ ? std::pair{entries_[row].launch, entries_[row].correlation_low}
              : std::pair{rows_[row].launch, rows_[row].correlation_low};
  const Launch& launch = launches_[launch_index];
  KernelArgs args;
  args.correlation = static_cast<int64_t>(uint64_t{launch.correlation_high} << 32 | correlation_low);
  args.slice = slice;
  std::copy(std::begin(launch.grid), std::end(launch.grid), args.grid);
  std::copy(std::begin(launch.block), std::end(launch.block), args.block);
  args.registers_per_thread = launch.registers_per_thread;
  args.shared_memory_bytes = launch.shared_memory_bytes;
  args.device = launch.device;
  args.stream = launch.stream;
  args.blocks_per_sm = launch.blocks_per_sm;
  args.warps_per_sm = launch.warps_per_sm;
  args.occupancy_percent = launch.occupancy_percent;
  return args;
}

std::optional<KernelArgs> KernelArgsTable::Find(uint32_t slice) const {
  if (frozen_) {
    if (entries_.empty() || slice / 64 >= present_.size() || !HasArgs(slice)) return std::nullopt;
    return Args(RowsBefore(slice), slice);
  }
  auto it = std::lower_bound(rows_.begin(), rows_.end(), slice, [](const Row& r, uint32_t s) { return r.slice < s; });
  if (it == rows_.end() || it->slice != slice) return std::nullopt;
  return Args(static_cast<size_t>(it - rows_.begin()), slice);
}

KernelArgsTable::Iterator::Iterator(const KernelArgsTable* table, size_t row) : table_(table), row_(row) {
  if (row_ < table_->size()) slice_ = table_->frozen_ ? table_->SliceOfRow(row_) : table_->rows_[row_].slice;
}

KernelArgsTable::Iterator& KernelArgsTable::Iterator::operator++() {
  if (++row_ < table_->size()) {
    slice_ = table_->frozen_ ? table_->NextSliceWithArgs(slice_) : table_->rows_[row_].slice;
  }
  return *this;
}

}  // namespace stepscope::trace
