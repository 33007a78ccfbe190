// Per-op-type and per-node statistics over a trace or a window (op_stats.h).
#include "profiler/analysis/op_stats.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <optional>
#include <span>
#include <unordered_map>

#include "base/largest_n.h"
#include "profiler/analysis/breakdowns.h"
#include "profiler/analysis/duration_list.h"
#include "profiler/analysis/intervals.h"

namespace stepscope::analysis {

using trace::Slice;
using trace::Trace;

const char* WhereOfTrack(const Trace& trace, uint32_t track) {
  return trace::IsGpuLane(trace.tracks()[track].kind) ? "device" : "host";
}

double Percentile(const std::vector<int64_t>& sorted, double fraction) {
  if (sorted.empty()) return 0;
  const double position = fraction * static_cast<double>(sorted.size() - 1);
  const size_t below = static_cast<size_t>(position);
  if (below + 1 >= sorted.size()) return static_cast<double>(sorted.back());
  const double weight = position - static_cast<double>(below);
  return static_cast<double>(sorted[below]) * (1 - weight) + static_cast<double>(sorted[below + 1]) * weight;
}

namespace {

// Totals of durations saturate: each duration fits in 2^62 ns, a sum of many need not.
int64_t SaturatingAdd(int64_t a, int64_t b) {
  int64_t sum = 0;
  if (!__builtin_add_overflow(a, b, &sum)) return sum;
  return b < 0 ? std::numeric_limits<int64_t>::min() : std::numeric_limits<int64_t>::max();
}

// Tracks to count: the listed ones and every track below them.
std::vector<char> SelectTracks(const Trace& trace, const std::vector<uint32_t>& wanted) {
  const auto& tracks = trace.tracks();
  std::vector<char> selected(tracks.size(), wanted.empty() ? 1 : 0);
  for (uint32_t t : wanted) {
    if (t < tracks.size()) selected[t] = 1;
  }
  if (wanted.empty()) return selected;
  // Parents precede children (AddTrack requires it), so one forward pass propagates.
  for (size_t t = 0; t < tracks.size(); ++t) {
    if (tracks[t].parent >= 0 && selected[static_cast<size_t>(tracks[t].parent)]) selected[t] = 1;
  }
  return selected;
}

struct Accumulator {
  std::string_view name;
  trace::StringId op_type = 0;
  const char* where = "host";
  trace::SliceKind kind = trace::SliceKind::kOp;
  int64_t count = 0, total = 0, self = 0;
  DurationList durations;
  // An op type's row and a name's row that have counted the same slices share the name row's
  // list (Kineto names every slice by its op type: the two lists were each slice's duration
  // twice, the peak of `ops` on big traces). A type row's: the name row whose list it uses.
  int32_t shares_with = -1;
  int32_t shared_by = -1;  // a name row's: the type row using its list
  uint32_t longest = 0;
  int64_t longest_ns = -1;
  // The statistics of its list, read once (a type row sharing this list reads them here).
  std::optional<MergedStats> list_stats;
};

struct KeyHash {
  size_t operator()(const std::pair<trace::StringId, bool>& key) const {
    return std::hash<uint64_t>()((static_cast<uint64_t>(key.first) << 1) | (key.second ? 1u : 0u));
  }
};

// `lists`: the rows whose lists accumulators share (shares_with), if any.
std::vector<OpStatsRow> Finish(const Trace& trace, std::vector<Accumulator>& accumulators,
                               int64_t window_ns, std::vector<Accumulator>* lists = nullptr) {
  std::vector<OpStatsRow> rows;
  rows.reserve(accumulators.size());
  for (Accumulator& a : accumulators) {
    Accumulator& owner = a.shares_with >= 0 ? (*lists)[static_cast<size_t>(a.shares_with)] : a;
    if (!owner.list_stats) {
      owner.durations.Sort();
      owner.list_stats = StatsOfSorted({&owner.durations});
    }
    const MergedStats& stats = *owner.list_stats;
    OpStatsRow row;
    row.name = std::string(a.name);
    row.op_type = std::string(trace.str(a.op_type));
    row.where = a.where;
    row.kind = std::string(trace::SliceKindName(a.kind));
    row.count = a.count;
    row.total_ns = a.total;
    row.self_ns = a.self;
    row.min_ns = stats.min_ns;
    row.max_ns = stats.max_ns;
    row.mean_ns = static_cast<double>(a.total) / static_cast<double>(row.count);
    row.p50_ns = stats.p50_ns;
    row.p95_ns = stats.p95_ns;
    row.share = window_ns > 0 ? static_cast<double>(a.total) / static_cast<double>(window_ns) : 0;
    row.longest_slice = a.longest;
    rows.push_back(std::move(row));
  }
  std::sort(rows.begin(), rows.end(), [](const OpStatsRow& x, const OpStatsRow& y) {
    if (x.total_ns != y.total_ns) return x.total_ns > y.total_ns;
    if (x.name != y.name) return x.name < y.name;
    return x.where < y.where;
  });
  return rows;
}

// A track's slices by index, [first, first + n): walked in place, with no list of them.
struct IndexIterator {
  uint32_t index = 0;
  uint32_t operator*() const { return index; }
  IndexIterator& operator++() {
    ++index;
    return *this;
  }
  bool operator==(const IndexIterator&) const = default;
};

// The union, clipped to [begin, end], of the counted slices (the totals' slices: no duplicate,
// annotation or sync marker) of some lanes, each range in its lane's start order: merged by
// start across the lanes, so nothing is gathered per slice.
template <typename Iterator>
int64_t BusyOf(const Trace& trace, std::vector<std::pair<Iterator, Iterator>> lanes, int64_t begin, int64_t end) {
  const auto& slices = trace.slices();
  UnionInStartOrder busy;
  MergeByStart(std::move(lanes), [&](uint32_t i) { return slices[i].start_ns; }, [&](uint32_t i) {
    const Slice& s = slices[i];
    if (s.duplicate() || trace::IsAnnotationOrSync(s.kind)) return;
    const int64_t clip_start = std::max(s.start_ns, begin), clip_end = std::min(s.end_ns(), end);
    if (clip_end > clip_start) busy.Add(clip_start, clip_end);  // clipped starts keep start order
  });
  return busy.length();
}

// A source lane and its overlap lanes, walked together so that a child TraceBuilder moved to an
// overlap lane (it overhangs its parent's end) still takes its part from its parent's self time;
// the selected tracks with slices only, the source lane first.
std::vector<std::vector<uint32_t>> LaneGroups(const Trace& trace, const std::vector<char>& selected) {
  const std::vector<uint32_t> source_lane = SourceLanes(trace);
  std::vector<std::vector<uint32_t>> groups;
  std::unordered_map<uint32_t, size_t> group_of;
  for (uint32_t t = 0; t < trace.tracks().size(); ++t) {
    if (!selected[t] || trace.track_slices(t).empty()) continue;
    auto [it, inserted] = group_of.try_emplace(source_lane[t], groups.size());
    if (inserted) groups.emplace_back();
    groups[it->second].push_back(t);
  }
  return groups;
}

// The slices of a group of lanes in the order they are walked (by start, the longer first at equal
// starts), in `order`; with `windows`, only those that may reach into [begin, end].
void WalkOrder(const Trace& trace, const std::vector<uint32_t>& group, const SliceWindows* windows, int64_t begin,
               int64_t end, std::vector<uint32_t>& order) {
  const auto& slices = trace.slices();
  order.clear();
  if (windows == nullptr) {
    size_t count = 0;
    for (uint32_t member : group) count += trace.track_slices(member).size();
    order.reserve(count);
  }
  for (uint32_t member : group) {
    if (windows != nullptr) {
      windows->Collect(member, begin, end, order);
      continue;
    }
    const uint32_t first = trace.track_first_slice(member);
    for (uint32_t k = 0; k < trace.track_slices(member).size(); ++k) order.push_back(first + k);
  }
  if (group.size() > 1) {
    std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
      if (slices[a].start_ns != slices[b].start_ns) return slices[a].start_ns < slices[b].start_ns;
      if (slices[a].dur_ns != slices[b].dur_ns) return slices[a].dur_ns > slices[b].dur_ns;
      return a < b;
    });
  }
}

