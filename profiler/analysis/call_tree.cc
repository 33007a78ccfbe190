// The call tree of nested slices, top-down and bottom-up (call_tree.h): one pass over each chosen
// lane that finds each slice's parent by its depth and looks its node up a few slices later, its
// slot prefetched by the hash of its path of names (and adds to a node met before a few slices
// after that, its lines prefetched); a big selection in parts on the cores, one per share of the
// top-level names, each naming its nodes (BuildTopDown).
#include "profiler/analysis/call_tree.h"

#include <algorithm>
#include <array>
#include <bit>
#include <memory>
#include <new>
#include <type_traits>
#include <span>

#include "base/check.h"
#include "base/huge_pages.h"
#include "base/mapped_array.h"
#include "base/run_parts.h"

namespace stepscope::analysis {
namespace {

using trace::Slice;
using trace::Trace;

// MurmurHash3's finaliser: every bit of `h` reaches the low bits an index's mask keeps.
uint64_t MixBits(uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  return h ^ (h >> 33);
}

// A top-down node is indexed by the hash of its path of names from the top, which a walk knows
// from the parent slice's path before the parent's node is looked up: so the slot of a slice's
// node is prefetched a few slices ahead in the lane's order, where a child usually follows its
// parent at once. (The slot still holds, and is matched on, the parent node and the name.)
constexpr uint64_t kRootPath = 0;
uint64_t PathHash(uint64_t parent_path, trace::StringId name) {
  return MixBits(parent_path ^ (uint64_t{name} * 0x9e3779b97f4a7c15ull + 1));
}
// A bottom-up node is indexed by its parent node and name.
uint64_t PairHash(uint32_t parent, uint32_t key) { return MixBits((uint64_t{parent} << 32) | key); }

// (parent, key) -> node, open addressing with linear probing, at most 70 % full: one probe into
// a flat array per slice (std::unordered_map's node per entry made a 10 M-slice tree 4x slower).
// The slots live in a mapping of their own whose fresh pages are zero, and zero is an empty slot
// (a slot holds its node + 1): a table sized up front costs only the pages its entries touch.
// Fuller than half: a fresh page costs more than the longer probes. A pair's place comes from
// the hash its tree gives it (PathHash, PairHash), the same at every lookup; the slot keeps that
// hash's low half, from which it is placed again when the table grows.
class NodeIndex {
 public:
  NodeIndex() { Rehash(1024); }
  // Room for `entries` without growing; the table only grows.
  void Reserve(size_t entries) {
    size_t capacity = slots_.size();
    while (Full(entries, capacity)) capacity *= 2;
    if (capacity > slots_.size()) Rehash(capacity);
  }
  void Prefetch(uint64_t hash) const { __builtin_prefetch(&slots_[hash & mask_]); }
  size_t size() const { return size_; }
  size_t capacity() const { return slots_.size(); }

  // The table's memory, for a later phase once no more lookups come (the index is unusable
  // after): its pages are touched already, where new ones would first be zeroed by the kernel.
  std::span<std::byte> Retire() {
    mask_ = size_ = 0;
    return std::as_writable_bytes(std::span(slots_.data(), slots_.size()));
  }

  // The node of (parent, key), or `fresh` entered as it when absent.
  std::pair<uint32_t, bool> FindOrAdd(uint32_t parent, uint32_t key, uint64_t hash, uint32_t fresh) {
    if (Full(size_ + 1, slots_.size())) Rehash(slots_.size() * 2);
    for (size_t i = hash & mask_;; i = (i + 1) & mask_) {
      Slot& slot = slots_[i];
      if (slot.node_plus_one == 0) {
        slot = {parent, key, fresh + 1, static_cast<uint32_t>(hash)};
        ++size_;
        return {fresh, true};
      }
      if (slot.parent == parent && slot.key == key) return {slot.node_plus_one - 1, false};
    }
  }

