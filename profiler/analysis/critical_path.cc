// The critical path of a step (step_analyses.h): predecessors of every slice's start and end,
// found in one pass over each lane, then one walk back from the end of the last work.
#include <algorithm>
#include <climits>
#include <map>
#include <span>
#include <tuple>
#include <unordered_map>

#include "profiler/analysis/breakdowns.h"
#include "profiler/analysis/gpu_work.h"
#include "profiler/analysis/step_analyses.h"
#include "profiler/trace/slice_details.h"

namespace stepscope::analysis {

using trace::Slice;
using trace::SliceKind;
using trace::Trace;

namespace {

enum class Edge : uint8_t {
  kNone, kSelf, kChild, kSync, kLane, kStream, kNested, kLaunch, kDataflow, kReadback, kCrossStream
};

const char* EdgeName(Edge edge) {
  switch (edge) {
    case Edge::kChild: return "child";
    case Edge::kSync: return "sync";
    case Edge::kLane: return "lane";
    case Edge::kStream: return "stream";
    case Edge::kNested: return "nested";
    case Edge::kLaunch: return "launch";
    case Edge::kDataflow: return "dataflow";
    case Edge::kReadback: return "readback";
    case Edge::kCrossStream: return "cross_stream";
    default: return "";
  }
}

constexpr int64_t kNoSlice = -1;

}  // namespace

// What every window's graph reads of the trace, found once: a trace with thousands of
// ProfilerStep#N windows builds each window's graph from its own slices only.
struct TraceLinks {
  explicit TraceLinks(const Trace& trace) : source_lane(SourceLanes(trace)) {
    gpu_lane.resize(trace.tracks().size());
    host_of.resize(trace.tracks().size());
    device_of.resize(trace.tracks().size());
    lane_path.resize(trace.tracks().size());
    for (uint32_t t = 0; t < trace.tracks().size(); ++t) {
      gpu_lane[t] = IsGpuDeviceLane(trace, t);
      host_of[t] = trace.HostOf(t);
      device_of[t] = trace.DeviceOf(t);
      lane_path[t] = trace.TrackPath(t);
    }
    synchronize_label.resize(trace.labels().size());
    for (trace::LabelId label = 0; label < trace.labels().size(); ++label) {
      synchronize_label[label] = trace.str(trace.labels()[label].name).find("Synchronize") != std::string_view::npos;
    }
    // Device-to-host copies: by name (TensorFlow's MEMCPYDtoH, PyTorch's "Memcpy DtoH (Device ->
    // Pinned)"), else by the kind the copy's record holds.
    const auto& slices = trace.slices();
    for (uint32_t i = 0; i < slices.size(); ++i) {
      const Slice& s = slices[i];
      if (s.kind != SliceKind::kMemcpy || s.duplicate() || !gpu_lane[s.track]) continue;
      std::string kind = trace::ParseCopyName(trace.str(trace.slice_name(s))).kind;
      if (kind.empty()) kind = trace::ParseCopyName(trace.str(trace.slice_op_type(s))).kind;
      if (kind.empty()) {
        if (auto details = trace::GetMemcpyDetails(trace, i)) kind = details->kind;
      }
      if (kind == "DtoH") device_to_host.push_back(i);
    }
    flows_by_target.reserve(trace.flows().size());
    for (const trace::Flow& flow : trace.flows()) {
      if (flow.from_slice != flow.to_slice) flows_by_target.push_back(flow);
    }
    // By target; a target's flows keep their order in the trace (the order they are considered).
    std::stable_sort(flows_by_target.begin(), flows_by_target.end(),
                     [](const trace::Flow& a, const trace::Flow& b) { return a.to_slice < b.to_slice; });
  }
  // A runtime call named *Synchronize* waits for the GPU work of its host.
  bool IsSynchronize(const Slice& s) const { return s.kind == SliceKind::kRuntime && synchronize_label[s.label]; }
  bool IsDeviceToHost(uint32_t slice) const {
    return std::binary_search(device_to_host.begin(), device_to_host.end(), slice);
  }

