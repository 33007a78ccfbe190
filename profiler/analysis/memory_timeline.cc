#include "profiler/analysis/memory_timeline.h"

#include <algorithm>
#include <map>
#include <set>

#include "profiler/trace/node_store.h"
#include "stepscope/tf/run_metadata.pb.h"

namespace stepscope::analysis {

using trace::Slice;
using trace::Trace;

std::vector<LiveTensor> TensorsFromOutputs(const Trace& trace) {
  std::vector<LiveTensor> tensors;
  if (!trace.has_step_stats()) return tensors;
  const auto& slices = trace.slices();
  // A tensor is released when its last consumer ends (dataflow flows), at the earliest when its
  // producer ends.
  std::vector<int64_t> last_use(slices.size(), -1);
  for (const trace::Flow& flow : trace.flows()) {
    if (flow.kind != trace::FlowKind::kDataflow) continue;
    last_use[flow.from_slice] = std::max(last_use[flow.from_slice], slices[flow.to_slice].end_ns());
  }
  trace::NodeReader nodes(trace, trace::kNodeOutputs);
  for (uint32_t i = 0; i < slices.size(); ++i) {
    const tf::NodeExecStats* node = nodes.Get(i);
    if (node == nullptr || node->output_size() == 0) continue;
    const Slice& s = slices[i];
    if (s.duplicate()) continue;
    for (int k = 0; k < node->output_size(); ++k) {
      const auto& description = node->output(k).tensor_description();
      if (!description.has_allocation_description()) continue;
      const auto& allocation = description.allocation_description();
      LiveTensor tensor;
      tensor.name = k == 0 ? node->node_name() : node->node_name() + ":" + std::to_string(k);
      tensor.bytes = allocation.requested_bytes();
      tensor.allocated_bytes = allocation.allocated_bytes();
      tensor.allocator = allocation.allocator_name();
      tensor.producer_op = std::string(trace.str(trace.slice_op_type(s)));
      tensor.producer_slice = i;
      tensor.alloc_ns = s.start_ns;
      tensor.free_ns = std::max(s.end_ns(), last_use[i]);
      // A zero-length producer with no consumer still held the tensor for an instant.
      if (tensor.free_ns == tensor.alloc_ns) ++tensor.free_ns;
      tensors.push_back(std::move(tensor));
    }
  }
  return tensors;
}

int64_t BytesAt(const std::vector<MemoryPoint>& curve, int64_t time_ns) {
  auto it = std::upper_bound(curve.begin(), curve.end(), time_ns,
                             [](int64_t t, const MemoryPoint& p) { return t < p.time_ns; });
  return it == curve.begin() ? 0 : std::prev(it)->bytes;
}

std::vector<std::string> CurveSources(std::string_view origin) {
  std::vector<std::string> sources;
  while (!origin.empty()) {
    const size_t plus = origin.find('+');
    if (plus != 0) sources.emplace_back(origin.substr(0, plus));
    if (plus == std::string_view::npos) break;
    origin.remove_prefix(plus + 1);
  }
  return sources;
}

std::string DescribeCurveSources(std::string_view origin) {
  std::string text;
  for (const std::string& source : CurveSources(origin)) {
    std::string name = source;
    if (source == "allocation_records") name = "allocation records";
    if (source == "allocator_bytes_in_use") name = "allocator_bytes_in_use samples";
    if (source == "kineto_memory_events") name = "Kineto [memory] events";
    if (source == "outputs") name = "output tensors (as timeline.py)";
    text += (text.empty() ? "" : ", ") + name;
  }
  return text.empty() ? "unknown" : text;
}

namespace {

void SetPeak(AllocatorTimeline& timeline) {
  if (timeline.curve.empty()) return;
  timeline.peak_bytes = timeline.curve.front().bytes;
  timeline.peak_ns = timeline.curve.front().time_ns;
  for (const MemoryPoint& p : timeline.curve) {
    if (p.bytes > timeline.peak_bytes) {
      timeline.peak_bytes = p.bytes;
      timeline.peak_ns = p.time_ns;
    }
  }
}

std::string DevicePath(const Trace& trace, int32_t track) {
  return track >= 0 && static_cast<size_t>(track) < trace.tracks().size()
             ? trace.TrackPath(static_cast<uint32_t>(track))
             : std::string();
}

}  // namespace

std::vector<AllocatorTimeline> ComputeMemoryTimelines(const Trace& trace) {
  std::map<std::string, AllocatorTimeline> by_name;
  for (const trace::CounterSeries& counter : trace.counters()) {
    if (counter.values.empty() || counter.unit != "bytes") continue;
    std::string name(trace.str(counter.name));
    // Two series of one name (e.g. merged ranks) stay apart by their device.
    if (by_name.count(name) != 0) name += " (" + DevicePath(trace, counter.track) + ")";
    AllocatorTimeline& timeline = by_name[name];
    timeline.allocator = name;
    timeline.device_track = counter.track;
    timeline.device = DevicePath(trace, counter.track);
    timeline.origin = counter.origin;
    // Time-sorted, one point per instant (the last value at an instant wins).
    std::vector<size_t> order(counter.ts_ns.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return counter.ts_ns[a] < counter.ts_ns[b]; });
    for (size_t i : order) {
      if (!timeline.curve.empty() && timeline.curve.back().time_ns == counter.ts_ns[i]) {
        timeline.curve.back().bytes = counter.values[i];
      } else {
        timeline.curve.push_back({counter.ts_ns[i], counter.values[i]});
      }
    }
    SetPeak(timeline);
  }

