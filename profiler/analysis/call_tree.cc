// The call tree of nested slices, top-down and bottom-up (call_tree.h): one walk over each
// chosen lane with a stack of the open slices, and one hash lookup per slice for its node.
#include "profiler/analysis/call_tree.h"

#include <algorithm>
#include <span>
#include <unordered_map>

namespace stepscope::analysis {
namespace {

using trace::Slice;
using trace::Trace;

// Nodes by (parent, name), and the figures a walk adds to them.
class TreeBuilder {
 public:
  explicit TreeBuilder(CallTree& tree) : tree_(tree) {
    tree_.nodes.clear();
    tree_.nodes.emplace_back();
    longest_ns_.push_back(-1);
  }

  uint32_t Child(uint32_t parent, trace::StringId name, std::string_view text) {
    const uint64_t key = (uint64_t{parent} << 32) | name;
    auto [it, inserted] = index_.try_emplace(key, static_cast<uint32_t>(tree_.nodes.size()));
    if (inserted) {
      CallTreeNode node;
      node.name = std::string(text);
      node.name_id = name;
      node.parent = static_cast<int32_t>(parent);
      node.depth = tree_.nodes[parent].depth + 1;
      tree_.nodes.push_back(std::move(node));
      longest_ns_.push_back(-1);
      tree_.nodes[parent].children.push_back(it->second);
    }
    return it->second;
  }

  // Walks slices [from, to) of one lane in its order, clipped to [begin, end]; stops at the
  // first slice past `end` (the lane is sorted by start).
  void Walk(const Trace& trace, uint32_t from, uint32_t to, int64_t begin, int64_t end) {
    const std::span<const Slice> slices = trace.slices();
    open_.clear();
    for (uint32_t index = from; index < to; ++index) {
      const Slice& s = slices[index];
      if (s.start_ns > end) break;
      if (s.duplicate()) continue;
      // Slices of a lane nest or are disjoint: what ended by this start is no parent of it.
      while (!open_.empty() && open_.back().end <= s.start_ns) open_.pop_back();
      const int64_t clip_start = std::max(s.start_ns, begin);
      const int64_t clip_end = std::min(s.end_ns(), end);
      // As ComputeOpStats: a zero-length slice counts when it lies in the closed window.
      const bool inside = s.dur_ns == 0 ? s.start_ns >= begin : clip_end > clip_start;
      if (!inside) continue;  // nor can anything inside it be
      const int64_t clipped = std::max<int64_t>(0, clip_end - clip_start);
      const uint32_t parent = open_.empty() ? 0 : open_.back().node;
      const trace::SliceLabel& label = trace.labels()[s.label];
      const uint32_t node = Child(parent, label.name, trace.str(label.name));
      CallTreeNode& n = tree_.nodes[node];
      ++n.calls;
      n.total_ns += clipped;
      n.self_ns += clipped;
      // The child lies inside its parent, so its clipped part lies inside the parent's.
      tree_.nodes[parent].self_ns -= clipped;
      if (clipped > longest_ns_[node]) {
        longest_ns_[node] = clipped;
        n.longest_slice = index;
      }
      ++tree_.slices;
      open_.push_back({s.end_ns(), node});
    }
  }

  // The root's figures, children in order, the deepest level.
  void Finish() {
    CallTreeNode& root = tree_.nodes.front();
    root.total_ns = 0;
    for (uint32_t child : root.children) root.total_ns += tree_.nodes[child].total_ns;
    root.self_ns = 0;
    SortChildren(tree_);
  }

  static void SortChildren(CallTree& tree) {
    tree.max_depth = 0;
    for (CallTreeNode& node : tree.nodes) {
      tree.max_depth = std::max<int64_t>(tree.max_depth, node.depth);
      std::sort(node.children.begin(), node.children.end(), [&](uint32_t a, uint32_t b) {
        const CallTreeNode& x = tree.nodes[a];
        const CallTreeNode& y = tree.nodes[b];
        if (x.total_ns != y.total_ns) return x.total_ns > y.total_ns;
        if (x.self_ns != y.self_ns) return x.self_ns > y.self_ns;
        return x.name < y.name;
      });
    }
  }