  std::vector<uint32_t> source_lane;
  std::vector<char> gpu_lane;
  std::vector<int32_t> host_of;
  std::vector<int32_t> device_of;
  std::vector<uint32_t> device_to_host;    // slices of device-to-host copies, in slice order
  std::vector<std::string> lane_path;      // Trace::TrackPath of each track
  std::vector<char> synchronize_label;     // by label: the name holds "Synchronize"
  std::vector<trace::Flow> flows_by_target;
};

namespace {

// A window's graph over its work (in the window, not an annotation, sync marker or duplicate),
// indexed locally: members[i] is the trace's slice of node i, in increasing slice order. Edges
// are local indices, kNoSlice for none.
struct Graph {
  std::vector<uint32_t> members;
  std::vector<int64_t> previous;       // start <- end of the previous slice (lane or stream)
  std::vector<int64_t> parent;         // start <- start of the enclosing slice
  std::vector<int64_t> last_child;     // end <- end of the last child
  std::vector<int64_t> sync_target;    // end of a synchronising call <- end of the GPU work it waited for
  // start <- end of the device result it waited for: a host slice after the last device-to-host
  // copy of its process that ended by its start (`readback`); a device-to-host copy after the last
  // work of its device that ended by its start, on any stream (`cross_stream`: what it copies):
  // kernels, memsets, copies into the device.
  std::vector<int64_t> result_wait;
  // start <- end of a flow's source: node i's flows are flows_in[flows_in_begin[i], flows_in_begin[i + 1]).
  std::vector<std::pair<uint32_t, Edge>> flows_in;
  std::vector<uint32_t> flows_in_begin;
  std::vector<char> on_gpu;
  std::span<const std::pair<uint32_t, Edge>> FlowsInto(size_t i) const {
    return {flows_in.data() + flows_in_begin[i], flows_in.data() + flows_in_begin[i + 1]};
  }
  // The local index of a trace slice, kNoSlice when it is not work of the window.
  int64_t LocalOf(uint32_t slice) const {
    const auto it = std::lower_bound(members.begin(), members.end(), slice);
    return it != members.end() && *it == slice ? it - members.begin() : kNoSlice;
  }
};

Graph BuildGraph(const Trace& trace, const TraceLinks& links, int64_t begin_ns, int64_t end_ns) {
  const auto& slices = trace.slices();
  Graph g;
  // Each lane's slices are in start order: the window is a range of each.
  std::vector<std::pair<uint32_t, uint32_t>> ranges(trace.tracks().size());  // [first, last) per track
  for (uint32_t t = 0; t < trace.tracks().size(); ++t) {
    const uint32_t first = trace.track_first_slice(t);
    const auto lane = trace.track_slices(t);
    const auto from = std::lower_bound(lane.begin(), lane.end(), begin_ns,
                                       [](const Slice& x, int64_t at) { return x.start_ns < at; });
    const auto to = std::lower_bound(from, lane.end(), end_ns, [](const Slice& x, int64_t at) { return x.start_ns < at; });
    ranges[t] = {first + static_cast<uint32_t>(from - lane.begin()), first + static_cast<uint32_t>(to - lane.begin())};
    for (uint32_t i = ranges[t].first; i < ranges[t].second; ++i) {
      if (!slices[i].duplicate() && !trace::IsAnnotationOrSync(slices[i].kind)) g.members.push_back(i);
    }
  }
  // Sorted: a track's slices are contiguous, and the tracks' ranges come in track order.
  const size_t n = g.members.size();
  g.previous.assign(n, kNoSlice);
  g.parent.assign(n, kNoSlice);
  g.last_child.assign(n, kNoSlice);
  g.sync_target.assign(n, kNoSlice);
  g.result_wait.assign(n, kNoSlice);
  g.on_gpu.assign(n, 0);
  // GPU streams: in start order per stream (overlap lanes of a stream joined), each work after the
  // one that ended last before it. Host lanes: nesting with annotations transparent.
  std::map<uint32_t, std::vector<uint32_t>> streams;  // local indices
  // Per host process: the ends of its GPU work, for synchronising calls, and of its device-to-host
  // copies; per device: the ends of the work that leaves results on it (all but those copies).
  std::map<int32_t, std::vector<std::pair<int64_t, uint32_t>>> gpu_ends;
  std::map<int32_t, std::vector<std::pair<int64_t, uint32_t>>> readback_ends;
  std::map<int32_t, std::vector<std::pair<int64_t, uint32_t>>> device_ends;
  size_t local = 0;  // members are visited in order below, track by track
  for (uint32_t t = 0; t < trace.tracks().size(); ++t) {
    const auto [first, last] = ranges[t];
    auto next_member = [&](uint32_t index) {
      // The local index of `index` when it is work (members are in the same order as this walk).
      if (local < n && g.members[local] == index) return static_cast<int64_t>(local++);
      return kNoSlice;
    };
    if (links.gpu_lane[t]) {
      for (uint32_t index = first; index < last; ++index) {
        const int64_t i = next_member(index);
        if (i == kNoSlice) continue;
        g.on_gpu[static_cast<size_t>(i)] = 1;
        streams[links.source_lane[t]].push_back(static_cast<uint32_t>(i));
        gpu_ends[links.host_of[t]].emplace_back(slices[index].end_ns(), static_cast<uint32_t>(i));
        if (links.IsDeviceToHost(index)) {
          readback_ends[links.host_of[t]].emplace_back(slices[index].end_ns(), static_cast<uint32_t>(i));
        } else {
          device_ends[links.device_of[t]].emplace_back(slices[index].end_ns(), static_cast<uint32_t>(i));
        }
      }
      continue;
    }
    std::vector<uint32_t> open;                // enclosing work (local), innermost last
    std::vector<int64_t> closed_at_level;      // last slice closed at each nesting level
    for (uint32_t index = first; index < last; ++index) {
      const int64_t i = next_member(index);
      if (i == kNoSlice) continue;
      const Slice& s = slices[index];
      while (!open.empty() && slices[g.members[open.back()]].end_ns() <= s.start_ns) {
        const size_t level = open.size() - 1;
        if (closed_at_level.size() <= level) closed_at_level.resize(level + 1, kNoSlice);
        closed_at_level[level] = open.back();
        open.pop_back();
      }
      const size_t level = open.size();
      const int64_t parent = open.empty() ? kNoSlice : open.back();
      const int64_t sibling = level < closed_at_level.size() ? closed_at_level[level] : kNoSlice;
      if (sibling != kNoSlice &&
          (parent == kNoSlice ||
           slices[g.members[static_cast<size_t>(sibling)]].start_ns >= slices[g.members[static_cast<size_t>(parent)]].start_ns)) {
        g.previous[static_cast<size_t>(i)] = sibling;
      }
      g.parent[static_cast<size_t>(i)] = parent;
      if (parent != kNoSlice) g.last_child[static_cast<size_t>(parent)] = i;  // children come in time order
      open.push_back(static_cast<uint32_t>(i));
    }
  }
  auto start_of = [&](uint32_t i) { return slices[g.members[i]].start_ns; };
  auto end_of = [&](int64_t i) { return slices[g.members[static_cast<size_t>(i)]].end_ns(); };
  for (auto& [lane, work] : streams) {
    std::stable_sort(work.begin(), work.end(), [&](uint32_t a, uint32_t b) { return start_of(a) < start_of(b); });
    int64_t busiest = kNoSlice;  // the work that ends last so far
    for (uint32_t i : work) {
      g.previous[i] = busiest;
      if (busiest == kNoSlice || end_of(i) > end_of(busiest)) busiest = i;
    }
  }
  for (auto& [host, ends] : gpu_ends) std::sort(ends.begin(), ends.end());
  for (auto& [host, ends] : readback_ends) std::sort(ends.begin(), ends.end());
  for (auto& [device, ends] : device_ends) std::sort(ends.begin(), ends.end());
  // The last (end, node) of `ends` that ended by `time` and is not `self`, kNoSlice for none.
  auto last_ended_by = [](const std::vector<std::pair<int64_t, uint32_t>>& ends, int64_t time, size_t self) {
    auto it = std::upper_bound(ends.begin(), ends.end(), std::pair<int64_t, uint32_t>{time, UINT32_MAX});
    while (it != ends.begin()) {
      --it;
      if (it->second != self) return static_cast<int64_t>(it->second);
    }
    return kNoSlice;
  };
  // A host op's end in a GPU trace is when it enqueued its work, not when the result exists: a
  // host slice that reads a device result waits for the copy that brings it back, and that copy
  // waits for the work that computed it. The walk takes these only where they became ready last
  // (after the lane's previous slice, any dataflow input or parent).
  for (size_t i = 0; i < n; ++i) {
    const uint32_t index = g.members[i];
    const Slice& s = slices[index];
    if (!g.on_gpu[i]) {
      auto it = readback_ends.find(links.host_of[s.track]);
      if (it != readback_ends.end()) g.result_wait[i] = last_ended_by(it->second, s.start_ns, i);
    } else if (links.IsDeviceToHost(index)) {
      auto it = device_ends.find(links.device_of[s.track]);
      if (it != device_ends.end()) g.result_wait[i] = last_ended_by(it->second, s.start_ns, i);
    }
  }
  for (size_t i = 0; i < n; ++i) {
    const Slice& s = slices[g.members[i]];
    if (g.on_gpu[i] || !links.IsSynchronize(s)) continue;
    auto it = gpu_ends.find(links.host_of[s.track]);
    if (it == gpu_ends.end()) continue;
    const auto& ends = it->second;
    // The last GPU work to end by the call's end; it was waited for if it ended after the call began.
    auto after = std::upper_bound(ends.begin(), ends.end(), std::pair<int64_t, uint32_t>{s.end_ns(), UINT32_MAX});
    if (after == ends.begin()) continue;
    --after;
    if (after->first > s.start_ns) g.sync_target[i] = after->second;
  }
  g.flows_in_begin.reserve(n + 1);
  g.flows_in_begin.push_back(0);
  for (size_t i = 0; i < n; ++i) {
    auto flow = std::lower_bound(links.flows_by_target.begin(), links.flows_by_target.end(), g.members[i],
                                 [](const trace::Flow& f, uint32_t target) { return f.to_slice < target; });
    for (; flow != links.flows_by_target.end() && flow->to_slice == g.members[i]; ++flow) {
      const int64_t from = g.LocalOf(flow->from_slice);
      if (from == kNoSlice) continue;
      g.flows_in.emplace_back(static_cast<uint32_t>(from),
                              flow->kind == trace::FlowKind::kLaunch ? Edge::kLaunch : Edge::kDataflow);
    }
    g.flows_in_begin.push_back(static_cast<uint32_t>(g.flows_in.size()));
  }
  return g;
}

PathBound BoundOfWork(const Trace& trace, const Slice& s, bool on_gpu) {
  if (!on_gpu) return PathBound::kCpu;
  if (IsCommunication(trace, s)) return PathBound::kGpuCommunication;
  if (s.kind == SliceKind::kMemcpy || s.kind == SliceKind::kMemset) return PathBound::kGpuMemory;
  return PathBound::kGpuCompute;
}

}  // namespace

std::string_view PathBoundName(PathBound bound) {
  switch (bound) {
    case PathBound::kCpu: return "cpu";
    case PathBound::kGpuCompute: return "gpu_compute";
    case PathBound::kGpuCommunication: return "gpu_communication";
    case PathBound::kGpuMemory: return "gpu_memory";
    case PathBound::kLaunchDelay: return "launch_delay";
    case PathBound::kKernelGap: return "kernel_gap";
    default: return "sync";
  }
}

namespace {

// The work the step ends with: the work that ends last (the longest at equal ends) among ops,
// GPU work and synchronising calls; other runtime calls and unknown slices only link. Only work
// that ends by `by_ns` counts.
int64_t LastWork(const Trace& trace, const TraceLinks& links, const Graph& g, int64_t by_ns) {
  const auto& slices = trace.slices();
  auto slice_of = [&](int64_t local) -> const Slice& { return slices[g.members[static_cast<size_t>(local)]]; };
  int64_t last = kNoSlice;
  for (uint32_t i = 0; i < g.members.size(); ++i) {
    const Slice& s = slice_of(i);
    if (s.kind == SliceKind::kOther || (s.kind == SliceKind::kRuntime && !links.IsSynchronize(s))) continue;
    if (s.end_ns() > by_ns) continue;
    if (last == kNoSlice || s.end_ns() > slice_of(last).end_ns() ||
        (s.end_ns() == slice_of(last).end_ns() && s.dur_ns > slice_of(last).dur_ns)) {
      last = i;
    }
  }
  return last;
}

// A node of the path (a slice's start or end), its time on the path and the edge that enters it.
struct WalkNode {
  uint32_t slice;
  bool end;
  int64_t time;
  Edge edge;
};

// Walks back from `first` (a node and its time on the path) over nodes, each taking the
// predecessor that became ready last; returns the nodes in path order, each with the edge that
// enters it (kNone for the first). `cut(node, predecessor)` true stops the walk before the
// predecessor, which `*stop` then holds (its `edge` the one that would enter the node): where a
// piece of the path ends (FindPieces). The walk keeps no state but the node it stands on and its
// time (`visited` only breaks cycles), so the walk from `*stop` goes on as this one would have.
// `visited`: one byte per node of the graph, all 0, left so (a window's many pieces share it).
template <typename Cut>
std::vector<WalkNode> WalkBackFrom(const Trace& trace, const Graph& g, WalkNode first, Cut&& cut, WalkNode* stop,
                                   std::vector<uint8_t>& visited) {
  const auto& slices = trace.slices();
  auto slice_of = [&](int64_t local) -> const Slice& { return slices[g.members[static_cast<size_t>(local)]]; };
  std::vector<WalkNode> walk;  // while walking back, each edge leads to the node after it
  // visited[slice]: bit 0 its start, bit 1 its end
  uint32_t current = first.slice;
  bool at_end = first.end;
  Edge into = Edge::kNone;
  // A node's time on the path: when it became ready for the node after it (a launch call still
  // running when its kernel started holds the path only until that start).
  int64_t now = first.time;
  while (true) {
    const Slice& s = slice_of(current);
    visited[current] |= at_end ? 2 : 1;
    walk.push_back({current, at_end, now, into});
    int64_t best = kNoSlice;
    bool best_end = true;
    Edge best_edge = Edge::kNone;
    int64_t best_ready = INT64_MIN;
    // Candidates in order of preference at equal readiness.
    auto consider = [&](int64_t p, bool p_end, Edge edge) {
      if (p == kNoSlice || (visited[static_cast<size_t>(p)] & (p_end ? 2 : 1))) return;
      const Slice& pred = slice_of(p);
      const int64_t at = p_end ? pred.end_ns() : pred.start_ns;
      if (edge != Edge::kLaunch && edge != Edge::kDataflow && at > now) return;  // drawn backwards: binds nothing
      const int64_t ready = std::min(at, now);
      if (ready > best_ready) {
        best = p;
        best_end = p_end;
        best_edge = edge;
        best_ready = ready;
      }
    };
    if (at_end) {
      consider(g.sync_target[current], true, Edge::kSync);
      consider(g.last_child[current], true, Edge::kChild);
      consider(current, false, Edge::kSelf);
    } else {
      for (const auto& [from, edge] : g.FlowsInto(current)) {
        if (slice_of(from).start_ns <= s.start_ns) consider(from, true, edge);
      }
      consider(g.previous[current], true, g.on_gpu[current] ? Edge::kStream : Edge::kLane);
      consider(g.result_wait[current], true, g.on_gpu[current] ? Edge::kCrossStream : Edge::kReadback);
      consider(g.parent[current], false, Edge::kNested);
    }
    if (best == kNoSlice) break;
    if (const WalkNode predecessor{static_cast<uint32_t>(best), best_end, best_ready, best_edge};
        cut(walk.back(), predecessor)) {
      *stop = predecessor;
      break;
    }
    current = static_cast<uint32_t>(best);
    at_end = best_end;
    into = best_edge;
    now = best_ready;
  }
  for (const WalkNode& node : walk) visited[node.slice] = 0;
  std::reverse(walk.begin(), walk.end());
  // walk[k].edge led from walk[k] to walk[k + 1] in the backward walk's terms: shift so that each
  // node carries the edge that enters it.
  for (size_t k = walk.size(); k-- > 1;) walk[k].edge = walk[k - 1].edge;
  walk[0].edge = Edge::kNone;
  return walk;
}

// Walks back from the end of `last`: the whole path.
std::vector<WalkNode> WalkBack(const Trace& trace, const Graph& g, uint32_t last) {
  const WalkNode first{last, true, trace.slices()[g.members[last]].end_ns(), Edge::kNone};
  std::vector<uint8_t> visited(g.members.size(), 0);
  return WalkBackFrom(trace, g, first, [](const WalkNode&, const WalkNode&) { return false; }, nullptr, visited);
}

// Credits the time between the walk's nodes to the path's elements, bounds and op types. A path
// holds thousands of elements a step and a trace thousands of steps: elements are found by their
// local index, shares counted by op type id and named once at the end (Finish).
class PathAccount {
 public:
  // `named`: the elements' names, op types and lanes, and the shares by op type (kTimesOnly: none).
  PathAccount(const Trace& trace, const TraceLinks& links, const Graph& g, CriticalPath& path, bool named)
      : trace_(trace), links_(links), g_(g), path_(path), named_(named), own_index_(g.members.size(), kNoElement),
        element_of_(own_index_) {}
  // With `element_of`, one entry per node of the graph, all kNoElement, left so: a window's many
  // short paths (FindPieces) do not each fill one of the graph's size.
  PathAccount(const Trace& trace, const TraceLinks& links, const Graph& g, CriticalPath& path, bool named,
              std::vector<int32_t>& element_of)
      : trace_(trace), links_(links), g_(g), path_(path), named_(named), element_of_(element_of) {}
  ~PathAccount() {
    if (&element_of_ == &own_index_) return;
    for (const PathElement& e : path_.elements) element_of_[static_cast<size_t>(g_.LocalOf(e.slice))] = kNoElement;
  }
  PathAccount(const PathAccount&) = delete;
  PathAccount& operator=(const PathAccount&) = delete;

