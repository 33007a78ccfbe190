// ComputeOpStats on traces whose statistics are known by construction, and on the real sample.
#include "profiler/analysis/op_stats.h"

#include <gtest/gtest.h>

#include <map>
#include <random>

#include "kineto_generator.h"
#include "profiler/formats/reader.h"
#include "test_util.h"
#include "trace_fixtures.h"

namespace stepscope::analysis {
namespace {

using testing::TraceMaker;
using trace::SliceKind;
using trace::TrackKind;

const OpStatsRow* Row(const std::vector<OpStatsRow>& rows, const std::string& name) {
  for (const auto& r : rows) {
    if (r.name == name) return &r;
  }
  return nullptr;
}

// Host thread (nesting): A [1000,1100) holds B [1010,1040) and B [1050,1060).
// GPU stream: K [1000,1030), K [1040,1100); a /stream:all repeat of the first K (duplicate).
trace::Trace Constructed() {
  TraceMaker m;
  const uint32_t host = m.Host("host");
  const uint32_t cpu = m.Device("CPU:0", host);
  const uint32_t gpu = m.Device("GPU:0", host);
  const uint32_t thread = m.Lane("thread 1", cpu, TrackKind::kOpLane, /*concurrent=*/false);
  const uint32_t stream = m.Lane("stream:7", gpu, TrackKind::kGpuStream);
  const uint32_t all = m.Lane("stream:all", gpu, TrackKind::kGpuAllStreams);
  m.Slice(thread, 1000, 1100, "A");
  m.Slice(thread, 1010, 1040, "B");
  m.Slice(thread, 1050, 1060, "B");
  m.Slice(stream, 1000, 1030, "K", "", SliceKind::kKernel);
  m.Slice(stream, 1040, 1100, "K", "", SliceKind::kKernel);
  m.Slice(all, 1000, 1030, "K", "", SliceKind::kKernel, trace::kSliceDuplicate);
  return std::move(m).Build();
}

TEST(OpStatsTest, TotalsSelfTimeAndPercentilesByConstruction) {
  const trace::Trace trace = Constructed();
  const OpStats stats = ComputeOpStats(trace);
  EXPECT_EQ(stats.window_ns, 100);
  EXPECT_EQ(stats.slices, 5);  // the duplicate is not counted
  ASSERT_EQ(stats.by_op_type.size(), 3u);
  const OpStatsRow* a = Row(stats.by_op_type, "A");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->count, 1);
  EXPECT_EQ(a->total_ns, 100);
  EXPECT_EQ(a->self_ns, 60);
  EXPECT_EQ(a->where, "host");
  EXPECT_DOUBLE_EQ(a->share, 1.0);
  const OpStatsRow* b = Row(stats.by_op_type, "B");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->count, 2);
  EXPECT_EQ(b->total_ns, 40);
  EXPECT_EQ(b->self_ns, 40);
  EXPECT_EQ(b->min_ns, 10);
  EXPECT_EQ(b->max_ns, 30);
  EXPECT_DOUBLE_EQ(b->mean_ns, 20);
  EXPECT_DOUBLE_EQ(b->p50_ns, 20);
  EXPECT_DOUBLE_EQ(b->p95_ns, 29);  // 10 + 0.95 * (30 - 10)
  EXPECT_EQ(trace.slices()[b->longest_slice].dur_ns, 30);
  const OpStatsRow* k = Row(stats.by_op_type, "K");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->count, 2);
  EXPECT_EQ(k->total_ns, 90);
  EXPECT_EQ(k->where, "device");
  EXPECT_EQ(k->kind, "kernel");
  EXPECT_EQ(stats.host_total_ns, 140);
  EXPECT_EQ(stats.device_total_ns, 90);
  // Sorted by total time.
  EXPECT_EQ(stats.by_op_type[0].name, "A");
  EXPECT_EQ(stats.by_op_type[1].name, "K");
}