 private:
  struct Slot {
    uint32_t parent = 0, key = 0, node_plus_one = 0;  // all zero: empty
    uint32_t hash = 0;  // the low half of the pair's hash: 16 bytes, four slots to a cache line
  };
  static bool Full(size_t entries, size_t capacity) { return 10 * entries > 7 * capacity; }
  void Rehash(size_t capacity) {
    STEPSCOPE_CHECK(capacity <= (size_t{1} << 32));  // a slot's place is in its hash's low half
    MappedArray<Slot> old = std::move(slots_);
    slots_ = MappedArray<Slot>(capacity);  // fresh pages: every slot empty, none written
    AdviseHugePages(slots_.data(), capacity * sizeof(Slot));
    mask_ = capacity - 1;
    for (const Slot& slot : old) {
      if (slot.node_plus_one == 0) continue;
      size_t i = slot.hash & mask_;
      while (slots_[i].node_plus_one != 0) i = (i + 1) & mask_;
      slots_[i] = slot;
    }
  }
  MappedArray<Slot> slots_;
  size_t mask_ = 0, size_ = 0;
};

enum class TreeKind { kTopDown, kBottomUp };

// A child's sort key, copied beside the others of its parent (comparing through the nodes was a
// cache miss per comparison in a tree of millions of nodes): its total (bottom-up: its self
// time); the rare ties are broken through the nodes.
struct ChildKey {
  int64_t first;
  uint32_t node;
};

ChildKey KeyOf(const CallTreeNode& node, uint32_t index, TreeKind kind) {
  return {kind == TreeKind::kBottomUp ? node.self_ns : node.total_ns, index};
}

// The order of a node's children: by total, then self, then name, largest first (bottom-up: self
// first). `text` gives a node's name (its names[] entry, or the trace's string while names are
// StringIds).
template <typename NameText>
struct ChildOrder {
  const std::vector<CallTreeNode>& nodes;
  TreeKind kind;
  NameText text;

  bool operator()(const ChildKey& x, const ChildKey& y) const {
    if (x.first != y.first) return x.first > y.first;
    const CallTreeNode& a = nodes[x.node];
    const CallTreeNode& b = nodes[y.node];
    const bool by_self = kind == TreeKind::kBottomUp;
    const int64_t a_second = by_self ? a.total_ns : a.self_ns, b_second = by_self ? b.total_ns : b.self_ns;
    if (a_second != b_second) return a_second > b_second;
    return text(a.name) < text(b.name);
  }
};

// Buffers a sort reuses from one parent to the next.
struct SortSpace {
  std::vector<ChildKey> spare;
  std::vector<uint32_t> counts;
};

// Sorts one parent's children keys: spread into buckets by the leading bits of `first` (largest
// first), then each bucket of more than one key the same way, down to a few keys sorted by
// insertion; keys of one `first` by std::sort. The buckets are as many as the keys, so random
// totals leave one or two keys to a bucket: two passes where std::sort's comparisons of random
// totals were a mispredicted branch each (a sixth of a big build).
template <typename Order>
void SortChildKeys(std::span<ChildKey> keys, const Order& order, SortSpace& space) {
  constexpr size_t kInsertionSortMost = 16;
  const size_t count = keys.size();
  if (count <= kInsertionSortMost) {
    for (size_t i = 1; i < count; ++i) {
      const ChildKey key = keys[i];
      size_t j = i;
      for (; j > 0 && order(key, keys[j - 1]); --j) keys[j] = keys[j - 1];
      keys[j] = key;
    }
    return;
  }
  int64_t low = keys[0].first, high = low;
  for (const ChildKey& key : keys) {
    low = std::min(low, key.first);
    high = std::max(high, key.first);
  }
  if (low == high) {
    std::sort(keys.begin(), keys.end(), order);
    return;
  }
  // The bucket of a key: its distance below the highest, shifted to as many bits as the count has.
  const auto range = static_cast<uint64_t>(high) - static_cast<uint64_t>(low);
  const int shift = std::max(0, static_cast<int>(std::bit_width(range)) - static_cast<int>(std::bit_width(count)));
  const auto bucket_of = [high, shift](const ChildKey& key) {
    return static_cast<size_t>((static_cast<uint64_t>(high) - static_cast<uint64_t>(key.first)) >> shift);
  };
  const size_t buckets = (range >> shift) + 1;
  space.counts.assign(buckets + 1, 0);
  for (const ChildKey& key : keys) ++space.counts[bucket_of(key) + 1];
  for (size_t b = 1; b <= buckets; ++b) space.counts[b] += space.counts[b - 1];
  if (space.spare.size() < count) space.spare.resize(count);
  for (const ChildKey& key : keys) space.spare[space.counts[bucket_of(key)]++] = key;
  std::copy_n(space.spare.begin(), count, keys.begin());
  // Each bucket (a run of one bucket index) in turn; `space` is free again.
  for (size_t i = 0; i < count;) {
    const size_t bucket = bucket_of(keys[i]);
    size_t j = i + 1;
    while (j < count && bucket_of(keys[j]) == bucket) ++j;
    if (j - i > 1) SortChildKeys(keys.subspan(i, j - i), order, space);
    i = j;
  }
}

// Which of `parts` parts a top-level name's subtrees belong to: the name's hash (32 bits) scaled
// to [0, parts) by a multiply (a division, for every top-level slice of every part's walk, was a
// tenth of a big build).
uint32_t PartOf(trace::StringId name, uint32_t parts) {
  const uint64_t hash = (uint64_t{name} * 0x9e3779b97f4a7c15ull) >> 32;
  return static_cast<uint32_t>((hash * parts) >> 32);
}

// An array of `count` T in `scratch` (memory an earlier phase touched), which it then leaves
// out, else in a vector of its own when it does not fit. Its values start unset.
template <typename T>
class ScratchArray {
  static_assert(std::is_trivially_default_constructible_v<T> && std::is_trivially_destructible_v<T>);