  void Credit(const std::vector<WalkNode>& walk) {
    Element(walk[0].slice);
    for (size_t k = 1; k < walk.size(); ++k) Step(walk[k - 1], walk[k]);
    path_.begin_ns = walk.front().time;
    path_.end_ns = walk.back().time;
    path_.length_ns = walk.back().time - walk.front().time;
    path_.busy_ns = path_.length_ns - path_.wait_ns;
  }

  // The op types' shares, by time on the path (equal times by name), and the largest bound.
  void Finish() {
    for (const auto& [op, counted] : shares_) {
      PathShare share;
      share.op_type = std::string(trace_.str(op));
      share.count = counted.count;
      share.total_ns = counted.total_ns;
      share.share =
          path_.length_ns > 0 ? static_cast<double>(share.total_ns) / static_cast<double>(path_.length_ns) : 0;
      path_.by_op_type.push_back(std::move(share));
    }
    std::sort(path_.by_op_type.begin(), path_.by_op_type.end(), [](const PathShare& a, const PathShare& b) {
      return a.total_ns != b.total_ns ? a.total_ns > b.total_ns : a.op_type < b.op_type;
    });
    for (int b = 1; b < kPathBounds; ++b) {
      if (path_.bound_ns[b] > path_.bound_ns[static_cast<int>(path_.bound_by)]) path_.bound_by = static_cast<PathBound>(b);
    }
  }

