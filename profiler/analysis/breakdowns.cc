// Breakdowns of one trace by resource: kernels with their launch geometry, copies by kind and
// memory, per-stream busy time and idle gaps.
#include "profiler/analysis/breakdowns.h"

#include <algorithm>
#include <map>
#include <unordered_map>

#include "base/largest_n.h"
#include "profiler/trace/slice_details.h"

namespace stepscope::analysis {

using trace::Slice;
using trace::SliceKind;
using trace::Trace;
using trace::TrackKind;

std::vector<std::pair<int64_t, int64_t>> MergeIntervals(std::vector<std::pair<int64_t, int64_t>> intervals) {
  std::sort(intervals.begin(), intervals.end());
  std::vector<std::pair<int64_t, int64_t>> merged;
  for (const auto& [start, end] : intervals) {
    if (end <= start) continue;
    if (!merged.empty() && start <= merged.back().second) {
      merged.back().second = std::max(merged.back().second, end);
    } else {
      merged.emplace_back(start, end);
    }
  }
  return merged;
}

// ---- kernels ---------------------------------------------------------------------------------

bool IsCommunicationKernel(std::string_view name) {
  // "nccl" in any case in the first 64 characters, without a lowercased copy: several analyses
  // ask it of every kernel. c | 0x20 is c's lower case for a letter, and equals 'n', 'c' or 'l'
  // only for that letter in either case.
  name = name.substr(0, 64);
  auto is = [](char c, char lower) { return static_cast<char>(c | 0x20) == lower; };
  for (size_t i = 0; i + 4 <= name.size(); ++i) {
    if (is(name[i], 'n') && is(name[i + 1], 'c') && is(name[i + 2], 'c') && is(name[i + 3], 'l')) return true;
  }
  return false;
}

std::vector<uint32_t> SourceLanes(const Trace& trace) {
  const auto& tracks = trace.tracks();
  std::map<std::tuple<int32_t, trace::StringId, TrackKind, int64_t>, uint32_t> first;
  std::vector<uint32_t> source(tracks.size());
  for (uint32_t t = 0; t < tracks.size(); ++t) {
    // Lane 0 comes first: overlap lanes are appended by TraceBuilder::Build.
    auto [it, inserted] = first.try_emplace({tracks[t].parent, tracks[t].full_name, tracks[t].kind, tracks[t].thread_id}, t);
    source[t] = tracks[t].lane > 0 ? it->second : t;
  }
  return source;
}

KernelStats ComputeKernelStats(const Trace& trace) {
  KernelStats stats;
  struct Acc {
    KernelRow row;
    bool geometry_seen = false;
  };
  std::vector<Acc> rows;
  std::unordered_map<trace::StringId, size_t> index;
  std::map<uint32_t, KernelStream> streams;  // by the stream's source track
  const auto& slices = trace.slices();
  const std::vector<uint32_t> source_lane = SourceLanes(trace);
  trace::DetailReader details(trace, trace::kDetailKernel);
  for (uint32_t i = 0; i < slices.size(); ++i) {
    const Slice& s = slices[i];
    if (s.kind != SliceKind::kKernel || s.duplicate()) continue;
    auto [it, inserted] = index.try_emplace(trace.slice_name(s), rows.size());
    if (inserted) {
      rows.emplace_back();
      rows.back().row.name = std::string(trace.str(trace.slice_name(s)));
      rows.back().row.op_type = std::string(trace.str(trace.slice_op_type(s)));
      rows.back().row.min_ns = s.dur_ns;
      rows.back().row.communication = IsCommunicationKernel(rows.back().row.name);
    }
    Acc& acc = rows[it->second];
    KernelRow& row = acc.row;
    ++row.launches;
    row.total_ns += s.dur_ns;
    row.min_ns = std::min(row.min_ns, s.dur_ns);
    row.max_ns = std::max(row.max_ns, s.dur_ns);
    const trace::LaunchGeometry geometry = details.Geometry(i);
    if (!acc.geometry_seen) {
      row.grid = geometry.grid;
      row.block = geometry.block;
      row.registers = geometry.registers;
      acc.geometry_seen = true;
    } else {
      if (row.grid != geometry.grid) row.grid = "varied";
      if (row.block != geometry.block) row.block = "varied";
      if (row.registers != geometry.registers) row.registers = "varied";
    }
    // Overlap lanes of a stream ("stream:7 #2") count with their stream.
    const uint32_t stream = source_lane[s.track];
    KernelStream& k = streams[stream];
    if (k.stream.empty()) k.stream = trace.TrackPath(stream);
    ++k.launches;
    k.total_ns += s.dur_ns;
    ++stats.launches;
    stats.total_ns += s.dur_ns;
  }
  for (Acc& acc : rows) {
    acc.row.mean_ns = static_cast<double>(acc.row.total_ns) / static_cast<double>(acc.row.launches);
    acc.row.share = stats.total_ns > 0 ? static_cast<double>(acc.row.total_ns) / static_cast<double>(stats.total_ns) : 0;
    stats.kernels.push_back(std::move(acc.row));
  }
  std::sort(stats.kernels.begin(), stats.kernels.end(), [](const KernelRow& a, const KernelRow& b) {
    return a.total_ns != b.total_ns ? a.total_ns > b.total_ns : a.name < b.name;
  });
  for (auto& [track, k] : streams) {
    k.share = stats.total_ns > 0 ? static_cast<double>(k.total_ns) / static_cast<double>(stats.total_ns) : 0;
    stats.streams.push_back(std::move(k));
  }
  std::stable_sort(stats.streams.begin(), stats.streams.end(),
                   [](const KernelStream& a, const KernelStream& b) { return a.total_ns > b.total_ns; });
  return stats;
}

// ---- memcpy ----------------------------------------------------------------------------------

MemcpyBreakdown ComputeMemcpyStats(const Trace& trace) {
  MemcpyBreakdown stats;
  stats.span_ns = trace.span_end_ns() - trace.span_begin_ns();
  std::map<std::pair<std::string, std::string>, MemcpyRow> rows;
  std::map<std::pair<std::string, std::string>, std::pair<int64_t, double>> timed_bytes;  // bytes, ns
  const auto& slices = trace.slices();
  trace::DetailReader details(trace, trace::kDetailCopy);
  for (uint32_t i = 0; i < slices.size(); ++i) {
    const Slice& s = slices[i];
    if (s.kind != SliceKind::kMemcpy || s.duplicate()) continue;
    std::string kind, memory;
    int64_t bytes = 0;
    double bandwidth = -1;
    if (auto recorded = details.Copy(i)) {
      kind = recorded->kind;
      bytes = recorded->bytes;
      bandwidth = recorded->bandwidth_gbps;
      if (!recorded->src_memory.empty()) memory = recorded->src_memory + " to " + recorded->dst_memory;
    } else {
      CopyName copy = ParseCopyName(trace.str(trace.slice_name(s)));
      if (copy.kind.empty()) copy = ParseCopyName(trace.str(trace.slice_op_type(s)));
      kind = copy.kind.empty() ? "unknown" : copy.kind;
      if (!copy.src_memory.empty()) memory = copy.src_memory + " to " + copy.dst_memory;
    }
    MemcpyRow& row = rows[{kind, memory}];
    row.kind = kind;
    row.memory = memory;
    ++row.count;
    row.bytes += bytes;
    row.total_ns += s.dur_ns;
    if (bytes > 0) {
      // Kineto rounds durations to 1 us; its per-copy bandwidth comes from the exact device time.
      auto& tb = timed_bytes[{kind, memory}];
      tb.first += bytes;
      if (bandwidth > 0) {
        tb.second += static_cast<double>(bytes) / bandwidth;
        ++row.rated;
      } else {
        tb.second += static_cast<double>(s.dur_ns);
      }
    } else {
      ++stats.without_bytes;
      ++row.without_bytes;
    }
    ++stats.count;
    stats.bytes += bytes;
    stats.total_ns += s.dur_ns;
  }
  for (auto& [key, row] : rows) {
    const auto& tb = timed_bytes[key];
    row.bandwidth_gbps = tb.second > 0 ? static_cast<double>(tb.first) / tb.second : 0;
    const int64_t with_bytes = row.count - row.without_bytes;
    row.bandwidth_from = with_bytes == 0 ? "" : row.rated == 0 ? "durations" : row.rated == with_bytes ? "bandwidth_args" : "mixed";
    row.step_share = stats.span_ns > 0 ? static_cast<double>(row.total_ns) / static_cast<double>(stats.span_ns) : 0;
    stats.rows.push_back(row);
  }
  std::stable_sort(stats.rows.begin(), stats.rows.end(),
                   [](const MemcpyRow& a, const MemcpyRow& b) { return a.total_ns > b.total_ns; });
  return stats;
}

// ---- streams ---------------------------------------------------------------------------------

StreamStats ComputeStreamStats(const Trace& trace, size_t gaps) {
  StreamStats stats;
  stats.span_begin_ns = trace.span_begin_ns();
  stats.span_ns = trace.span_end_ns() - trace.span_begin_ns();
  const auto& tracks = trace.tracks();
  // A lane > 0 joins the lane-0 track of the same source.
  const std::vector<uint32_t> source_lane = SourceLanes(trace);
  std::map<uint32_t, size_t> group_of;
  std::vector<std::vector<uint32_t>> groups;
  for (uint32_t t = 0; t < tracks.size(); ++t) {
    if (trace.track_slices(t).empty()) continue;
    auto [it, inserted] = group_of.try_emplace(source_lane[t], groups.size());
    if (inserted) groups.emplace_back();
    groups[it->second].push_back(t);
  }
  const auto& slices = trace.slices();
  // One row from a lane's slices of one content: its busy runs, idle gaps and utilisation.
  auto add_row = [&](const std::vector<uint32_t>& group, std::vector<uint32_t>& members, std::string_view content) {
    std::sort(members.begin(), members.end(), [&](uint32_t a, uint32_t b) {
      return slices[a].start_ns != slices[b].start_ns ? slices[a].start_ns < slices[b].start_ns : a < b;
    });
    const trace::Track& source = tracks[group.front()];
    StreamUsage usage;
    const int32_t device = trace.DeviceOf(group.front());
    usage.device = device >= 0 ? trace.TrackPath(static_cast<uint32_t>(device))
                               : (source.parent >= 0 ? trace.TrackPath(static_cast<uint32_t>(source.parent)) : "");
    usage.stream = std::string(trace.str(source.name));
    usage.kind = std::string(trace::TrackKindName(source.kind));
    usage.content = std::string(content);
    usage.slices = static_cast<int64_t>(members.size());
    // Busy runs as the slices pass in start order; of the gaps between them (a stream of millions
    // of kernels has millions) only the largest are kept.
    struct Gap {
      int64_t begin, end;
      int64_t before, after;  // slice indices, -1 at the trace's ends
    };
    auto longer = [](const Gap& a, const Gap& b) { return a.end - a.begin > b.end - b.begin; };
    LargestN<Gap, decltype(longer)> largest(gaps, longer);
    auto offer = [&](int64_t begin, int64_t end, int64_t before, int64_t after) {
      largest.Offer({begin, end, before, after});
    };
    int64_t run_start = 0, run_end = 0;
    uint32_t run_last = 0;
    for (size_t k = 0; k < members.size(); ++k) {
      const uint32_t i = members[k];
      const Slice& s = slices[i];
      if (k > 0 && s.start_ns <= run_end) {
        if (s.end_ns() > run_end) {
          run_end = s.end_ns();
          run_last = i;
        }
        continue;
      }
      if (k == 0) {
        usage.first_ns = s.start_ns;
        if (s.start_ns > trace.span_begin_ns()) offer(trace.span_begin_ns(), s.start_ns, -1, i);
      } else {
        usage.busy_ns += run_end - run_start;
        offer(run_end, s.start_ns, run_last, i);
      }
      run_start = s.start_ns;
      run_end = s.end_ns();
      run_last = i;
    }
    usage.busy_ns += run_end - run_start;
    usage.last_ns = run_end;
    usage.idle_ns = stats.span_ns - usage.busy_ns;
    usage.utilisation = stats.span_ns > 0 ? static_cast<double>(usage.busy_ns) / static_cast<double>(stats.span_ns) : 0;
    if (run_end < trace.span_end_ns()) offer(run_end, trace.span_end_ns(), run_last, -1);
    auto name = [&](int64_t i) {
      return i < 0 ? std::string() : std::string(trace.str(trace.slice_name(slices[static_cast<size_t>(i)])));
    };
    for (const Gap& gap : largest.TakeSorted()) usage.largest_gaps.push_back({gap.begin, gap.end, name(gap.before), name(gap.after)});
    stats.streams.push_back(std::move(usage));
  };
  for (const auto& group : groups) {
    // Work on a GPU stream is kernels, copies and memsets; on other lanes every slice but
    // annotations and sync markers. Those get rows of their own, never counted as busy.
    const TrackKind lane_kind = tracks[group.front()].kind;
    const bool gpu = trace::IsGpuLane(lane_kind);
    std::vector<uint32_t> work, annotations, syncs, other;
    // Counted first, then gathered into lists of exactly that size: a host thread of tens of
    // millions of slices grew its list by copies (the peak of `streams` on big traces).
    auto list_of = [&](const Slice& s) -> std::vector<uint32_t>* {
      if (s.duplicate()) return nullptr;
      if (s.kind == SliceKind::kAnnotation || s.kind == SliceKind::kPythonFrame) return &annotations;
      if (s.kind == SliceKind::kSync) return &syncs;
      if (gpu && !trace::IsDeviceWork(s.kind)) return &other;
      return &work;
    };
    size_t counts[4] = {0, 0, 0, 0};
    std::vector<uint32_t>* const lists[4] = {&work, &annotations, &syncs, &other};
    for (uint32_t t : group) {
      for (const Slice& s : trace.track_slices(t)) {
        if (std::vector<uint32_t>* list = list_of(s)) ++counts[std::find(lists, lists + 4, list) - lists];
      }
    }
    for (int l = 0; l < 4; ++l) lists[l]->reserve(counts[l]);
    for (uint32_t t : group) {
      const uint32_t first = trace.track_first_slice(t);
      const auto lane = trace.track_slices(t);
      for (uint32_t k = 0; k < lane.size(); ++k) {
        if (std::vector<uint32_t>* list = list_of(lane[k])) list->push_back(first + k);
      }
    }
    // An aggregate lane that only repeats others has nothing left.
    if (!work.empty()) add_row(group, work, "work");
    if (!annotations.empty()) add_row(group, annotations, "annotation");
    if (!syncs.empty()) add_row(group, syncs, "sync");
    if (!other.empty()) add_row(group, other, "other");
  }
  return stats;
}

}  // namespace stepscope::analysis