 public:
  ScratchArray(std::span<std::byte>& scratch, size_t count) : size_(count) {
    void* place = scratch.data();
    size_t room = scratch.size();
    if (count > 0 && std::align(alignof(T), count * sizeof(T), place, room) != nullptr) {
      data_ = new (place) T[count];  // trivial: begins the values' lifetime, writes nothing
      scratch = scratch.last(room - count * sizeof(T));
    } else {
      own_.resize(count);
      data_ = own_.data();
    }
  }
  T* data() { return data_; }
  T& operator[](size_t i) { return data_[i]; }
  std::span<T> span() { return {data_, size_}; }

 private:
  std::vector<T> own_;
  T* data_ = nullptr;
  size_t size_;
};

// While a tree is walked its nodes' children are not linked yet (LinkChildren links them), so
// their two child fields hold the node's longest clipped slice's duration + 1 (0: none): beside
// the figures the walk adds, where a table of their own was another cache miss per slice.
int64_t WalkLongest(const CallTreeNode& node) {
  return static_cast<int64_t>((uint64_t{node.child_count} << 32) | node.first_child);
}
void SetWalkLongest(CallTreeNode& node, int64_t longest_plus_one) {
  node.first_child = static_cast<uint32_t>(longest_plus_one);
  node.child_count = static_cast<uint32_t>(static_cast<uint64_t>(longest_plus_one) >> 32);
}

// Nodes by (parent, name), and the figures a walk adds to them. A top-down tree may be built in
// parts, each holding the subtrees under the top-level names of its part (PartOf), which share
// no node but the root: each part is built on a thread of its own and appended to the first.
class TreeBuilder {
 public:
  explicit TreeBuilder(CallTree& tree, uint32_t part = 0, uint32_t parts = 1)
      : tree_(tree), part_(part), parts_(parts) {
    tree_ = CallTree{};
    tree_.names.emplace_back();
    tree_.nodes.emplace_back();
  }

  // The child of `parent` keyed by `key` (a StringId of the trace, or a name of another tree),
  // placed in the index by `hash` (PathHash, PairHash); `name` gives the new node's name index
  // when there is none yet. `depth` is the parent's + 1 (known to the caller: reading it from
  // the parent was a cache miss per new node).
  template <typename NameOf>
  uint32_t Child(uint32_t parent, uint32_t key, uint64_t hash, uint32_t depth, NameOf name) {
    const auto [node, added] = index_.FindOrAdd(parent, key, hash, static_cast<uint32_t>(tree_.nodes.size()));
    if (added) {
      CallTreeNode& n = tree_.nodes.emplace_back();
      n.name = name();
      n.parent = static_cast<int32_t>(parent);
      n.depth = depth;
    }
    return node;
  }

  void Prefetch(uint64_t hash) const { index_.Prefetch(hash); }

  // Room for the nodes of `slices` slices (a slice adds one node at most), so that the nodes
  // are not copied as they grow: the reserve is address space until written. Bounded, past
  // which they grow as needed. The index is sized for `expected_nodes`: every page of it is
  // touched once it holds as many entries as pages, so it is not sized past a guess (a table
  // grown to its size instead wrote as many fresh bytes again in the tables it left).
  void Reserve(size_t slices, size_t expected_nodes) {
    constexpr size_t kMostNodesReserved = size_t{1} << 24;  // 16 M nodes: 0.9 GB of address space
    const size_t nodes = std::min(slices, kMostNodesReserved);
    tree_.nodes.reserve(nodes + 1);
    AdviseHugePages(tree_.nodes.data(), tree_.nodes.capacity() * sizeof(CallTreeNode));
    index_.Reserve(std::min(expected_nodes, nodes));
  }

