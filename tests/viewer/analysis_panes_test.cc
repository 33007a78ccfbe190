// The panes of the GPU analyses and of the critical path on real traces (the PyTorch AlexNet
// trace, the TensorFlow GPU step): their figures are the profiler/analysis results (and the ones
// docs/analysis.md quotes), the critical path is outlined on the timeline exactly where its
// slices are, a path row selects its slice, and `stepscope-view --screenshot --pane` draws each.
#include <QCheckBox>
#include <QComboBox>
#include <QProcess>
#include <QStandardPaths>
#include <QTabWidget>
#include <QTableView>
#include <QTableWidget>
#include <QTreeWidget>
#include <QtTest/QtTest>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>

#include "base/units.h"
#include "profiler/formats/inputs.h"
#include "profiler/analysis/gpu_analyses.h"
#include "profiler/analysis/merge.h"
#include "profiler/analysis/step_analyses.h"
#include "profiler/analysis/stragglers.h"
#include "tests/test_util.h"
#include "viewer/app/document_view.h"
#include "viewer/app/main_window.h"
#include "viewer/load/trace_loader.h"
#include "viewer/models/roles.h"
#include "viewer/panes/attribution_pane.h"
#include "viewer/panes/critical_path_pane.h"
#include "viewer/panes/gpu_bars.h"
#include "viewer/panes/gpu_pane.h"
#include "viewer/panes/launch_delay_chart.h"
#include "viewer/panes/pane_table.h"
#include "viewer/panes/pane_widgets.h"
#include "viewer/panes/range_pane.h"
#include "viewer/panes/rank_bars.h"
#include "viewer/panes/stragglers_pane.h"
#include "viewer/timeline/time_axis.h"
#include "viewer/timeline/timeline_view.h"
#include "viewer/timeline_data/time_mapping.h"

using namespace stepscope;
using namespace stepscope::viewer;

namespace {

QString Kineto() { return QString::fromStdString(testing::DataPath("pytorch_kineto_alexnet_train.json.gz")); }
QString TfSample() { return QString::fromStdString(testing::DataPath("ptb_lstm_tf1_gpu_step.pbtxt")); }

int64_t Ns(const QTableWidgetItem* item) { return item->data(kSortRole).toLongLong(); }

int CountColor(const QImage& image, QRgb color, QRect area = QRect()) {
  if (area.isNull()) area = image.rect();
  int count = 0;
  for (int y = area.top(); y <= area.bottom(); ++y) {
    for (int x = area.left(); x <= area.right(); ++x) count += (image.pixel(x, y) & 0xffffff) == (color & 0xffffff);
  }
  return count;
}

// Pixels dark enough to be text or lines.
int CountDark(const QImage& image, QRect area) {
  int count = 0;
  for (int y = area.top(); y <= area.bottom(); ++y) {
    for (int x = area.left(); x <= area.right(); ++x) count += qGray(image.pixel(x, y)) < 110;
  }
  return count;
}

std::vector<uint32_t> PathSlices(const analysis::CriticalPath& path) {
  std::vector<uint32_t> slices;
  for (const analysis::PathElement& e : path.elements) slices.push_back(e.slice);
  return slices;
}

}  // namespace