// The busy time of one side (host or device) in [begin, end]: the union of its selected lanes'
// counted slices.
int64_t BusyOfSide(const Trace& trace, const std::vector<char>& selected, bool device, const SliceWindows* windows,
                   int64_t begin, int64_t end) {
  const auto& tracks = trace.tracks();
  if (windows != nullptr) {
    std::vector<std::vector<uint32_t>> collected;
    for (uint32_t t = 0; t < tracks.size(); ++t) {
      if (!selected[t] || (WhereOfTrack(trace, t)[0] == 'd') != device) continue;
      collected.emplace_back();
      windows->Collect(t, begin, end, collected.back());
    }
    std::vector<std::pair<const uint32_t*, const uint32_t*>> lanes;
    for (const auto& c : collected) lanes.emplace_back(c.data(), c.data() + c.size());
    return BusyOf(trace, std::move(lanes), begin, end);
  }
  std::vector<std::pair<IndexIterator, IndexIterator>> lanes;
  for (uint32_t t = 0; t < tracks.size(); ++t) {
    if (!selected[t] || (WhereOfTrack(trace, t)[0] == 'd') != device) continue;
    const std::span<const Slice> lane = trace.track_slices(t);
    // Past the window's end nothing counts.
    const auto past = std::upper_bound(lane.begin(), lane.end(), end,
                                       [](int64_t time, const Slice& s) { return time < s.start_ns; });
    const uint32_t first = trace.track_first_slice(t);
    lanes.emplace_back(IndexIterator{first}, IndexIterator{first + static_cast<uint32_t>(past - lane.begin())});
  }
  return BusyOf(trace, std::move(lanes), begin, end);
}

}  // namespace