 private:
  static constexpr int32_t kNoElement = -1;
  struct OpShare {
    int64_t count = 0, total_ns = 0;
  };

  const Slice& SliceOf(uint32_t local) const { return trace_.slices()[g_.members[local]]; }

  PathElement& Element(uint32_t slice) {
    if (element_of_[slice] == kNoElement) {
      element_of_[slice] = static_cast<int32_t>(path_.elements.size());
      const Slice& s = SliceOf(slice);
      PathElement e;
      e.slice = g_.members[slice];
      if (named_) {
        e.name = std::string(trace_.str(trace_.slice_name(s)));
        e.op_type = std::string(trace_.str(trace_.slice_op_type(s)));
        e.kind = std::string(trace::SliceKindName(s.kind));
        e.lane = links_.lane_path[s.track];
        ++shares_[trace_.slice_op_type(s)].count;
      }
      e.start_ns = s.start_ns;
      e.dur_ns = s.dur_ns;
      path_.elements.push_back(std::move(e));
    }
    return path_.elements[static_cast<size_t>(element_of_[slice])];
  }

  // The element entered by `edge`, named by it when the path enters it first.
  PathElement& Enter(uint32_t slice, Edge edge) {
    const bool new_element = element_of_[slice] == kNoElement;
    PathElement& e = Element(slice);
    if (new_element) e.edge = EdgeName(edge);
    return e;
  }

