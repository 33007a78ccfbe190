// The call tree of nested slices (a profiler's "call tree" and flame graph): host ops that call
// ops (PyTorch's aten::conv2d > aten::convolution > ...), annotations and Python frames around
// them, aggregated by their path of names from the top, over a time window, some tracks, or a
// few chosen slices. Shared by `stepscope call-tree` and the viewer's call tree pane.
//
// What is counted: every slice that is not an aggregate duplicate (TensorFlow's /stream:all and
// /memcpy repeats) on the chosen lanes, clipped to the window; a zero-length slice counts (a call,
// no time) when it lies in the window. A slice's parent is the slice of its own lane that
// contains it (the lane's nesting, Trace's depth): TraceBuilder keeps nested slices on one lane
// and moves partial overlaps to another, so children lie wholly inside their parent and
//   total = the slices' clipped durations,   self = total - the children's clipped durations,
// exactly, at every node. Annotations and Python frames are nodes like ops (they are the stack
// a flame graph shows); on concurrent lanes (executor ops, kernels) nothing nests, every slice is
// a top-level node with self == total.
//
// Top-down: nodes[0] is the root (the whole selection: total = the top-level slices' clipped
// durations, self 0), each node's children are the distinct names called directly under its path.
// Bottom-up (BottomUpTree): the root's children are every name that has self time or calls, each
// with its self time; below a name, its callers, then their callers, each node holding the self
// time, calls and total of the name at the top of its branch when called through that chain. A
// recursive call (a name under an ancestor of the same name) adds its calls and self time but not
// its total again, so a bottom-up total is the time spent in that name through that chain.
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "profiler/trace/trace.h"

namespace stepscope::analysis {

struct CallTreeOptions {
  int64_t begin_ns = std::numeric_limits<int64_t>::min();  // window in trace time (Trace's ns)
  int64_t end_ns = std::numeric_limits<int64_t>::max();
  // Empty: every lane that is not a GPU lane (the host's ops, threads and annotations). A host
  // or device track stands for all the tracks below it.
  std::vector<uint32_t> tracks;
  // Not empty: only these slices (each a top-level node) and the slices nested in them, unclipped
  // (the window and `tracks` are not used); a slice nested in another one listed is counted once,
  // under it.
  std::vector<uint32_t> slices;
  // Threads to build the tree on; 0: one per core (up to 4) when the selection is big enough
  // to gain from them (a quarter of a million slices), else one. The tree is the same either
  // way, but for the numbering of its nodes and names.
  unsigned threads = 0;
};

// 56 bytes: a tree of random names can hold a node for most of its slices (10 M of them in the
// benchmark); names and children live in the tree's tables.
struct CallTreeNode {
  uint32_t name = 0;    // index in CallTree::names
  int32_t parent = -1;  // -1 for the root
  uint32_t depth = 0;   // 0: the root; 1: top-level names
  uint32_t first_child = 0, child_count = 0;  // CallTree::children[first_child, first_child + child_count)
  int64_t calls = 0, total_ns = 0, self_ns = 0;
  // The longest clipped slice of the node (to jump to); top-down only, -1 when none.
  int64_t longest_slice = -1;

  bool operator==(const CallTreeNode&) const = default;
};

struct CallTree {
  std::vector<std::string> names;   // the distinct names; names[0] is "" (the root's)
  std::vector<CallTreeNode> nodes;  // nodes[0]: the root, always present
  // Each node's children: by total descending, then self, then name (bottom-up: self first).
  std::vector<uint32_t> children;
  int64_t window_begin_ns = 0;      // the window clipped to the trace span
  int64_t window_ns = 0;
  int64_t slices = 0;               // slices counted
  int64_t max_depth = 0;            // deepest node

  const CallTreeNode& root() const { return nodes.front(); }
  const std::string& name(uint32_t node) const { return names[nodes[node].name]; }
  std::span<const uint32_t> children_of(uint32_t node) const {
    return {children.data() + nodes[node].first_child, nodes[node].child_count};
  }
  // Names from the top down to `node` (the root excluded).
  std::vector<std::string> Path(uint32_t node) const;
};

CallTree ComputeCallTree(const trace::Trace& trace, const CallTreeOptions& options = {});

// The bottom-up tree of a top-down tree (see above); its root's total is the top-down root's.
// Built in parts on `threads` threads as ComputeCallTree is (0: one per core, up to 4, from a
// quarter of a million top-down nodes), one per share of its top-level names; the same tree
// either way, but for the numbering of its nodes.
CallTree BottomUpTree(const CallTree& top_down, unsigned threads = 0);

}  // namespace stepscope::analysis
