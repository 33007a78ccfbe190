// The timeline's arithmetic with no widget: time <-> pixel mapping, the ruler, the per-level
// index and visible range, sub-pixel folding on 10^6-slice tracks, the row layout, colours and
// the per-pixel decimation of memory curves.
#include <QElapsedTimer>
#include <QtTest/QtTest>
#include <algorithm>
#include <cmath>
#include <random>

#include "base/units.h"
#include "profiler/testing/synthetic_trace.h"
#include "viewer/memory/decimate.h"
#include "viewer/timeline_data/slice_colors.h"
#include "viewer/timeline_data/time_mapping.h"
#include "viewer/timeline_data/timeline_index.h"
#include "viewer/timeline_data/track_layout.h"

using namespace stepscope;
using namespace stepscope::viewer;

namespace {

// One track of `count` back-to-back slices of 1..100 ns with 0..50 ns gaps: at any zoom-out
// most of them are far below a pixel.
trace::Trace MakeDenseTrack(int64_t count) {
  trace::TraceBuilder builder;
  trace::Track track;
  track.name = builder.Intern("dense");
  track.concurrent = true;
  const uint32_t t = builder.AddTrack(track);
  std::mt19937 random(7);
  int64_t clock = 0;
  const trace::StringId name = builder.Intern("op");
  for (int64_t i = 0; i < count; ++i) {
    trace::SliceRecord slice;
    slice.track = t;
    slice.name = name;
    slice.op_type = name;
    slice.start_ns = clock + static_cast<int64_t>(random() % 51);
    slice.dur_ns = 1 + static_cast<int64_t>(random() % 100);
    // Every 10000th slice is long enough to be drawn on its own at full zoom-out.
    if (i % 10000 == 0) slice.dur_ns = 2'000'000;
    clock = slice.start_ns + slice.dur_ns;
    builder.AddSlice(slice);
  }
  return std::move(builder).Build();
}

// Brute force: positions of a level's slices intersecting [begin, end].
std::pair<size_t, size_t> BruteVisible(const TimelineIndex& index, uint32_t track, int depth, double begin,
                                       double end) {
  const auto level = index.level(track, depth);
  const auto& slices = index.trace().slices();
  size_t first = level.size(), last = 0;
  for (size_t i = 0; i < level.size(); ++i) {
    const auto& s = slices[level[i]];
    if (static_cast<double>(s.end_ns()) >= begin && static_cast<double>(s.start_ns) <= end) {
      first = std::min(first, i);
      last = i + 1;
    }
  }
  if (first == level.size()) return {0, 0};
  return {first, last};
}

// The boxes of one level as CollectBoxes defines them, from the slices alone: each run found by
// a scan, kept exact when it ends within kSampleStride / 8 positions, else ended at the first
// sampled position starting at or after the bound when the stride before it spans under min_ns / 8.
std::vector<DrawBox> ReferenceBoxes(const TimelineIndex& index, uint32_t track, int depth, const TimeMapping& mapping,
                                    double min_px) {
  constexpr size_t kStride = TimelineIndex::kSampleStride;
  const auto level = index.level(track, depth);
  const auto& all = index.trace().slices();
  auto start = [&](size_t k) { return static_cast<double>(all[level[k]].start_ns); };
  auto [i, end] = BruteVisible(index, track, depth, mapping.begin_ns(), mapping.end_ns());
  const double min_ns = min_px * mapping.ns_per_px();
  std::vector<DrawBox> boxes;
  while (i < end) {
    const trace::Slice& s = all[level[i]];
    const double x0 = mapping.NsToPx(static_cast<double>(s.start_ns));
    if (static_cast<double>(s.dur_ns) >= min_ns) {
      boxes.push_back(DrawBox{static_cast<float>(x0), static_cast<float>(mapping.NsToPx(static_cast<double>(s.end_ns()))),
                              level[i], 1});
      ++i;
      continue;
    }
    const double bound = start(i) + min_ns;
    size_t j = i + 1;
    while (j < end && start(j) < bound) ++j;
    if (j > i + kStride / 8 && i + kStride / 8 < end) {
      size_t sample = (i + kStride / 8) / kStride + 1;  // the first sample at or after the bound
      const size_t sample_end = (end + kStride - 1) / kStride;
      while (sample < sample_end && start(sample * kStride) < bound) ++sample;
      if (sample < sample_end && sample * kStride <= end &&
          start(sample * kStride) - start((sample - 1) * kStride) < min_ns / 8) {
        j = sample * kStride;
      }
    }
    if (j - 1 > i && static_cast<double>(all[level[j - 1]].dur_ns) >= min_ns) --j;
    const double run_end_px = mapping.NsToPx(static_cast<double>(all[level[j - 1]].end_ns()));
    boxes.push_back(DrawBox{static_cast<float>(x0), static_cast<float>(std::max(run_end_px, x0 + min_px)), level[i],
                            static_cast<uint32_t>(j - i)});
    i = j;
  }
  return boxes;
}

}  // namespace

