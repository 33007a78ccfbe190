// Allocators' bytes in use over time, and the tensors and buffers live at any instant, from
// ops' outputs and allocation records (the trace's typed details).
#include "profiler/analysis/memory_timeline.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <queue>
#include <set>
#include <unordered_map>

#include "base/saturating.h"
#include "profiler/trace/slice_details.h"

namespace stepscope::analysis {

using trace::Slice;
using trace::Trace;

std::vector<LiveTensor> TensorsFromOutputs(const Trace& trace) {
  std::vector<LiveTensor> tensors;
  trace::DetailReader details(trace, trace::kDetailOutputs);
  if (!details.MayHave(trace::kDetailOutputs)) return tensors;
  const auto& slices = trace.slices();
  // A tensor is released when its last consumer ends (dataflow flows), at the earliest when its
  // producer ends.
  std::vector<int64_t> last_use(slices.size(), -1);
  for (const trace::Flow& flow : trace.flows()) {
    if (flow.kind != trace::FlowKind::kDataflow) continue;
    last_use[flow.from_slice] = std::max(last_use[flow.from_slice], slices[flow.to_slice].end_ns());
  }
  for (uint32_t i = 0; i < slices.size(); ++i) {
    const Slice& s = slices[i];
    if (s.duplicate()) continue;
    for (const trace::TensorOutput& output : details.Outputs(i)) {
      if (!output.has_allocation) continue;
      LiveTensor tensor;
      tensor.name = output.TensorName();
      tensor.bytes = output.requested_bytes;
      tensor.allocated_bytes = output.allocated_bytes;
      tensor.allocator = std::string(output.allocator);
      tensor.allocation_id = output.allocation_id;
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

namespace {

// One allocation record of an allocator: a buffer the step allocated (an output's, or a
// temporary's), with when it was most likely released and, once matched, when it was.
struct RecordedAllocation {
  int64_t ns = 0, bytes = 0;
  int64_t likely_free_ns = 0;  // the output's last use; a temporary's node end
  int64_t freed_ns = -1;       // the free record matched to it; -1: still allocated at the end
  int32_t tensor = -1;         // index into the outputs, -1 for a temporary
};

// Matches each free record (t, -bytes) of one allocator to one allocation of the same size made
// by t: the one most likely released by then (the earliest likely release, then the oldest). The
// records name no buffer, so this is the choice that keeps every output's last use before its
// free wherever the records allow; the counts per size at any instant are the records' own.
void MatchFrees(std::vector<RecordedAllocation>& allocations, std::vector<std::pair<int64_t, int64_t>>& frees) {
  std::stable_sort(allocations.begin(), allocations.end(),
                   [](const RecordedAllocation& a, const RecordedAllocation& b) { return a.ns < b.ns; });
  std::stable_sort(frees.begin(), frees.end());
  using Candidate = std::pair<int64_t, size_t>;  // (likely free, allocation index): the smallest first
  std::unordered_map<int64_t, std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>>> open;
  size_t next = 0;
  for (const auto& [when, bytes] : frees) {
    for (; next < allocations.size() && allocations[next].ns <= when; ++next) {
      open[allocations[next].bytes].emplace(allocations[next].likely_free_ns, next);
    }
    auto it = open.find(bytes);
    if (it == open.end() || it->second.empty()) continue;  // allocated before the records began
    allocations[it->second.top().second].freed_ns = when;
    it->second.pop();
  }
}

}  // namespace

std::vector<LiveTensor> BuffersFromOutputs(const Trace& trace) {
  std::vector<LiveTensor> outputs = TensorsFromOutputs(trace);
  if (outputs.empty()) return outputs;
  const auto& slices = trace.slices();
  // Outputs that share one allocation (an op forwarding its input, an in-place update) are one
  // buffer: the first output stands for it, live over the union of their lifetimes.
  std::vector<char> alias(outputs.size(), 0);
  {
    std::map<std::pair<std::string, int64_t>, size_t> first_of_allocation;
    for (size_t t = 0; t < outputs.size(); ++t) {
      if (outputs[t].allocation_id == 0) continue;
      auto [it, added] = first_of_allocation.try_emplace({outputs[t].allocator, outputs[t].allocation_id}, t);
      if (added) continue;
      LiveTensor& buffer = outputs[it->second];
      buffer.alloc_ns = std::min(buffer.alloc_ns, outputs[t].alloc_ns);
      buffer.free_ns = std::max(buffer.free_ns, outputs[t].free_ns);
      alias[t] = 1;
    }
  }
  // Allocators with allocation records: each output backed by a record of its producer (same
  // allocator and allocated size) lives from that record to the free matched to it.
  struct Records {
    std::vector<RecordedAllocation> allocations;
    std::vector<std::pair<int64_t, int64_t>> frees;  // (ns, bytes freed)
  };
  std::map<std::string, Records> by_allocator;
  std::unordered_map<uint32_t, std::vector<size_t>> waiting;  // producer slice -> its unbacked outputs
  for (size_t t = 0; t < outputs.size(); ++t) {
    if (!alias[t]) waiting[static_cast<uint32_t>(outputs[t].producer_slice)].push_back(t);
  }
  trace::DetailReader details(trace, trace::kDetailAllocators);
  for (uint32_t i = 0; i < slices.size(); ++i) {
    if (slices[i].duplicate()) continue;
    for (const trace::AllocatorUse& used : details.Allocators(i)) {
      if (used.records.empty()) continue;
      Records& records = by_allocator[std::string(used.allocator)];
      for (const trace::AllocationRecord& record : used.records) {
        if (record.bytes < 0) {
          records.frees.emplace_back(record.ns, -record.bytes);
          continue;
        }
        RecordedAllocation allocation{record.ns, record.bytes, slices[i].end_ns()};
        if (auto it = waiting.find(i); it != waiting.end()) {
          for (size_t& t : it->second) {
            if (t == SIZE_MAX) continue;  // backed by an earlier record
            const LiveTensor& out = outputs[t];
            const int64_t size = out.allocated_bytes > 0 ? out.allocated_bytes : out.bytes;
            if (out.allocator != used.allocator || size != record.bytes) continue;
            allocation.tensor = static_cast<int32_t>(t);
            allocation.likely_free_ns = out.free_ns;
            t = SIZE_MAX;  // backed
            break;
          }
        }
        records.allocations.push_back(allocation);
      }
    }
  }
  std::vector<char> backed(outputs.size(), 0);
  std::set<std::string> recorded;
  for (auto& [allocator, records] : by_allocator) {
    recorded.insert(allocator);
    MatchFrees(records.allocations, records.frees);
    for (const RecordedAllocation& a : records.allocations) {
      if (a.tensor < 0) continue;
      LiveTensor& out = outputs[static_cast<size_t>(a.tensor)];
      out.alloc_ns = a.ns;
      out.free_ns = a.freed_ns;
      if (out.free_ns == out.alloc_ns) ++out.free_ns;  // held for an instant
      backed[static_cast<size_t>(a.tensor)] = 1;
    }
  }
  // Outputs of an allocator with records but none of their own were allocated before the step
  // (variables, buffers carried across steps): marked, so a query counts them only within the
  // level the records leave unexplained.
  std::vector<LiveTensor> buffers;
  buffers.reserve(outputs.size());
  for (size_t t = 0; t < outputs.size(); ++t) {
    if (alias[t]) continue;
    if (recorded.count(outputs[t].allocator) != 0 && !backed[t]) {
      outputs[t].allocated_in_step = false;
      outputs[t].alloc_ns = std::min(outputs[t].alloc_ns, trace.span_begin_ns());  // there when the step began
    }
    buffers.push_back(std::move(outputs[t]));
  }
  return buffers;
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
  return LiveTensorIndex(trace).At(timeline, time_ns);
}

std::vector<LiveTensor> LiveTensorIndex::At(const AllocatorTimeline& timeline, int64_t time_ns) {
  std::optional<std::vector<LiveTensor>>& all = timeline.derived_from_outputs ? tensors_ : buffers_;
  if (!all) all = timeline.derived_from_outputs ? TensorsFromOutputs(*trace_) : BuffersFromOutputs(*trace_);
  std::vector<LiveTensor> live;
  for (const LiveTensor& t : *all) {
    if (t.allocator == timeline.allocator && t.LiveAt(time_ns)) live.push_back(t);
  }
  auto largest_first = [](const LiveTensor& a, const LiveTensor& b) {
    return a.bytes != b.bytes ? a.bytes > b.bytes : a.name < b.name;
  };
  std::stable_sort(live.begin(), live.end(), largest_first);
  if (timeline.derived_from_outputs) return live;
  // Buffers from before the step hold the part of the level the step's records do not explain:
  // the largest that fit in it, so the list never adds up to more than the curve.
  auto size = [](const LiveTensor& t) { return t.allocated_bytes > 0 ? t.allocated_bytes : t.bytes; };
  int64_t room = BytesAt(timeline.curve, time_ns);
  for (const LiveTensor& t : live) {
    if (t.allocated_in_step) room = SaturatingSub(room, size(t));
  }
  std::erase_if(live, [&](const LiveTensor& t) {
    if (t.allocated_in_step) return false;
    if (size(t) > room) return true;
    room -= size(t);
    return false;
  });
  return live;
}

}  // namespace stepscope::analysis
