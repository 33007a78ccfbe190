// The summary of one trace: source devices, busy time per device and stream, op types, copies,
// allocator peaks with the tensors live at them, and what the import repaired.
#include "profiler/analysis/summary.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <unordered_map>

#include "profiler/analysis/breakdowns.h"
#include "profiler/analysis/intervals.h"
#include "profiler/trace/slice_details.h"

namespace stepscope::analysis {

using trace::Slice;
using trace::SliceKind;
using trace::Trace;
using trace::TrackKind;

int64_t UnionLength(std::vector<std::pair<int64_t, int64_t>> intervals) { return UnionLengthInPlace(intervals); }

int64_t UnionLengthInPlace(std::span<std::pair<int64_t, int64_t>> intervals) {
  std::sort(intervals.begin(), intervals.end());
  UnionInStartOrder length;
  for (const auto& [start, end] : intervals) length.Add(start, end);
  return length.length();
}

namespace {

// Length of the union of the slices `keep` accepts on some tracks, each sorted by start, merged by
// start (a device's busy time in a 10^7-slice trace would otherwise gather 160 MB of intervals).
template <typename Keep>
int64_t UnionLengthOfTracks(const Trace& trace, const std::vector<uint32_t>& tracks, Keep keep) {
  std::vector<std::pair<const Slice*, const Slice*>> lanes;
  for (uint32_t t : tracks) {
    const auto lane = trace.track_slices(t);
    lanes.emplace_back(lane.data(), lane.data() + lane.size());
  }
  UnionInStartOrder busy;
  MergeByStart(std::move(lanes), [](const Slice& s) { return s.start_ns; }, [&](const Slice& s) {
    if (keep(s)) busy.Add(s.start_ns, s.end_ns());
  });
  return busy.length();
}

// Where a slice's op type is counted: "ops" (executor/host), "gpu" (kernels, memsets), "memcpy",
// "collective", "runtime"; an index into kWhereNames.
constexpr std::string_view kWhereNames[] = {"ops", "gpu", "memcpy", "collective", "runtime"};
uint32_t WhereOf(const Slice& slice) {
  switch (slice.kind) {
    case SliceKind::kKernel: return 1;
    case SliceKind::kMemcpy: return 2;
    case SliceKind::kMemset: return 1;
    case SliceKind::kCollective: return 3;
    case SliceKind::kRuntime: return 4;
    default: return 0;
  }
}

// Tensors from outputs with allocation descriptions; created at producer start, released at the
// last consumer's end (dataflow flows) or the producer's end, as TensorFlow's timeline does.
std::vector<std::pair<std::string, LiveTensor>> CollectTensors(const Trace& trace) {
  // A trace with no outputs would pay 8 bytes a slice for nothing (the last use below), at the
  // peak of `summary` on a big Kineto file.
  trace::DetailReader details(trace, trace::kDetailOutputs);
  if (!details.MayHave(trace::kDetailOutputs)) return {};
  std::vector<int64_t> last_use(trace.slices().size(), -1);
  for (const trace::Flow& flow : trace.flows()) {
    if (flow.kind != trace::FlowKind::kDataflow) continue;
    last_use[flow.from_slice] =
        std::max(last_use[flow.from_slice], trace.slices()[flow.to_slice].end_ns());
  }
  std::vector<std::pair<std::string, LiveTensor>> tensors;  // (allocator, tensor)
  for (uint32_t i = 0; i < trace.slices().size(); ++i) {
    const std::span<const trace::TensorOutput> outputs = details.Outputs(i);
    if (outputs.empty()) continue;
    const Slice& s = trace.slices()[i];
    for (const trace::TensorOutput& output : outputs) {
      if (!output.has_allocation) continue;
      LiveTensor tensor;
      tensor.name = output.TensorName();
      tensor.bytes = output.requested_bytes;
      tensor.producer_op = std::string(trace.str(trace.slice_op_type(s)));
      tensor.alloc_ns = s.start_ns;
      tensor.free_ns = std::max(s.end_ns(), last_use[i]);
      tensors.emplace_back(std::string(output.allocator), std::move(tensor));
    }
  }
  return tensors;
}

// Source devices, each device's busy time (ops and GPU streams apart) and the annotations.
void AddUsage(const Trace& trace, Summary& summary) {
  const auto& tracks = trace.tracks();
  const int64_t span = trace.span_end_ns() - trace.span_begin_ns();
  // Source devices: lanes grouped by the producer's name, in first-seen order.
  std::map<std::string, size_t> source_index;
  using Intervals = std::vector<std::pair<int64_t, int64_t>>;
  struct Busy {
    Intervals intervals;
    int64_t slices = 0;
  };
  // Work lanes are merged by start when the counting is done (UnionLengthOfTracks).
  struct Work {
    std::vector<uint32_t> tracks;
    int64_t slices = 0;
  };
  struct DeviceBusy : Work {
    bool gpu = false;
    std::map<uint32_t, Work> streams;  // by the stream's source lane
  };
  std::map<int32_t, DeviceBusy> busy_by_device;
  std::map<std::pair<uint32_t, std::string>, Busy> annotations;  // (source lane, kind)
  const std::vector<uint32_t> source_lane = SourceLanes(trace);
  for (uint32_t t = 0; t < tracks.size(); ++t) {
    const auto lane = trace.track_slices(t);
    if (lane.empty()) continue;
    const std::string name(trace.str(tracks[t].full_name));
    auto [it, inserted] = source_index.try_emplace(name, summary.devices.size());
    if (inserted) {
      summary.devices.push_back({name, std::string(trace::TrackKindName(tracks[t].kind)), 0, true});
    }
    SourceDeviceSummary& device = summary.devices[it->second];
    device.nodes += static_cast<int64_t>(lane.size());
    summary.nodes += static_cast<int64_t>(lane.size());
    int32_t physical = trace.DeviceOf(t);
    if (physical < 0) physical = static_cast<int32_t>(t);
    // Host-side op lanes and GPU stream lanes of one device are separate resources.
    const bool gpu = trace::IsGpuLane(tracks[t].kind);
    const int32_t usage_key = physical * 2 + (gpu ? 1 : 0);
    for (const Slice& s : lane) {
      if (s.duplicate()) continue;
      device.aggregate_duplicates = false;
      // Annotations and sync markers (and on a GPU anything but kernels, copies and memsets)
      // are not work: shown apart, never busy time.
      if (trace::IsAnnotationOrSync(s.kind) || (gpu && !trace::IsDeviceWork(s.kind))) {
        Busy& a = annotations[{source_lane[t], std::string(trace::SliceKindName(s.kind))}];
        a.intervals.emplace_back(s.start_ns, s.end_ns());
        ++a.slices;
        continue;
      }
      DeviceBusy& busy = busy_by_device[usage_key];
      if (busy.tracks.empty() || busy.tracks.back() != t) {
        busy.tracks.push_back(t);
        busy.gpu = gpu;
        if (gpu) busy.streams[source_lane[t]].tracks.push_back(t);
      }
      ++busy.slices;
      if (gpu) ++busy.streams[source_lane[t]].slices;
    }
  }
  // What the loop above counted as work.
  auto work = [](bool gpu) {
    return [gpu](const Slice& s) {
      return !s.duplicate() && !trace::IsAnnotationOrSync(s.kind) && !(gpu && !trace::IsDeviceWork(s.kind));
    };
  };
  auto share = [span](int64_t ns) { return span > 0 ? static_cast<double>(ns) / static_cast<double>(span) : 0.0; };
  for (auto& [key, busy] : busy_by_device) {
    DeviceUsage usage;
    usage.name = std::string(trace.str(tracks[key / 2].full_name));
    usage.lanes = key % 2 == 1 ? "gpu streams" : "ops";
    usage.slices = busy.slices;
    usage.busy_ns = UnionLengthOfTracks(trace, busy.tracks, work(busy.gpu));
    usage.utilisation = share(usage.busy_ns);
    for (auto& [stream, stream_busy] : busy.streams) {
      LaneUsage lane;
      lane.name = std::string(trace.str(tracks[stream].name));
      lane.slices = stream_busy.slices;
      lane.busy_ns = UnionLengthOfTracks(trace, stream_busy.tracks, work(true));
      lane.utilisation = share(lane.busy_ns);
      usage.streams.push_back(std::move(lane));
    }
    summary.usage.push_back(std::move(usage));
  }
  for (auto& [key, busy] : annotations) {
    summary.annotations.push_back({trace.TrackPath(key.first), key.second, busy.slices, UnionLength(std::move(busy.intervals))});
  }

}

// Time and count per op type, and the copies by kind.
void AddOpTypes(const Trace& trace, Summary& summary) {
  const auto& slices = trace.slices();
  // Counted by (where, op type id), named once per op type after: a big trace has millions of
  // slices and a few hundred op types.
  struct OpTypeCount {
    int64_t count = 0, total_ns = 0;
  };
  std::unordered_map<uint64_t, OpTypeCount> op_types;
  std::map<std::string, MemcpyStats> memcpy;
  trace::DetailReader copies(trace, trace::kDetailCopy);
  for (uint32_t i = 0; i < slices.size(); ++i) {
    const Slice& s = slices[i];
    if (s.duplicate() || trace::IsAnnotationOrSync(s.kind)) continue;
    OpTypeCount& stats = op_types[uint64_t{WhereOf(s)} << 32 | trace.slice_op_type(s)];
    ++stats.count;
    stats.total_ns += s.dur_ns;
    if (auto details = copies.Copy(i)) {
      MemcpyStats& m = memcpy[details->kind];
      m.kind = details->kind;
      ++m.count;
      m.bytes += details->bytes;
      m.total_ns += s.dur_ns;
      // Kineto rounds durations to 1 us; its per-copy bandwidth comes from the exact device time.
      if (details->bytes > 0 && details->bandwidth_gbps > 0) {
        m.transfer_ns += static_cast<double>(details->bytes) / details->bandwidth_gbps;
        ++m.rated;
      } else {
        m.transfer_ns += static_cast<double>(s.dur_ns);
      }
    }
  }
  for (const auto& [key, count] : op_types) {
    summary.op_types.push_back({std::string(trace.str(static_cast<trace::StringId>(key))),
                                std::string(kWhereNames[key >> 32]), count.count, count.total_ns});
  }
  // By time, ties in (where, op type) order.
  std::sort(summary.op_types.begin(), summary.op_types.end(), [](const OpTypeStats& a, const OpTypeStats& b) {
    if (a.total_ns != b.total_ns) return a.total_ns > b.total_ns;
    return std::tie(a.where, a.op_type) < std::tie(b.where, b.op_type);
  });
  for (auto& [kind, stats] : memcpy) summary.memcpy.push_back(stats);
  std::stable_sort(summary.memcpy.begin(), summary.memcpy.end(),
                   [](const MemcpyStats& a, const MemcpyStats& b) { return a.bytes > b.bytes; });

}

// Each counter's peak and the tensors live at it.
void AddAllocatorPeaks(const Trace& trace, const SummaryOptions& options, Summary& summary) {
  const auto tensors = CollectTensors(trace);
  for (const trace::CounterSeries& counter : trace.counters()) {
    if (counter.values.empty()) continue;
    AllocatorPeak peak;
    peak.allocator = std::string(trace.str(counter.name));
    peak.curve_origin = counter.origin;
    peak.samples = static_cast<int64_t>(counter.values.size());
    const auto max_it = std::max_element(counter.values.begin(), counter.values.end());
    peak.peak_bytes = *max_it;
    peak.peak_ns = counter.ts_ns[static_cast<size_t>(max_it - counter.values.begin())];
    for (const auto& [allocator, tensor] : tensors) {
      if (allocator == peak.allocator && tensor.alloc_ns <= peak.peak_ns &&
          peak.peak_ns <= tensor.free_ns) {
        peak.live_at_peak.push_back(tensor);
      }
    }
    peak.live_tensors_total = static_cast<int64_t>(peak.live_at_peak.size());
    std::stable_sort(peak.live_at_peak.begin(), peak.live_at_peak.end(),
                     [](const LiveTensor& a, const LiveTensor& b) { return a.bytes > b.bytes; });
    if (peak.live_at_peak.size() > options.live_tensors) peak.live_at_peak.resize(options.live_tensors);
    summary.allocators.push_back(std::move(peak));
  }
  std::stable_sort(summary.allocators.begin(), summary.allocators.end(),
                   [](const AllocatorPeak& a, const AllocatorPeak& b) { return a.peak_bytes > b.peak_bytes; });
}

}  // namespace

Summary Summarize(const Trace& trace, const SummaryOptions& options) {
  Summary summary;
  summary.source = trace.source_path();
  summary.format = std::string(trace::SourceFormatName(trace.source_format()));
  summary.epoch_ns = trace.epoch_ns();
  summary.unix_clock = trace.clock_is_unix_time();
  summary.span_begin_ns = trace.span_begin_ns();
  summary.span_end_ns = trace.span_end_ns();
  summary.step = trace.step_info();

  AddUsage(trace, summary);
  AddOpTypes(trace, summary);
  AddAllocatorPeaks(trace, options, summary);
  for (const auto& [name, count] : trace.import_stats().counts()) {
    summary.import_stats.emplace_back(name, count);
  }
  return summary;
}

}  // namespace stepscope::analysis
