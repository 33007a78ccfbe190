// The timeline's multi-selection and area (selection.h), and the statistics of a set of slices.
#include "viewer/timeline_data/selection.h"

#include <algorithm>
#include <map>
#include <utility>

namespace stepscope::viewer {

bool TimelineSelection::Toggle(uint32_t slice) {
  const auto it = std::find(slices_.begin(), slices_.end(), slice);
  if (it != slices_.end()) {
    slices_.erase(it);
    return false;
  }
  slices_.push_back(slice);
  return true;
}

bool TimelineSelection::Contains(uint32_t slice) const {
  return std::find(slices_.begin(), slices_.end(), slice) != slices_.end();
}

void TimelineSelection::SetArea(SelectedArea area) {
  if (area.end_ns < area.begin_ns) std::swap(area.begin_ns, area.end_ns);
  std::sort(area.tracks.begin(), area.tracks.end());
  area.tracks.erase(std::unique(area.tracks.begin(), area.tracks.end()), area.tracks.end());
  area_ = std::move(area);
}

std::vector<char> TracksOfArea(const trace::Trace& trace, const SelectedArea& area) {
  const auto& tracks = trace.tracks();
  std::vector<char> chosen(tracks.size(), area.tracks.empty() ? 1 : 0);
  if (area.tracks.empty()) return chosen;
  std::vector<char> listed(tracks.size(), 0);
  for (uint32_t t : area.tracks) {
    if (t < tracks.size()) listed[t] = 1;
  }
  for (size_t t = 0; t < tracks.size(); ++t) {
    for (int32_t up = static_cast<int32_t>(t); up >= 0 && !chosen[t]; up = tracks[static_cast<size_t>(up)].parent) {
      chosen[t] = listed[static_cast<size_t>(up)];
    }
  }
  return chosen;
}

std::vector<uint32_t> SlicesInArea(const trace::Trace& trace, const SelectedArea& area) {
  const std::vector<char> chosen = TracksOfArea(trace, area);
  std::vector<uint32_t> slices;
  for (uint32_t t = 0; t < trace.tracks().size(); ++t) {
    if (!chosen[t]) continue;
    const uint32_t first = trace.track_first_slice(t);
    const std::span<const trace::Slice> lane = trace.track_slices(t);
    for (uint32_t k = 0; k < lane.size(); ++k) {
      const trace::Slice& s = lane[k];
      if (s.start_ns > area.end_ns) break;  // sorted by start
      if (s.duplicate()) continue;
      const bool inside = s.dur_ns == 0 ? s.start_ns >= area.begin_ns : s.end_ns() > area.begin_ns;
      if (inside) slices.push_back(first + k);
    }
  }
  return slices;
}

std::vector<analysis::OpStatsRow> SliceSetStats(const trace::Trace& trace, std::span<const uint32_t> slices) {
  const auto all = trace.slices();
  struct Rows {
    analysis::OpStatsRow row;
    std::vector<int64_t> durations;
  };
  std::map<std::pair<trace::StringId, bool>, Rows> by_name;
  int64_t sum = 0;
  for (uint32_t index : slices) {
    if (index >= all.size()) continue;
    const trace::Slice& s = all[index];
    // Self: minus the direct children, which follow it on its lane one level deeper.
    const uint32_t track_end =
        trace.track_first_slice(s.track) + static_cast<uint32_t>(trace.track_slices(s.track).size());
    int64_t children = 0;
    for (uint32_t j = index + 1; j < track_end && all[j].depth > s.depth; ++j) {
      if (all[j].depth == s.depth + 1 && !all[j].duplicate()) children += all[j].dur_ns;
    }
    const bool device = analysis::WhereOfTrack(trace, s.track)[0] == 'd';
    Rows& rows = by_name[{trace.slice_name(s), device}];
    analysis::OpStatsRow& row = rows.row;
    if (row.count == 0) {
      row.name = trace.str(trace.slice_name(s));
      row.op_type = trace.str(trace.slice_op_type(s));
      row.where = device ? "device" : "host";
      row.kind = trace::SliceKindName(s.kind);
      row.min_ns = s.dur_ns;
      row.longest_slice = index;
    }
    if (s.dur_ns > row.max_ns || row.count == 0) row.longest_slice = index;
    ++row.count;
    row.total_ns += s.dur_ns;
    row.self_ns += std::max<int64_t>(0, s.dur_ns - children);
    row.min_ns = std::min(row.min_ns, s.dur_ns);
    row.max_ns = std::max(row.max_ns, s.dur_ns);
    rows.durations.push_back(s.dur_ns);
    sum += s.dur_ns;
  }
  std::vector<analysis::OpStatsRow> result;
  for (auto& [key, rows] : by_name) {
    analysis::OpStatsRow& row = rows.row;
    std::sort(rows.durations.begin(), rows.durations.end());
    row.mean_ns = static_cast<double>(row.total_ns) / static_cast<double>(row.count);
    row.p50_ns = analysis::Percentile(rows.durations, 0.5);
    row.p95_ns = analysis::Percentile(rows.durations, 0.95);
    row.share = sum > 0 ? static_cast<double>(row.total_ns) / static_cast<double>(sum) : 0;
    result.push_back(std::move(row));
  }
  std::sort(result.begin(), result.end(), [](const analysis::OpStatsRow& a, const analysis::OpStatsRow& b) {
    if (a.total_ns != b.total_ns) return a.total_ns > b.total_ns;
    return a.name < b.name;
  });
  return result;
}

}  // namespace stepscope::viewer