  // Allocators known only from output descriptions: the curve timeline.py draws.
  std::map<std::string, std::vector<std::pair<int64_t, int64_t>>> deltas;
  std::map<std::string, int32_t> device_of;
  const std::vector<LiveTensor> tensors = TensorsFromOutputs(trace);
  std::set<std::string> with_counter;
  for (const auto& [name, timeline] : by_name) with_counter.insert(name);
  for (const LiveTensor& t : tensors) {
    if (t.allocator.empty() || with_counter.count(t.allocator) != 0) continue;
    auto& d = deltas[t.allocator];
    d.emplace_back(t.alloc_ns, t.bytes);
    d.emplace_back(t.free_ns, -t.bytes);
    if (device_of.count(t.allocator) == 0) {
      device_of[t.allocator] = trace.DeviceOf(trace.slices()[static_cast<size_t>(t.producer_slice)].track);
    }
  }
  for (auto& [allocator, d] : deltas) {
    std::sort(d.begin(), d.end());  // frees (negative) first at equal times
    AllocatorTimeline& timeline = by_name[allocator];
    timeline.allocator = allocator;
    timeline.derived_from_outputs = true;
    timeline.origin = "outputs";
    timeline.device_track = device_of[allocator];
    timeline.device = DevicePath(trace, timeline.device_track);
    int64_t level = 0;
    for (const auto& [time, bytes] : d) {
      level += bytes;
      if (!timeline.curve.empty() && timeline.curve.back().time_ns == time) {
        timeline.curve.back().bytes = level;
      } else {
        timeline.curve.push_back({time, level});
      }
    }
    SetPeak(timeline);
  }
  std::vector<AllocatorTimeline> out;
  out.reserve(by_name.size());
  for (auto& [name, timeline] : by_name) {
    timeline.sources = CurveSources(timeline.origin);
    out.push_back(std::move(timeline));
  }
  return out;
}

std::vector<LiveTensor> LiveTensorsAt(const Trace& trace, const AllocatorTimeline& timeline,
                                      int64_t time_ns) {
  std::vector<LiveTensor> live;
  for (LiveTensor& t : TensorsFromOutputs(trace)) {
    if (t.allocator == timeline.allocator && t.LiveAt(time_ns)) live.push_back(std::move(t));
  }
  std::stable_sort(live.begin(), live.end(), [](const LiveTensor& a, const LiveTensor& b) {
    return a.bytes != b.bytes ? a.bytes > b.bytes : a.name < b.name;
  });
  return live;
}

}  // namespace stepscope::analysis