class AnalysisPanesTest : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    scratch_ = QString::fromStdString(testing::ScratchDir("viewer_panes").string());
    window_ = std::make_unique<MainWindow>(/*interactive=*/false);
    window_->resize(1600, 1000);
    window_->show();
    window_->Open({Kineto()});
    window_->loader()->WaitForIdle();
    QCOMPARE(window_->document_count(), 1);
    doc_ = window_->document(0);
    QVERIFY(doc_->analysed());
    QApplication::processEvents();
  }

  void cleanupTestCase() {
    window_.reset();
    std::filesystem::remove_all(scratch_.toStdString());
  }

  // The Range pane's host and device busy over the whole AlexNet trace: the time at least one
  // thread (stream) runs a slice, recounted here as a union; never more than the range (the
  // ops' durations summed over nesting levels are 182.3 s in this 43.5 s trace).
  void RangePaneBusyIsAUnionWithinTheRange() {
    const trace::Trace& trace = doc_->document().trace();
    const int64_t begin = trace.span_begin_ns(), end = trace.span_end_ns();
    std::vector<std::pair<int64_t, int64_t>> host, device;
    int64_t host_summed = 0;
    for (const trace::Slice& s : trace.slices()) {
      if (s.duplicate() || trace::IsAnnotationOrSync(s.kind) || s.dur_ns == 0) continue;
      const trace::TrackKind kind = trace.tracks()[s.track].kind;
      const bool gpu = kind == trace::TrackKind::kGpuStream || kind == trace::TrackKind::kGpuAllStreams ||
                       kind == trace::TrackKind::kGpuMemcpy;
      (gpu ? device : host).emplace_back(s.start_ns, s.end_ns());
      if (!gpu) host_summed += s.dur_ns;
    }
    auto union_length = [](std::vector<std::pair<int64_t, int64_t>> intervals) {
      std::sort(intervals.begin(), intervals.end());
      int64_t total = 0, open_start = 0, open_end = INT64_MIN;
      for (const auto& [a, b] : intervals) {
        if (a > open_end) {
          if (open_end != INT64_MIN) total += open_end - open_start;
          open_start = a;
          open_end = b;
        } else {
          open_end = std::max(open_end, b);
        }
      }
      return open_end == INT64_MIN ? total : total + open_end - open_start;
    };
    const int64_t host_busy = union_length(host), device_busy = union_length(device);
    QVERIFY(host_summed > end - begin);
    QVERIFY(host_busy <= end - begin && device_busy <= end - begin);
    emit doc_->timeline()->rangeSelected(begin, end);
    QTRY_VERIFY_WITH_TIMEOUT(!doc_->pane<RangePane>()->range_stats_pending() && doc_->pane<RangePane>()->range_caption().contains("host busy"), 10000);
    const QString caption = doc_->pane<RangePane>()->range_caption();
    const QString expected = QString("host busy %1, device busy %2")
                                 .arg(QString::fromStdString(FormatDurationSignificant(static_cast<double>(host_busy))),
                                      QString::fromStdString(FormatDurationSignificant(static_cast<double>(device_busy))));
    QVERIFY2(caption.contains(expected), qPrintable(caption + " lacks " + expected));
  }

  // GPU 0 of the AlexNet trace: 98 pieces of work (79 kernels, 16 copies, 3 memsets), busy
  // 66.141 ms of a 12.920 s span, streams 7 and 20; each cell is the analysis' figure, in the
  // text of `stepscope gpu` (FormatDuration).
  void GpuPaneShowsTheBreakdownIdleAndLaunches() {
    const trace::Trace& trace = doc_->document().trace();
    const std::vector<analysis::GpuInput> inputs = {{&trace, {}}};
    const auto expected = analysis::ComputeGpuBreakdown(inputs);
    QCOMPARE(expected.size(), size_t{1});
    const analysis::GpuBreakdown& gpu = expected.front();
    QTableWidget* table = doc_->pane<GpuPane>()->gpu_table();
    QCOMPARE(table->rowCount(), static_cast<int>(1 + gpu.streams.size()));
    QCOMPARE(table->rowCount(), 3);
    QCOMPARE(table->item(0, GpuPane::kGpuWork)->text(), QString("98"));
    QCOMPARE(table->item(0, GpuPane::kGpuBusy)->text(), QString("66.141 ms"));
    QCOMPARE(table->item(0, GpuPane::kGpuSpan)->text(), QString("12.920 s"));
    QCOMPARE(table->item(0, GpuPane::kGpuIdle)->text(), QString("12.854 s"));
    auto check_row = [&](int row, const analysis::GpuTime& t) {
      QCOMPARE(table->item(row, GpuPane::kGpuWork)->data(kSortRole).toLongLong(), t.slices);
      QCOMPARE(Ns(table->item(row, GpuPane::kGpuSpan)), t.span_ns);
      QCOMPARE(Ns(table->item(row, GpuPane::kGpuBusy)), t.busy_ns);
      QCOMPARE(Ns(table->item(row, GpuPane::kGpuIdle)), t.idle_ns);
      QCOMPARE(Ns(table->item(row, GpuPane::kGpuCompute)), t.compute_ns);
      QCOMPARE(Ns(table->item(row, GpuPane::kGpuCommunication)), t.communication_ns);
      QCOMPARE(Ns(table->item(row, GpuPane::kGpuMemory)), t.memory_ns);
      QCOMPARE(Ns(table->item(row, GpuPane::kGpuOverlap)), t.compute_communication_overlap_ns);
    };
    check_row(0, gpu.time);
    for (size_t s = 0; s < gpu.streams.size(); ++s) {
      check_row(static_cast<int>(s + 1), gpu.streams[s].time);
      QVERIFY(table->item(static_cast<int>(s + 1), GpuPane::kGpuName)->text().endsWith(
          QString::fromStdString(gpu.streams[s].stream)));
    }
    QCOMPARE(gpu.streams.front().stream, std::string("stream 7"));
    // Idle causes per stream (launch-end rule): stream 7 waited 36 times on the host for
    // 12 855 030 us and 54 times on queued kernels for 81 us (docs/analysis.md).
    const analysis::IdleReport idle = analysis::ComputeIdle(inputs);
    int64_t host = 0, kernel = 0, other = 0;
    for (const analysis::StreamIdle& s : idle.streams) {
      const int row = s.stream == "stream 7" ? 1 : 2;
      QCOMPARE(Ns(table->item(row, GpuPane::kGpuHostWait)), s.by_cause[0].total_ns);
      QCOMPARE(Ns(table->item(row, GpuPane::kGpuKernelWait)), s.by_cause[1].total_ns);
      QCOMPARE(Ns(table->item(row, GpuPane::kGpuOtherIdle)), s.by_cause[2].total_ns);
      host += s.by_cause[0].total_ns;
      kernel += s.by_cause[1].total_ns;
      other += s.by_cause[2].total_ns;
    }
    QCOMPARE(table->item(1, GpuPane::kGpuHostWait)->text(), QString("12.855 s"));
    QCOMPARE(table->item(1, GpuPane::kGpuKernelWait)->text(), QString("81.0 us"));
    // The GPU row: the time neither stream ran work, by cause; never the streams' waits summed
    // (24.87 s of host wait on this 12.92 s span), so the causes add up to the GPU's idle time.
    QVERIFY(host > gpu.time.span_ns);
    const int64_t gpu_host = Ns(table->item(0, GpuPane::kGpuHostWait));
    const int64_t gpu_kernel = Ns(table->item(0, GpuPane::kGpuKernelWait));
    const int64_t gpu_other = Ns(table->item(0, GpuPane::kGpuOtherIdle));
    QCOMPARE(gpu_host + gpu_kernel + gpu_other, gpu.time.idle_ns);
    QVERIFY(gpu_host <= gpu.time.span_ns);
    QCOMPARE(idle.gpus.size(), size_t{1});
    QCOMPARE(gpu_host, idle.gpus[0].by_cause[0].total_ns);
    QCOMPARE(gpu_kernel, idle.gpus[0].by_cause[1].total_ns);
    QCOMPARE(gpu_other, idle.gpus[0].by_cause[2].total_ns);
    QVERIFY(kernel > 0 && other >= 0);
    // Launch statistics (HTA's figures: delay p50 32.5 us, p95 1 319.05 us, max 1 533 us;
    // 11 calls over 50 us, 43 delays over 100 us).
    const QString launches = doc_->pane<GpuPane>()->launches_caption();
    for (const char* expected_text :
         {"98 of 98 pieces of work", "launch delay p50 32.5 us, p95 1.319 ms, max 1.533 ms",
          "runtime call p50 10.0 us, p95 667.0 us, max 3.056 s", "11 calls over 50.0 us",
          "43 delays over 100.0 us"}) {
      QVERIFY2(launches.contains(expected_text), qPrintable(expected_text + QString(" in ") + launches));
    }
    // The bars: one per GPU and stream, the GPU's first; segments never exceed the bar.
    GpuBars* bars = doc_->pane<GpuPane>()->gpu_bars();
    QCOMPARE(bars->rows().size(), size_t{3});
    QVERIFY(bars->rows()[0].gpu && !bars->rows()[1].gpu);
    QCOMPARE(bars->rows()[0].time.busy_ns, gpu.time.busy_ns);
    const GpuBars::Segments s = bars->SegmentsOf(gpu.time, 1000);
    QVERIFY(std::abs(s.compute + s.communication + s.memory + s.idle - 1000) < 1e-6);  // no overlap here
    QVERIFY(std::abs(s.compute - 1000.0 * static_cast<double>(gpu.time.compute_ns) /
                                     static_cast<double>(gpu.time.span_ns)) < 1e-6);
    bars->SetWithoutIdle(true);
    const GpuBars::Segments busy = bars->SegmentsOf(gpu.time, 1000);
    QCOMPARE(busy.idle, 0.0);
    QVERIFY(std::abs(busy.compute + busy.communication + busy.memory - 1000) < 1e-6);
    bars->SetWithoutIdle(false);
    // Launch delays as a counter track: every linked launch at its kernel's start, in time order;
    // over the whole trace the columns' maximum is the largest delay (1.533 ms), and the column of
    // each launch holds at least its own (non-negative) delay.
    LaunchDelayChart* chart = doc_->pane<GpuPane>()->launch_delay_chart();
    QVERIFY(chart != nullptr);
    const analysis::LaunchReport report = analysis::ComputeLaunches(inputs);
    const auto& points = doc_->analysis()->launch_delays;
    QCOMPARE(static_cast<int64_t>(points.size()), report.linked);
    QCOMPARE(points.size(), size_t{98});
    QVERIFY(std::is_sorted(points.begin(), points.end(),
                           [](const LaunchDelayPoint& a, const LaunchDelayPoint& b) { return a.time_ns < b.time_ns; }));
    doc_->axis()->SetRange(static_cast<double>(trace.span_begin_ns()), static_cast<double>(trace.span_end_ns()));
    const int width = 1000;
    const std::vector<int64_t> columns = chart->ColumnMaxima(width);
    QCOMPARE(*std::max_element(columns.begin(), columns.end()), int64_t{1533000});
    const TimeMapping mapping = doc_->axis()->MappingFor(width);
    int64_t drawn = 0;
    for (const LaunchDelayPoint& p : points) {
      const double x = mapping.NsToPx(static_cast<double>(p.time_ns));
      if (x < 0 || x >= width) continue;
      ++drawn;
      QVERIFY(columns[static_cast<size_t>(x)] >= std::max<int64_t>(0, p.delay_ns));
    }
    QCOMPARE(drawn, int64_t{98});
  }

  // The bars of a GPU whose communication overlaps compute: the overlap is hatched inside
  // compute, communication drawn less it, and the segments fill the span exactly.
  void BarsSplitOverlappingWork() {
    GpuBars bars;
    analysis::GpuTime t;
    t.span_ns = 100;
    t.busy_ns = 80;
    t.idle_ns = 20;
    t.compute_ns = 50;
    t.communication_ns = 30;
    t.compute_communication_overlap_ns = 10;
    t.memory_ns = 10;
    const GpuBars::Segments s = bars.SegmentsOf(t, 200);
    QCOMPARE(s.compute, 100.0);
    QCOMPARE(s.communication, 40.0);
    QCOMPARE(s.memory, 20.0);
    QCOMPARE(s.idle, 40.0);
    QCOMPARE(s.overlap, 20.0);
  }

  // Opening the pane shows the path on the timeline: exactly the path's slices, in path order,
  // outlined in the path's colour; the checkbox takes it away.
  void CriticalPathIsHighlightedOnTheTimeline() {
    const trace::Trace& trace = doc_->document().trace();
    const analysis::CriticalPath expected = analysis::ComputeCriticalPath(trace);  // no ProfilerStep# windows
    QVERIFY(expected.elements.size() > 10);
    TimelineView* timeline = doc_->timeline();
    QVERIFY(timeline->path_slices().empty());  // not before the pane is opened
    QVERIFY(!doc_->pane<CriticalPathPane>()->path_checkbox()->isChecked());
    doc_->ShowPane(DocumentView::kCriticalPathPane);
    QVERIFY(doc_->pane<CriticalPathPane>()->path_checkbox()->isChecked());
    QCOMPARE(timeline->path_slices(), PathSlices(expected));
    QCOMPARE(doc_->pane<CriticalPathPane>()->path_table()->model()->rowCount(), static_cast<int>(expected.elements.size()));
    QVERIFY(doc_->pane<CriticalPathPane>()->path_window()->isHidden());  // one window: the whole trace
    QVERIFY2(doc_->pane<CriticalPathPane>()->path_caption().contains(QStringLiteral("%1 slices").arg(expected.elements.size())),
             qPrintable(doc_->pane<CriticalPathPane>()->path_caption()));
    QVERIFY(doc_->pane<CriticalPathPane>()->path_caption().contains(QString::fromLatin1(analysis::PathBoundName(expected.bound_by))));
    const QAbstractItemModel* model = doc_->pane<CriticalPathPane>()->path_table()->model();
    const int64_t base = trace.span_begin_ns();
    for (size_t i = 0; i < expected.elements.size(); ++i) {
      const int row = static_cast<int>(i);
      const analysis::PathElement& e = expected.elements[i];
      auto cell = [&](int column, int role) { return model->index(row, column).data(role); };
      QCOMPARE(cell(CriticalPathPane::kPathName, kSliceRole).toUInt(), e.slice);
      QCOMPARE(cell(CriticalPathPane::kPathName, Qt::DisplayRole).toString(), QString::fromStdString(e.name));
      QCOMPARE(cell(CriticalPathPane::kPathEdge, Qt::DisplayRole).toString(),
               e.edge.empty() ? QString("start") : QString::fromStdString(e.edge));
      QCOMPARE(cell(CriticalPathPane::kPathLane, Qt::DisplayRole).toString(), QString::fromStdString(e.lane));
      QCOMPARE(cell(CriticalPathPane::kPathStart, kSortRole).toLongLong(), e.start_ns - base);
      QCOMPARE(cell(CriticalPathPane::kPathDuration, kSortRole).toLongLong(), e.dur_ns);
      QCOMPARE(cell(CriticalPathPane::kPathHeld, kSortRole).toLongLong(), e.held_ns);
      QCOMPARE(cell(CriticalPathPane::kPathWait, kSortRole).toLongLong(), e.wait_ns);
    }
    QCOMPARE(model->index(1, CriticalPathPane::kPathWait).data().toString(), DurationText(expected.elements[1].wait_ns));
    int64_t bound_total = 0;
    for (int b = 0; b < analysis::kPathBounds; ++b) {
      QCOMPARE(Ns(doc_->pane<CriticalPathPane>()->bound_table()->item(b, 1)), expected.bound_ns[b]);
      bound_total += expected.bound_ns[b];
    }
    QCOMPARE(bound_total, expected.length_ns);
    QVERIFY(doc_->pane<CriticalPathPane>()->bound_table()->item(static_cast<int>(expected.bound_by), 0)->font().bold());

    // On screen: the path's colour where its slices are drawn, and nowhere once unchecked.
    doc_->pane<CriticalPathPane>()->ZoomToPath();
    QApplication::processEvents();
    const QImage with_path = timeline->grab().toImage();
    int outlined = 0;
    for (uint32_t slice : timeline->path_slices()) {
      const QRect box = timeline->SliceRect(slice);
      if (box.width() < 4 || box.height() < 4) continue;
      ++outlined;
      QCOMPARE(with_path.pixel(box.left(), box.center().y()) & 0xffffff, TimelineView::kPathColor & 0xffffff);
    }
    QVERIFY2(outlined > 5, qPrintable(QString::number(outlined)));
    doc_->pane<CriticalPathPane>()->path_checkbox()->setChecked(false);
    QVERIFY(timeline->path_slices().empty());
    QApplication::processEvents();
    const QImage without_path = timeline->grab().toImage();
    QVERIFY(CountColor(with_path, TimelineView::kPathColor) > 100);
    QCOMPARE(CountColor(without_path, TimelineView::kPathColor), 0);
    doc_->pane<CriticalPathPane>()->path_checkbox()->setChecked(true);
    QCOMPARE(timeline->path_slices(), PathSlices(expected));
  }

  // Selecting a row of the path selects (and brings into view) its slice; the pane stays.
  void SelectingAPathRowSelectsItsSlice() {
    doc_->ShowPane(DocumentView::kCriticalPathPane);
    const DocumentAnalysis::PathWindow* path = doc_->pane<CriticalPathPane>()->shown_path();
    QVERIFY(path != nullptr);
    for (int row : {0, static_cast<int>(path->steps.size()) / 2, static_cast<int>(path->steps.size()) - 1}) {
      doc_->pane<CriticalPathPane>()->path_table()->selectRow(row);
      QCOMPARE(doc_->timeline()->selected_slice(), static_cast<int64_t>(path->steps[static_cast<size_t>(row)].slice));
      QVERIFY(doc_->PaneInFront(DocumentView::kCriticalPathPane));
      QVERIFY(!doc_->timeline()->SliceRect(path->steps[static_cast<size_t>(row)].slice).isEmpty());
    }
  }

  // [param|cuda] holds all 98 pieces of work: 66.203 ms of GPU time (summed), 66.141 ms busy;
  // the most frequent sequence of three kernels occurs 6 times.
  void AttributionPaneShowsAnnotationsAndKernelPatterns() {
    const trace::Trace& trace = doc_->document().trace();
    const std::vector<analysis::GpuInput> inputs = {{&trace, {}}};
    const analysis::AnnotationReport annotations = analysis::ComputeAnnotationTime(inputs);
    QTreeWidget* tree = doc_->pane<AttributionPane>()->annotation_tree();
    QCOMPARE(tree->topLevelItemCount(), 1);
    QTreeWidgetItem* top = tree->topLevelItem(0);
    QCOMPARE(top->text(AttributionPane::kAnnName), QString("[param|cuda]"));
    QCOMPARE(top->text(AttributionPane::kAnnGpu), QString("66.203 ms"));
    QCOMPARE(top->text(AttributionPane::kAnnBusy), QString("66.141 ms"));
    QCOMPARE(top->text(AttributionPane::kAnnWork), QString("98"));
    // Every row, in depth-first order, at its depth, with its figures.
    std::vector<QTreeWidgetItem*> items;
    std::function<void(QTreeWidgetItem*, size_t)> walk = [&](QTreeWidgetItem* item, size_t depth) {
      const analysis::AnnotationTime& row = annotations.rows[items.size()];
      QCOMPARE(row.path.size(), depth + 1);
      QCOMPARE(item->data(AttributionPane::kAnnGpu, kSortRole).toLongLong(), row.gpu_ns);
      QCOMPARE(item->data(AttributionPane::kAnnSelf, kSortRole).toLongLong(), row.self_gpu_ns);
      QCOMPARE(item->text(AttributionPane::kAnnInstances).toLongLong(), row.instances);
      items.push_back(item);
      for (int c = 0; c < item->childCount(); ++c) walk(item->child(c), depth + 1);
    };
    walk(top, 0);
    QCOMPARE(items.size(), annotations.rows.size());

    const analysis::KernelPatternReport patterns = analysis::ComputeKernelPatterns(inputs);
    QTableWidget* table = doc_->pane<AttributionPane>()->pattern_table();
    QCOMPARE(table->rowCount(), static_cast<int>(patterns.patterns.size()));
    QVERIFY(table->rowCount() > 0);
    QCOMPARE(table->item(0, AttributionPane::kPatCount)->text(), QString("6"));
    for (int row = 0; row < table->rowCount(); ++row) {
      const analysis::KernelPattern& p = patterns.patterns[static_cast<size_t>(row)];
      QCOMPARE(Ns(table->item(row, AttributionPane::kPatCount)), p.count);
      QCOMPARE(Ns(table->item(row, AttributionPane::kPatGpu)), p.gpu_ns);
      QVERIFY(table->item(row, AttributionPane::kPatKernels)->text().startsWith(QString::fromStdString(p.kernels.front())));
    }
  }

  // The TensorFlow GPU step: no ProfilerStep# windows, so one path over the whole step, shown
  // on the timeline exactly.
  void TensorFlowStepHasItsCriticalPath() {
    const int before = window_->document_count();
    window_->Open({TfSample()});
    window_->loader()->WaitForIdle();
    QCOMPARE(window_->document_count(), before + 1);
    DocumentView* tf = window_->document(before);
    QVERIFY(tf->analysed());
    const analysis::CriticalPath expected = analysis::ComputeCriticalPath(tf->document().trace());
    tf->ShowPane(DocumentView::kCriticalPathPane);
    QCOMPARE(tf->timeline()->path_slices(), PathSlices(expected));
    QCOMPARE(tf->pane<CriticalPathPane>()->path_table()->model()->rowCount(), static_cast<int>(expected.elements.size()));
    QVERIFY(tf->pane<CriticalPathPane>()->path_caption().startsWith("whole trace"));
  }

  // A trace with ProfilerStep#N windows: one path per step (as `stepscope critical-path`), the
  // longest shown first; choosing another step shows its path on the timeline.
  void OnePathPerProfilerStep() {
    const QString path = scratch_ + "/steps.json";
    {
      std::ofstream out(path.toStdString());
      out << "{\"traceEvents\": [\n";
      double t = 1000;
      for (int step = 1; step <= 3; ++step) {
        const double length = step == 2 ? 3000 : 1000;
        out << (step > 1 ? ",\n" : "") << "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#" << step
            << "\", \"pid\": 1, \"tid\": 1, \"ts\": " << t << ", \"dur\": " << length << "},\n"
            << "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"pid\": 1, \"tid\": 1, \"ts\": " << t + 10
            << ", \"dur\": " << length - 500 << "},\n"
            << "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::add\", \"pid\": 1, \"tid\": 1, \"ts\": " << t + length - 400
            << ", \"dur\": 100}";
        t += length;
      }
      out << "\n]}\n";
    }
    const int before = window_->document_count();
    window_->Open({path});
    window_->loader()->WaitForIdle();
    QCOMPARE(window_->document_count(), before + 1);
    DocumentView* view = window_->document(before);
    QVERIFY(view->analysed());
    const trace::Trace& trace = view->document().trace();
    const auto steps = analysis::StepsOfTrace(trace, false);
    QCOMPARE(steps.size(), size_t{3});
    QCOMPARE(view->pane<CriticalPathPane>()->path_window()->count(), 3);
    QVERIFY(!view->pane<CriticalPathPane>()->path_window()->isHidden());
    QCOMPARE(view->pane<CriticalPathPane>()->path_window()->currentIndex(), 1);  // step 2, the longest
    view->ShowPane(DocumentView::kCriticalPathPane);
    for (int index : {1, 0, 2}) {
      view->pane<CriticalPathPane>()->path_window()->setCurrentIndex(index);
      const analysis::Step& step = steps[static_cast<size_t>(index)];
      const analysis::CriticalPath expected = analysis::ComputeCriticalPath(trace, step.begin_ns, step.end_ns);
      QCOMPARE(expected.elements.size(), size_t{2});  // aten::mm, then aten::add
      QCOMPARE(view->timeline()->path_slices(), PathSlices(expected));
      QCOMPARE(view->pane<CriticalPathPane>()->path_table()->model()->rowCount(), 2);
      QVERIFY2(view->pane<CriticalPathPane>()->path_caption().startsWith(QStringLiteral("ProfilerStep#%1").arg(index + 1)),
               qPrintable(view->pane<CriticalPathPane>()->path_caption()));
    }
  }

  // A directory of two hand-made rank traces (tests/data/analysis/ranks: rank 1's backward pass
  // is 60 us slower, its last copy ends at +510 us, rank 0's at +450 us): the stragglers pane
  // holds ComputeStragglers' figures of the inputs, charts the step, and activating the step
  // zooms to it on both ranks and selects the straggler's last piece of work.
  void StragglersPaneComparesTheRanksOfAMerge() {
    const std::string dir = testing::DataPath("analysis/ranks");
    const int before = window_->document_count();
    // On the trainer's barrier (`--align barrier`): the hand-made ranks' figures below are on it
    // (their collectives, the default's choice, put rank 0 160 ns late instead).
    window_->loader()->SetAlign(analysis::AlignMethod::kBarrier);
    window_->Open({QString::fromStdString(dir)});
    window_->loader()->WaitForIdle();
    window_->loader()->SetAlign(analysis::AlignMethod::kAuto);
    QCOMPARE(window_->document_count(), before + 1);
    DocumentView* view = window_->document(before);
    const RankMerge* merge = view->document().rank_merge();
    QVERIFY(merge != nullptr);
    QCOMPARE(merge->inputs.size(), size_t{2});
    QVERIFY(merge->stragglers.has_value());
    const auto inputs = trace::ReadTraces({dir});
    QVERIFY(inputs.ok());
    const auto expected = analysis::ComputeStragglers(*inputs, {.align = analysis::AlignMethod::kBarrier});
    QVERIFY(expected.ok());
    QCOMPARE(expected->steps.size(), size_t{1});
    const analysis::StepStragglers& step = expected->steps.front();

    QTableWidget* steps = view->pane<StragglersPane>()->stragglers_table();
    QCOMPARE(steps->rowCount(), 1);
    QCOMPARE(steps->item(0, StragglersPane::kStrStep)->text(), QString("5"));
    QCOMPARE(steps->item(0, StragglersPane::kStrStraggler)->text(), QString("rank 1"));
    QCOMPARE(Ns(steps->item(0, StragglersPane::kStrLateness)), step.lateness_ns);
    QCOMPARE(Ns(steps->item(0, StragglersPane::kStrLateness)), int64_t{60'000});
    QCOMPARE(Ns(steps->item(0, StragglersPane::kStrVsMedian)), step.lateness_vs_median_ns);
    QCOMPARE(steps->item(0, StragglersPane::kStrReason)->text(), QString("compute"));
    QCOMPARE(Ns(steps->item(0, StragglersPane::kStrExcess)), int64_t{60'000});
    QTableWidget* ranks = view->pane<StragglersPane>()->rank_totals_table();
    QCOMPARE(ranks->rowCount(), 2);
    QCOMPARE(ranks->item(1, StragglersPane::kRankName)->text(), QString("rank 1"));
    QCOMPARE(ranks->item(1, StragglersPane::kRankLast)->text(), QString("1"));
    QCOMPARE(Ns(ranks->item(1, StragglersPane::kRankLatenessMax)), int64_t{60'000});
    QCOMPARE(Ns(ranks->item(0, StragglersPane::kRankLatenessTotal)), int64_t{0});
    QVERIFY2(view->pane<StragglersPane>()->stragglers_caption().contains("clocks aligned by barrier"),
             qPrintable(view->pane<StragglersPane>()->stragglers_caption()));
    QVERIFY2(view->pane<StragglersPane>()->stragglers_caption().contains("rank 1 finished 60.0 us after the first"),
             qPrintable(view->pane<StragglersPane>()->stragglers_caption()));

    // The chart: the step with the largest lateness, rank 1's bar reaching 60 us past the
    // earliest end.
    view->ShowPane(DocumentView::kStragglersPane);
    QApplication::processEvents();
    RankBars* bars = view->pane<StragglersPane>()->rank_bars();
    QVERIFY(bars->has_step());
    QCOMPARE(bars->step().step, int64_t{5});
    QCOMPARE(bars->step().ranks[1].end_ns - bars->step().ranks[0].end_ns, int64_t{60'000});
    QVERIFY(bars->XOf(bars->step().ranks[1].end_ns) > bars->EarliestEndX() + 10);
    const QImage chart = bars->grab().toImage();
    QVERIFY(CountColor(chart, GpuBars::kComputeColor) > 100);
    QVERIFY(CountColor(chart, GpuBars::kCommunicationColor) > 100);

    // Activation: the step on both ranks fills the view; rank 1's last copy is selected.
    const auto [begin, end] = view->pane<StragglersPane>()->StragglerStepRange(0);
    QCOMPARE(end - begin, int64_t{510'000});
    view->pane<StragglersPane>()->ZoomToStragglerStep(0);
    QVERIFY(view->axis()->begin_ns() <= static_cast<double>(begin));
    QVERIFY(view->axis()->end_ns() >= static_cast<double>(end));
    QVERIFY(view->axis()->end_ns() - view->axis()->begin_ns() < 1.1 * static_cast<double>(end - begin));
    const trace::Trace& merged = view->document().trace();
    const int64_t last = view->timeline()->selected_slice();
    QCOMPARE(last, view->pane<StragglersPane>()->StragglerLastSlice(0));
    QVERIFY(last >= 0);
    const trace::Slice& s = merged.slices()[static_cast<size_t>(last)];
    QCOMPARE(s.end_ns(), end);
    QCOMPARE(s.kind, trace::SliceKind::kMemcpy);
    QVERIFY2(QString::fromStdString(merged.TrackPath(s.track)).startsWith("rank 1"),
             qPrintable(QString::fromStdString(merged.TrackPath(s.track))));
    // The earliest work of the step, on either rank, starts where the range begins.
    int64_t first = end;
    for (const trace::Slice& x : merged.slices()) {
      if (!trace::IsAnnotationOrSync(x.kind) && trace::IsDeviceWork(x.kind)) first = std::min(first, x.start_ns);
    }
    QCOMPARE(first, begin);

    // A single trace has no ranks to compare: the pane says how to get them.
    QVERIFY(doc_->document().rank_merge() == nullptr);
    QCOMPARE(doc_->pane<StragglersPane>()->stragglers_table()->rowCount(), 0);
    QVERIFY(doc_->pane<StragglersPane>()->stragglers_caption().startsWith("One rank: stragglers compare ranks"));
  }

  // stepscope-view --screenshot --pane NAME: the window at the size asked, and the pane drawn
  // (its own colours, or more text and lines than an empty pane has).
  void HeadlessScreenshotsOfEachPane() {
    auto shoot = [&](const QString& pane, const QString& trace) {
      const QString out = scratch_ + "/" + pane + ".png";
      QProcess process;
      process.start(STEPSCOPE_VIEW_EXE, {"--screenshot", out, "--pane", pane, "--size", "1200x800", trace});
      if (!process.waitForFinished(60000) || process.exitCode() != 0) return QImage();
      if (!process.readAllStandardOutput().contains("(1200x800)")) return QImage();
      return QImage(out);
    };
    const QImage range = shoot("range", Kineto());  // no range selected: the baseline
    const QImage gpu = shoot("gpu", Kineto());
    const QImage path = shoot("critical-path", Kineto());
    const QImage attribution = shoot("attribution", Kineto());
    const QImage tf_path = shoot("critical-path", TfSample());
    const QImage stragglers = shoot("stragglers", QString::fromStdString(testing::DataPath("analysis/ranks")));
    for (const QImage* image : {&range, &gpu, &path, &attribution, &tf_path, &stragglers}) {
      QCOMPARE(image->size(), QSize(1200, 800));
    }
    const QRect pane_area(0, 590, 920, 180);  // the docks below the timeline, under their tabs
    const int baseline = CountDark(range, pane_area);
    QVERIFY2(CountColor(gpu, GpuBars::kComputeColor, pane_area) > 20, "compute bars");
    QVERIFY2(CountColor(gpu, GpuBars::kIdleColor, pane_area) > 1000, "idle bars");
    QVERIFY2(CountDark(gpu, pane_area) > baseline + 2000, qPrintable(QString::number(CountDark(gpu, pane_area))));
    for (const QImage* image : {&path, &tf_path}) {
      QVERIFY(CountColor(*image, TimelineView::kPathColor, QRect(0, 0, 1200, 560)) > 500);
      QVERIFY(CountDark(*image, pane_area) > baseline + 2000);
    }
    QCOMPARE(CountColor(gpu, TimelineView::kPathColor), 0);  // only once the path's pane is open
    QVERIFY(CountDark(attribution, pane_area) > baseline + 2000);
    QVERIFY2(CountColor(stragglers, GpuBars::kComputeColor, pane_area) > 500, "a compute bar per rank");
    QVERIFY(CountDark(stragglers, pane_area) > baseline + 2000);
  }

 private:
  QString scratch_;
  std::unique_ptr<MainWindow> window_;
  DocumentView* doc_ = nullptr;
};

QTEST_MAIN(AnalysisPanesTest)
#include "analysis_panes_test.moc"