  // Walks slices [from, to) of one lane in its order, clipped to [begin, end]; stops at the
  // first slice past `end` (the lane is sorted by start). One pass: a slice's parent is the
  // innermost counted one among the slices enclosing it, which `open_` holds one per depth
  // (Trace's nesting: every slice from the walk's first on is as deep as it or deeper, and
  // follows its enclosing slices); its path hash follows from its parent's, and its node is
  // looked up kAhead counted slices later (Settle), in the lane's order, by then with its slot
  // in the cache and its parent's node known. The nodes' names are the slices' StringIds until
  // NameNodes.
  void Walk(const Trace& trace, uint32_t from, uint32_t to, int64_t begin, int64_t end) {
    if (from >= to) return;
    const std::span<const Slice> slices = trace.slices();
    const trace::LabelTable& labels = trace.labels();
    const uint32_t base = slices[from].depth;
    open_.clear();
    for (uint32_t index = from; index < to; ++index) {
      const Slice& s = slices[index];
      if (s.start_ns > end) break;
      // The slices enclosing this one: one per depth above it, or, at the deepest depth a Slice
      // records (where deeper ones are clamped to it), those there not ended by its start.
      if (s.depth < Slice::kMaxDepth) [[likely]] {
        const size_t enclosing = s.depth - base;
        STEPSCOPE_CHECK(enclosing <= open_.size());  // Trace's nesting, walked from a slice no deeper
        open_.resize(enclosing);
      } else {
        while (open_.size() > Slice::kMaxDepth - base && open_.back().end <= s.start_ns) open_.pop_back();
      }
      const Open parent = open_.empty() ? Open{0, kRootPath, kAtRoot, 0} : open_.back();
      if (parent.at == kAtOtherPart) {
        open_.push_back(parent);
        continue;
      }
      const int64_t clip_start = std::max(s.start_ns, begin);
      const int64_t clip_end = std::min(s.end_ns(), end);
      // As ComputeOpStats: a zero-length slice counts when it lies in the closed window.
      const bool inside = s.dur_ns == 0 ? s.start_ns >= begin : clip_end > clip_start;
      if (s.duplicate() || !inside) {
        // Not counted: what it encloses hangs from its parent.
        open_.push_back({s.end_ns(), parent.path, parent.at, parent.depth});
        continue;
      }
      const trace::StringId name = labels[s.label].name;
      if (parent.at == kAtRoot && PartOf(name, parts_) != part_) {
        // Another part's subtree: what nests in it follows it in the lane, deeper, until the
        // next slice as shallow as it; passed over on the depth alone (one by one below a
        // slice of the deepest depth recorded).
        if (s.depth < Slice::kMaxDepth) {
          while (index + 1 < to && slices[index + 1].depth > s.depth) ++index;
        } else {
          open_.push_back({s.end_ns(), 0, kAtOtherPart, 0});
        }
        continue;
      }
      const auto at = static_cast<int32_t>(open_.size());
      if (static_cast<size_t>(at) >= node_at_.size()) node_at_.resize(static_cast<size_t>(at) + 1);
      const uint64_t path = PathHash(parent.path, name);
      open_.push_back({s.end_ns(), path, at, parent.depth + 1});
      index_.Prefetch(path);
      if (queued_ - settled_ == kAhead) Settle(pending_[settled_++ % kAhead]);
      pending_[queued_++ % kAhead] = {index, name, parent.at, at, parent.depth + 1, path,
                                      std::max<int64_t>(0, clip_end - clip_start)};
    }
    while (settled_ < queued_) Settle(pending_[settled_++ % kAhead]);
    while (added_to_ < adding_) AddTo(additions_[added_to_++ % kAddAhead]);
  }

  // Each node's children in one array, grouped by parent, in the order of CallTree::children
  // (bottom-up: self time first). Counted and scattered by parent in passes over the nodes in
  // their order, then each group sorted on its keys: a gather through the nodes (a cache miss
  // per child in a tree of millions of nodes) was most of the time. A top-down tree's self
  // times are found here: a node's slices spent their total less what the slices called from
  // them spent, which is the node's children's totals (the walk adds only totals).
  // The walks are done: links the tree's children with the index's memory as scratch.
  template <typename NameText>
  void LinkChildren(TreeKind kind, NameText text) {
    std::span<std::byte> scratch = index_.Retire();
    LinkChildren(tree_, kind, text, scratch);
  }
  template <typename NameText>
  static void LinkChildren(CallTree& tree, TreeKind kind, NameText text, std::span<std::byte> scratch = {}) {
    auto& nodes = tree.nodes;
    ScratchArray<ChildKey> keys(scratch, nodes.size() - 1);
    ScratchArray<uint32_t> next(scratch, nodes.size() + 1);  // first, then next free, child slot per node
    std::fill_n(next.data(), nodes.size() + 1, 0u);
    tree.max_depth = 0;
    for (size_t n = 1; n < nodes.size(); ++n) {
      ++next[static_cast<size_t>(nodes[n].parent) + 1];
      tree.max_depth = std::max<int64_t>(tree.max_depth, nodes[n].depth);
    }
    for (size_t n = 0; n < nodes.size(); ++n) {
      next[n + 1] += next[n];
      nodes[n].first_child = next[n];
      nodes[n].child_count = next[n + 1] - next[n];
    }
    for (size_t n = 1; n < nodes.size(); ++n) {
      keys[next[static_cast<size_t>(nodes[n].parent)]++] = KeyOf(nodes[n], static_cast<uint32_t>(n), kind);
    }
    if (kind == TreeKind::kTopDown) {
      // A node's children keys hold their totals, side by side.
      for (CallTreeNode& node : nodes) {
        int64_t called = 0;
        for (uint32_t k = 0; k < node.child_count; ++k) called += keys[node.first_child + k].first;
        node.self_ns = node.total_ns - called;
      }
    }
    const ChildOrder<NameText> order{nodes, kind, text};
    SortSpace space;
    for (const CallTreeNode& node : nodes) {
      if (node.child_count > 1) SortChildKeys(keys.span().subspan(node.first_child, node.child_count), order, space);
    }
    tree.children.resize(nodes.size() - 1);
    for (size_t k = 0; k + 1 < nodes.size(); ++k) tree.children[k] = keys[k].node;
  }

