// TraceBuilder invariants: sorting, epoch rebase, nesting depth, overlap lanes, flow remapping.
#include <gtest/gtest.h>

#include "profiler/trace/trace.h"

namespace stepscope::trace {
namespace {

Slice MakeSlice(uint32_t track, int64_t start, int64_t dur, StringId name) {
  Slice s;
  s.track = track;
  s.start_ns = start;
  s.dur_ns = dur;
  s.name = name;
  s.op_type = name;
  return s;
}

TEST(TraceBuilderTest, NestsContainedSlicesAndMovesPartialOverlaps) {
  TraceBuilder builder;
  Track host;
  host.kind = TrackKind::kHost;
  host.name = builder.Intern("host");
  const uint32_t h = builder.AddTrack(host);
  Track lane;
  lane.parent = static_cast<int32_t>(h);
  lane.kind = TrackKind::kOpLane;
  lane.name = builder.Intern("thread");
  const uint32_t t = builder.AddTrack(lane);
  const StringId n = builder.Intern("op");
  const uint32_t outer = builder.AddSlice(MakeSlice(t, 1000, 100, n));
  builder.AddSlice(MakeSlice(t, 1010, 20, n));   // nested in outer
  const uint32_t partial = builder.AddSlice(MakeSlice(t, 1090, 50, n));  // crosses outer's end
  builder.AddFlow(Flow{outer, partial, FlowKind::kDataflow});
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

}  // namespace
}  // namespace stepscope::trace