// An op type's row shares its name row's durations while both have counted the same slices
// (Kineto names slices by their op type) and takes its own copy when either meets another
// partner: every row's figures are those of its own slices, a duration past 4.3 s among them.
TEST(OpStatsTest, TypeAndNameRowsThatPartKeepTheirOwnFigures) {
  struct Op {
    std::string name, type;
    int64_t dur;
  };
  const std::vector<Op> ops = {
      {"n1", "T", 30}, {"n1", "T", 10}, {"n1", "T", 50},           // n1 and T share
      {"n2", "T", 20},                                              // T meets n2: T parts from n1
      {"n1", "U", 70},                                              // n1 alone, U shares with none
      {"x", "X", 5}, {"x", "X", 5'000'000'000}, {"x", "Y", 15},     // x meets Y: X parts from x
      {"z", "Z", 7}, {"z", "Z", 9},                                 // z and Z share to the end
  };
  TraceMaker m;
  const uint32_t thread = m.Lane("thread 1", m.Device("CPU:0", m.Host("host")), TrackKind::kOpLane, false);
  std::map<std::string, std::vector<int64_t>> by_type, by_name;
  int64_t clock = 0;
  for (const Op& op : ops) {
    m.Slice(thread, clock, clock + op.dur, op.name, op.type);
    clock += op.dur + 1;
    by_type[op.type].push_back(op.dur);
    by_name[op.name].push_back(op.dur);
  }
  const trace::Trace trace = std::move(m).Build();
  const OpStats stats = ComputeOpStats(trace);
  auto expect_rows = [](const std::vector<OpStatsRow>& rows, std::map<std::string, std::vector<int64_t>> want) {
    ASSERT_EQ(rows.size(), want.size());
    for (auto& [name, durations] : want) {
      const OpStatsRow* row = Row(rows, name);
      ASSERT_NE(row, nullptr) << name;
      std::sort(durations.begin(), durations.end());
      EXPECT_EQ(row->count, static_cast<int64_t>(durations.size())) << name;
      EXPECT_EQ(row->min_ns, durations.front()) << name;
      EXPECT_EQ(row->max_ns, durations.back()) << name;
      EXPECT_DOUBLE_EQ(row->p50_ns, Percentile(durations, 0.5)) << name;
      EXPECT_DOUBLE_EQ(row->p95_ns, Percentile(durations, 0.95)) << name;
    }
  };
  expect_rows(stats.by_op_type, by_type);
  expect_rows(stats.by_node, by_name);
  EXPECT_DOUBLE_EQ(Row(stats.by_op_type, "T")->p50_ns, 25);  // 10 20 30 50
  EXPECT_EQ(Row(stats.by_node, "x")->max_ns, 5'000'000'000);
}

TEST(OpStatsTest, WindowClipsSlicesAndSelfTime) {
  const trace::Trace trace = Constructed();
  OpStatsOptions options;
  options.begin_ns = 20;  // trace time: the epoch is the first start (1000)
  options.end_ns = 55;
  const OpStats stats = ComputeOpStats(trace, options);
  EXPECT_EQ(stats.window_ns, 35);
  const OpStatsRow* a = Row(stats.by_op_type, "A");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->total_ns, 35);
  EXPECT_EQ(a->self_ns, 10);  // 35 - (20 + 5)
  const OpStatsRow* b = Row(stats.by_op_type, "B");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->count, 2);
  EXPECT_EQ(b->total_ns, 25);
  const OpStatsRow* k = Row(stats.by_op_type, "K");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->total_ns, 10 + 15);
  EXPECT_DOUBLE_EQ(k->share, 25.0 / 35.0);
}

TEST(OpStatsTest, TrackSelectionIncludesChildTracks) {
  const trace::Trace trace = Constructed();
  uint32_t gpu = 0;
  for (uint32_t t = 0; t < trace.tracks().size(); ++t) {
    if (trace.str(trace.tracks()[t].name) == "GPU:0") gpu = t;
  }
  OpStatsOptions options;
  options.tracks = {gpu};
  const OpStats stats = ComputeOpStats(trace, options);
  ASSERT_EQ(stats.by_op_type.size(), 1u);
  EXPECT_EQ(stats.by_op_type[0].name, "K");
  EXPECT_EQ(stats.by_op_type[0].total_ns, 90);
  EXPECT_EQ(stats.host_total_ns, 0);
}

TEST(OpStatsTest, EmptyTraceAndEmptyWindow) {
  TraceMaker m;
  m.Host("empty");
  const trace::Trace empty = std::move(m).Build();
  const OpStats stats = ComputeOpStats(empty);
  EXPECT_TRUE(stats.by_op_type.empty());
  EXPECT_EQ(stats.window_ns, 0);
  OpStatsOptions past_the_end;
  past_the_end.begin_ns = 1000000;
  const OpStats none = ComputeOpStats(Constructed(), past_the_end);
  EXPECT_TRUE(none.by_node.empty());
  EXPECT_EQ(none.window_ns, 0);
}

