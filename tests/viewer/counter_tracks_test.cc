// The timeline's counter tracks: the per-pixel decimation against brute force, the tracks built
// from real traces against the analyses they stand for (memory peaks as `stepscope memory`
// reports them, busy time as the GPU breakdown counts it, launch delays as the GPU pane's), their
// rows under their device in the track layout, and the tooltip's value at the cursor.
#include <QMenu>
#include <QtTest/QtTest>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>

#include "base/units.h"
#include "profiler/analysis/gpu_analyses.h"
#include "profiler/analysis/memory_report.h"
#include "profiler/testing/synthetic_trace.h"
#include "tests/test_util.h"
#include "viewer/load/document.h"
#include "viewer/panes/pane_table.h"
#include "viewer/timeline/time_axis.h"
#include "viewer/timeline/timeline_view.h"
#include "viewer/timeline_data/counter_tracks.h"
#include "viewer/timeline_data/index_search.h"

using namespace stepscope;
using namespace stepscope::viewer;

namespace {

const CounterTrack* FindTrack(const CounterTracks& counters, CounterTrack::Kind kind, uint32_t owner,
                              const std::string& name = {}) {
  for (const CounterTrack& t : counters.tracks()) {
    if (t.kind == kind && t.track == owner && (name.empty() || t.name == name)) return &t;
  }
  return nullptr;
}

std::shared_ptr<const TraceDocument> Open(const std::string& path) {
  auto opened = OpenDocument(path);
  if (!opened.ok()) qFatal("%s", opened.status().message().c_str());
  return *opened;
}

}  // namespace

class CounterTracksTest : public QObject {
  Q_OBJECT

 private slots:
  // The searches every index of the timeline rests on, against std::partition_point: every
  // bound and range of tables with runs of equal values, empty and one-element tables.
  void IndexSearchesFindWhatPartitionPointFinds() {
    std::mt19937 random(5);
    for (const size_t size : {size_t{0}, size_t{1}, size_t{2}, size_t{7}, size_t{64}, size_t{300}}) {
      std::vector<int> sorted(size);
      for (int& v : sorted) v = static_cast<int>(random() % 40);
      std::sort(sorted.begin(), sorted.end());
      for (int bound = -1; bound <= 41; ++bound) {
        auto before = [&](size_t i) { return sorted[i] < bound; };
        for (size_t lo = 0; lo <= size; ++lo) {
          for (size_t hi = lo; hi <= size; hi += (size > 64 ? 13 : 1)) {
            const size_t expected = static_cast<size_t>(
                std::partition_point(sorted.begin() + lo, sorted.begin() + hi, [&](int v) { return v < bound; }) -
                sorted.begin());
            QCOMPARE(FirstNotBefore(lo, hi, before), expected);
            QCOMPARE(GallopFirstNotBefore(lo, hi, before), expected);
          }
        }
      }
    }
  }

