#include "profiler/trace/kernel_args_table.h"

#include <algorithm>
#include <cstring>
#include <string_view>

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

KernelArgs KernelArgsTable::operator[](size_t row) const {
  const Row& r = rows_[row];
  const Launch& launch = launches_[r.launch];
  KernelArgs args;
  args.correlation = static_cast<int64_t>(uint64_t{launch.correlation_high} << 32 | r.correlation_low);
  args.slice = r.slice;
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
  auto it = std::lower_bound(rows_.begin(), rows_.end(), slice, [](const Row& r, uint32_t s) { return r.slice < s; });
  if (it == rows_.end() || it->slice != slice) return std::nullopt;
  return (*this)[static_cast<size_t>(it - rows_.begin())];
}

}  // namespace stepscope::trace
