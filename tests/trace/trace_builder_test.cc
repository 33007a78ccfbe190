// TraceBuilder invariants: sorting, epoch rebase, nesting depth, overlap lanes, flow remapping.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "profiler/trace/trace.h"

namespace stepscope::trace {
namespace {

SliceRecord MakeSlice(uint32_t track, int64_t start, int64_t dur, StringId name) {
  SliceRecord s;
  s.track = track;
  s.start_ns = start;
  s.dur_ns = dur;
  s.name = name;
  s.op_type = name;
  return s;
}

// `count` root tracks of one kind and name.
void AddTracks(TraceBuilder& builder, TrackKind kind, const char* name, int count) {
  Track track;
  track.kind = kind;
  track.name = builder.Intern(name);
  for (int t = 0; t < count; ++t) builder.AddTrack(track);
}

// A host track, the root of the lanes below.
uint32_t AddHost(TraceBuilder& builder) {
  Track host;
  host.kind = TrackKind::kHost;
  host.name = builder.Intern("host");
  return builder.AddTrack(host);
}

// An op lane under `host`.
uint32_t AddOpLane(TraceBuilder& builder, uint32_t host, const char* name, bool concurrent) {
  Track lane;
  lane.parent = static_cast<int32_t>(host);
  lane.kind = TrackKind::kOpLane;
  lane.concurrent = concurrent;
  lane.name = builder.Intern(name);
  return builder.AddTrack(lane);
}

TEST(TraceBuilderTest, NestsContainedSlicesAndMovesPartialOverlaps) {
  TraceBuilder builder;
  const uint32_t t = AddOpLane(builder, AddHost(builder), "thread", /*concurrent=*/false);
  const StringId n = builder.Intern("op");
  const uint32_t outer = builder.AddSlice(MakeSlice(t, 1000, 100, n));
  builder.AddSlice(MakeSlice(t, 1010, 20, n));   // nested in outer
  const uint32_t partial = builder.AddSlice(MakeSlice(t, 1090, 50, n));  // crosses outer's end
  builder.AddFlow(outer, partial, FlowKind::kDataflow);
  const Trace trace = std::move(builder).Build();

  EXPECT_EQ(trace.epoch_ns(), 1000);
  ASSERT_EQ(trace.tracks().size(), 3u);  // host, lane, overlap lane
  EXPECT_EQ(trace.str(trace.tracks()[2].name), "thread #2");
  EXPECT_EQ(trace.import_stats().Get("overlap_moved_to_lane"), 1);
  const auto first_lane = trace.track_slices(t);
  ASSERT_EQ(first_lane.size(), 2u);
  EXPECT_EQ(first_lane[0].start_ns, 0);
  EXPECT_EQ(first_lane[0].depth, 0);
  EXPECT_EQ(first_lane[1].depth, 1);
  const auto second_lane = trace.track_slices(2);
  ASSERT_EQ(second_lane.size(), 1u);
  EXPECT_EQ(second_lane[0].start_ns, 90);
  ASSERT_EQ(trace.flows().size(), 1u);
  EXPECT_EQ(trace.slices()[trace.flows()[0].from_slice].dur_ns, 100);
  EXPECT_EQ(trace.slices()[trace.flows()[0].to_slice].start_ns, 90);
  EXPECT_EQ(trace.span_end_ns(), 140);
}

// Overlap lanes sit right after their source track (the tracks after it move down), and
// everything that names a track or a slice follows: parents, counters, flows, node references.
TEST(TraceBuilderTest, OverlapLanesFollowTheirSourceTrack) {
  TraceBuilder builder;
  const uint32_t h = AddHost(builder);
  const uint32_t a = AddOpLane(builder, h, "a", /*concurrent=*/true);
  const uint32_t b = AddOpLane(builder, h, "b", /*concurrent=*/true);
  const StringId n = builder.Intern("op");
  builder.AddSlice(MakeSlice(a, 0, 100, n), NodeRef{0, 0});
  const uint32_t a_overlap = builder.AddSlice(MakeSlice(a, 10, 20, n), NodeRef{0, 1});
  builder.AddSlice(MakeSlice(a, 50, 100, n), NodeRef{0, 2});  // lane #2 is free again at 50
  builder.AddSlice(MakeSlice(b, 0, 10, n), NodeRef{1, 0});
  const uint32_t b_overlap = builder.AddSlice(MakeSlice(b, 5, 10, n), NodeRef{1, 1});
  builder.AddFlow(a_overlap, b_overlap, FlowKind::kDataflow);
  CounterSeries counter;
  counter.name = builder.Intern("bytes");
  counter.track = static_cast<int32_t>(b);
  counter.ts_ns = {0, 10};
  counter.values = {1, 2};
  builder.AddCounter(counter);
  const Trace trace = std::move(builder).Build();

  ASSERT_EQ(trace.tracks().size(), 5u);
  std::vector<std::string> names;
  for (const Track& t : trace.tracks()) names.push_back(std::string(trace.str(t.name)));
  EXPECT_EQ(names, (std::vector<std::string>{"host", "a", "a #2", "b", "b #2"}));
  for (size_t t = 1; t < 5; ++t) EXPECT_EQ(trace.tracks()[t].parent, 0) << t;
  EXPECT_EQ(trace.tracks()[2].lane, 1);
  EXPECT_EQ(trace.tracks()[4].lane, 1);
  ASSERT_EQ(trace.counters().size(), 1u);
  EXPECT_EQ(trace.counters()[0].track, 3);
  // (track, start, node) of every slice, in the trace's order.
  std::vector<std::tuple<uint32_t, int64_t, uint32_t, uint32_t>> placed;
  for (uint32_t i = 0; i < trace.slices().size(); ++i) {
    const Slice& s = trace.slices()[i];
    placed.emplace_back(s.track, s.start_ns, trace.node_ref(i).device, trace.node_ref(i).node);
  }
  EXPECT_EQ(placed, (std::vector<std::tuple<uint32_t, int64_t, uint32_t, uint32_t>>{
                        {1, 0, 0, 0}, {2, 10, 0, 1}, {2, 50, 0, 2}, {3, 0, 1, 0}, {4, 5, 1, 1}}));
  ASSERT_EQ(trace.flows().size(), 1u);
  EXPECT_EQ(trace.flows()[0].from_slice, 1u);
  EXPECT_EQ(trace.flows()[0].to_slice, 4u);
  EXPECT_EQ(trace.import_stats().Get("overlap_moved_to_lane"), 0);  // concurrent: not a repair
}

TEST(TraceBuilderTest, ConcurrentTracksNeverNestAndAreNotRepairs) {
  TraceBuilder builder;
  Track lane;
  lane.kind = TrackKind::kOpLane;
  lane.concurrent = true;
  lane.name = builder.Intern("ops");
  const uint32_t t = builder.AddTrack(lane);
  const StringId n = builder.Intern("op");
  builder.AddSlice(MakeSlice(t, 0, 100, n));
  builder.AddSlice(MakeSlice(t, 10, 20, n));   // contained, but independent work
  builder.AddSlice(MakeSlice(t, 100, 5, n));   // touching the first: same lane
  const Trace trace = std::move(builder).Build();
  ASSERT_EQ(trace.tracks().size(), 2u);
  EXPECT_EQ(trace.track_slices(0).size(), 2u);
  EXPECT_EQ(trace.track_slices(1).size(), 1u);
  for (const Slice& s : trace.slices()) EXPECT_EQ(s.depth, 0);
  EXPECT_EQ(trace.import_stats().Get("overlap_moved_to_lane"), 0);
}

// Tracks interleaved, some added in time order and some shuffled, with ties (equal starts, equal
// durations): every slice, flow, reference and argument lands where a stable sort by (track,
// start, longer first) puts it, whichever way the builder gets there: Build() alone, or
// SortSlices() first (as the JSON reader does to bind flows by time).
void ExpectInterleavedTracksOrderedAsAStableSortWould(bool sorted_before_build) {
  std::mt19937 random(7);
  constexpr uint32_t kTracks = 5;
  constexpr uint32_t kPerTrack = 400;
  TraceBuilder builder;
  for (uint32_t t = 0; t < kTracks; ++t) {
    Track track;
    track.kind = TrackKind::kOpLane;
    track.name = builder.Intern("lane " + std::to_string(t));
    builder.AddTrack(track);
  }
  const StringId n = builder.Intern("op");
  // Per track: disjoint slices, runs of three sharing a start (a zero-length pair, identical, and
  // one of 10 ns enclosing nothing, so ties exercise both the duration and the added-first rule).
  std::vector<std::vector<SliceRecord>> per_track(kTracks);
  for (uint32_t t = 0; t < kTracks; ++t) {
    int64_t clock = 1000 * t;
    for (uint32_t i = 0; i < kPerTrack; i += 3) {
      per_track[t].push_back(MakeSlice(t, clock, 0, n));
      per_track[t].push_back(MakeSlice(t, clock, 0, n));
      per_track[t].push_back(MakeSlice(t, clock, 10, n));
      // Track 3 spans 22 minutes: past what the sort's 8-byte keys hold, so it takes the 16-byte ones.
      clock += (t == 3 ? int64_t{10'000'000'000} : 10) + std::uniform_int_distribution<int64_t>(0, 5)(random);
    }
    // Tracks 1 and 3 arrive out of order.
    if (t % 2 == 1) std::shuffle(per_track[t].begin(), per_track[t].end(), random);
  }
  // Interleave the tracks randomly; remember each slice as added (its index is its node).
  std::vector<SliceRecord> added;
  std::vector<size_t> next(kTracks, 0);
  while (added.size() < kTracks * per_track[0].size()) {
    const uint32_t t = std::uniform_int_distribution<uint32_t>(0, kTracks - 1)(random);
    if (next[t] == per_track[t].size()) continue;
    const SliceRecord s = per_track[t][next[t]++];
    const uint32_t index = builder.AddSlice(s, NodeRef{t, static_cast<uint32_t>(added.size())});
    EXPECT_EQ(index, added.size());
    added.push_back(s);
    if (index % 7 == 0) builder.AddSliceArg(index, builder.Intern("k"), static_cast<int64_t>(index));
    if (index % 11 == 0) builder.AddKernelArgs(KernelArgs{.correlation = index, .slice = index});
    if (index > 0 && index % 5 == 0) builder.AddFlow(index - 1, index, FlowKind::kLaunch);
  }
  if (sorted_before_build) {
    builder.SortSlices();
    for (uint32_t i = 1; i < builder.slice_count(); ++i) {
      const SliceRecord& x = builder.slice(i - 1);
      const SliceRecord& y = builder.slice(i);
      ASSERT_TRUE(x.track < y.track || (x.track == y.track && x.start_ns <= y.start_ns)) << "position " << i;
    }
  }
  const Trace trace = std::move(builder).Build();

  std::vector<uint32_t> expected(added.size());
  std::iota(expected.begin(), expected.end(), 0u);
  std::stable_sort(expected.begin(), expected.end(), [&](uint32_t a, uint32_t b) {
    const SliceRecord& x = added[a];
    const SliceRecord& y = added[b];
    if (x.track != y.track) return x.track < y.track;
    if (x.start_ns != y.start_ns) return x.start_ns < y.start_ns;
    return x.dur_ns > y.dur_ns;
  });
  ASSERT_EQ(trace.slices().size(), added.size());
  ASSERT_EQ(trace.tracks().size(), kTracks);  // nothing overlapped: no lane added
  std::vector<uint32_t> origin(added.size());
  for (uint32_t i = 0; i < trace.slices().size(); ++i) {
    origin[i] = trace.node_ref(i).node;
    ASSERT_EQ(origin[i], expected[i]) << "position " << i;
    EXPECT_EQ(trace.slices()[i].track, added[origin[i]].track);
    EXPECT_EQ(trace.slices()[i].start_ns + trace.epoch_ns(), added[origin[i]].start_ns);
    EXPECT_EQ(trace.slices()[i].dur_ns, added[origin[i]].dur_ns);
  }
  for (const Flow& flow : trace.flows()) EXPECT_EQ(origin[flow.from_slice] + 1, origin[flow.to_slice]);
  EXPECT_EQ(trace.flows().size(), (added.size() - 1) / 5);
  ASSERT_EQ(trace.all_slice_args().size(), (added.size() + 6) / 7);
  for (size_t i = 0; i < trace.all_slice_args().size(); ++i) {
    const SliceArg& arg = trace.all_slice_args()[i];
    EXPECT_EQ(arg.number, origin[arg.slice]);
    if (i > 0) {
      EXPECT_LT(trace.all_slice_args()[i - 1].slice, arg.slice);
    }
  }
  ASSERT_EQ(trace.all_kernel_args().size(), (added.size() + 10) / 11);
  for (const KernelArgs& args : trace.all_kernel_args()) EXPECT_EQ(args.correlation, origin[args.slice]);
  EXPECT_EQ(trace.import_stats().Get("overlap_moved_to_lane"), 0);
}

TEST(TraceBuilderTest, OrdersInterleavedTracksAsAStableSortWould) {
  ExpectInterleavedTracksOrderedAsAStableSortWould(false);
}

TEST(TraceBuilderTest, SortingBeforeBuildGivesTheSameTrace) {
  ExpectInterleavedTracksOrderedAsAStableSortWould(true);
}

// A reader that adds everything in order already: the trace keeps the order and the indices.
TEST(TraceBuilderTest, SlicesAddedInOrderKeepTheirIndices) {
  TraceBuilder builder;
  AddTracks(builder, TrackKind::kGpuStream, "stream", 2);
  const StringId n = builder.Intern("kernel");
  for (uint32_t t = 0; t < 2; ++t) {
    for (int64_t i = 0; i < 100; ++i) builder.AddSlice(MakeSlice(t, 100 + 10 * i, 5, n));
  }
  builder.AddFlow(3, 150, FlowKind::kLaunch);
  builder.AddSliceArg(150, builder.Intern("k"), int64_t{1});
  builder.AddSliceArg(3, builder.Intern("k"), int64_t{2});  // added out of slice order
  const Trace trace = std::move(builder).Build();
  ASSERT_EQ(trace.flows().size(), 1u);
  EXPECT_EQ(trace.flows()[0].from_slice, 3u);
  EXPECT_EQ(trace.flows()[0].to_slice, 150u);
  EXPECT_EQ(trace.slices()[150].track, 1u);
  EXPECT_EQ(trace.slices()[150].start_ns, 500);
  ASSERT_EQ(trace.all_slice_args().size(), 2u);
  EXPECT_EQ(trace.all_slice_args()[0].slice, 3u);
  EXPECT_EQ(trace.all_slice_args()[0].number, 2);
  EXPECT_EQ(trace.all_slice_args()[1].slice, 150u);
}

// A flow keeps its kind and both ends in 8 bytes; one whose target lies past the 31 bits a target
// takes is counted, not kept with a wrapped index.
TEST(TraceBuilderTest, FlowsPastTheSliceLimitAreCountedNotWrapped) {
  static_assert(sizeof(Flow) == 8);
  TraceBuilder builder;
  AddTracks(builder, TrackKind::kGpuStream, "stream", 1);
  const StringId n = builder.Intern("kernel");
  for (int64_t i = 0; i < 4; ++i) builder.AddSlice(MakeSlice(0, 100 + 10 * i, 5, n));
  builder.AddFlow(0, 3, FlowKind::kLaunch);
  builder.AddFlow(1, Flow::kMaxSlice + 2, FlowKind::kLaunch);  // would wrap to slice 1
  builder.AddFlow(2, 1, FlowKind::kDataflow);
  const Trace trace = std::move(builder).Build();
  ASSERT_EQ(trace.flows().size(), 2u);
  EXPECT_EQ(trace.flows()[0].to_slice, 3u);
  EXPECT_EQ(trace.flows()[0].kind, FlowKind::kLaunch);
  EXPECT_EQ(trace.flows()[1].from_slice, 2u);
  EXPECT_EQ(trace.flows()[1].to_slice, 1u);
  EXPECT_EQ(trace.flows()[1].kind, FlowKind::kDataflow);
  EXPECT_EQ(trace.import_stats().Get("flow_past_slice_limit_skipped"), 1);
}

// Tracks handed over whole (as the JSON reader's buffer does), one in order, one in order but for
// strays (a copy recorded after the kernel it precedes, ties among them) and one shuffled (too
// many strays: the whole track is sorted): every slice lands where a stable sort by (start,
// longer first) puts it, and flows, references and arguments follow their slices.
TEST(TraceBuilderTest, NearlyOrderedTracksMoveOnlyTheirStrays) {
  std::mt19937 random(11);
  constexpr uint32_t kTracks = 3;
  TraceBuilder builder;
  AddTracks(builder, TrackKind::kGpuStream, "stream", kTracks);
  const StringId n = builder.Intern("kernel");
  std::vector<SliceRecord> added;
  for (uint32_t t = 0; t < kTracks; ++t) {
    std::vector<SliceRecord> track;
    for (int64_t i = 0; i < 300; ++i) {
      track.push_back(MakeSlice(t, 1000 + 40 * i, 30, n));
      if (t == 1 && i % 10 == 0) {
        // Starts before the kernel just added: a stray one place late. Every 30th comes as a
        // pair sharing that start (the longer one second, so the tie moves it first).
        track.push_back(MakeSlice(t, 1000 + 40 * i - 9, 2, n));
        if (i % 30 == 0) track.push_back(MakeSlice(t, 1000 + 40 * i - 9, 4, n));
      }
    }
    if (t == 1) {  // one stray far behind: every slice it passes moves one place
      track.push_back(MakeSlice(t, 1000 + 40 * 150 + 1, 1, n));
    }
    if (t == 2) std::shuffle(track.begin(), track.end(), random);
    for (const SliceRecord& s : track) {
      const auto index = static_cast<uint32_t>(added.size());
      EXPECT_EQ(builder.AddSlice(s, NodeRef{t, index}), index);
      added.push_back(s);
      if (index % 3 == 0) builder.AddKernelArgs(KernelArgs{.correlation = index, .slice = index});
      if (index % 7 == 0) builder.AddSliceArg(index, builder.Intern("k"), static_cast<int64_t>(index));
      if (index > 0 && index % 5 == 0) builder.AddFlow(index - 1, index, FlowKind::kLaunch);
    }
  }
  builder.SortSlices();
  std::vector<uint32_t> expected(added.size());
  std::iota(expected.begin(), expected.end(), 0u);
  std::stable_sort(expected.begin(), expected.end(), [&](uint32_t a, uint32_t b) {
    const SliceRecord& x = added[a];
    const SliceRecord& y = added[b];
    if (x.track != y.track) return x.track < y.track;
    if (x.start_ns != y.start_ns) return x.start_ns < y.start_ns;
    return x.dur_ns > y.dur_ns;
  });
  for (uint32_t i = 0; i < builder.slice_count(); ++i) {
    const SliceRecord& want = added[expected[i]];
    ASSERT_EQ(builder.slice(i).start_ns, want.start_ns) << "position " << i;
    ASSERT_EQ(builder.slice(i).dur_ns, want.dur_ns) << "position " << i;
  }
  const Trace trace = std::move(builder).Build();
  std::vector<uint32_t> origin(added.size());
  for (uint32_t i = 0; i < trace.slices().size(); ++i) {
    origin[i] = trace.node_ref(i).node;
    ASSERT_EQ(origin[i], expected[i]) << "position " << i;
  }
  ASSERT_EQ(trace.flows().size(), (added.size() - 1) / 5);
  for (const Flow& flow : trace.flows()) EXPECT_EQ(origin[flow.from_slice] + 1, origin[flow.to_slice]);
  ASSERT_EQ(trace.all_kernel_args().size(), (added.size() + 2) / 3);
  for (const KernelArgs& args : trace.all_kernel_args()) EXPECT_EQ(args.correlation, origin[args.slice]);
  ASSERT_EQ(trace.all_slice_args().size(), (added.size() + 6) / 7);
  for (const SliceArg& arg : trace.all_slice_args()) EXPECT_EQ(arg.number, origin[arg.slice]);
}

// Tracks in order but two, apart: only their slices move (the builder reorders each such track's
// window on its own), and what points at slices inside and outside them follows.
TEST(TraceBuilderTest, TracksOutOfOrderMoveOnlyTheirSlices) {
  TraceBuilder builder;
  AddTracks(builder, TrackKind::kOpLane, "lane", 4);
  const StringId n = builder.Intern("op");
  for (uint32_t t = 0; t < 4; ++t) {
    for (int64_t i = 0; i < 4; ++i) {
      const int64_t step = t % 2 == 1 ? 3 - i : i;  // tracks 1 and 3 arrive latest first
      const uint32_t index = builder.AddSlice(MakeSlice(t, 100 + 10 * step, 5, n), NodeRef{t, static_cast<uint32_t>(step)});
      builder.AddKernelArgs(KernelArgs{.correlation = 10 * t + step, .slice = index});
    }
  }
  builder.AddFlow(0, 4, FlowKind::kLaunch);    // track 0 step 0 -> track 1 step 3
  builder.AddFlow(7, 11, FlowKind::kLaunch);   // track 1 step 0 -> track 2 step 3
  builder.AddFlow(11, 12, FlowKind::kLaunch);  // track 2 step 3 -> track 3 step 3
  builder.SortSlices();
  for (uint32_t i = 0; i < 16; ++i) {
    EXPECT_EQ(builder.slice(i).track, i / 4);
    EXPECT_EQ(builder.slice(i).start_ns, 100 + 10 * (i % 4));
  }
  const Trace trace = std::move(builder).Build();
  for (uint32_t i = 0; i < 16; ++i) {
    EXPECT_EQ(trace.node_ref(i).device, i / 4);
    EXPECT_EQ(trace.node_ref(i).node, i % 4);
  }
  ASSERT_EQ(trace.flows().size(), 3u);
  EXPECT_EQ(trace.flows()[0].from_slice, 0u);
  EXPECT_EQ(trace.flows()[0].to_slice, 7u);
  EXPECT_EQ(trace.flows()[1].from_slice, 4u);
  EXPECT_EQ(trace.flows()[1].to_slice, 11u);
  EXPECT_EQ(trace.flows()[2].from_slice, 11u);
  EXPECT_EQ(trace.flows()[2].to_slice, 15u);
  ASSERT_EQ(trace.all_kernel_args().size(), 16u);
  for (uint32_t i = 0; i < 16; ++i) {
    EXPECT_EQ(trace.all_kernel_args()[i].slice, i);
    EXPECT_EQ(trace.all_kernel_args()[i].correlation, 10 * (i / 4) + i % 4);
  }
}

// Slices added as a block and filled in place: in order they stay as filled, out of order they
// are sorted as any others.
TEST(TraceBuilderTest, SlicesFilledInPlaceAreOrderedLikeAddedOnes) {
  for (const bool reversed : {false, true}) {
    TraceBuilder builder;
    AddTracks(builder, TrackKind::kOpLane, "lane", 2);
    const StringId n = builder.Intern("op");
    const uint32_t first = builder.AddSlices(6);
    EXPECT_EQ(first, 0u);
    for (uint32_t i = 0; i < 6; ++i) {
      const uint32_t position = reversed ? 5 - i : i;
      builder.SetSlice(position, MakeSlice(i / 3, 100 + 10 * (i % 3), 5, n));
    }
    builder.AddFlow(reversed ? 5u : 0u, reversed ? 0u : 5u, FlowKind::kLaunch);
    const Trace trace = std::move(builder).Build();
    ASSERT_EQ(trace.slices().size(), 6u);
    for (uint32_t i = 0; i < 6; ++i) {
      EXPECT_EQ(trace.slices()[i].track, i / 3);
      EXPECT_EQ(trace.slices()[i].start_ns, 10 * (i % 3));
    }
    ASSERT_EQ(trace.flows().size(), 1u);
    EXPECT_EQ(trace.flows()[0].from_slice, 0u);
    EXPECT_EQ(trace.flows()[0].to_slice, 5u);
  }
}

// A slice names its name and op type by one label. Names seen with several op types (a TF node
// name reused on a kernel and a copy, a Kineto event with and without an "op" argument) keep
// each pair apart; everything else shares one label per name.
TEST(TraceBuilderTest, LabelsKeepEveryNameAndOpTypePair) {
  LabelTable table;
  EXPECT_EQ(table.Intern(0, 0), 0u);  // a default slice's label
  EXPECT_EQ(table[0].name, 0u);
  EXPECT_EQ(table[0].op_type, 0u);
  const LabelId a = table.Intern(7, 3);
  EXPECT_EQ(table.Intern(7, 3), a);
  const LabelId b = table.Intern(7, 4);  // the same name, another op type
  const LabelId c = table.Intern(2, 4);
  EXPECT_EQ(table.Intern(7, 4), b);
  EXPECT_EQ(table.Intern(7, 3), a);
  EXPECT_EQ(table.Intern(2, 4), c);
  EXPECT_EQ(table.size(), 4u);
  EXPECT_TRUE(a != b && b != c && a != c);
  EXPECT_EQ(table[b].name, 7u);
  EXPECT_EQ(table[b].op_type, 4u);

  // Through a build: random pairs out of a few names and op types come back as added, sorted.
  TraceBuilder builder;
  AddTracks(builder, TrackKind::kOpLane, "lane", 3);
  std::vector<StringId> names, types;
  for (int i = 0; i < 6; ++i) names.push_back(builder.Intern("name" + std::to_string(i)));
  for (int i = 0; i < 4; ++i) types.push_back(builder.Intern("type" + std::to_string(i)));
  std::mt19937 random(11);
  std::vector<std::tuple<uint32_t, int64_t, StringId, StringId>> added;
  for (int i = 0; i < 2000; ++i) {
    SliceRecord r = MakeSlice(random() % 3, 1000 + 10 * i, 5, names[random() % names.size()]);
    r.op_type = random() % 5 == 0 ? 0 : types[random() % types.size()];
    builder.AddSlice(r);
    added.emplace_back(r.track, r.start_ns, r.name, r.op_type);
  }
  const Trace trace = std::move(builder).Build();
  std::vector<std::tuple<uint32_t, int64_t, StringId, StringId>> built;
  for (const Slice& s : trace.slices()) {
    built.emplace_back(s.track, trace.epoch_ns() + s.start_ns, trace.slice_name(s), trace.slice_op_type(s));
    const SliceRecord r = trace.Record(s);
    EXPECT_EQ(r.name, trace.slice_name(s));
    EXPECT_EQ(r.op_type, trace.slice_op_type(s));
  }
  std::sort(added.begin(), added.end());
  std::sort(built.begin(), built.end());
  EXPECT_EQ(built, added);
  EXPECT_LE(trace.labels().size(), 1 + names.size() * (types.size() + 1));
}

// A built slice is 20 bytes: its fields have limits. What passes one is clamped and counted in
// the import stats, never wrapped; a slice within every limit keeps its values exactly.
TEST(TraceBuilderTest, PackedSlicesKeepValuesAndClampWhatExceedsTheirWidthsCounted) {
  TraceBuilder builder;
  AddTracks(builder, TrackKind::kOpLane, "lane", 2);
  const StringId n = builder.Intern("op");
  const int64_t epoch = int64_t{1'700'000'000} * 1'000'000'000;  // absolute, as readers add them
  builder.AddSlice(MakeSlice(0, epoch, Slice::kMaxDurNs, n));          // at the limit: kept
  builder.AddSlice(MakeSlice(1, epoch + 5, Slice::kMaxDurNs + 7, n));  // past it: clamped
  builder.AddSlice(MakeSlice(1, epoch + Slice::kMaxStartNs + 1000, 3, n));  // 78 h later
  const Trace trace = std::move(builder).Build();
  EXPECT_EQ(trace.epoch_ns(), epoch);
  ASSERT_EQ(trace.slices().size(), 3u);
  EXPECT_EQ(trace.slices()[0].start_ns, 0);
  EXPECT_EQ(trace.slices()[0].dur_ns, Slice::kMaxDurNs);
  EXPECT_EQ(trace.slices()[1].start_ns, 5);
  EXPECT_EQ(trace.slices()[1].dur_ns, Slice::kMaxDurNs);
  EXPECT_EQ(trace.slices()[2].start_ns, Slice::kMaxStartNs);
  EXPECT_EQ(trace.slices()[2].dur_ns, 3);
  EXPECT_EQ(trace.slices()[2].track, 1u);
  EXPECT_EQ(trace.import_stats().Get("slice_duration_clamped_at_9_7_hours"), 1);
  EXPECT_EQ(trace.import_stats().Get("slice_start_clamped_at_78_hours"), 1);
  // Back to absolute times, as writers and merges need them.
  EXPECT_EQ(trace.Record(trace.slices()[1]).start_ns, epoch + 5);
}

TEST(TraceBuilderTest, NestingDeeperThanASliceHoldsIsClampedAndCounted) {
  TraceBuilder builder;
  AddTracks(builder, TrackKind::kOpLane, "lane", 1);
  const StringId n = builder.Intern("frame");
  constexpr int kDepth = Slice::kMaxDepth + 5;  // a deep Python stack: depths 0 to 515
  for (int d = 0; d < kDepth; ++d) builder.AddSlice(MakeSlice(0, d, 2 * (kDepth - d), n));
  const Trace trace = std::move(builder).Build();
  ASSERT_EQ(trace.slices().size(), static_cast<size_t>(kDepth));
  for (int d = 0; d < kDepth; ++d) {
    EXPECT_EQ(trace.slices()[d].depth, std::min<uint32_t>(d, Slice::kMaxDepth)) << d;
  }
  EXPECT_EQ(trace.import_stats().Get("slice_depth_clamped_at_511"), kDepth - 1 - int{Slice::kMaxDepth});
}

TEST(TraceBuilderTest, SlicesOfTracksPastTheLimitBecomeCountedInstantsOnOneTrack) {
  TraceBuilder builder;
  constexpr int kTracks = Slice::kMaxTrack + 10;
  AddTracks(builder, TrackKind::kOpLane, "lane", kTracks);
  const StringId n = builder.Intern("op");
  builder.AddSlice(MakeSlice(0, 100, 50, n));
  builder.AddSlice(MakeSlice(kTracks - 1, 100, 50, n));  // past the limit
  builder.AddSlice(MakeSlice(Slice::kMaxTrack - 1, 120, 50, n));  // on the catch-all track
  const Trace trace = std::move(builder).Build();
  EXPECT_EQ(trace.tracks().size(), static_cast<size_t>(Slice::kMaxTrack));
  ASSERT_EQ(trace.slices().size(), 3u);
  EXPECT_EQ(trace.slices()[0].track, 0u);
  EXPECT_EQ(trace.slices()[0].dur_ns, 50);
  for (size_t i = 1; i < 3; ++i) {
    EXPECT_EQ(trace.slices()[i].track, Slice::kMaxTrack - 1);
    EXPECT_EQ(trace.slices()[i].dur_ns, 0);
  }
  EXPECT_EQ(trace.import_stats().Get("slices_made_instant_at_track_limit"), 2);
  EXPECT_EQ(trace.str(trace.tracks().back().name), "(tracks past 262142)");
}

// Kernel arguments keep each distinct launch configuration once: launches of one kernel share it,
// and every row reads back exactly what was added (NaN occupancy included), found by its slice
// once the builder has sorted the rows.
TEST(TraceBuilderTest, KernelArgsShareLaunchConfigurations) {
  TraceBuilder builder;
  AddTracks(builder, TrackKind::kGpuStream, "stream", 1);
  const StringId n = builder.Intern("gemm");
  constexpr uint32_t kKernels = 3000;
  constexpr uint32_t kConfigs = 300;  // past the index's first size (64 slots): it grows
  std::vector<KernelArgs> added;
  for (uint32_t k = 0; k < kKernels; ++k) {
    builder.AddSlice(MakeSlice(0, 1000 * (kKernels - k), 10, n));  // reversed: Build reorders
    KernelArgs args;
    args.slice = k;
    // Correlations past 32 bits and absent (-1) read back too.
    args.correlation = k % 5 == 4 ? -1 : 7 * int64_t{k} + (k % 2 == 0 ? 1 : (int64_t{3} << 40));
    const uint32_t config = k % kConfigs;
    args.grid[0] = 1 + config;
    args.grid[1] = 2;
    args.block[0] = 128;
    args.registers_per_thread = 32;
    args.device = 0;
    args.stream = static_cast<int32_t>(config % 3);
    args.occupancy_percent = config % 2 == 0 ? std::numeric_limits<float>::quiet_NaN() : 50.0f;
    builder.AddKernelArgs(args);
    added.push_back(args);
  }
  const Trace trace = std::move(builder).Build();
  const KernelArgsTable& table = trace.all_kernel_args();
  ASSERT_EQ(table.size(), kKernels);
  // The correlation's high half is stored with the configuration; here both follow k mod 300
  // (300 is a multiple of 2 and 5), so there are exactly 300.
  EXPECT_EQ(table.launch_count(), kConfigs);
  for (uint32_t k = 0; k < kKernels; ++k) {
    // Slice k started last-but-k: it is slice kKernels - 1 - k of the built trace.
    const std::optional<KernelArgs> found = table.Find(kKernels - 1 - k);
    ASSERT_TRUE(found.has_value()) << k;
    KernelArgs expected = added[k];
    expected.slice = kKernels - 1 - k;
    EXPECT_EQ(std::memcmp(&*found, &expected, sizeof(KernelArgs)), 0) << k;
  }
  EXPECT_FALSE(table.Find(kKernels).has_value());
}

// Once built, a kernel row keeps its slice as a bit: on sparse arguments (empty 512-slice blocks,
// the first and last slice, runs) every slice finds its own or none, rows read back in slice
// order by index and by iteration.
TEST(TraceBuilderTest, KernelArgsOfSparseSlicesAreFoundByTheirBits) {
  TraceBuilder builder;
  AddTracks(builder, TrackKind::kGpuStream, "stream", 1);
  const StringId n = builder.Intern("k");
  constexpr uint32_t kSlices = 5000;
  std::mt19937 random(3);
  std::vector<uint32_t> with_args;
  for (uint32_t i = 0; i < kSlices; ++i) {
    builder.AddSlice(MakeSlice(0, 10 * int64_t{i}, 5, n));
    const bool empty_block = i >= 1024 && i < 2048;
    if (i == 0 || i == kSlices - 1 || (i >= 700 && i < 800) || (!empty_block && random() % 7 == 0)) with_args.push_back(i);
  }
  // Added out of order, as a reader resolving per-track buffers does.
  std::vector<uint32_t> order = with_args;
  std::shuffle(order.begin(), order.end(), random);
  for (uint32_t slice : order) {
    KernelArgs args;
    args.slice = slice;
    args.correlation = 1000 + slice;
    args.grid[0] = 1 + slice % 3;
    builder.AddKernelArgs(args);
  }
  const Trace trace = std::move(builder).Build();
  const KernelArgsTable& table = trace.all_kernel_args();
  ASSERT_EQ(table.size(), with_args.size());
  size_t row = 0;
  for (uint32_t slice = 0; slice < kSlices; ++slice) {
    const std::optional<KernelArgs> found = trace.kernel_args(slice);
    const bool expected = row < with_args.size() && with_args[row] == slice;
    ASSERT_EQ(found.has_value(), expected) << slice;
    if (!expected) continue;
    EXPECT_EQ(found->slice, slice);
    EXPECT_EQ(found->correlation, 1000 + slice);
    EXPECT_EQ(found->grid[0], 1 + slice % 3);
    EXPECT_EQ(table[row].slice, slice) << row;
    ++row;
  }
  std::vector<uint32_t> iterated;
  for (const KernelArgs& args : table) iterated.push_back(args.slice);
  EXPECT_EQ(iterated, with_args);
  EXPECT_FALSE(trace.kernel_args(kSlices + 100).has_value());
}

// The builder's slice array grows without writing its new slices (base/mapped_array.h): a
// value-initialised Slice must be what a fresh page holds, all zero bytes.
TEST(TraceBuilderTest, DefaultSliceIsAllZeroBytes) {
  const Slice record{};
  unsigned char zeros[sizeof(record)] = {};
  EXPECT_EQ(std::memcmp(&record, zeros, sizeof(record)), 0);
}

}  // namespace
}  // namespace stepscope::trace
