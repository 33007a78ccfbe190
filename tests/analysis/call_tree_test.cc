// The call tree (analysis/call_tree.h): a hand-built trace whose figures are worked out below, and
// real traces (the PyTorch AlexNet profile, stepscope-train's ResNet steps) against a recount that
// finds each slice's parent by scanning its lane backwards rather than with a stack.
#include "profiler/analysis/call_tree.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <random>
#include <new>
#include <string>
#include <vector>

#include "profiler/formats/reader.h"
#include "profiler/testing/synthetic_trace.h"
#include "test_util.h"
#include "trace_fixtures.h"

namespace stepscope::analysis {
namespace {

using testing::TraceMaker;
using trace::Slice;
using trace::Trace;

struct Figures {
  int64_t calls = 0, total_ns = 0, self_ns = 0;
  bool operator==(const Figures&) const = default;
};
using Path = std::vector<std::string>;

std::map<Path, Figures> NodesOf(const CallTree& tree) {
  std::map<Path, Figures> nodes;
  for (uint32_t n = 1; n < tree.nodes.size(); ++n) {
    nodes[tree.Path(n)] = {tree.nodes[n].calls, tree.nodes[n].total_ns, tree.nodes[n].self_ns};
  }
  return nodes;
}

// The node whose path from the top is `path`, or null.
const CallTreeNode* Find(const CallTree& tree, const Path& path) {
  uint32_t node = 0;
  for (const std::string& name : path) {
    bool found = false;
    for (uint32_t child : tree.children_of(node)) {
      if (tree.name(child) == name) {
        node = child;
        found = true;
        break;
      }
    }
    if (!found) return nullptr;
  }
  return &tree.nodes[node];
}

// Each node's children in their order, and the longest slice of each node, by path: what a
// tree shows, whatever the numbering of its nodes.
struct Shape {
  std::map<Path, std::vector<std::string>> children;
  std::map<Path, int64_t> longest;
  bool operator==(const Shape&) const = default;
};

Shape ShapeOf(const CallTree& tree) {
  Shape shape;
  for (uint32_t n = 0; n < tree.nodes.size(); ++n) {
    const Path path = n == 0 ? Path{} : tree.Path(n);
    std::vector<std::string>& children = shape.children[path];
    for (uint32_t child : tree.children_of(n)) children.push_back(tree.name(child));
    shape.longest[path] = tree.nodes[n].longest_slice;
  }
  return shape;
}

// A tree built on several threads (in parts, one per group of top-level names) against the
// same tree built on one.
void ExpectSameOnThreads(const Trace& trace, CallTreeOptions options, unsigned threads, bool bottom_up = false) {
  SCOPED_TRACE(threads);
  options.threads = 1;
  const CallTree one = ComputeCallTree(trace, options);
  options.threads = threads;
  const CallTree parts = ComputeCallTree(trace, options);
  ASSERT_GT(one.nodes.size(), 2u);
  EXPECT_EQ(NodesOf(parts), NodesOf(one));
  EXPECT_TRUE(ShapeOf(parts) == ShapeOf(one));
  EXPECT_EQ(parts.root(), one.root());
  EXPECT_EQ(parts.slices, one.slices);
  EXPECT_EQ(parts.max_depth, one.max_depth);
  EXPECT_EQ(parts.names.size(), one.names.size());
  // The same names, each once, whichever part met it first.
  std::vector<std::string> part_names = parts.names, one_names = one.names;
  std::sort(part_names.begin(), part_names.end());
  std::sort(one_names.begin(), one_names.end());
  EXPECT_EQ(part_names, one_names);
  if (!bottom_up) return;
  // The bottom-up tree too, in parts on the threads against one.
  const CallTree up_one = BottomUpTree(one, 1);
  const CallTree up_parts = BottomUpTree(parts, threads);
  ASSERT_GT(up_one.nodes.size(), 2u);
  EXPECT_EQ(NodesOf(up_parts), NodesOf(up_one));
  EXPECT_TRUE(ShapeOf(up_parts) == ShapeOf(up_one));
  EXPECT_EQ(up_parts.root(), up_one.root());
  EXPECT_EQ(up_parts.max_depth, up_one.max_depth);
  // From the same top-down tree: the same nodes, the same names, in parts or not.
  const CallTree up_same = BottomUpTree(one, threads);
  EXPECT_EQ(NodesOf(up_same), NodesOf(up_one));
  EXPECT_TRUE(ShapeOf(up_same) == ShapeOf(up_one));
  EXPECT_EQ(up_same.names, up_one.names);
}

Trace HandBuilt() {
  TraceMaker m;
  const uint32_t host = m.Host("host");
  const uint32_t lane = m.Lane("thread 1", host, trace::TrackKind::kOpLane, /*concurrent=*/false);
  const uint32_t other = m.Lane("thread 2", host, trace::TrackKind::kOpLane, /*concurrent=*/false);
  const uint32_t gpu = m.Lane("stream 7", host, trace::TrackKind::kGpuStream);
  m.Slice(lane, 0, 100, "A");
  m.Slice(lane, 10, 40, "B");
  m.Slice(lane, 20, 30, "C");
  m.Slice(lane, 50, 70, "B");
  m.Slice(lane, 80, 90, "D");
  m.Slice(lane, 200, 250, "A");
  m.Slice(lane, 210, 220, "B");
  m.Slice(other, 0, 50, "E");
  m.Slice(other, 60, 70, "E", "", trace::SliceKind::kOp, trace::kSliceDuplicate);  // a repeat: not counted
  m.Slice(gpu, 0, 30, "kernel", "", trace::SliceKind::kKernel);                    // a GPU lane: not by default
  return std::move(m).Build();
}

TEST(CallTreeTest, HandBuiltTreeHasTheFiguresWorkedOutByHand) {
  const Trace trace = HandBuilt();
  const CallTree tree = ComputeCallTree(trace);
  // A: 50 + 100 = 150 long, minus its children B (30 + 20 + 10), D (10): self 80.
  // B under A: 60 in all, minus C (10): self 50. E: 50 (its repeat not counted).
  const std::map<Path, Figures> expected = {
      {{"A"}, {2, 150, 80}}, {{"A", "B"}, {3, 60, 50}}, {{"A", "B", "C"}, {1, 10, 10}},
      {{"A", "D"}, {1, 10, 10}}, {{"E"}, {1, 50, 50}}};
  EXPECT_EQ(NodesOf(tree), expected);
  EXPECT_EQ(tree.root().total_ns, 200);
  EXPECT_EQ(tree.slices, 8);
  EXPECT_EQ(tree.max_depth, 3);
  // Children by total: A (150) before E (50).
  ASSERT_EQ(tree.children_of(0).size(), 2u);
  EXPECT_EQ(tree.name(tree.children_of(0)[0]), "A");
  EXPECT_EQ(trace.str(trace.slice_name(trace.slices()[static_cast<size_t>(Find(tree, {"A"})->longest_slice)])), "A");

  // Bottom-up: each name's self time first, then its callers.
  const CallTree up = BottomUpTree(tree);
  const std::map<Path, Figures> expected_up = {
      {{"A"}, {2, 150, 80}},      {{"B"}, {3, 60, 50}}, {{"B", "A"}, {3, 60, 50}},  {{"C"}, {1, 10, 10}},
      {{"C", "B"}, {1, 10, 10}},  {{"C", "B", "A"}, {1, 10, 10}}, {{"D"}, {1, 10, 10}}, {{"D", "A"}, {1, 10, 10}},
      {{"E"}, {1, 50, 50}}};
  EXPECT_EQ(NodesOf(up), expected_up);
  EXPECT_EQ(up.root().total_ns, 200);
}

TEST(CallTreeTest, AWindowClipsEverySliceAndTracksAndSlicesNarrowIt) {
  const Trace trace = HandBuilt();
  // [15, 85]: A 70; B 25 + 20 = 45; C 10; D 5; E 35. A's self 70 - 45 - 5 = 20, B's 45 - 10 = 35.
  const CallTree window = ComputeCallTree(trace, {.begin_ns = 15, .end_ns = 85});
  const std::map<Path, Figures> expected = {
      {{"A"}, {1, 70, 20}}, {{"A", "B"}, {2, 45, 35}}, {{"A", "B", "C"}, {1, 10, 10}}, {{"A", "D"}, {1, 5, 5}},
      {{"E"}, {1, 35, 35}}};
  EXPECT_EQ(NodesOf(window), expected);
  EXPECT_EQ(window.root().total_ns, 105);
  EXPECT_EQ(window.window_ns, 70);

  // The second thread only; then the GPU lane, chosen by name.
  const CallTree other = ComputeCallTree(trace, {.tracks = {2}});
  EXPECT_EQ(NodesOf(other), (std::map<Path, Figures>{{{"E"}, {1, 50, 50}}}));
  const CallTree gpu = ComputeCallTree(trace, {.tracks = {3}});
  EXPECT_EQ(NodesOf(gpu), (std::map<Path, Figures>{{{"kernel"}, {1, 30, 30}}}));
  // The host stands for its lanes: everything once.
  EXPECT_EQ(ComputeCallTree(trace, {.tracks = {0}}).root().total_ns, 230);

  // Chosen slices: the first B and the C inside it (counted once, under B), and E.
  std::vector<uint32_t> chosen;
  for (uint32_t i = 0; i < trace.slices().size(); ++i) {
    const Slice& s = trace.slices()[i];
    const std::string name(trace.str(trace.slice_name(s)));
    if ((name == "B" && s.start_ns == 10) || name == "C" || (name == "E" && !s.duplicate())) chosen.push_back(i);
  }
  ASSERT_EQ(chosen.size(), 3u);
  const CallTree picked = ComputeCallTree(trace, {.slices = chosen});
  EXPECT_EQ(NodesOf(picked), (std::map<Path, Figures>{{{"B"}, {1, 30, 20}}, {{"B", "C"}, {1, 10, 10}},
                                                      {{"E"}, {1, 50, 50}}}));
}

TEST(CallTreeTest, BottomUpCountsARecursiveCallsTimeOnce) {
  TraceMaker m;
  const uint32_t lane = m.Lane("thread", m.Host("host"), trace::TrackKind::kOpLane, /*concurrent=*/false);
  m.Slice(lane, 0, 100, "X");
  m.Slice(lane, 10, 90, "Y");
  m.Slice(lane, 20, 80, "X");
  const CallTree tree = ComputeCallTree(std::move(m).Build());
  EXPECT_EQ(NodesOf(tree), (std::map<Path, Figures>{{{"X"}, {1, 100, 20}}, {{"X", "Y"}, {1, 80, 20}},
                                                    {{"X", "Y", "X"}, {1, 60, 60}}}));
  // X runs 100 in all (the inner call lies in the outer one); called from Y it runs 60.
  EXPECT_EQ(NodesOf(BottomUpTree(tree)),
            (std::map<Path, Figures>{{{"X"}, {2, 100, 80}}, {{"X", "Y"}, {1, 60, 60}}, {{"X", "Y", "X"}, {1, 60, 60}},
                                     {{"Y"}, {1, 80, 20}}, {{"Y", "X"}, {1, 80, 20}}}));
}

// The recount: each slice's parent is the nearest slice before it on its lane that contains it
// (starts no later, is still running at its start, ends no earlier), found by scanning back.
// `longest`, when given, gets each path's longest clipped slice: of several as long, the first
// in the lanes' order (tracks in order, each lane by start), the one a tree jumps to.
std::map<Path, Figures> RecountCallTree(const Trace& trace, int64_t begin, int64_t end,
                                        std::map<Path, int64_t>* longest = nullptr) {
  const auto& slices = trace.slices();
  std::vector<int64_t> parent(slices.size(), -1);
  std::vector<char> counted(slices.size(), 0);
  std::vector<int64_t> clipped(slices.size(), 0);
  for (uint32_t t = 0; t < trace.tracks().size(); ++t) {
    if (trace::IsGpuLane(trace.tracks()[t].kind)) continue;
    const uint32_t first = trace.track_first_slice(t);
    const auto count = static_cast<uint32_t>(trace.track_slices(t).size());
    for (uint32_t i = first; i < first + count; ++i) {
      const Slice& s = slices[i];
      if (s.duplicate()) continue;
      const int64_t a = std::max(s.start_ns, begin), b = std::min(s.end_ns(), end);
      counted[i] = s.dur_ns == 0 ? (s.start_ns >= begin && s.start_ns <= end) : b > a;
      clipped[i] = std::max<int64_t>(0, b - a);
      for (int64_t j = static_cast<int64_t>(i) - 1; j >= first; --j) {
        const Slice& p = slices[static_cast<size_t>(j)];
        if (!p.duplicate() && p.start_ns <= s.start_ns && s.start_ns < p.end_ns() && s.end_ns() <= p.end_ns()) {
          parent[i] = j;
          break;
        }
      }
    }
  }
  std::map<Path, Figures> nodes;
  for (uint32_t i = 0; i < slices.size(); ++i) {
    if (!counted[i]) continue;
    Path path;
    for (int64_t up = i; up >= 0; up = parent[static_cast<size_t>(up)]) {
      path.insert(path.begin(), std::string(trace.str(trace.slice_name(slices[static_cast<size_t>(up)]))));
    }
    Figures& f = nodes[path];
    if (longest != nullptr) {
      // Slices lie by track in track order (checked by the caller), so the first as long is kept.
      const auto [it, added] = longest->try_emplace(path, i);
      if (!added && clipped[i] > clipped[static_cast<size_t>(it->second)]) it->second = i;
    }
    ++f.calls;
    f.total_ns += clipped[i];
    f.self_ns += clipped[i];
    if (parent[i] >= 0) {
      path.pop_back();
      nodes[path].self_ns -= clipped[i];
    }
  }
  return nodes;
}

void ExpectEqualsRecount(const std::string& path) {
  SCOPED_TRACE(path);
  auto read = trace::ReadTrace(path);
  ASSERT_TRUE(read.ok()) << read.status().message();
  const Trace& trace = *read;
  const int64_t third = (trace.span_end_ns() - trace.span_begin_ns()) / 3;
  const std::pair<int64_t, int64_t> windows[] = {{trace.span_begin_ns(), trace.span_end_ns()},
                                                 {trace.span_begin_ns() + third, trace.span_end_ns() - third}};
  for (const auto& [begin, end] : windows) {
    const CallTree tree = ComputeCallTree(trace, {.begin_ns = begin, .end_ns = end});
    const std::map<Path, Figures> recount = RecountCallTree(trace, begin, end);
    ASSERT_GT(recount.size(), 1u);
    EXPECT_EQ(NodesOf(tree), recount);
    // Built in three parts on three threads: the same tree.
    EXPECT_EQ(NodesOf(ComputeCallTree(trace, {.begin_ns = begin, .end_ns = end, .threads = 3})), recount);
    // Self times add up to the top-level total, on both sides.
    int64_t self = 0;
    for (const auto& node : tree.nodes) self += node.self_ns;
    EXPECT_EQ(self, tree.root().total_ns);
    const CallTree up = BottomUpTree(tree);
    int64_t up_self = 0, up_calls = 0, calls = 0;
    for (uint32_t name : up.children_of(0)) {
      up_self += up.nodes[name].self_ns;
      up_calls += up.nodes[name].calls;
    }
    for (const auto& node : tree.nodes) calls += node.calls;
    EXPECT_EQ(up_self, self);
    EXPECT_EQ(up_calls, calls);
  }
  // Over the whole trace the root is the top-level slices (depth 0, as the trace records it).
  int64_t top_level = 0;
  for (uint32_t t = 0; t < trace.tracks().size(); ++t) {
    if (trace::IsGpuLane(trace.tracks()[t].kind)) continue;
    for (const Slice& s : trace.track_slices(t)) {
      if (s.depth == 0 && !s.duplicate()) top_level += s.dur_ns;
    }
  }
  EXPECT_EQ(ComputeCallTree(trace).root().total_ns, top_level);
}

TEST(CallTreeTest, RealTracesEqualARecount) {
  // AlexNet: ops nested nine deep under the profiler's annotations (a Kineto CPU thread).
  ExpectEqualsRecount(stepscope::testing::DataPath("pytorch_kineto_alexnet_train.json.gz"));
  // stepscope-train: executor ops on one lane (no nesting), and a small LSTM run on the CPU.
  ExpectEqualsRecount(stepscope::testing::SamplePath("h100_resnet50_b32_step3.pb.gz"));
  ExpectEqualsRecount(stepscope::testing::DataPath("trainer/lstm_small_cpu2_step3.pb.gz"));
}

// A generated trace nested up to 40 deep under a few names that call each other (recursion
// included), some slices repeats (not counted: what they enclose hangs from their parent), and
// a chain nested past the 511 levels a Slice records: the tree on one thread and in three parts,
// over the whole trace and over windows, against the recount.
Trace DeeplyNested() {
  TraceMaker m;
  const uint32_t host = m.Host("host");
  std::mt19937 random(7);
  auto draw = [&random](int n) { return static_cast<int>(random() % static_cast<uint32_t>(n)); };
  const char* names[] = {"forward", "backward", "matmul", "conv", "relu", "add", "copy", "step"};
  for (int l = 0; l < 3; ++l) {
    const uint32_t lane = m.Lane("thread " + std::to_string(l), host, trace::TrackKind::kOpLane, /*concurrent=*/false);
    // Nests children in [start, end), each strictly inside its parent.
    auto nest = [&](auto& self, int64_t start, int64_t end, int depth) -> void {
      const bool repeat = draw(15) == 0;
      m.Slice(lane, start, end, names[draw(8)], "", trace::SliceKind::kOp, repeat ? trace::kSliceDuplicate : 0);
      if (depth == 40 || end - start < 40) return;
      const int children = draw(4) + (depth < 3 ? 1 : 0);
      int64_t cursor = start + 1 + draw(5);
      for (int c = 0; c < children; ++c) {
        const int64_t room = end - 1 - cursor;
        if (room < 4) break;
        const int64_t length = 2 + draw(static_cast<int>(std::min<int64_t>(room - 2, (end - start) * 2 / 3)));
        self(self, cursor, cursor + length, depth + 1);
        cursor += length + draw(3);
      }
    };
    for (int64_t t = 0; t < 2'000'000; t += 200'000) nest(nest, t + draw(1000), t + 190'000, 0);
  }
  const uint32_t chain = m.Lane("deep", host, trace::TrackKind::kOpLane, /*concurrent=*/false);
  for (int64_t d = 0; d < 600; ++d) m.Slice(chain, 10 * d, 20'000 - 10 * d, d % 3 == 0 ? "r" : "s");
  return std::move(m).Build();
}

TEST(CallTreeTest, DeepNestingEqualsARecount) {
  const Trace trace = DeeplyNested();
  ASSERT_GT(trace.slices().size(), 5'000u);
  int64_t deepest = 0;
  for (const Slice& s : trace.slices()) deepest = std::max<int64_t>(deepest, s.depth);
  ASSERT_EQ(deepest, Slice::kMaxDepth);  // the chain reaches past what a Slice records
  for (uint32_t t = 1; t < trace.tracks().size(); ++t) {  // slices by track, in track order (the recount's longest)
    ASSERT_GE(trace.track_first_slice(t), trace.track_first_slice(t - 1));
  }
  const int64_t span = trace.span_end_ns() - trace.span_begin_ns();
  const std::pair<int64_t, int64_t> windows[] = {{trace.span_begin_ns(), trace.span_end_ns()},
                                                 {trace.span_begin_ns() + span / 7, trace.span_end_ns() - span / 5},
                                                 {trace.span_begin_ns() + 5'003, trace.span_begin_ns() + 15'011}};
  for (const auto& [begin, end] : windows) {
    SCOPED_TRACE(begin);
    std::map<Path, int64_t> longest;
    const std::map<Path, Figures> recount = RecountCallTree(trace, begin, end, &longest);
    ASSERT_GT(recount.size(), 100u);
    for (const unsigned threads : {1u, 3u}) {
      SCOPED_TRACE(threads);
      const CallTree tree = ComputeCallTree(trace, {.begin_ns = begin, .end_ns = end, .threads = threads});
      EXPECT_EQ(NodesOf(tree), recount);
      // Short slices of few lengths: many a node's longest ties with a later one.
      std::map<Path, int64_t> tree_longest;
      for (uint32_t n = 1; n < tree.nodes.size(); ++n) tree_longest[tree.Path(n)] = tree.nodes[n].longest_slice;
      EXPECT_EQ(tree_longest, longest);
      int64_t self = 0;
      for (const auto& node : tree.nodes) self += node.self_ns;
      EXPECT_EQ(self, tree.root().total_ns);
    }
  }
}

TEST(CallTreeTest, PartsNameEachNameOnceAndSortTheRootByName) {
  // Twelve top-level names of the same length, each calling a name of its own and one they
  // share: the parts (one per share of the top-level names) meet most names in one part only,
  // the shared one in all; the root's children tie on total and self, so their order is their
  // names', compared across parts.
  TraceMaker m;
  const uint32_t host = m.Host("host");
  const uint32_t lanes[] = {m.Lane("thread 1", host, trace::TrackKind::kOpLane, /*concurrent=*/false),
                            m.Lane("thread 2", host, trace::TrackKind::kOpLane, /*concurrent=*/false)};
  std::map<Path, Figures> expected;
  for (int i = 0; i < 12; ++i) {
    const std::string top = "top " + std::to_string(100 - i), own = "own " + std::to_string(i);
    const int64_t start = 1000 * i;
    m.Slice(lanes[i % 2], start, start + 100, top);
    m.Slice(lanes[i % 2], start + 10, start + 20, own);
    m.Slice(lanes[i % 2], start + 30, start + 60, "shared");
    expected[{top}] = {1, 100, 60};
    expected[{top, own}] = {1, 10, 10};
    expected[{top, "shared"}] = {1, 30, 30};
  }
  const Trace trace = std::move(m).Build();
  for (const unsigned threads : {1u, 2u, 3u, 4u}) {
    SCOPED_TRACE(threads);
    const CallTree tree = ComputeCallTree(trace, {.threads = threads});
    EXPECT_EQ(NodesOf(tree), expected);
    std::vector<std::string> names = tree.names;
    std::sort(names.begin(), names.end());
    EXPECT_EQ(std::adjacent_find(names.begin(), names.end()), names.end());  // each name once
    EXPECT_EQ(names.size(), 1u + 12u + 12u + 1u);                            // "", tops, owns, shared
    std::vector<std::string> root_order;
    for (uint32_t child : tree.children_of(0)) root_order.push_back(tree.name(child));
    std::vector<std::string> by_name = root_order;
    std::sort(by_name.begin(), by_name.end());
    EXPECT_EQ(root_order, by_name);
    ASSERT_EQ(root_order.size(), 12u);
  }
}

TEST(CallTreeTest, ThreadsBuildTheSameTreeAsOne) {
  // Host ops nested three deep on four threads and kernels on four streams, 5000 names: a tree
  // of about 10 k nodes.
  const Trace synthetic = synthetic::MakeSyntheticTrace(20'000);
  const int64_t third = (synthetic.span_end_ns() - synthetic.span_begin_ns()) / 3;
  ExpectSameOnThreads(synthetic, {.tracks = {0}}, 2, /*bottom_up=*/true);
  ExpectSameOnThreads(synthetic, {.begin_ns = synthetic.span_begin_ns() + third, .end_ns = synthetic.span_end_ns() - third}, 4,
                      /*bottom_up=*/true);
  // Chosen slices: every tenth slice of the host's threads, with what nests in them.
  std::vector<uint32_t> chosen;
  for (uint32_t i = 0; i < synthetic.slices().size(); i += 10) {
    if (!trace::IsGpuLane(synthetic.tracks()[synthetic.slices()[i].track].kind)) chosen.push_back(i);
  }
  ExpectSameOnThreads(synthetic, {.slices = chosen}, 3);
  // AlexNet's nine levels under a few top-level names.
  auto read = trace::ReadTrace(stepscope::testing::DataPath("pytorch_kineto_alexnet_train.json.gz"));
  ASSERT_TRUE(read.ok()) << read.status().message();
  ExpectSameOnThreads(*read, {}, 3, /*bottom_up=*/true);
}

TEST(CallTreeTest, AlexNetTopLevelAsCountedByHand) {
  auto read = trace::ReadTrace(stepscope::testing::DataPath("pytorch_kineto_alexnet_train.json.gz"));
  ASSERT_TRUE(read.ok());
  const CallTree tree = ComputeCallTree(*read);
  // Counted from the JSON in Python: the "X" events of pid 2869224 (the CPU thread) and of the
  // profiler's span, per (pid, tid) sorted by (ts, -dur), nested with a stack that pops what ended
  // by the next start, summed per path of names (self: minus the direct children's durations):
  // 729 events, 163 paths, top-level total 86,883,820 us; [param|cuda] 1 call, 43,425,283 us,
  // self 61,949 us; [param|cuda] > aten::to 16 calls, 30,012,184 us, self 2,514 us.
  EXPECT_EQ(tree.slices, 729);
  EXPECT_EQ(tree.nodes.size(), 164u);  // the root too
  EXPECT_EQ(tree.root().total_ns, 86'883'820'000);
  const CallTreeNode* param = Find(tree, {"[param|cuda]"});
  ASSERT_NE(param, nullptr);
  EXPECT_EQ((Figures{param->calls, param->total_ns, param->self_ns}), (Figures{1, 43'425'283'000, 61'949'000}));
  const CallTreeNode* to = Find(tree, {"[param|cuda]", "aten::to"});
  ASSERT_NE(to, nullptr);
  EXPECT_EQ((Figures{to->calls, to->total_ns, to->self_ns}), (Figures{16, 30'012'184'000, 2'514'000}));
}


// A build that runs out of memory on a helper thread throws std::bad_alloc to its caller, as a
// build on the calling thread does, instead of ending the program (an exception leaving a
// std::thread terminates it): in a child process whose address space is capped a little above
// what it holds, the top-down and the bottom-up trees are built in two parts each.
TEST(CallTreeTest, OutOfMemoryInAPartReachesTheCaller) {
#ifdef STEPSCOPE_TEST_SANITIZED
  GTEST_SKIP() << "an address space limit and a sanitizer's shadow memory do not mix";
#else
  const Trace synthetic = synthetic::MakeSyntheticTrace(2'000'000);
  const CallTree top_down = ComputeCallTree(synthetic, {.tracks = {0}, .threads = 1});
  ASSERT_GT(top_down.nodes.size(), 100'000u);
  for (const bool bottom_up : {false, true}) {
    SCOPED_TRACE(bottom_up ? "bottom-up" : "top-down");
    std::fflush(nullptr);
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      alarm(60);
      // Room for the helper's stack and small allocations, not for a part's node table.
      if (!stepscope::testing::CapAddressSpaceAboveCurrent(rlim_t{24} << 20)) _exit(3);
      try {
        if (bottom_up) {
          const CallTree tree = BottomUpTree(top_down, 2);
          _exit(tree.nodes.size() > 1 ? 1 : 4);
        }
        const CallTree tree = ComputeCallTree(synthetic, {.tracks = {0}, .threads = 2});
        _exit(tree.nodes.size() > 1 ? 1 : 4);
      } catch (const std::bad_alloc&) {
        _exit(0);
      }
    }
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status)) << "the child ended by signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    EXPECT_EQ(WEXITSTATUS(status), 0) << "1: built within the cap (raise the trace's size); 3: no cap set";
  }
#endif
}
}  // namespace
}  // namespace stepscope::analysis