SliceWindows::SliceWindows(const Trace& trace) : trace_(trace), tracks_(trace.tracks().size()) {
  // Up to this many slices per track are listed apart: enough for the spans that enclose a whole
  // trace or a phase of it, few enough to add to every window.
  constexpr size_t kLongest = 16;
  for (uint32_t t = 0; t < tracks_.size(); ++t) {
    const std::span<const Slice> slices = trace.track_slices(t);
    if (slices.empty()) continue;
    // The kLongest-th longest duration bounds every slice not listed (the longest of a track of
    // fewer). Kept in a bounded heap: a copy of a big track's durations was the peak of `steps`.
    LargestN<int64_t, std::greater<>> longest(kLongest, std::greater<>());
    for (const Slice& s : slices) longest.Offer(s.dur_ns);
    const std::vector<int64_t> durations = longest.TakeSorted();
    Track& track = tracks_[t];
    if (slices.size() <= kLongest) {
      track.bound_ns = durations.front();
      continue;
    }
    track.bound_ns = durations[kLongest - 1];
    const uint32_t first = trace.track_first_slice(t);
    for (uint32_t k = 0; k < slices.size(); ++k) {
      if (slices[k].dur_ns > track.bound_ns) track.long_slices.push_back(first + k);
    }
  }
}

void SliceWindows::Collect(uint32_t track, int64_t begin, int64_t end, std::vector<uint32_t>& out) const {
  const std::span<const Slice> slices = trace_.track_slices(track);
  const uint32_t first = trace_.track_first_slice(track);
  const Track& bounds = tracks_[track];
  const int64_t from = begin < std::numeric_limits<int64_t>::min() + bounds.bound_ns ? std::numeric_limits<int64_t>::min()
                                                                                      : begin - bounds.bound_ns;
  auto by_start = [](const Slice& s, int64_t t) { return s.start_ns < t; };
  const auto lo = std::lower_bound(slices.begin(), slices.end(), from, by_start);
  const auto hi = std::upper_bound(lo, slices.end(), end, [](int64_t t, const Slice& s) { return t < s.start_ns; });
  // The long slices that start before the searched range come first (they start earlier).
  const uint32_t lo_index = first + static_cast<uint32_t>(lo - slices.begin());
  for (uint32_t index : bounds.long_slices) {
    if (index >= lo_index) break;
    if (trace_.slices()[index].end_ns() >= begin) out.push_back(index);
  }
  for (auto it = lo; it != hi; ++it) out.push_back(first + static_cast<uint32_t>(it - slices.begin()));
}

