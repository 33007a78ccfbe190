#include "profiler/analysis/step_analyses.h"

#include <algorithm>
#include <cctype>
#include <map>

#include "profiler/analysis/breakdowns.h"

namespace stepscope::analysis {

using trace::Slice;
using trace::SliceKind;
using trace::Trace;

namespace {

bool ContainsIgnoringCase(std::string_view text, std::string_view needle) {
  auto it = std::search(text.begin(), text.end(), needle.begin(), needle.end(), [](char a, char b) {
    return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
  });
  return it != text.end();
}

// The device a slice's time belongs to; for traces without device tracks (Chrome JSON), its
// process (Kineto puts each GPU in its own process).
int32_t ResourceOf(const Trace& trace, uint32_t track) {
  const int32_t device = trace.DeviceOf(track);
  return device >= 0 ? device : trace.HostOf(track);
}

}  // namespace

bool IsCommunication(const Trace& trace, const Slice& slice) {
  switch (slice.kind) {
    case SliceKind::kCollective: return true;
    case SliceKind::kKernel: return IsCommunicationKernel(trace.str(slice.name));
    case SliceKind::kMemcpy: return ContainsIgnoringCase(trace.str(slice.name), "fusion");
    default: return trace.tracks()[slice.track].kind == trace::TrackKind::kCollective;
  }
}

OverlapStats ComputeOverlap(const Trace& trace) {
  OverlapStats stats;
  stats.span_ns = trace.span_end_ns() - trace.span_begin_ns();
  struct Lists {
    std::vector<std::pair<int64_t, int64_t>> comm, compute;
    int64_t comm_slices = 0;
  };
  std::map<int32_t, Lists> by_device;
  for (const Slice& s : trace.slices()) {
    if (s.duplicate()) continue;
    const bool comm = IsCommunication(trace, s);
    const bool compute = !comm && (s.kind == SliceKind::kKernel || s.kind == SliceKind::kOp);
    if (!comm && !compute) continue;
    // GPU lanes and host lanes of one device are separate resources (PyTorch traces put a GPU's
    // streams and the host threads in one process).
    const bool gpu_lane = s.kind == SliceKind::kKernel || s.kind == SliceKind::kMemcpy ||
                          trace.tracks()[s.track].kind == trace::TrackKind::kGpuStream;
    Lists& lists = by_device[ResourceOf(trace, s.track) * 2 + (gpu_lane ? 1 : 0)];
    (comm ? lists.comm : lists.compute).emplace_back(s.start_ns, s.end_ns());
    if (comm) ++lists.comm_slices;
  }
  for (auto& [device, lists] : by_device) {
    const auto comm = MergeIntervals(std::move(lists.comm));
    const auto compute = MergeIntervals(std::move(lists.compute));
    DeviceOverlap row;
    row.device = device >= 0 ? trace.TrackPath(static_cast<uint32_t>(device / 2)) + (device % 2 == 1 ? " (gpu)" : " (host)") : "";
    for (const auto& [a, b] : comm) row.comm_ns += b - a;
    for (const auto& [a, b] : compute) row.compute_ns += b - a;
    row.hidden_ns = IntersectionLength(comm, compute);
    row.exposed_ns = row.comm_ns - row.hidden_ns;
    row.comm_slices = lists.comm_slices;
    row.hidden_share = row.comm_ns > 0 ? static_cast<double>(row.hidden_ns) / static_cast<double>(row.comm_ns) : 0;
    stats.comm_ns += row.comm_ns;
    stats.hidden_ns += row.hidden_ns;
    stats.exposed_ns += row.exposed_ns;
    stats.devices.push_back(std::move(row));
  }
  stats.hidden_share = stats.comm_ns > 0 ? static_cast<double>(stats.hidden_ns) / static_cast<double>(stats.comm_ns) : 0;
  stats.exposed_share_of_step =
      stats.span_ns > 0 ? static_cast<double>(stats.exposed_ns) / static_cast<double>(stats.span_ns) : 0;
  return stats;
}

CriticalPath ComputeCriticalPath(const Trace& trace) {
  CriticalPath path;
  const auto& slices = trace.slices();
  if (slices.empty()) return path;
  enum Edge : uint8_t { kDataflow, kLaunch, kLane, kNested };
  static constexpr const char* kEdgeNames[] = {"dataflow", "launch", "lane", "nested"};
  struct Pred {
    uint32_t slice;
    Edge edge;
  };
  // Compressed predecessor lists: at most one lane/nesting predecessor per slice plus flows.
  std::vector<int64_t> lane_pred(slices.size(), -1);
  std::vector<uint8_t> lane_edge(slices.size(), kLane);
  for (uint32_t t = 0; t < trace.tracks().size(); ++t) {
    const uint32_t first = trace.track_first_slice(t);
    const auto lane = trace.track_slices(t);
    std::vector<int64_t> last_at_depth;  // last slice seen at each depth under the open parents
    std::vector<uint32_t> parents;       // open enclosing slices, innermost last
    for (uint32_t k = 0; k < lane.size(); ++k) {
      const Slice& s = lane[k];
      const uint32_t index = first + k;
      if (s.duplicate()) continue;
      // Depth says where the slice sits: everything open at its depth or deeper is closed.
      while (!parents.empty() && slices[parents.back()].depth >= s.depth) parents.pop_back();
      const size_t depth = s.depth;
      if (last_at_depth.size() <= depth) last_at_depth.resize(depth + 1, -1);
      const int64_t sibling = last_at_depth[depth];
      const bool sibling_in_parent =
          sibling >= 0 && (parents.empty() || slices[static_cast<size_t>(sibling)].start_ns >= slices[parents.back()].start_ns);
      if (sibling_in_parent) {
        lane_pred[index] = sibling;
      } else if (!parents.empty()) {
        lane_pred[index] = parents.back();
        lane_edge[index] = kNested;
      }
      last_at_depth[depth] = index;
      last_at_depth.resize(depth + 1);
      parents.push_back(index);
    }
  }
  std::vector<std::vector<Pred>> flow_preds(slices.size());
  for (const trace::Flow& flow : trace.flows()) {
    if (flow.from_slice == flow.to_slice) continue;
    flow_preds[flow.to_slice].push_back(
        {flow.from_slice, flow.kind == trace::FlowKind::kLaunch ? kLaunch : kDataflow});
  }
  // The step ends with the work that ends last (the longest at equal ends); profiler spans and
  // annotations (kind other) enclose work rather than being it.
  int64_t last = -1;
  for (uint32_t i = 0; i < slices.size(); ++i) {
    if (slices[i].duplicate() || slices[i].kind == SliceKind::kOther || trace::IsAnnotationOrSync(slices[i].kind)) {
      continue;
    }
    if (last < 0 || slices[i].end_ns() > slices[static_cast<size_t>(last)].end_ns()) last = i;
  }
  if (last < 0) return path;
  std::vector<char> visited(slices.size(), 0);
  std::vector<std::pair<uint32_t, int>> chain;  // (slice, edge to its predecessor or -1)
  uint32_t current = static_cast<uint32_t>(last);
  while (true) {
    visited[current] = 1;
    const Slice& s = slices[current];
    int64_t best = -1;
    int best_edge = -1;
    int64_t best_ready = 0;
    auto consider = [&](uint32_t p, int edge) {
      // Annotations and sync markers enclose or mark work: never a link of the path.
      if (visited[p] || slices[p].duplicate() || trace::IsAnnotationOrSync(slices[p].kind)) return;
      const Slice& pred = slices[p];
      if (pred.start_ns > s.start_ns) return;  // a flow drawn backwards in time binds nothing
      const int64_t ready = std::min(pred.end_ns(), s.start_ns);
      if (best < 0 || ready > best_ready ||
          (ready == best_ready && pred.end_ns() > slices[static_cast<size_t>(best)].end_ns())) {
        best = p;
        best_edge = edge;
        best_ready = ready;
      }
    };
    for (const Pred& p : flow_preds[current]) consider(p.slice, p.edge);
    if (lane_pred[current] >= 0) consider(static_cast<uint32_t>(lane_pred[current]), lane_edge[current]);
    chain.emplace_back(current, best_edge);
    if (best < 0) break;
    current = static_cast<uint32_t>(best);
  }
  std::reverse(chain.begin(), chain.end());
  std::map<std::string, PathShare> shares;
  for (size_t k = 0; k < chain.size(); ++k) {
    const Slice& s = slices[chain[k].first];
    PathElement e;
    e.slice = chain[k].first;
    e.name = std::string(trace.str(s.name));
    e.op_type = std::string(trace.str(s.op_type));
    e.kind = std::string(trace::SliceKindName(s.kind));
    e.lane = trace.TrackPath(s.track);
    e.start_ns = s.start_ns;
    e.dur_ns = s.dur_ns;
    if (k > 0) {
      const Slice& prev = slices[chain[k - 1].first];
      e.wait_ns = s.start_ns - std::min(prev.end_ns(), s.start_ns);
      // chain[k].second is the edge from chain[k-1] to chain[k] (-1 only for the first).
      e.edge = kEdgeNames[chain[k].second];
    }
    path.wait_ns += e.wait_ns;
    // Time this element holds the path: until the next one starts (or its end, if sooner).
    const int64_t held = k + 1 < chain.size()
                             ? std::min(s.end_ns(), slices[chain[k + 1].first].start_ns) - s.start_ns
                             : s.dur_ns;
    PathShare& share = shares[e.op_type];
    share.op_type = e.op_type;
    ++share.count;
    share.total_ns += std::max<int64_t>(0, held);
    path.elements.push_back(std::move(e));
  }
  path.length_ns = slices[chain.back().first].end_ns() - slices[chain.front().first].start_ns;
  path.busy_ns = path.length_ns - path.wait_ns;
  for (auto& [op, share] : shares) {
    share.share = path.length_ns > 0 ? static_cast<double>(share.total_ns) / static_cast<double>(path.length_ns) : 0;
    path.by_op_type.push_back(share);
  }
  std::stable_sort(path.by_op_type.begin(), path.by_op_type.end(),
                   [](const PathShare& a, const PathShare& b) { return a.total_ns > b.total_ns; });
  return path;
}

}  // namespace stepscope::analysis