  void DecimatedMaxOverAWindowEqualsTheRawMax() {
    std::mt19937 random(11);
    // Wide: values past 32 bits and gaps past 2^32 ns, which the counter keeps at full width.
    for (const auto& [step, wide] : {std::pair{true, false}, {false, false}, {true, true}, {false, true}}) {
      std::vector<int64_t> times, values;
      int64_t clock = 0;
      for (int i = 0; i < 100'000; ++i) {
        clock += 1 + static_cast<int64_t>(random() % 200) + (wide && i % 5000 == 0 ? int64_t{10'000'000'000} : 0);
        times.push_back(clock);
        values.push_back((static_cast<int64_t>(random() % 1'000'000) - 1000) * (wide ? int64_t{1} << 33 : 1));
      }
      const SampledCounter counter(times, values, step);
      for (size_t k = 0; k < times.size(); k += 997) {
        QCOMPARE(counter.time(k), times[k]);
        QCOMPARE(counter.value(k), values[k]);
      }
      std::uniform_real_distribution<double> uniform(0, static_cast<double>(clock));
      for (int trial = 0; trial < 300; ++trial) {
        const double begin = std::floor(uniform(random));
        const double end = begin + static_cast<double>(random() % (trial % 3 == 0 ? 100u : 3'000'000u));
        // Brute force: every sample in [begin, end) and, for a step counter, the level entering it.
        bool any = false;
        int64_t low = 0, high = 0;
        auto take = [&](int64_t v) {
          low = any ? std::min(low, v) : v;
          high = any ? std::max(high, v) : v;
          any = true;
        };
        if (step) {
          int64_t carried = 0;
          for (size_t k = 0; k < times.size() && static_cast<double>(times[k]) < begin; ++k) carried = values[k];
          take(carried);
        }
        for (size_t k = 0; k < times.size(); ++k) {
          if (static_cast<double>(times[k]) >= begin && static_cast<double>(times[k]) < end) take(values[k]);
        }
        const CounterColumn column = counter.Window(begin, end);
        QCOMPARE(column.any, any);
        if (!any) continue;
        QCOMPARE(column.high, static_cast<double>(high));
        QCOMPARE(column.low, static_cast<double>(low));
      }
      // A frame's columns, found by galloping from column to column, are each column's window.
      for (const auto& [begin, span] : {std::pair<double, double>{-500, static_cast<double>(clock) + 1000},
                                        {static_cast<double>(clock) / 3, 40'000}, {1000, 300}}) {
        const TimeMapping mapping(begin, begin + span, 997);
        std::vector<CounterColumn> columns;
        counter.Columns(mapping, &columns);
        QCOMPARE(columns.size(), size_t{997});
        for (size_t c = 0; c < columns.size(); ++c) {
          const CounterColumn expected = counter.Window(mapping.PxToNs(static_cast<double>(c)),
                                                        mapping.PxToNs(static_cast<double>(c + 1)));
          QCOMPARE(columns[c].any, expected.any);
          QCOMPARE(columns[c].high, expected.high);
          QCOMPARE(columns[c].low, expected.low);
        }
      }
    }
  }

  // A frame's columns find their samples through the sampled times (every 256th) and the block
  // bases: each column equals the brute-force min/max of its samples (and the level entering it),
  // for an empty counter, one sample, a few, and 10^5 with gaps past 2^32 ns, in views from the
  // whole counter and past both ends down to a few samples, the first and last column included.
  void ColumnsMatchBruteForceAtEveryZoomAndEdge() {
    std::mt19937 random(23);
    for (const size_t count : {size_t{0}, size_t{1}, size_t{17}, size_t{300}, size_t{100'000}}) {
      for (const bool step : {true, false}) {
        for (const bool wide : {false, true}) {
          std::vector<int64_t> times, values;
          int64_t clock = 1000;
          for (size_t i = 0; i < count; ++i) {
            // Bursts of samples at one instant too, which a column boundary may fall on.
            clock += (random() % 4 == 0 ? 0 : 1 + static_cast<int64_t>(random() % 500)) +
                     (wide && i % 7000 == 6999 ? int64_t{5'000'000'000} : 0);
            times.push_back(clock);
            values.push_back(static_cast<int64_t>(random() % 10'000) - 500);
          }
          const SampledCounter counter(times, values, step);
          const double span = static_cast<double>(clock) + 1000;
          for (int view = 0; view < 12; ++view) {
            const double width = span * 1.4 / std::pow(4.0, view);
            double begin = std::uniform_real_distribution<double>(-width / 3, span - width / 2)(random);
            if (view == 0) begin = -span * 0.2;
            // A view starting on a sample: the first column's boundary on it.
            if (view % 4 == 3 && count > 0) begin = static_cast<double>(times[random() % count]);
            const TimeMapping mapping(begin, begin + width, view % 2 == 0 ? 1600 : 997);
            std::vector<CounterColumn> columns;
            counter.Columns(mapping, &columns);
            QCOMPARE(columns.size(), static_cast<size_t>(std::ceil(mapping.width_px())));
            size_t k = 0;  // the first sample at or after the column's start
            while (k < count && static_cast<double>(times[k]) < mapping.PxToNs(0)) ++k;
            for (size_t c = 0; c < columns.size(); ++c) {
              const double end = mapping.PxToNs(static_cast<double>(c + 1));
              bool any = step;
              double low = 0, high = 0;
              if (step) low = high = k == 0 ? 0.0 : static_cast<double>(values[k - 1]);
              for (; k < count && static_cast<double>(times[k]) < end; ++k) {
                const auto v = static_cast<double>(values[k]);
                low = any ? std::min(low, v) : v;
                high = any ? std::max(high, v) : v;
                any = true;
              }
              if (columns[c].any != any || (any && (columns[c].low != low || columns[c].high != high))) {
                QFAIL(qPrintable(QStringLiteral("%1 samples (step %2, wide %3), view %4, column %5 of %6: %7..%8 (%9), not %10..%11 (%12)")
                                     .arg(count).arg(step).arg(wide).arg(view).arg(c).arg(columns.size())
                                     .arg(columns[c].low).arg(columns[c].high).arg(columns[c].any).arg(low).arg(high).arg(any)));
              }
            }
          }
        }
      }
    }
  }

  void BusyFractionMatchesBruteForce() {
    std::mt19937 random(5);
    std::vector<std::pair<int64_t, int64_t>> intervals;
    for (int i = 0; i < 2000; ++i) {
      const int64_t begin = static_cast<int64_t>(random() % 1'000'000);
      intervals.emplace_back(begin, begin + static_cast<int64_t>(random() % 2000));
    }
    std::vector<uint8_t> covered(1'100'000, 0);
    for (const auto& [b, e] : intervals) std::fill(covered.begin() + b, covered.begin() + e, uint8_t{1});
    const CoverageCounter busy(intervals);
    QCOMPARE(busy.busy_ns(), static_cast<int64_t>(std::count(covered.begin(), covered.end(), 1)));
    for (int trial = 0; trial < 200; ++trial) {
      const int64_t begin = static_cast<int64_t>(random() % 1'000'000);
      const int64_t end = begin + static_cast<int64_t>(random() % 50'000);
      const auto brute = std::count(covered.begin() + begin, covered.begin() + end, 1);
      QCOMPARE(busy.BusyIn(static_cast<double>(begin), static_cast<double>(end)), static_cast<double>(brute));
    }
  }

  // A frame's utilisation columns search each boundary once, galloping on from the last: every
  // column still holds its own busy share, counted nanosecond by nanosecond, zoomed out and in.
  void UtilisationColumnsMatchBruteForce() {
    std::mt19937 random(9);
    std::vector<std::pair<int64_t, int64_t>> intervals;
    for (int i = 0; i < 3000; ++i) {
      const int64_t begin = static_cast<int64_t>(random() % 1'000'000);
      intervals.emplace_back(begin, begin + static_cast<int64_t>(random() % 700));
    }
    std::vector<uint8_t> covered(1'100'000, 0);
    for (const auto& [b, e] : intervals) std::fill(covered.begin() + b, covered.begin() + e, uint8_t{1});
    CounterTrack track;
    track.kind = CounterTrack::Kind::kUtilization;
    track.busy = CoverageCounter(intervals);
    // Whole pixels of whole nanoseconds, so that the brute count is exact.
    for (const auto& [begin, ns_per_px] : {std::pair<int64_t, int64_t>{0, 1000}, {123'457, 37}, {999'000, 3}}) {
      const int columns = 400;
      const TimeMapping mapping(static_cast<double>(begin), static_cast<double>(begin + ns_per_px * columns), columns);
      std::vector<CounterColumn> out;
      track.Columns(mapping, &out);
      QCOMPARE(out.size(), size_t{columns});
      for (int c = 0; c < columns; ++c) {
        const int64_t from = begin + ns_per_px * c;
        const auto busy = std::count(covered.begin() + from, covered.begin() + from + ns_per_px, 1);
        QVERIFY2(std::abs(out[static_cast<size_t>(c)].high - 100.0 * static_cast<double>(busy) / static_cast<double>(ns_per_px)) < 1e-6,
                 qPrintable(QStringLiteral("column %1 of the view at %2").arg(c).arg(begin)));
      }
    }
  }

  void ResNetStepHasMemoryUtilisationAndLaunchDelayUnderEachDevice() {
    const auto document = Open(testing::SamplePath("h100_resnet50_b32_step3.pb.gz"));
    const trace::Trace& trace = document->trace();
    const auto analysis = AnalyseDocument(*document);
    QVERIFY(analysis->counter_tracks != nullptr);
    const CounterTracks& counters = *analysis->counter_tracks;
    // Memory: one track per allocator, under its device, peaking where `stepscope memory` says.
    const auto report = analysis::ComputeMemoryReport(trace);
    QVERIFY(report.size() >= 2);
    for (const analysis::AllocatorReport& allocator : report) {
      const CounterTrack* track = FindTrack(counters, CounterTrack::Kind::kMemory,
                                            static_cast<uint32_t>(allocator.timeline.device_track), allocator.timeline.allocator);
      QVERIFY2(track != nullptr, allocator.timeline.allocator.c_str());
      QCOMPARE(track->peak, allocator.timeline.peak_bytes);
      // At full zoom-out the decimated curve still reaches the peak.
      const TimeMapping whole(0, static_cast<double>(trace.span_end_ns()) + 1, 1200);
      std::vector<CounterColumn> columns;
      track->Columns(whole, &columns);
      QCOMPARE(CounterPainter::MaxOf(columns), static_cast<double>(allocator.timeline.peak_bytes));
    }
    // Utilisation per GPU, its busy time the GPU breakdown's; launch delays as the GPU pane's.
    const auto breakdown = analysis::ComputeGpuBreakdown({{&trace, {}}});
    QVERIFY(!breakdown.empty());
    int utilisation_tracks = 0;
    std::vector<std::pair<int64_t, int64_t>> delays;
    for (const CounterTrack& t : counters.tracks()) {
      if (t.kind == CounterTrack::Kind::kUtilization) ++utilisation_tracks;
      if (t.kind != CounterTrack::Kind::kLaunchDelay) continue;
      for (size_t k = 0; k < t.samples.size(); ++k) delays.emplace_back(t.samples.time(k), t.samples.value(k));
    }
    QCOMPARE(utilisation_tracks, static_cast<int>(breakdown.size()));
    for (const analysis::GpuBreakdown& gpu : breakdown) {
      bool found = false;
      for (const CounterTrack& t : counters.tracks()) {
        if (t.kind == CounterTrack::Kind::kUtilization && std::string(trace.str(trace.tracks()[t.track].name)) == gpu.device) {
          QCOMPARE(t.busy.busy_ns(), gpu.time.busy_ns);
          found = true;
        }
      }
      QVERIFY2(found, gpu.device.c_str());
    }
    std::vector<std::pair<int64_t, int64_t>> pane;
    for (const LaunchDelayPoint& p : analysis->launch_delays) pane.emplace_back(p.time_ns, p.delay_ns);
    std::sort(delays.begin(), delays.end());
    std::sort(pane.begin(), pane.end());
    QVERIFY(!pane.empty());
    QCOMPARE(delays, pane);
    // Queue length integrates to the positive delays: each launch waits from its call's end to its start.
    for (const CounterTrack& t : counters.tracks()) {
      if (t.kind != CounterTrack::Kind::kQueue) continue;
      QVERIFY(t.peak >= 1);
      QCOMPARE(t.samples.value(t.samples.size() - 1), int64_t{0});
    }

    // The rows: each counter under its device's header, gone when the device collapses or the
    // counter is hidden.
    TimeAxis axis(0, static_cast<double>(trace.span_end_ns()));
    axis.FitAll();
    TimelineView view(document, &axis);
    view.resize(1400, 3000);
    const int rows_before = view.row_count();
    view.SetCounterTracks(analysis->counter_tracks);
    QCOMPARE(view.row_count(), rows_before + TrackLayout::kCounterRows * static_cast<int>(counters.tracks().size()));
    const auto& rows = view.layout().rows();
    for (uint32_t c = 0; c < counters.tracks().size(); ++c) {
      const int row = view.layout().RowOfCounter(c);
      QVERIFY(row > 0);
      // The nearest header above it is its device's (counters come before the device's lanes).
      int header = row - 1;
      while (header >= 0 && !(rows[static_cast<size_t>(header)].kind == TimelineRow::Kind::kHeader)) --header;
      QVERIFY(header >= 0);
      QCOMPARE(rows[static_cast<size_t>(header)].track, counters.tracks()[c].track);
      QCOMPARE(rows[static_cast<size_t>(row)].indent, rows[static_cast<size_t>(header)].indent + 1);
    }
    const uint32_t device = counters.tracks()[0].track;
    view.SetTrackCollapsed(device, true);
    QCOMPARE(view.layout().RowOfCounter(0), -1);
    view.SetTrackCollapsed(device, false);
    // Hidden from its label's context menu, shown again from any label's.
    const QPoint label(20, view.RowTop(view.layout().RowOfCounter(0)) + 4);
    std::unique_ptr<QMenu> menu(view.CounterMenu(label));
    QVERIFY(menu != nullptr);
    QVERIFY(menu->actions()[0]->text().contains(QString::fromStdString(counters.tracks()[0].name)));
    menu->actions()[0]->trigger();
    QCOMPARE(view.layout().RowOfCounter(0), -1);
    QVERIFY(view.layout().RowOfCounter(1) >= 0);
    menu.reset(view.CounterMenu(QPoint(20, view.RowTop(0) + 4)));
    QVERIFY(menu != nullptr);
    menu->actions().back()->trigger();
    QVERIFY(view.layout().RowOfCounter(0) >= 0);

    // The tooltip at the cursor reads the memory curve's value there.
    const CounterTrack& memory = counters.tracks()[0];
    QCOMPARE(memory.kind, CounterTrack::Kind::kMemory);
    const int row = view.layout().RowOfCounter(0);
    const TimeMapping map = view.mapping();
    const double x = std::floor(map.NsToPx(static_cast<double>(memory.peak_ns))) + 0.5;
    const QPoint at(kTimeAreaLeft + static_cast<int>(x), view.RowTop(row) + TimelineView::kRowHeight);
    const std::vector<analysis::MemoryPoint>& curve = report[0].timeline.curve;
    const int64_t expected = analysis::BytesAt(curve, static_cast<int64_t>(map.PxToNs(at.x() - kTimeAreaLeft)));
    const QString tip = view.TooltipAt(at);
    QVERIFY2(tip.contains(QString::fromStdString(FormatBytes(expected))), qPrintable(tip));
    QVERIFY2(tip.contains(QString::fromStdString(memory.name)), qPrintable(tip));
    // A frame with the counters shown paints without touching a slice's row.
    QImage image(view.size(), QImage::Format_RGB32);
    view.render(&image);
  }

  void SyntheticTraceHasAMemoryTrackForTheBench() {
    const trace::Trace trace = synthetic::MakeSyntheticTrace(200'000, 1, /*allocator=*/true);
    const auto memory = analysis::ComputeMemoryTimelines(trace);
    QCOMPARE(memory.size(), size_t{1});
    const CounterTracks counters = BuildCounterTracks(trace, memory);
    const CounterTrack* track = FindTrack(counters, CounterTrack::Kind::kMemory,
                                          static_cast<uint32_t>(memory[0].device_track), "GPU_0_bfc");
    QVERIFY(track != nullptr);
    QCOMPARE(std::string(trace.str(trace.tracks()[track->track].name)), std::string("GPU:0"));
    QCOMPARE(track->peak, memory[0].peak_bytes);
    QVERIFY(track->samples.size() > 1000);
    const TimeMapping whole(0, static_cast<double>(trace.span_end_ns()) + 1, 1600);
    std::vector<CounterColumn> columns;
    track->Columns(whole, &columns);
    QCOMPARE(CounterPainter::MaxOf(columns), static_cast<double>(memory[0].peak_bytes));
    // The GPU's other tracks are there too, and nothing else: the trace carries no other counter.
    QCOMPARE(counters.tracks().size(), size_t{4});
  }

  void KinetoTraceShowsLaunchDelayQueueAndUtilisation() {
    const auto document = Open(testing::DataPath("pytorch_kineto_alexnet_train.json.gz"));
    const auto analysis = AnalyseDocument(*document);
    int utilisation = 0, delay = 0, queue = 0;
    for (const CounterTrack& t : analysis->counter_tracks->tracks()) {
      utilisation += t.kind == CounterTrack::Kind::kUtilization;
      delay += t.kind == CounterTrack::Kind::kLaunchDelay;
      queue += t.kind == CounterTrack::Kind::kQueue;
    }
    QVERIFY(utilisation >= 1);
    QVERIFY(delay >= 1);
    QCOMPARE(queue, delay);
  }

  void CountersAKinetoTraceCarriesAppear() {
    // PyTorch's [memory] instants (Total Allocated per device) and a Chrome counter event.
    const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("stepscope_counters_" + std::to_string(getpid()));
    std::filesystem::create_directories(dir);
    const std::string path = (dir / "counters.json").string();
    std::ofstream(path) << R"({"traceEvents": [
      {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 10, "tid": 1, "ts": 100, "dur": 50},
      {"ph": "i", "s": "t", "name": "[memory]", "pid": 10, "tid": 1, "ts": 110,
       "args": {"Total Allocated": 4096, "Bytes": 4096, "Device Type": 1, "Device Id": 0}},
      {"ph": "i", "s": "t", "name": "[memory]", "pid": 10, "tid": 1, "ts": 130,
       "args": {"Total Allocated": 12288, "Bytes": 8192, "Device Type": 1, "Device Id": 0}},
      {"ph": "i", "s": "t", "name": "[memory]", "pid": 10, "tid": 1, "ts": 140,
       "args": {"Total Allocated": 1024, "Bytes": -11264, "Device Type": 1, "Device Id": 0}},
      {"ph": "C", "name": "SM occupancy", "pid": 10, "ts": 105, "args": {"value": 40}},
      {"ph": "C", "name": "SM occupancy", "pid": 10, "ts": 125, "args": {"value": 75}}
    ]})";
    const auto document = Open(path);
    std::filesystem::remove_all(dir);
    const auto analysis = AnalyseDocument(*document);
    const CounterTracks& counters = *analysis->counter_tracks;
    const CounterTrack* memory = nullptr;
    const CounterTrack* occupancy = nullptr;
    for (const CounterTrack& t : counters.tracks()) {
      if (t.kind == CounterTrack::Kind::kMemory && t.name == "cuda:0") memory = &t;
      if (t.kind == CounterTrack::Kind::kTraceCounter && t.name == "SM occupancy.value") occupancy = &t;
    }
    QVERIFY(memory != nullptr);
    QCOMPARE(memory->peak, int64_t{12288});
    QVERIFY(occupancy != nullptr);
    QCOMPARE(occupancy->peak, int64_t{75});
    QCOMPARE(occupancy->samples.LevelAt(static_cast<double>(occupancy->samples.time(0))), int64_t{40});
  }
};

QTEST_MAIN(CounterTracksTest)
#include "counter_tracks_test.moc"