class TimelineTest : public QObject {
  Q_OBJECT

 private slots:
  void MappingRoundTrips() {
    const TimeMapping mapping(1000, 11000, 500);
    QCOMPARE(mapping.ns_per_px(), 20.0);
    QCOMPARE(mapping.NsToPx(1000), 0.0);
    QCOMPARE(mapping.NsToPx(11000), 500.0);
    QCOMPARE(mapping.PxToNs(250), 6000.0);
    for (double px : {0.0, 13.5, 499.0}) QCOMPARE(mapping.NsToPx(mapping.PxToNs(px)), px);
  }

  void ZoomKeepsTheAnchor() {
    TimeMapping mapping(0, 1'000'000, 1000);
    const double anchor_ns = mapping.PxToNs(300);
    mapping.ZoomAt(300, 4);
    QCOMPARE(mapping.span_ns(), 250'000.0);
    QCOMPARE(mapping.PxToNs(300), anchor_ns);
    mapping.ZoomAt(300, 0.25);
    QCOMPARE(mapping.span_ns(), 1'000'000.0);
    QCOMPARE(mapping.begin_ns(), 0.0);
    // Never narrower than the minimum span.
    for (int i = 0; i < 100; ++i) mapping.ZoomAt(500, 10);
    QCOMPARE(mapping.span_ns(), TimeMapping::kMinSpanNs);
  }

  void PanFitAndClamp() {
    TimeMapping mapping(0, 1000, 100);
    mapping.PanPx(10);  // 10 px of 10 ns
    QCOMPARE(mapping.begin_ns(), 100.0);
    QCOMPARE(mapping.end_ns(), 1100.0);
    mapping.Fit(2000, 4000, 0.1);
    QCOMPARE(mapping.begin_ns(), 1800.0);
    QCOMPARE(mapping.end_ns(), 4200.0);
    // Zoomed far out: brought back to 1.2x the data; panned far away: back within half a view.
    mapping.SetRange(-1e9, 1e9);
    mapping.ClampTo(0, 1000);
    QCOMPARE(mapping.span_ns(), 1200.0);
    mapping.SetRange(50'000, 50'100);
    mapping.ClampTo(0, 1000);
    QCOMPARE(mapping.span_ns(), 100.0);
    QCOMPARE(mapping.begin_ns(), 950.0);
    mapping.SetRange(5, 5);  // empty: widened to the minimum span around it
    QCOMPARE(mapping.span_ns(), TimeMapping::kMinSpanNs);
  }

  void RulerUsesNiceStepsAndUnits() {
    const TimeMapping mapping(0, 10'000'000, 1000);  // 10 ms over 1000 px
    QCOMPARE(RulerStepNs(mapping, 90), 1'000'000.0);  // 90 px = 0.9 ms -> 1 ms
    const auto ticks = RulerTicks(mapping, 90);
    int majors = 0;
    for (const auto& tick : ticks) majors += tick.major ? 1 : 0;
    QCOMPARE(majors, 11);  // 0, 1, ..., 10 ms
    QCOMPARE(QString::fromStdString(ticks.front().label), QString("0 ms"));
    QCOMPARE(QString::fromStdString(ticks.back().label), QString("10 ms"));
    QCOMPARE(QString::fromStdString(FormatTimeAt(2'500'000, 500'000)), QString("2.5 ms"));
    QCOMPARE(QString::fromStdString(FormatDurationSignificant(830)), QString("830 ns"));
    QCOMPARE(QString::fromStdString(FormatDurationSignificant(12'500)), QString("12.50 us"));
    QCOMPARE(QString::fromStdString(FormatDurationSignificant(1'250'000)), QString("1.250 ms"));
    QCOMPARE(QString::fromStdString(FormatDurationSignificant(2e9)), QString("2.000 s"));
    const TimeMapping tiny(1000, 1100, 1000);
    QCOMPARE(RulerStepNs(tiny, 90), 10.0);
  }

  void ColoursAreStable() {
    QCOMPARE(ColorForName("MatMul"), ColorForName("MatMul"));
    QVERIFY(ColorForName("MatMul") != ColorForName("Conv2D"));
    QVERIFY(ColorForName("MatMul") != ColorForName("matmul"));
  }

  void VisibleRangeMatchesBruteForceOnAMillionSlices() {
    const trace::Trace trace = MakeDenseTrack(1'000'000);
    const TimelineIndex index(trace);
    QCOMPARE(index.depth_count(0), 1);
    QCOMPARE(index.level(0, 0).size(), size_t{1'000'000});
    std::mt19937_64 random(3);
    const double span = static_cast<double>(trace.span_end_ns());
    for (int i = 0; i < 20; ++i) {
      const double begin = std::uniform_real_distribution<double>(-1000, span)(random);
      const double end = begin + std::uniform_real_distribution<double>(0, span / 50)(random);
      QCOMPARE(index.VisibleRange(0, 0, begin, end), BruteVisible(index, 0, 0, begin, end));
    }
    QCOMPARE(index.VisibleRange(0, 0, span + 10, span + 20), std::make_pair(size_t{1'000'000}, size_t{1'000'000}));
  }

  // A trace big enough for the index to be built on both cores (two groups of tracks), with
  // nested lanes: every level holds exactly its track's slices of that depth in start order,
  // with every 64th start sampled, in 3-byte places and (limit lowered) in 4-byte ones.
  void IndexBuiltOnTwoCoresHoldsEveryLevelInOrder() {
    const trace::Trace trace = synthetic::MakeSyntheticTrace(1'500'000);
    for (const size_t max_narrow : {size_t{1} << 24, size_t{1000}}) {
      const TimelineIndex index(trace, max_narrow);
      int nested = 0;
      for (uint32_t t = 0; t < trace.tracks().size(); ++t) {
        const auto lane = trace.track_slices(t);
        std::vector<std::vector<uint32_t>> expected;
        for (uint32_t i = 0; i < lane.size(); ++i) {
          const auto depth = static_cast<size_t>(lane[i].depth);
          if (depth >= expected.size()) expected.resize(depth + 1);
          expected[depth].push_back(trace.track_first_slice(t) + i);
        }
        QCOMPARE(index.depth_count(t), static_cast<int>(expected.size()));
        nested += expected.size() > 1;
        for (size_t d = 0; d < expected.size(); ++d) {
          const LevelSlices level = index.level(t, static_cast<int>(d));
          QCOMPARE(level.size(), expected[d].size());
          for (size_t k = 0; k < level.size(); ++k) {
            if (level[k] != expected[d][k]) QFAIL(qPrintable(QStringLiteral("track %1 depth %2 position %3").arg(t).arg(d).arg(k)));
          }
          const auto samples = index.sampled_starts(t, static_cast<int>(d));
          QCOMPARE(samples.size(), (expected[d].size() + TimelineIndex::kSampleStride - 1) / TimelineIndex::kSampleStride);
          for (size_t k = 0; k < samples.size(); ++k) {
            QCOMPARE(samples[k], trace.slices()[expected[d][k * TimelineIndex::kSampleStride]].start_ns);
          }
        }
      }
      QCOMPARE(nested, 4);  // the four CPU threads
    }
  }

  // The bucket table brackets the first sampled start at or after any bound, inside the span and
  // past both ends. Folds found through it cover every visible slice once, give every slice a
  // pixel wide or more its own box, and end where the exact fold of the same run ends, or less
  // than an eighth of a pixel later (a deep fold ends at a sampled position), at every zoom.
  void BucketTableBracketsEverySampleAndFoldsStayWithinAnEighthOfAPixel() {
    const trace::Trace trace = MakeDenseTrack(1'000'000);
    const TimelineIndex index(trace);
    const auto samples = index.sampled_starts(0, 0);
    QVERIFY(samples.size() > 10'000);
    std::mt19937_64 random(11);
    const double span = static_cast<double>(trace.span_end_ns());
    for (int i = 0; i < 20'000; ++i) {
      double bound = std::uniform_real_distribution<double>(-1000, span + 1000)(random);
      if (i % 3 == 0) bound = static_cast<double>(samples[random() % samples.size()]);  // on a sample exactly
      const size_t first = static_cast<size_t>(
          std::lower_bound(samples.begin(), samples.end(), bound,
                           [](int64_t start, double b) { return static_cast<double>(start) < b; }) -
          samples.begin());
      const auto [lo, hi] = index.SampleBracket(0, 0, bound);
      QVERIFY2(lo <= first && first <= hi, qPrintable(QString("bound %1: first %2 not in [%3, %4]")
                                                          .arg(bound, 0, 'f', 1).arg(first).arg(lo).arg(hi)));
    }
    const auto& all = trace.slices();
    const auto level = index.level(0, 0);  // one level: position = slice index
    TimeMapping mapping;
    mapping.SetWidth(1600);
    int snapped = 0;
    for (int zoom = 0; zoom < 12; ++zoom) {
      const double width = span / std::pow(3.0, zoom);
      const double begin = std::uniform_real_distribution<double>(-width / 10, span - width / 2)(random);
      mapping.SetRange(begin, begin + width);
      const double min_ns = mapping.ns_per_px();
      std::vector<DrawBox> boxes;
      const size_t covered = CollectBoxes(index, 0, 0, mapping, &boxes);
      const auto [first, last] = index.VisibleRange(0, 0, mapping.begin_ns(), mapping.end_ns());
      QCOMPARE(covered, last - first);
      size_t position = first;
      for (const DrawBox& box : boxes) {
        QCOMPARE(size_t{box.slice}, size_t{level[position]});  // runs follow each other
        const auto& s = all[box.slice];
        if (static_cast<double>(s.dur_ns) >= min_ns) {
          QCOMPARE(box.count, 1u);  // a wide slice is never folded
        } else {
          // The exact run: up to the first slice starting a pixel later (a wide last one apart).
          size_t j = position + 1;
          while (j < last && static_cast<double>(all[level[j]].start_ns) < static_cast<double>(s.start_ns) + min_ns) ++j;
          if (j - 1 > position && static_cast<double>(all[level[j - 1]].dur_ns) >= min_ns) --j;
          QVERIFY(position + box.count >= j);
          const double exact_end = static_cast<double>(all[level[j - 1]].end_ns());
          const double end = static_cast<double>(all[level[position + box.count - 1]].end_ns());
          QVERIFY2(end - exact_end < min_ns / 8 + 1, qPrintable(QString("zoom %1: fold ends %2 ns late")
                                                                    .arg(zoom).arg(end - exact_end)));
          snapped += position + box.count > j;
        }
        position += box.count;
      }
      QCOMPARE(position, last);
    }
    QVERIFY(snapped > 0);  // the widest views did take the shortcut
  }

  void FoldingBoundsTheBoxesAndAccountsForEverySlice() {
    const trace::Trace trace = MakeDenseTrack(1'000'000);
    const TimelineIndex index(trace);
    const double width = 1600;
    TimeMapping mapping;
    mapping.SetWidth(width);
    mapping.Fit(static_cast<double>(trace.span_begin_ns()), static_cast<double>(trace.span_end_ns()));
    std::vector<DrawBox> boxes;
    QElapsedTimer timer;
    timer.start();
    const size_t covered = CollectBoxes(index, 0, 0, mapping, &boxes);
    const double ms = static_cast<double>(timer.nsecsElapsed()) / 1e6;
    // Every slice is in exactly one box, and there are at most ~2 boxes per pixel, not 10^6.
    QCOMPARE(covered, size_t{1'000'000});
    QVERIFY2(boxes.size() <= 2 * static_cast<size_t>(width), qPrintable(QString::number(boxes.size())));
    size_t counted = 0;
    for (const DrawBox& box : boxes) {
      counted += box.count;
      QVERIFY(box.x1 - box.x0 >= 1.0f - 1e-3f);
    }
    QCOMPARE(counted, size_t{1'000'000});
    for (size_t i = 1; i < boxes.size(); ++i) QVERIFY(boxes[i].x0 >= boxes[i - 1].x0);
    // The long slices are never folded away.
    size_t long_boxes = 0;
    for (const DrawBox& box : boxes) long_boxes += !box.folded() && trace.slices()[box.slice].dur_ns == 2'000'000;
    QCOMPARE(long_boxes, size_t{100});
    // Time is reported, not asserted (sanitizer builds and loaded machines vary); the box count
    // above is what bounds the work.
    qInfo("folding a 10^6-slice level into %zu boxes took %.2f ms", boxes.size(), ms);

    // Zoomed in to 2 us: nothing is narrower than a pixel of 1.25 ns... most are whole boxes.
    mapping.SetRange(1'000'000, 1'002'000);
    boxes.clear();
    const size_t visible = CollectBoxes(index, 0, 0, mapping, &boxes);
    const auto [first, last] = index.VisibleRange(0, 0, mapping.begin_ns(), mapping.end_ns());
    QCOMPARE(visible, last - first);
    size_t single = 0;
    for (const DrawBox& box : boxes) single += box.folded() ? 0 : 1;
    QVERIFY(single * 10 >= boxes.size() * 9);
  }

  void SyntheticTraceNestsAndIndexesEveryLevel() {
    const trace::Trace trace = synthetic::MakeSyntheticTrace(200'000);
    QCOMPARE(trace.slices().size(), size_t{200'000});
    QVERIFY(trace.import_stats().Get("overlap_moved_to_lane") == 0);
    const TimelineIndex index(trace);
    size_t indexed = 0;
    int deepest = 0;
    for (uint32_t t = 0; t < trace.tracks().size(); ++t) {
      deepest = std::max(deepest, index.depth_count(t));
      for (int d = 0; d < index.depth_count(t); ++d) {
        const auto level = index.level(t, d);
        indexed += level.size();
        for (size_t i = 1; i < level.size(); ++i) {
          // Disjoint within a level: ends sorted along with starts.
          QVERIFY(trace.slices()[level[i - 1]].end_ns() <= trace.slices()[level[i]].start_ns);
        }
      }
    }
    QCOMPARE(indexed, trace.slices().size());
    QCOMPARE(deepest, 3);
  }

  // A nested track's levels name slices by their place in the track, in 3 bytes or (past the
  // limit, lowered here to 0) 4: both give every slice of each depth in start order. 10^6
  // slices, so that places pass 2^16 and use all three bytes.
  void LevelsHoldEachDepthsSlicesInThreeOrFourBytes() {
    const trace::Trace trace = synthetic::MakeSyntheticTrace(1'000'000);
    const TimelineIndex narrow(trace);
    const TimelineIndex wide(trace, /*max_narrow_track=*/0);
    QVERIFY(wide.memory_bytes() > narrow.memory_bytes());
    size_t biggest_nested = 0;
    for (uint32_t t = 0; t < trace.tracks().size(); ++t) {
      const auto track_slices = trace.track_slices(t);
      QCOMPARE(narrow.depth_count(t), wide.depth_count(t));
      if (narrow.depth_count(t) > 1) biggest_nested = std::max(biggest_nested, track_slices.size());
      for (int d = 0; d < narrow.depth_count(t); ++d) {
        std::vector<uint32_t> expected;
        for (uint32_t i = 0; i < track_slices.size(); ++i) {
          if (static_cast<int>(track_slices[i].depth) == d) expected.push_back(trace.track_first_slice(t) + i);
        }
        for (const TimelineIndex* index : {&narrow, &wide}) {
          const LevelSlices level = index->level(t, d);
          QCOMPARE(level.size(), expected.size());
          for (size_t k = 0; k < expected.size(); ++k) {
            if (level[k] != expected[k]) QFAIL(qPrintable(QStringLiteral("track %1 depth %2 place %3").arg(t).arg(d).arg(k)));
          }
        }
      }
    }
    QVERIFY(biggest_nested > size_t{1} << 16);
  }

  // A wide view's folds read their starts and ends from the sampled tables: the boxes are the
  // ones the slices themselves give (ReferenceBoxes), on nested CPU levels, GPU streams and a dense
  // track, at zooms from the whole trace (and past both its ends) down to single slices, with
  // views that start or end on a slice, an empty track and a track of one slice.
  void FoldsFromTheSampledTablesEqualTheFoldsOfTheSlices() {
    const trace::Trace synthetic = synthetic::MakeSyntheticTrace(300'000);
    const trace::Trace dense = MakeDenseTrack(200'000);
    trace::TraceBuilder builder;
    trace::Track empty_track, one_track;
    empty_track.name = builder.Intern("empty");
    one_track.name = builder.Intern("one");
    builder.AddTrack(empty_track);
    trace::SliceRecord one;
    one.track = builder.AddTrack(one_track);
    one.name = one.op_type = builder.Intern("op");
    one.start_ns = 1000;
    one.dur_ns = 10;
    builder.AddSlice(one);
    const trace::Trace tiny = std::move(builder).Build();
    std::mt19937_64 random(17);
    size_t compared = 0, folded = 0;
    for (const trace::Trace* trace : {&synthetic, &dense, &tiny}) {
      const TimelineIndex index(*trace);
      const double span_begin = static_cast<double>(trace->span_begin_ns());
      const double span = std::max(1.0, static_cast<double>(trace->span_end_ns()) - span_begin);
      const auto& slices = trace->slices();
      for (int view = 0; view < 40; ++view) {
        TimeMapping mapping;
        mapping.SetWidth(view % 2 == 0 ? 1600 : 997);
        const double width = span * 1.2 / std::pow(2.5, view % 20);
        double begin = std::uniform_real_distribution<double>(span_begin - width / 5, span_begin + span - width / 2)(random);
        // Views starting or ending exactly on a slice's start or end.
        if (view % 5 == 1) begin = static_cast<double>(slices[random() % slices.size()].start_ns);
        if (view % 5 == 2) begin = static_cast<double>(slices[random() % slices.size()].end_ns()) - width;
        if (view == 0) begin = span_begin - span * 0.1;  // the whole trace and both edges
        mapping.SetRange(begin, begin + width);
        const double min_px = view % 3 == 2 ? 2.0 : 1.0;
        for (uint32_t t = 0; t < trace->tracks().size(); ++t) {
          for (int d = 0; d < std::max(1, index.depth_count(t)); ++d) {
            std::vector<DrawBox> boxes;
            if (index.depth_count(t) > 0) CollectBoxes(index, t, d, mapping, &boxes, min_px);
            const std::vector<DrawBox> expected =
                index.depth_count(t) > 0 ? ReferenceBoxes(index, t, d, mapping, min_px) : std::vector<DrawBox>{};
            QCOMPARE(boxes.size(), expected.size());
            for (size_t b = 0; b < boxes.size(); ++b) {
              const DrawBox &got = boxes[b], &want = expected[b];
              if (got.slice != want.slice || got.count != want.count || got.x0 != want.x0 || got.x1 != want.x1) {
                QFAIL(qPrintable(QStringLiteral("view %1 track %2 depth %3 box %4: slice %5 x %6 (%7 px), not slice %8 x %9 (%10 px)")
                                     .arg(view).arg(t).arg(d).arg(b).arg(got.slice).arg(got.count).arg(got.x1 - got.x0)
                                     .arg(want.slice).arg(want.count).arg(want.x1 - want.x0)));
              }
              folded += got.count > TimelineIndex::kSampleStride;
            }
            compared += boxes.size();
          }
        }
      }
    }
    QVERIFY(compared > 100'000);
    QVERIFY(folded > 1000);  // the wide views did fold through the sampled tables
  }

  void LayoutRowsFollowTheTrackTree() {
    const trace::Trace trace = synthetic::MakeSyntheticTrace(10'000);
    const TimelineIndex index(trace);
    TrackLayout layout(trace, index);
    // host header, CPU header, 4 threads x 3 levels, GPU header, 4 streams x 1 level.
    QCOMPARE(layout.rows().size(), size_t{1 + 1 + 12 + 1 + 4});
    QCOMPARE(layout.rows()[0].kind, TimelineRow::Kind::kHeader);
    const uint32_t cpu = layout.children(static_cast<int32_t>(layout.roots()[0]))[0];
    layout.SetCollapsed(cpu, true);
    QCOMPARE(layout.rows().size(), size_t{1 + 1 + 1 + 4});
    const uint32_t thread = layout.children(static_cast<int32_t>(cpu))[0];
    const uint32_t slice = trace.track_first_slice(thread);
    QCOMPARE(layout.RowOfSlice(slice), -1);
    layout.SetCollapsed(cpu, false);
    QCOMPARE(layout.RowOfSlice(slice), 2 + trace.slices()[slice].depth);
    const uint32_t gpu = layout.children(static_cast<int32_t>(layout.roots()[0]))[1];
    layout.SetHidden(gpu, true);
    QCOMPARE(layout.rows().size(), size_t{1 + 1 + 12});
    layout.SetCollapsed(layout.roots()[0], true);
    QCOMPARE(layout.rows().size(), size_t{1});
  }

  void DecimationKeepsPeaks() {
    // 0 -> 100 bytes for 1 ns at t=5000, then 10 from t=9000: far below one pixel of 100 ns.
    const std::vector<analysis::MemoryPoint> curve = {{0, 0}, {5000, 100}, {5001, 0}, {9000, 10}};
    const TimeMapping mapping(0, 10'000, 100);
    const auto columns = DecimateCurve(curve, mapping);
    QCOMPARE(columns.size(), size_t{100});
    QCOMPARE(columns[50], (ColumnExtent{0, 100}));   // the spike survives
    QCOMPARE(columns[49], (ColumnExtent{0, 0}));
    QCOMPARE(columns[51], (ColumnExtent{0, 0}));
    QCOMPARE(columns[95], (ColumnExtent{10, 10}));   // carried in from the last point
    QCOMPARE(columns[90], (ColumnExtent{0, 10}));
    int64_t high = 0;
    for (const auto& column : columns) high = std::max(high, column.high);
    QCOMPARE(high, int64_t{100});
  }
};

QTEST_GUILESS_MAIN(TimelineTest)
#include "timeline_test.moc"