  void Hold(uint32_t slice, int64_t ns, PathBound bound) {
    Element(slice).held_ns += ns;
    path_.bound_ns[static_cast<int>(bound)] += ns;
    if (named_) shares_[trace_.slice_op_type(SliceOf(slice))].total_ns += ns;
  }

  // The time from `from` to `to`: inside a slice (its own work, a parent's own time) or waiting.
  void Step(const WalkNode& from, const WalkNode& to) {
    const int64_t ns = std::max<int64_t>(0, to.time - from.time);
    switch (to.edge) {
      case Edge::kSelf:  // inside the slice, doing its own work
        Hold(to.slice, ns, BoundOfWork(trace_, SliceOf(to.slice), g_.on_gpu[to.slice]));
        break;
      case Edge::kChild:  // the parent's own time after its last child
        Hold(to.slice, ns, PathBound::kCpu);
        break;
      case Edge::kNested:  // the parent's own time before the child started
        Hold(from.slice, ns, PathBound::kCpu);
        Enter(to.slice, Edge::kNested);
        break;
      default:  // between slices: waiting
        Enter(to.slice, to.edge).wait_ns += ns;
        path_.wait_ns += ns;
        path_.bound_ns[static_cast<int>(WaitBound(to))] += ns;
        break;
    }
  }