TEST(OpStatsTest, RealSampleTotalsMatchTheSlices) {
  auto trace = trace::ReadTrace(stepscope::testing::DataPath("ptb_lstm_tf1_gpu_step.pbtxt"));
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  int64_t expected_total = 0, expected_count = 0;
  for (const trace::Slice& s : trace->slices()) {
    if (s.duplicate()) continue;
    expected_total += s.dur_ns;
    ++expected_count;
  }
  const OpStats stats = ComputeOpStats(*trace);
  int64_t total = 0, count = 0;
  for (const auto& row : stats.by_op_type) {
    total += row.total_ns;
    count += row.count;
    EXPECT_EQ(row.self_ns, row.total_ns) << row.name;  // executor ops and kernels never nest
    const trace::Slice& longest = trace->slices()[row.longest_slice];
    EXPECT_EQ(trace->str(trace->slice_op_type(longest)), row.name);
    EXPECT_EQ(longest.dur_ns, row.max_ns);
    EXPECT_LE(row.p50_ns, row.p95_ns);
  }
  EXPECT_EQ(total, expected_total);
  EXPECT_EQ(count, expected_count);
  int64_t node_total = 0;
  for (const auto& row : stats.by_node) node_total += row.total_ns;
  EXPECT_EQ(node_total, expected_total);
  for (size_t i = 1; i < stats.by_op_type.size(); ++i) {
    EXPECT_GE(stats.by_op_type[i - 1].total_ns, stats.by_op_type[i].total_ns);
  }
}

// Windows found through SliceWindows give the statistics of a walk from each track's start: on
// every ProfilerStep and random windows of real and generated traces, and on a lane under one
// span as long as the trace with children overhanging each other (overlap lanes walked together).
TEST(OpStatsTest, SliceWindowsGiveTheSameStatisticsAsAFullWalk) {
  std::vector<trace::Trace> traces;
  for (const char* name : {"pytorch_kineto_alexnet_train.json.gz", "ptb_lstm_tf1_gpu_step.pbtxt"}) {
    auto trace = trace::ReadTrace(stepscope::testing::DataPath(name));
    ASSERT_TRUE(trace.ok()) << trace.status().message();
    traces.push_back(std::move(*trace));
  }
  {
    auto trace = trace::ReadTraceFromBytes(testing::GenerateKinetoJson(size_t{2} << 20).json, "generated.json");
    ASSERT_TRUE(trace.ok());
    traces.push_back(std::move(*trace));
  }
  {
    std::mt19937_64 random(11);
    trace::TraceBuilder builder;
    trace::Track lane;
    lane.kind = TrackKind::kOpLane;
    lane.name = builder.Intern("thread");
    const uint32_t t = builder.AddTrack(lane);
    const trace::StringId span = builder.Intern("whole"), op = builder.Intern("op"), inner = builder.Intern("inner");
    auto add = [&](int64_t start, int64_t dur, trace::StringId name) {
      trace::SliceRecord s;
      s.track = t;
      s.start_ns = start;
      s.dur_ns = dur;
      s.name = s.op_type = name;
      builder.AddSlice(s);
    };
    add(0, 1'000'000, span);
    for (int64_t clock = 10; clock < 990'000;) {
      const int64_t dur = std::uniform_int_distribution<int64_t>(0, 2000)(random);
      add(clock, dur, op);
      if (dur > 10) add(clock + 5, std::uniform_int_distribution<int64_t>(0, dur)(random), inner);  // may overhang
      clock += std::uniform_int_distribution<int64_t>(dur / 2, dur + 500)(random);
    }
    traces.push_back(std::move(builder).Build());
    ASSERT_GT(traces.back().import_stats().Get("overlap_moved_to_lane"), 0);
  }
  for (const trace::Trace& trace : traces) {
    SCOPED_TRACE(trace.source_path());
    const SliceWindows windows(trace);
    std::vector<std::pair<int64_t, int64_t>> spans;
    for (const trace::Slice& s : trace.slices()) {
      if (trace.str(trace.slice_name(s)).starts_with("ProfilerStep#")) spans.emplace_back(s.start_ns, s.end_ns());
    }
    std::mt19937_64 random(5);
    const int64_t b = trace.span_begin_ns(), e = trace.span_end_ns();
    for (int i = 0; i < 40; ++i) {
      const int64_t x = std::uniform_int_distribution<int64_t>(b, e)(random);
      const int64_t y = std::uniform_int_distribution<int64_t>(b, e)(random);
      spans.emplace_back(std::min(x, y), i % 4 == 0 ? std::min(x, y) : std::max(x, y));  // some of zero length
    }
    spans.emplace_back(b, e);
    for (const auto& [begin, end] : spans) {
      OpStatsOptions walk;
      walk.begin_ns = begin;
      walk.end_ns = end;
      OpStatsOptions indexed = walk;
      indexed.windows = &windows;
      const OpStats expected = ComputeOpStats(trace, walk);
      const OpStats got = ComputeOpStats(trace, indexed);
      ASSERT_EQ(got.slices, expected.slices) << begin << "-" << end;
      EXPECT_EQ(got.by_op_type, expected.by_op_type);
      EXPECT_EQ(got.by_node, expected.by_node);
      EXPECT_EQ(got.annotations, expected.annotations);
      EXPECT_EQ(got.host_total_ns, expected.host_total_ns);
      EXPECT_EQ(got.device_total_ns, expected.device_total_ns);
    }
  }
}

}  // namespace
}  // namespace stepscope::analysis