 private:
  static constexpr int32_t kAtRoot = -1;       // Open::at of the slices of no counted parent
  static constexpr int32_t kAtOtherPart = -2;  // ... of those in another part's subtree
  // An open slice: what a slice it encloses hangs from. A counted slice's own path, node slot
  // (node_at_) and tree depth; for one not counted, its parent's.
  struct Open {
    int64_t end;
    uint64_t path;
    int32_t at;
    uint32_t depth;
  };
  // A counted slice waiting for its node.
  struct Pending {
    uint32_t slice;
    trace::StringId name;
    int32_t parent_at;  // node_at_ slot of its parent's node, kAtRoot at the top
    int32_t at;         // node_at_ slot of its own
    uint32_t depth;
    uint64_t path;
    int64_t clipped;
  };
  static constexpr size_t kAhead = 16;  // lookups prefetched ahead; a power of two
  // A counted slice of a node that existed already, waiting for its figures to be added.
  struct Addition {
    uint32_t node;
    uint32_t slice;
    int64_t clipped;
  };
  static constexpr size_t kAddAhead = 8;  // additions prefetched ahead; a power of two

  // The node of a pending slice, and its figures. Its parent was settled before it (the lane's
  // order), and none of the parent's later siblings yet, so node_at_ holds the parent's node.
  void Settle(const Pending& p) {
    const uint32_t parent = p.parent_at == kAtRoot ? 0 : node_at_[static_cast<size_t>(p.parent_at)];
    const auto [node, added] =
        index_.FindOrAdd(parent, p.name, p.path, static_cast<uint32_t>(tree_.nodes.size()));
    node_at_[static_cast<size_t>(p.at)] = node;
    ++tree_.slices;
    if (added) {
      // Written whole: reading back a node just begun (its line not fetched yet: most new nodes
      // start a fresh line) waited for memory at every new node.
      CallTreeNode n;
      n.name = p.name;
      n.parent = static_cast<int32_t>(parent);
      n.depth = p.depth;
      n.calls = 1;
      n.total_ns = p.clipped;
      SetWalkLongest(n, p.clipped + 1);
      n.longest_slice = p.slice;
      tree_.nodes.push_back(n);
      return;
    }
    // A node met before lies anywhere in the nodes (waiting for its line was an eighth of a big
    // build): its figures are added kAddAhead such slices later, its lines prefetched now. The
    // additions keep the lane's order, so the longest slice is the same one.
    const auto* line = reinterpret_cast<const char*>(&tree_.nodes[node]);
    __builtin_prefetch(line, 1);
    __builtin_prefetch(line + sizeof(CallTreeNode) - 1, 1);
    if (adding_ - added_to_ == kAddAhead) AddTo(additions_[added_to_++ % kAddAhead]);
    additions_[adding_++ % kAddAhead] = {node, p.slice, p.clipped};
  }

  void AddTo(const Addition& a) {
    CallTreeNode& n = tree_.nodes[a.node];
    ++n.calls;
    n.total_ns += a.clipped;
    if (a.clipped + 1 > WalkLongest(n)) {
      SetWalkLongest(n, a.clipped + 1);
      n.longest_slice = a.slice;
    }
  }