  PathBound WaitBound(const WalkNode& to) const {
    if (to.edge == Edge::kSync || to.edge == Edge::kReadback) return PathBound::kSync;
    if (to.edge == Edge::kLaunch) return PathBound::kLaunchDelay;
    return g_.on_gpu[to.slice] ? PathBound::kKernelGap : PathBound::kCpu;
  }

  const Trace& trace_;
  const TraceLinks& links_;
  const Graph& g_;
  CriticalPath& path_;
  const bool named_;
  std::vector<int32_t> own_index_;
  std::vector<int32_t>& element_of_;  // by local slice: the element's place in path_.elements
  std::unordered_map<trace::StringId, OpShare> shares_;
};

CriticalPath PathOfWindow(const Trace& trace, const TraceLinks& links, const Graph& g, int64_t by_ns) {
  CriticalPath path;
  const int64_t last = LastWork(trace, links, g, by_ns);
  if (last == kNoSlice) return path;
  PathAccount account(trace, links, g, path, /*named=*/true);
  account.Credit(WalkBack(trace, g, static_cast<uint32_t>(last)));
  account.Finish();
  return path;
}

}  // namespace

CriticalPathFinder::CriticalPathFinder(const Trace& trace) : trace_(trace), links_(std::make_unique<TraceLinks>(trace)) {}
CriticalPathFinder::~CriticalPathFinder() = default;

CriticalPath CriticalPathFinder::Find(int64_t begin_ns, int64_t end_ns) const {
  if (trace_.slices().empty()) return {};
  return FindBefore(begin_ns, end_ns, INT64_MAX);
}

CriticalPath CriticalPathFinder::FindBefore(int64_t begin_ns, int64_t end_ns, int64_t by_ns) const {
  if (trace_.slices().empty()) return {};
  return PathOfWindow(trace_, *links_, BuildGraph(trace_, *links_, begin_ns, end_ns), by_ns);
}

namespace {

// The pieces of one window's paths (CriticalPathFinder::FindPieces). Every walk is taken node by
// node into one table, keyed by node and time on the path; a walk that reaches a node already
// walked stops there, since the rest is the same. The table is a forest (each node leads back to
// one predecessor): pieces are its stretches between the nodes where walks start, meet, or pass
// a stop, so the pieces hold each node once, and the walks of a window cost one walk over the
// nodes they reach.
class PieceFinder {
 public:
  PieceFinder(const Trace& trace, const TraceLinks& links, const Graph& g, std::span<const uint32_t> stops)
      : trace_(trace), links_(links), g_(g), node_stop_(g.members.size(), 0), visited_(g.members.size(), 0),
        element_of_(g.members.size(), -1) {
    for (uint32_t slice : stops) {
      if (const int64_t local = g.LocalOf(slice); local != kNoSlice) {
        node_stop_[static_cast<size_t>(local)] = 1;
      } else if (trace::IsAnnotationOrSync(trace.slices()[slice].kind)) {
        annotation_ends_.emplace_back(trace.slices()[slice].end_ns(), slice);
      }
    }
    std::sort(annotation_ends_.begin(), annotation_ends_.end());
    SortWork();
  }