 private:
  struct Open {
    int64_t end;
    uint32_t node;
  };
  CallTree& tree_;
  std::unordered_map<uint64_t, uint32_t> index_;
  std::vector<int64_t> longest_ns_;  // per node: its longest clipped slice's duration
  std::vector<Open> open_;
};

// Which tracks to walk: the listed ones and those below them; with none listed, every lane
// that is not a GPU lane.
std::vector<char> ChosenTracks(const Trace& trace, const std::vector<uint32_t>& listed) {
  const auto& tracks = trace.tracks();
  std::vector<char> chosen(tracks.size(), 0);
  if (listed.empty()) {
    for (size_t t = 0; t < tracks.size(); ++t) chosen[t] = !trace::IsGpuLane(tracks[t].kind);
    return chosen;
  }
  std::vector<char> is_listed(tracks.size(), 0);
  for (uint32_t t : listed) {
    if (t < tracks.size()) is_listed[t] = 1;
  }
  for (size_t t = 0; t < tracks.size(); ++t) {
    for (int32_t up = static_cast<int32_t>(t); up >= 0 && !chosen[t]; up = tracks[static_cast<size_t>(up)].parent) {
      chosen[t] = is_listed[static_cast<size_t>(up)];
    }
  }
  return chosen;
}

// The first slice of a lane from which a walk meets every slice overlapping `begin` and their
// parents: the last top-level slice starting before `begin` (everything before it ended by then).
uint32_t WalkStart(const Trace& trace, uint32_t track, int64_t begin) {
  const std::span<const Slice> lane = trace.track_slices(track);
  const uint32_t first = trace.track_first_slice(track);
  auto k = static_cast<uint32_t>(
      std::lower_bound(lane.begin(), lane.end(), begin, [](const Slice& s, int64_t t) { return s.start_ns < t; }) -
      lane.begin());
  while (k > 0) {
    --k;
    if (lane[k].depth == 0) break;
  }
  return first + k;
}

// The chosen slices and what nests in them: each walked with its descendants, which follow it
// in its lane's order at a greater depth.
void WalkChosenSlices(const Trace& trace, std::vector<uint32_t> chosen, TreeBuilder& builder) {
  const std::span<const Slice> slices = trace.slices();
  std::sort(chosen.begin(), chosen.end());
  chosen.erase(std::unique(chosen.begin(), chosen.end()), chosen.end());
  uint32_t walked_to = 0;  // slices below this index were walked as a chosen one's descendants
  for (uint32_t root : chosen) {
    if (root >= slices.size() || (root < walked_to && walked_to > 0)) continue;
    const uint32_t track = slices[root].track;
    const uint32_t track_end = trace.track_first_slice(track) + static_cast<uint32_t>(trace.track_slices(track).size());
    uint32_t to = root + 1;
    while (to < track_end && slices[to].depth > slices[root].depth) ++to;
    builder.Walk(trace, root, to, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max());
    walked_to = to;
  }
}

// The length of the longest run where the names from `a` upward equal those from `b` upward.
size_t CommonChain(const std::vector<trace::StringId>& chain, size_t a, size_t b) {
  size_t n = 0;
  while (a + n < chain.size() && b + n < chain.size() && chain[a + n] == chain[b + n]) ++n;
  return n;
}

}  // namespace

std::vector<std::string> CallTree::Path(uint32_t node) const {
  std::vector<std::string> path;
  for (int32_t n = static_cast<int32_t>(node); n > 0; n = nodes[static_cast<size_t>(n)].parent) {
    path.push_back(nodes[static_cast<size_t>(n)].name);
  }
  std::reverse(path.begin(), path.end());
  return path;
}

CallTree ComputeCallTree(const Trace& trace, const CallTreeOptions& options) {
  CallTree tree;
  TreeBuilder builder(tree);
  const int64_t begin = std::max(options.begin_ns, trace.span_begin_ns());
  const int64_t end = std::min(options.end_ns, trace.span_end_ns());
  if (!options.slices.empty()) {
    WalkChosenSlices(trace, options.slices, builder);
    builder.Finish();
    tree.window_begin_ns = trace.span_begin_ns();
    tree.window_ns = trace.span_end_ns() - trace.span_begin_ns();
    return tree;
  }
  tree.window_begin_ns = begin;
  tree.window_ns = end > begin ? end - begin : 0;
  if (trace.slices().empty() || end < begin) {
    builder.Finish();
    return tree;
  }
  const std::vector<char> chosen = ChosenTracks(trace, options.tracks);
  for (uint32_t t = 0; t < trace.tracks().size(); ++t) {
    if (!chosen[t] || trace.track_slices(t).empty()) continue;
    const uint32_t to = trace.track_first_slice(t) + static_cast<uint32_t>(trace.track_slices(t).size());
    builder.Walk(trace, WalkStart(trace, t, begin), to, begin, end);
  }
  builder.Finish();
  return tree;
}

CallTree BottomUpTree(const CallTree& top_down) {
  CallTree tree;
  TreeBuilder builder(tree);
  tree.window_begin_ns = top_down.window_begin_ns;
  tree.window_ns = top_down.window_ns;
  tree.slices = top_down.slices;
  std::vector<trace::StringId> chain;  // names from a node up to the top
  std::vector<uint32_t> chain_nodes;
  for (uint32_t n = 1; n < top_down.nodes.size(); ++n) {
    const CallTreeNode& leaf = top_down.nodes[n];
    if (leaf.calls == 0) continue;
    chain.clear();
    chain_nodes.clear();
    for (int32_t up = static_cast<int32_t>(n); up > 0; up = top_down.nodes[static_cast<size_t>(up)].parent) {
      chain.push_back(top_down.nodes[static_cast<size_t>(up)].name_id);
      chain_nodes.push_back(static_cast<uint32_t>(up));
    }
    // A recursive call: an ancestor `j` up with the same chain of k + 1 names holds this node's
    // time already at the bottom-up levels 0..k, so its total counts only from level k + 1 on.
    size_t counted_from = 0;
    for (size_t j = 1; j < chain.size(); ++j) {
      if (chain[j] == chain[0]) counted_from = std::max(counted_from, CommonChain(chain, 0, j));
    }
    uint32_t node = 0;
    for (size_t level = 0; level < chain.size(); ++level) {
      node = builder.Child(node, chain[level], top_down.nodes[chain_nodes[level]].name);
      CallTreeNode& b = tree.nodes[node];
      b.calls += leaf.calls;
      b.self_ns += leaf.self_ns;
      if (level >= counted_from) b.total_ns += leaf.total_ns;
    }
  }
  TreeBuilder::SortChildren(tree);
  tree.nodes.front().total_ns = top_down.root().total_ns;
  return tree;
}

}  // namespace stepscope::analysis