  CallTree& tree_;
  uint32_t part_, parts_;
  NodeIndex index_;
  std::vector<Open> open_;
  std::vector<uint32_t> node_at_;  // the node of the counted open slice at each depth of open_
  std::array<Pending, kAhead> pending_{};
  size_t queued_ = 0, settled_ = 0;
  std::array<Addition, kAddAhead> additions_{};
  size_t adding_ = 0, added_to_ = 0;
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

// A stretch of one lane's slices to walk: [from, to) in the trace's slices.
struct LaneWalk {
  uint32_t from, to;
};

// The chosen slices and what nests in them: each walked with its descendants, which follow it
// in its lane's order at a greater depth.
std::vector<LaneWalk> ChosenSliceWalks(const Trace& trace, std::vector<uint32_t> chosen) {
  const std::span<const Slice> slices = trace.slices();
  std::sort(chosen.begin(), chosen.end());
  chosen.erase(std::unique(chosen.begin(), chosen.end()), chosen.end());
  std::vector<LaneWalk> walks;
  uint32_t walked_to = 0;  // slices below this index were walked as a chosen one's descendants
  for (uint32_t root : chosen) {
    if (root >= slices.size() || (root < walked_to && walked_to > 0)) continue;
    const uint32_t track = slices[root].track;
    const uint32_t track_end = trace.track_first_slice(track) + static_cast<uint32_t>(trace.track_slices(track).size());
    uint32_t to = root + 1;
    while (to < track_end && slices[to].depth > slices[root].depth) ++to;
    walks.push_back({root, to});
    walked_to = to;
  }
  return walks;
}

// The walks of the chosen tracks over a window from `begin` on.
std::vector<LaneWalk> TrackWalks(const Trace& trace, const std::vector<uint32_t>& listed, int64_t begin) {
  const std::vector<char> chosen = ChosenTracks(trace, listed);
  std::vector<LaneWalk> walks;
  for (uint32_t t = 0; t < trace.tracks().size(); ++t) {
    if (!chosen[t] || trace.track_slices(t).empty()) continue;
    const uint32_t to = trace.track_first_slice(t) + static_cast<uint32_t>(trace.track_slices(t).size());
    walks.push_back({WalkStart(trace, t, begin), to});
  }
  return walks;
}

// Names the nodes of a top-down tree whose names are StringIds (TreeBuilder::Walk): names[] in
// the order the nodes first use them. The first part names its own nodes on its thread, as
// soon as its children are linked; the other parts' nodes are named as JoinParts appends them
// (Rename), so that no pass over all the nodes is left for after the parts.
class NodeNamer {
 public:
  explicit NodeNamer(const Trace& trace) : trace_(trace), index_of_(trace.strings().size(), UINT32_MAX) {}

  // The index in `tree`.names of the name `id`, entered when new.
  uint32_t Rename(trace::StringId id, CallTree& tree) {
    uint32_t& index = index_of_[id];
    if (index == UINT32_MAX) {
      index = static_cast<uint32_t>(tree.names.size());
      tree.names.emplace_back(trace_.str(id));
    }
    return index;
  }
  void NameNodes(CallTree& tree) {
    for (size_t n = 1; n < tree.nodes.size(); ++n) tree.nodes[n].name = Rename(tree.nodes[n].name, tree);
  }

