// The typed per-op memory details of non-StepStats traces (detail_tables.h).
#include "profiler/trace/detail_tables.h"

#include <algorithm>

namespace stepscope::trace {
namespace {

template <typename Row>
std::span<const Row> RowsOf(const std::vector<Row>& rows, uint32_t slice) {
  auto by_slice = [](const Row& row, uint32_t s) { return row.slice < s; };
  auto first = std::lower_bound(rows.begin(), rows.end(), slice, by_slice);
  auto last = first;
  while (last != rows.end() && last->slice == slice) ++last;
  return {rows.data() + (first - rows.begin()), static_cast<size_t>(last - first)};
}

template <typename Row>
void SortBySlice(std::vector<Row>& rows) {
  auto by_slice = [](const Row& a, const Row& b) { return a.slice < b.slice; };
  if (!std::is_sorted(rows.begin(), rows.end(), by_slice)) std::stable_sort(rows.begin(), rows.end(), by_slice);
}

}  // namespace

void DetailTables::AddOutput(OutputRow row, std::span<const int64_t> shape) {
  row.shape_begin = static_cast<uint32_t>(dims_.size());
  row.rank = static_cast<uint32_t>(shape.size());
  dims_.insert(dims_.end(), shape.begin(), shape.end());
  outputs_.push_back(row);
}

void DetailTables::AddAllocator(AllocatorRow row, std::span<const AllocationRecord> records) {
  row.records_begin = static_cast<uint32_t>(records_.size());
  row.records_count = static_cast<uint32_t>(records.size());
  records_.insert(records_.end(), records.begin(), records.end());
  allocators_.push_back(row);
}

void DetailTables::Renumber(const std::function<void(uint32_t&)>& renumber) {
  for (OutputRow& row : outputs_) renumber(row.slice);
  for (AllocatorRow& row : allocators_) renumber(row.slice);
  for (OpMemoryRow& row : op_memory_) renumber(row.slice);
}

void DetailTables::Finish(int64_t epoch_ns) {
  SortBySlice(outputs_);
  SortBySlice(allocators_);
  SortBySlice(op_memory_);
  for (AllocationRecord& record : records_) record.ns -= epoch_ns;
}

std::span<const OutputRow> DetailTables::outputs(uint32_t slice) const { return RowsOf(outputs_, slice); }
std::span<const AllocatorRow> DetailTables::allocators(uint32_t slice) const { return RowsOf(allocators_, slice); }
const OpMemoryRow* DetailTables::op_memory(uint32_t slice) const {
  const auto rows = RowsOf(op_memory_, slice);
  return rows.empty() ? nullptr : &rows.front();
}

}  // namespace stepscope::trace