  // Walks from the work that ends last by each of `by_ns` (LastWork's), then cuts the walks into
  // pieces.
  CriticalPathFinder::WindowPieces Find(std::span<const int64_t> by_ns) {
    std::vector<int64_t> entry_nodes;
    for (int64_t by : by_ns) entry_nodes.push_back(WalkFrom(by));
    // Where pieces start: entries, nodes two walks meet at, nodes reached past a stop.
    std::vector<uint8_t> starts(nodes_.size(), 0);
    std::vector<uint32_t> reached_from(nodes_.size(), 0);
    for (int64_t n : entry_nodes) {
      if (n >= 0) starts[static_cast<size_t>(n)] = 1;
    }
    for (const Node& n : nodes_) {
      if (n.pred < 0) continue;
      if (++reached_from[static_cast<size_t>(n.pred)] > 1 || !n.passes.empty()) starts[static_cast<size_t>(n.pred)] = 1;
    }
    CriticalPathFinder::WindowPieces out;
    std::vector<int64_t> piece_of(nodes_.size(), -1);
    for (size_t n = 0; n < nodes_.size(); ++n) {
      if (starts[n]) piece_of[n] = static_cast<int64_t>(out.pieces.size()), out.pieces.emplace_back();
    }
    for (size_t n = 0; n < nodes_.size(); ++n) {
      if (starts[n]) out.pieces[static_cast<size_t>(piece_of[n])] = Piece(n, starts, piece_of);
    }
    for (int64_t n : entry_nodes) {
      if (n < 0) {
        out.entries.push_back(-1);
        continue;
      }
      const Node& first = nodes_[static_cast<size_t>(n)];
      if (!node_stop_[first.slice]) {
        out.entries.push_back(piece_of[static_cast<size_t>(n)]);
        continue;
      }
      // The walk starts on a stop: a piece with no time of its own that passes it, then the stop's.
      CriticalPathFinder::PathPiece entry;
      entry.path.begin_ns = entry.path.end_ns = first.time;
      entry.stopped = true;
      entry.passes.push_back(g_.members[first.slice]);
      entry.next = static_cast<size_t>(piece_of[static_cast<size_t>(n)]);
      out.entries.push_back(static_cast<int64_t>(out.pieces.size()));
      out.pieces.push_back(std::move(entry));
    }
    return out;
  }

 private:
  struct Node {
    uint32_t slice;
    bool end;
    int64_t time;                  // on the path
    int64_t pred = -1;             // the node the walk goes back to from here
    Edge edge = Edge::kNone;       // the edge from pred into this node
    std::vector<uint32_t> passes;  // the stops passed going back to pred (slices, ascending)
  };
  using Key = std::tuple<uint32_t, bool, int64_t>;

  const Slice& SliceOf(uint32_t local) const { return trace_.slices()[g_.members[local]]; }

  void SortWork() {
    for (uint32_t i = 0; i < g_.members.size(); ++i) {
      const Slice& s = SliceOf(i);
      if (s.kind == SliceKind::kOther || (s.kind == SliceKind::kRuntime && !links_.IsSynchronize(s))) continue;
      by_end_.push_back(i);
    }
    // LastWork keeps the first of equal (end, duration): it sorts last here.
    std::sort(by_end_.begin(), by_end_.end(), [&](uint32_t a, uint32_t b) {
      const Slice &sa = SliceOf(a), &sb = SliceOf(b);
      if (sa.end_ns() != sb.end_ns()) return sa.end_ns() < sb.end_ns();
      if (sa.dur_ns != sb.dur_ns) return sa.dur_ns < sb.dur_ns;
      return a > b;
    });
  }

  int64_t NodeFor(const Key& key) {
    const auto [it, inserted] = ids_.try_emplace(key, static_cast<int64_t>(nodes_.size()));
    if (inserted) nodes_.push_back({std::get<0>(key), std::get<1>(key), std::get<2>(key)});
    return it->second;
  }

  // The walk from the work that ends last by `by` (LastWork's, found by a search over the work
  // sorted by end), into the table; its first node, -1 when no work ends by then.
  int64_t WalkFrom(int64_t by) {
    const auto after = std::upper_bound(by_end_.begin(), by_end_.end(), by,
                                        [&](int64_t at, uint32_t local) { return at < SliceOf(local).end_ns(); });
    if (after == by_end_.begin()) return -1;
    const uint32_t last = *(after - 1);
    const Key first_key{last, true, SliceOf(last).end_ns()};
    if (const auto it = ids_.find(first_key); it != ids_.end()) return it->second;
    const int64_t first = NodeFor(first_key);
    int64_t current = first;
    WalkNode stop{};
    WalkBackFrom(trace_, g_, WalkNode{last, true, std::get<2>(first_key), Edge::kNone},
                 [&](const WalkNode& node, const WalkNode& pred) {
                   std::vector<uint32_t> passes;
                   // A stop's node (not the other node of the slice the walk stands on), or a wait over a stop's end.
                   if (node_stop_[pred.slice] && pred.slice != node.slice) passes.push_back(g_.members[pred.slice]);
                   if (pred.edge != Edge::kSelf && pred.edge != Edge::kChild && pred.edge != Edge::kNested) {
                     for (auto a = std::lower_bound(annotation_ends_.begin(), annotation_ends_.end(),
                                                    std::make_pair(pred.time, uint32_t{0}));
                          a != annotation_ends_.end() && a->first <= node.time; ++a) {
                       passes.push_back(a->second);
                     }
                   }
                   std::sort(passes.begin(), passes.end());
                   passes.erase(std::unique(passes.begin(), passes.end()), passes.end());
                   const Key key{pred.slice, pred.end, pred.time};
                   const bool walked = ids_.contains(key);
                   const int64_t p = NodeFor(key);
                   Node& n = nodes_[static_cast<size_t>(current)];
                   n.pred = p;
                   n.edge = pred.edge;
                   n.passes = std::move(passes);
                   current = p;
                   return walked;  // the rest of this walk is walked already
                 },
                 &stop, visited_);
    return first;
  }