 private:
  const Trace& trace_;
  std::vector<uint32_t> index_of_;  // by StringId: its index in names[], UINT32_MAX while unseen
};

// Joins the other parts (see TreeBuilder), each with its children linked, to the first, `tree`:
// their nodes appended, each named `rename(its name)` in `tree`, their children lists moved
// behind the root's, and the root's children (every part's) sorted together, as LinkChildren
// sorts a `kind` tree's; `text` gives the text of a name of `tree`.
template <typename NameText, typename Rename>
void JoinParts(const std::vector<CallTree>& others, TreeKind kind, NameText text, Rename rename, CallTree& tree) {
  size_t root_children = tree.nodes[0].child_count;
  for (const CallTree& part : others) root_children += part.nodes[0].child_count;
  std::vector<ChildKey> root_keys;
  root_keys.reserve(root_children);
  size_t all_children = tree.children.size();
  for (const CallTree& part : others) all_children += part.children.size();
  std::vector<uint32_t> children(root_children);  // the root's block, filled once sorted
  children.reserve(all_children);
  // A part's children lists: its root's block first, the rest moved to the end of `children`.
  auto move_children = [&](const CallTree& part, uint32_t node_offset) {
    const uint32_t root_block = part.nodes[0].child_count;
    for (uint32_t child : part.children_of(0)) {
      root_keys.push_back(KeyOf(part.nodes[child], child + node_offset, kind));
    }
    const auto shift = static_cast<uint32_t>(children.size() - root_block);
    for (size_t k = root_block; k < part.children.size(); ++k) children.push_back(part.children[k] + node_offset);
    return shift;
  };
  const uint32_t first_shift = move_children(tree, 0);
  for (size_t n = 1; n < tree.nodes.size(); ++n) tree.nodes[n].first_child += first_shift;
  for (const CallTree& part : others) {
    const auto node_offset = static_cast<uint32_t>(tree.nodes.size() - 1);
    const uint32_t shift = move_children(part, node_offset);
    for (size_t n = 1; n < part.nodes.size(); ++n) {
      CallTreeNode& node = tree.nodes.emplace_back(part.nodes[n]);
      node.name = rename(node.name);
      if (node.parent > 0) node.parent += static_cast<int32_t>(node_offset);
      node.first_child += shift;
    }
    tree.slices += part.slices;
    tree.max_depth = std::max(tree.max_depth, part.max_depth);
  }
  SortSpace space;
  SortChildKeys(std::span(root_keys), ChildOrder<NameText>{tree.nodes, kind, text}, space);
  CallTreeNode& root = tree.nodes.front();
  root = CallTreeNode{};
  root.child_count = static_cast<uint32_t>(root_children);
  for (size_t k = 0; k < root_keys.size(); ++k) {
    children[k] = root_keys[k].node;
    root.total_ns += tree.nodes[root_keys[k].node].total_ns;
  }
  tree.children = std::move(children);
}

// How many parts a tree of `work` items is built in: `threads` when given, else one per core (up
// to 4) from a quarter of a million items, one below.
uint32_t PartsFor(size_t work, unsigned threads) {
  constexpr size_t kPartsFrom = size_t{1} << 18;
  constexpr uint32_t kMostParts = 4;
  if (threads > 0) return threads;
  return work < kPartsFrom ? 1 : PartsPerCore(kMostParts);
}

// The top-down tree of the walks (clipped to [begin, end]). A big one in parts on as many
// threads (one per core, up to kMostParts, unless `threads` says): the walks' lookups (a cache
// miss each in a big tree) are most of its time, and the parts share none. A small one in one
// part.
void BuildTopDown(const Trace& trace, const std::vector<LaneWalk>& walks, int64_t begin, int64_t end,
                  unsigned threads, CallTree& tree) {
  size_t walked = 0;
  for (const LaneWalk& walk : walks) walked += walk.to - walk.from;
  const uint32_t parts = PartsFor(walked, threads);
  const auto text = [&trace](uint32_t id) { return trace.str(id); };
  NodeNamer namer(trace);
  std::vector<CallTree> others(parts - 1);
  RunParts(parts, [&](uint32_t part) {
    CallTree& out = part == 0 ? tree : others[part - 1];
    TreeBuilder builder(out, part, parts);
    // A part's share of the slices, and a guess that two share each node (random call paths);
    // a real trace repeats its paths, so its nodes touch fewer of the index's pages.
    builder.Reserve(walked, walked / parts / 2);
    for (const LaneWalk& walk : walks) builder.Walk(trace, walk.from, walk.to, begin, end);
    builder.LinkChildren(TreeKind::kTopDown, text);
    if (part == 0) namer.NameNodes(tree);
  });
  JoinParts(
      others, TreeKind::kTopDown, [&tree](uint32_t name) -> const std::string& { return tree.names[name]; },
      [&](trace::StringId id) { return namer.Rename(id, tree); }, tree);
}

// The length of the longest run where the names from `a` upward equal those from `b` upward.
size_t CommonChain(const std::vector<uint32_t>& chain, size_t a, size_t b) {
  size_t n = 0;
  while (a + n < chain.size() && b + n < chain.size() && chain[a + n] == chain[b + n]) ++n;
  return n;
}

}  // namespace

std::vector<std::string> CallTree::Path(uint32_t node) const {
  std::vector<std::string> path;
  for (int32_t n = static_cast<int32_t>(node); n > 0; n = nodes[static_cast<size_t>(n)].parent) {
    path.push_back(names[nodes[static_cast<size_t>(n)].name]);
  }
  std::reverse(path.begin(), path.end());
  return path;
}

CallTree ComputeCallTree(const Trace& trace, const CallTreeOptions& options) {
  CallTree tree;
  if (!options.slices.empty()) {
    BuildTopDown(trace, ChosenSliceWalks(trace, options.slices), std::numeric_limits<int64_t>::min(),
                 std::numeric_limits<int64_t>::max(), options.threads, tree);
    tree.window_begin_ns = trace.span_begin_ns();
    tree.window_ns = trace.span_end_ns() - trace.span_begin_ns();
    return tree;
  }
  const int64_t begin = std::max(options.begin_ns, trace.span_begin_ns());
  const int64_t end = std::min(options.end_ns, trace.span_end_ns());
  const bool empty = trace.slices().empty() || end < begin;
  BuildTopDown(trace, empty ? std::vector<LaneWalk>{} : TrackWalks(trace, options.tracks, begin), begin, end,
               options.threads, tree);
  tree.window_begin_ns = begin;
  tree.window_ns = end > begin ? end - begin : 0;
  return tree;
}

namespace {

// The part of the bottom-up tree under the names `part` holds (PartOf the top-down nodes' own
// names: a bottom-up tree's top-level names; parts share no node but the root), children linked.
void BuildBottomUpPart(const CallTree& top_down, uint32_t part, uint32_t parts, CallTree& tree) {
  TreeBuilder builder(tree);
  const auto& nodes = top_down.nodes;
  // Per top-down node with calls: the level from which its total counts (see below), the node
  // whose name the next level takes (it, then its parent, ...), and its bottom-up node so far.
  std::vector<uint32_t> active, counted_from(nodes.size(), 0), up(nodes.size(), 0), at(nodes.size(), 0);
  std::vector<uint32_t> chain;  // names from a node up to the top
  size_t chained = 0;           // the chains' lengths, summed: the most nodes the part can have
  for (uint32_t n = 1; n < nodes.size(); ++n) {
    if (nodes[n].calls == 0 || PartOf(nodes[n].name, parts) != part) continue;
    active.push_back(n);
    up[n] = n;
    chain.clear();
    for (int32_t a = static_cast<int32_t>(n); a > 0; a = nodes[static_cast<size_t>(a)].parent) {
      chain.push_back(nodes[static_cast<size_t>(a)].name);
    }
    chained += chain.size();
    // A recursive call: an ancestor `j` up with the same chain of k + 1 names holds this node's
    // time already at the bottom-up levels 0..k, so its total counts only from level k + 1 on.
    size_t from = 0;
    for (size_t j = 1; j < chain.size(); ++j) {
      if (chain[j] == chain[0]) from = std::max(from, CommonChain(chain, 0, j));
    }
    counted_from[n] = static_cast<uint32_t>(from);
  }
  // Room for a node per name of every chain (random names share few), reserved up front as
  // address space: the nodes are not copied, nor the index rehashed as often, as they grow.
  builder.Reserve(chained, chained / 4);
  // Level by level over every top-down node at once, so the lookups a few nodes ahead, which
  // do not depend on each other, can be prefetched.
  constexpr size_t kAhead = 8;
  for (uint32_t level = 0; !active.empty(); ++level) {
    for (size_t p = 0; p < active.size(); ++p) {
      if (p + kAhead < active.size()) {
        const uint32_t ahead = active[p + kAhead];
        builder.Prefetch(PairHash(at[ahead], nodes[up[ahead]].name));
      }
      const uint32_t n = active[p];
      const uint32_t name = nodes[up[n]].name;
      at[n] = builder.Child(at[n], name, PairHash(at[n], name), level + 1, [name] { return name; });
    }
    for (size_t p = 0; p < active.size(); ++p) {
      if (p + kAhead < active.size()) __builtin_prefetch(&tree.nodes[at[active[p + kAhead]]], 1);
      const uint32_t n = active[p];
      const CallTreeNode& leaf = nodes[n];
      CallTreeNode& b = tree.nodes[at[n]];
      b.calls += leaf.calls;
      b.self_ns += leaf.self_ns;
      if (level >= counted_from[n]) b.total_ns += leaf.total_ns;
      up[n] = static_cast<uint32_t>(std::max(0, nodes[up[n]].parent));
    }
    std::erase_if(active, [&](uint32_t n) { return up[n] == 0; });
  }
  builder.LinkChildren(TreeKind::kBottomUp, [&top_down](uint32_t name) -> const std::string& { return top_down.names[name]; });
}

}  // namespace

CallTree BottomUpTree(const CallTree& top_down, unsigned threads) {
  const auto text = [&top_down](uint32_t name) -> const std::string& { return top_down.names[name]; };
  const uint32_t parts = PartsFor(top_down.nodes.size(), threads);
  CallTree tree;
  std::vector<CallTree> others(parts - 1);
  RunParts(parts, [&](uint32_t part) { BuildBottomUpPart(top_down, part, parts, part == 0 ? tree : others[part - 1]); });
  JoinParts(others, TreeKind::kBottomUp, text, [](uint32_t name) { return name; }, tree);
  tree.names = top_down.names;  // the same names, the same indices
  tree.window_begin_ns = top_down.window_begin_ns;
  tree.window_ns = top_down.window_ns;
  tree.slices = top_down.slices;
  tree.nodes.front().total_ns = top_down.root().total_ns;
  return tree;
}

}  // namespace stepscope::analysis