OpStats ComputeOpStats(const Trace& trace, const OpStatsOptions& options) {
  OpStats stats;
  const auto& tracks = trace.tracks();
  const auto& slices = trace.slices();
  const int64_t begin = std::max(options.begin_ns, trace.span_begin_ns());
  const int64_t end = std::min(options.end_ns, trace.span_end_ns());
  stats.window_begin_ns = begin;
  stats.window_ns = end > begin ? end - begin : 0;
  if (slices.empty() || end < begin) return stats;
  const std::vector<char> selected = SelectTracks(trace, options.tracks);

  std::vector<Accumulator> by_type, by_node, annotations;
  std::unordered_map<std::pair<trace::StringId, bool>, uint32_t, KeyHash> type_index, node_index, annotation_index;
  auto slot = [](std::vector<Accumulator>& rows, auto& index, trace::StringId id, bool device) {
    auto [it, inserted] = index.try_emplace({id, device}, static_cast<uint32_t>(rows.size()));
    if (inserted) rows.emplace_back();
    return it->second;
  };

  struct Open {
    int64_t end;
    uint32_t type_row, node_row;
  };
  std::vector<Open> open;
  std::vector<uint32_t> order;
  for (const std::vector<uint32_t>& group : LaneGroups(trace, selected)) {
    const uint32_t t = group.front();
    const bool device = WhereOfTrack(trace, t)[0] == 'd';
    const bool nesting = !tracks[t].concurrent;
    open.clear();
    // A lone track's slices are walked where they lie, already in this order: a list of them was
    // 4 bytes a slice of the largest host thread at the peak of `ops` on big traces.
    const bool whole_track = options.windows == nullptr && group.size() == 1;
    if (!whole_track) WalkOrder(trace, group, options.windows, begin, end, order);
    const uint32_t track_first = trace.track_first_slice(t);
    const size_t walk_size = whole_track ? trace.track_slices(t).size() : order.size();
    // Slices are sorted by start: past the window's end nothing more can count.
    for (size_t position = 0; position < walk_size; ++position) {
      const uint32_t index = whole_track ? track_first + static_cast<uint32_t>(position) : order[position];
      const Slice& s = slices[index];
      if (s.start_ns > end) break;
      if (s.duplicate()) continue;
      const int64_t clip_start = std::max(s.start_ns, begin);
      const int64_t clip_end = std::min(s.end_ns(), end);
      // A zero-length slice counts when it lies in the closed window (so one at the very end of
      // the trace is not lost); a longer one when a positive part of it does.
      const bool inside = s.dur_ns == 0 ? s.start_ns >= begin : clip_end > clip_start;
      if (nesting) {
        while (!open.empty() && open.back().end <= s.start_ns) open.pop_back();
      }
      if (!inside) continue;
      const int64_t clipped = std::max<int64_t>(0, clip_end - clip_start);
      // Annotations (the profiler's span, steps, user annotations) and sync markers only enclose
      // or mark work: listed apart, never an op, a parent in self time or part of the totals.
      // One more slice for a row: its first slice names it.
      const trace::SliceLabel& label = trace.labels()[s.label];
      // The row's figures; its list is added to by the caller.
      auto record = [&](Accumulator& a, trace::StringId row_name) {
        if (a.count++ == 0) {
          a.name = trace.str(row_name);
          a.op_type = label.op_type;
          a.where = device ? "device" : "host";
          a.kind = s.kind;
        }
        a.total = SaturatingAdd(a.total, clipped);
        a.self = SaturatingAdd(a.self, clipped);
        if (clipped > a.longest_ns) {
          a.longest_ns = clipped;
          a.longest = index;
        }
      };
      if (trace::IsAnnotationOrSync(s.kind)) {
        Accumulator& row = annotations[slot(annotations, annotation_index, label.name, device)];
        record(row, label.name);
        row.durations.Add(clipped);
        continue;
      }
      const uint32_t type_row = slot(by_type, type_index, label.op_type, device);
      const uint32_t node_row = slot(by_node, node_index, label.name, device);
      Accumulator& type = by_type[type_row];
      Accumulator& node = by_node[node_row];
      // Two new rows start sharing; a row that meets another partner takes a copy of the shared
      // list (what both had counted until then) and the two part.
      auto part = [&](Accumulator& type_sharing) {
        Accumulator& lender = by_node[static_cast<size_t>(type_sharing.shares_with)];
        type_sharing.durations.CopyFrom(lender.durations);
        type_sharing.shares_with = -1;
        lender.shared_by = -1;
      };
      if (type.count == 0 && node.count == 0) {
        type.shares_with = static_cast<int32_t>(node_row);
        node.shared_by = static_cast<int32_t>(type_row);
      } else {
        if (type.shares_with >= 0 && type.shares_with != static_cast<int32_t>(node_row)) part(type);
        if (node.shared_by >= 0 && node.shared_by != static_cast<int32_t>(type_row)) {
          part(by_type[static_cast<size_t>(node.shared_by)]);
        }
      }
      record(type, label.op_type);
      record(node, label.name);
      node.durations.Add(clipped);
      if (type.shares_with < 0) type.durations.Add(clipped);
      // The parent loses the part of the child inside it (all of it unless the child overhangs).
      if (nesting && !open.empty()) {
        const int64_t inner = std::min(clip_end, open.back().end) - clip_start;
        if (inner > 0) {
          by_type[open.back().type_row].self = SaturatingAdd(by_type[open.back().type_row].self, -inner);
          by_node[open.back().node_row].self = SaturatingAdd(by_node[open.back().node_row].self, -inner);
        }
      }
      if (nesting) open.push_back({s.end_ns(), type_row, node_row});
      ++stats.slices;
      (device ? stats.device_total_ns : stats.host_total_ns) += clipped;
    }
  }
  // Busy per side, over every selected lane at once (threads and streams overlap in time).
  stats.host_busy_ns = BusyOfSide(trace, selected, /*device=*/false, options.windows, begin, end);
  stats.device_busy_ns = BusyOfSide(trace, selected, /*device=*/true, options.windows, begin, end);
  stats.by_op_type = Finish(trace, by_type, stats.window_ns, &by_node);
  stats.by_node = Finish(trace, by_node, stats.window_ns);
  stats.annotations = Finish(trace, annotations, stats.window_ns);
  return stats;
}

}  // namespace stepscope::analysis