  // The piece that starts at node `first`: back to the next node a piece starts at.
  CriticalPathFinder::PathPiece Piece(size_t first, const std::vector<uint8_t>& starts,
                                      const std::vector<int64_t>& piece_of) {
    std::vector<size_t> chain = {first};  // walk order
    while (nodes_[chain.back()].pred >= 0 && !starts[static_cast<size_t>(nodes_[chain.back()].pred)]) {
      chain.push_back(static_cast<size_t>(nodes_[chain.back()].pred));
    }
    std::vector<WalkNode> walk;  // path order, each with the edge that enters it
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
      const Node& n = nodes_[*it];
      walk.push_back({n.slice, n.end, n.time, it == chain.rbegin() ? Edge::kNone : n.edge});
    }
    CriticalPathFinder::PathPiece piece;
    {
      PathAccount body(trace_, links_, g_, piece.path, /*named=*/false, element_of_);
      body.Credit(walk);
      body.Finish();
    }
    // The elements whose other node this piece does not reach.
    std::unordered_map<uint32_t, uint8_t> reached;  // by local slice: bit 0 start, bit 1 end
    for (const WalkNode& n : walk) reached[n.slice] |= n.end ? 2 : 1;
    for (const auto& [local, bits] : reached) {
      if (bits == 2) piece.open.push_back(g_.members[local]);
      if (bits == 1) piece.closing.push_back(g_.members[local]);
    }
    std::sort(piece.open.begin(), piece.open.end());
    std::sort(piece.closing.begin(), piece.closing.end());
    // A link is time inside an element with a node on either side of it (kSelf, kChild: the
    // later piece's, open; kNested: the earlier's, closing): no element but these is shared.
    piece.shared = piece.open;
    piece.shared.insert(piece.shared.end(), piece.closing.begin(), piece.closing.end());
    std::sort(piece.shared.begin(), piece.shared.end());
    piece.shared.erase(std::unique(piece.shared.begin(), piece.shared.end()), piece.shared.end());
    const Node& last = nodes_[chain.back()];
    if (last.pred >= 0) {
      const Node& pred = nodes_[static_cast<size_t>(last.pred)];
      piece.stopped = true;
      piece.passes = last.passes;
      piece.next = static_cast<size_t>(piece_of[static_cast<size_t>(last.pred)]);
      // The step from the next piece's first node to this one's, credited as the whole path would.
      CriticalPath link;
      {
        PathAccount account(trace_, links_, g_, link, /*named=*/false, element_of_);
        account.Credit({WalkNode{pred.slice, pred.end, pred.time, Edge::kNone},
                        WalkNode{last.slice, last.end, last.time, last.edge}});
      }
      std::copy(std::begin(link.bound_ns), std::end(link.bound_ns), piece.link_bound_ns);
      for (const PathElement& e : link.elements) {
        if (e.held_ns > 0) piece.link_hold_slice = e.slice, piece.link_hold_ns = e.held_ns;
      }
    }
    return piece;
  }

  const Trace& trace_;
  const TraceLinks& links_;
  const Graph& g_;
  std::vector<uint8_t> node_stop_;                            // by local slice
  std::vector<uint8_t> visited_;                              // WalkBackFrom's, shared by the walks
  std::vector<int32_t> element_of_;                           // PathAccount's, shared by the pieces
  std::vector<std::pair<int64_t, uint32_t>> annotation_ends_;  // (end, slice), ascending
  std::vector<uint32_t> by_end_;                               // work, LastWork's order (SortWork)
  std::vector<Node> nodes_;
  std::map<Key, int64_t> ids_;
};

}  // namespace

CriticalPathFinder::WindowPieces CriticalPathFinder::FindPieces(int64_t begin_ns, int64_t end_ns,
                                                                std::span<const int64_t> by_ns,
                                                                std::span<const uint32_t> stops) const {
  WindowPieces out;
  if (trace_.slices().empty()) {
    out.entries.assign(by_ns.size(), -1);
    return out;
  }
  const Graph graph = BuildGraph(trace_, *links_, begin_ns, end_ns);
  PieceFinder finder(trace_, *links_, graph, stops);
  return finder.Find(by_ns);
}

CriticalPath ComputeCriticalPath(const Trace& trace) { return ComputeCriticalPath(trace, INT64_MIN, INT64_MAX); }

CriticalPath ComputeCriticalPath(const Trace& trace, int64_t begin_ns, int64_t end_ns) {
  return CriticalPathFinder(trace).Find(begin_ns, end_ns);
}

void VisitStepCriticalPaths(const Trace& trace, std::span<const StepWindow> windows,
                            const std::function<void(const StepWindow&, const CriticalPath&)>& visit) {
  const CriticalPathFinder paths(trace);
  for (const StepWindow& w : windows) visit(w, paths.Find(w.begin_ns, w.end_ns));
}

void VisitCriticalPathsPerStep(const Trace& trace,
                               const std::function<void(const StepWindow&, const CriticalPath&)>& visit) {
  const std::vector<StepWindow> windows =
      NumberedStepWindows({&trace, 1}, std::nullopt, StepWindowing::kWholeUnlessSeveral).front();
  VisitStepCriticalPaths(trace, windows, visit);
}

}  // namespace stepscope::analysis
