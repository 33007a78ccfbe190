// The viewer's widgets offscreen on real traces: rows and pixels of the TensorFlow sample's
// timeline, keyboard and mouse navigation, selection and range statistics, memory charts,
// exports, the Kineto trace, and a corrupt file that must show an error and change nothing.
#include <QDockWidget>
#include <QImage>
#include <QLabel>
#include <QStandardPaths>
#include <QTabWidget>
#include <QTableWidget>
#include <QToolTip>
#include <QtTest/QtTest>
#include <algorithm>
#include <filesystem>
#include <fstream>

#include "base/file_io.h"
#include "profiler/analysis/memory_timeline.h"
#include "profiler/formats/reader.h"
#include "tests/analysis/kineto_generator.h"
#include "tests/test_util.h"
#include "viewer/app/document_view.h"
#include "viewer/app/main_window.h"
#include "viewer/load/trace_loader.h"
#include "viewer/memory/memory_chart.h"
#include "viewer/memory/memory_panel.h"
#include "viewer/models/live_tensor_model.h"
#include "viewer/models/op_stats_model.h"
#include "viewer/models/slice_details_model.h"
#include "viewer/panes/attribution_pane.h"
#include "viewer/panes/critical_path_pane.h"
#include "viewer/panes/details_pane.h"
#include "viewer/panes/gpu_pane.h"
#include "viewer/panes/memory_pane.h"
#include "viewer/panes/pane_table.h"
#include "viewer/panes/range_pane.h"
#include "viewer/panes/search_pane.h"
#include "viewer/panes/stats_pane.h"
#include "viewer/panes/steps_pane.h"
#include "viewer/panes/stragglers_pane.h"
#include "viewer/panes/tracks_pane.h"
#include "viewer/timeline/time_axis.h"
#include "viewer/timeline/timeline_view.h"

using namespace stepscope;
using namespace stepscope::viewer;

namespace {

QString Sample() { return QString::fromStdString(testing::DataPath("ptb_lstm_tf1_gpu_step.pbtxt")); }
QString Kineto() { return QString::fromStdString(testing::DataPath("pytorch_kineto_alexnet_train.json.gz")); }

// Background colours of the timeline rows (white and the stripe); anything else is drawn.
bool IsBackground(QRgb pixel) {
  const QColor color(pixel);
  return color == QColor(0xff, 0xff, 0xff) || color == QColor(0xf5, 0xf6, 0xf8);
}

}  // namespace

class ViewTest : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);  // recent files go to a test location
    scratch_ = QString::fromStdString(testing::ScratchDir("viewer").string());
    window_ = std::make_unique<MainWindow>(/*interactive=*/false);
    window_->resize(1600, 1000);
    window_->show();
    window_->Open({Sample()});
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

  void SampleHasTheExpectedRows() {
    const trace::Trace& trace = doc_->document().trace();
    TimelineView* timeline = doc_->timeline();
    // Headers for the host and its two devices; one row per lane and nesting level. The lanes
    // and depths are counted here from the trace itself. TensorFlow's stream:all and memcpy
    // lanes, whose every slice repeats one on a stream (flagged duplicate), start hidden.
    int lanes = 0;
    int devices = 0;
    int hosts = 0;
    int repeat_lanes = 0;
    for (uint32_t t = 0; t < trace.tracks().size(); ++t) {
      const auto slices = trace.track_slices(t);
      const bool repeat = !slices.empty() && std::all_of(slices.begin(), slices.end(),
                                                         [](const trace::Slice& s) { return s.duplicate(); });
      switch (trace.tracks()[t].kind) {
        case trace::TrackKind::kHost: ++hosts; break;
        case trace::TrackKind::kDevice: ++devices; break;
        default:
          if (repeat) {
            ++repeat_lanes;
            QVERIFY(trace.tracks()[t].kind == trace::TrackKind::kGpuAllStreams ||
                    trace.tracks()[t].kind == trace::TrackKind::kGpuMemcpy);
            QVERIFY(timeline->layout().hidden(t));
          } else {
            lanes += std::max(1, doc_->document().index().depth_count(t));
          }
          break;
      }
    }
    QCOMPARE(hosts, 1);
    QCOMPARE(devices, 2);  // CPU:0 and GPU:0
    QCOMPARE(repeat_lanes, 2);  // /device:GPU:0/stream:all and /device:GPU:0/memcpy
    // And the counter tracks (memory, GPU utilisation, ...), kCounterRows rows each.
    const int counter_rows = TrackLayout::kCounterRows * static_cast<int>(timeline->layout().counter_count());
    QCOMPARE(timeline->row_count(), hosts + devices + lanes + counter_rows);
    QCOMPARE(timeline->row_count() - counter_rows, 16);
  }

  void KnownSlicesArePainted() {
    const trace::Trace& trace = doc_->document().trace();
    TimelineView* timeline = doc_->timeline();
    doc_->axis()->FitAll();
    const QImage image = timeline->grab().toImage();
    // The longest slice of every lane on screen is drawn where SliceRect says.
    int checked = 0;
    for (uint32_t t = 0; t < trace.tracks().size(); ++t) {
      const auto slices = trace.track_slices(t);
      if (slices.empty()) continue;
      uint32_t longest = trace.track_first_slice(t);
      for (uint32_t i = 0; i < slices.size(); ++i) {
        if (slices[i].dur_ns > trace.slices()[longest].dur_ns) longest = trace.track_first_slice(t) + i;
      }
      const QRect box = timeline->SliceRect(longest);
      if (box.isEmpty()) continue;  // scrolled below the fold
      // Sub-pixel slices may land a pixel to either side of their rounded rect.
      const QPoint centre = box.center();
      bool painted = false;
      for (int x = box.left() - 1; x <= box.right() + 1; ++x) painted |= !IsBackground(image.pixel(x, centre.y()));
      QVERIFY2(painted,
               qPrintable(QString("slice %1 on %2 not painted at (%3, %4)")
                              .arg(longest)
                              .arg(QString::fromStdString(trace.TrackPath(t)))
                              .arg(centre.x())
                              .arg(centre.y())));
      ++checked;
    }
    QVERIFY2(checked >= 8, qPrintable(QString::number(checked)));
    // And before the trace starts there is nothing.
    const int before = kTimeAreaLeft + 2;
    int drawn_before = 0;
    for (int y = TimelineView::kRulerHeight; y < image.height(); ++y) {
      const QRgb pixel = image.pixel(before, y);
      const QColor color(pixel);
      if (!IsBackground(pixel) && color != QColor(0xe4, 0xe7, 0xee) && color != QColor(0xe0, 0xe2, 0xe8)) ++drawn_before;
    }
    QCOMPARE(drawn_before, 0);
  }

  void KeysAndWheelZoomAndPan() {
    TimelineView* timeline = doc_->timeline();
    TimeAxis* axis = doc_->axis();
    axis->FitAll();
    const double span = axis->end_ns() - axis->begin_ns();
    timeline->setFocus();
    QTest::keyClick(timeline, Qt::Key_W);
    QVERIFY(axis->end_ns() - axis->begin_ns() < span * 0.85);
    QTest::keyClick(timeline, Qt::Key_S);
    QVERIFY(std::fabs((axis->end_ns() - axis->begin_ns()) - span) < span * 1e-6);
    QTest::keyClick(timeline, Qt::Key_W);
    QTest::keyClick(timeline, Qt::Key_W);
    const double begin = axis->begin_ns();
    QTest::keyClick(timeline, Qt::Key_D);
    QVERIFY(axis->begin_ns() > begin);
    QTest::keyClick(timeline, Qt::Key_A);
    QVERIFY(std::fabs(axis->begin_ns() - begin) < 1);
    // Ctrl+wheel zooms at the cursor: the time under it stays put.
    const QPoint at(kTimeAreaLeft + 400, TimelineView::kRulerHeight + 40);
    const double under = timeline->mapping().PxToNs(400);
    QWheelEvent wheel(at, timeline->mapToGlobal(at), QPoint(), QPoint(0, 240), Qt::NoButton, Qt::ControlModifier,
                      Qt::NoScrollPhase, false);
    QApplication::sendEvent(timeline, &wheel);
    QVERIFY(axis->end_ns() - axis->begin_ns() < span / 2);
    QVERIFY(std::fabs(timeline->mapping().PxToNs(400) - under) < 1);
    QTest::keyClick(timeline, Qt::Key_0);
    QCOMPARE(axis->end_ns() - axis->begin_ns(), span);
  }

  void ClickSelectsAndDetailsFollow() {
    const trace::Trace& trace = doc_->document().trace();
    TimelineView* timeline = doc_->timeline();
    doc_->axis()->FitAll();
    // The longest GPU kernel: wide enough to click.
    uint32_t target = 0;
    for (uint32_t i = 0; i < trace.slices().size(); ++i) {
      if (trace.tracks()[trace.slices()[i].track].kind == trace::TrackKind::kGpuStream &&
          trace.slices()[i].dur_ns > trace.slices()[target].dur_ns) {
        target = i;
      }
    }
    const QRect box = timeline->SliceRect(target);
    QVERIFY(!box.isEmpty());
    QSignalSpy selected(timeline, &TimelineView::sliceSelected);
    QTest::mouseClick(timeline, Qt::LeftButton, Qt::NoModifier, box.center());
    QCOMPARE(timeline->selected_slice(), static_cast<int64_t>(target));
    QCOMPARE(selected.count(), 1);
    QVERIFY(doc_->pane<DetailsPane>()->details_model()->rowCount() > 5);
    QCOMPARE(doc_->pane<DetailsPane>()->details_model()->index(0, 1).data().toString(),
             QString::fromUtf8(trace.str(trace.slice_name(trace.slices()[target]))));
    // F fits the selection: the slice then spans most of the view.
    QTest::keyClick(timeline, Qt::Key_F);
    const double span = doc_->axis()->end_ns() - doc_->axis()->begin_ns();
    QVERIFY(span < 1.5 * static_cast<double>(trace.slices()[target].dur_ns));
    QTest::keyClick(timeline, Qt::Key_Escape);
    QCOMPARE(timeline->selected_slice(), int64_t{-1});
    doc_->axis()->FitAll();
    // Hovering names the slice; a double-click selects and fits it.
    const QRect again = timeline->SliceRect(target);
    QHelpEvent help(QEvent::ToolTip, again.center(), timeline->mapToGlobal(again.center()));
    QApplication::sendEvent(timeline, &help);
    QTRY_VERIFY(QToolTip::isVisible());
    QVERIFY(QToolTip::text().contains(QString::fromUtf8(trace.str(trace.slice_name(trace.slices()[target]))).toHtmlEscaped()));
    QToolTip::hideText();
    QTest::mouseDClick(timeline, Qt::LeftButton, Qt::NoModifier, again.center());
    QCOMPARE(timeline->selected_slice(), static_cast<int64_t>(target));
    QVERIFY(doc_->axis()->end_ns() - doc_->axis()->begin_ns() < 1.5 * static_cast<double>(trace.slices()[target].dur_ns));
    timeline->ClearSelection();
    doc_->axis()->FitAll();
  }

  void FlowsOfTheSelectionAreDrawnOnDemand() {
    const trace::Trace& trace = doc_->document().trace();
    TimelineView* timeline = doc_->timeline();
    doc_->axis()->FitAll();
    // A launch flow whose both ends are on screen.
    int64_t source = -1;
    for (const trace::Flow& flow : trace.flows()) {
      if (flow.kind == trace::FlowKind::kLaunch && !timeline->SliceRect(flow.from_slice).isEmpty() &&
          !timeline->SliceRect(flow.to_slice).isEmpty()) {
        source = flow.from_slice;
        break;
      }
    }
    QVERIFY(source >= 0);
    timeline->SelectSlice(source);
    timeline->SetShowFlows(false);
    const QImage without = timeline->grab().toImage();
    QTest::keyClick(timeline, Qt::Key_L);
    QVERIFY(timeline->show_flows());
    const QImage with = timeline->grab().toImage();
    int changed = 0;
    for (int y = TimelineView::kRulerHeight; y < with.height(); ++y) {
      for (int x = kTimeAreaLeft; x < with.width() - kTimeAreaRight; ++x) changed += with.pixel(x, y) != without.pixel(x, y);
    }
    QVERIFY2(changed > 20, qPrintable(QString::number(changed)));
    timeline->ClearSelection();
  }

  void DragOnTheRulerGivesRangeStatistics() {
    TimelineView* timeline = doc_->timeline();
    doc_->axis()->FitAll();
    const QPoint from(kTimeAreaLeft + 100, 10);
    const QPoint to(kTimeAreaLeft + 700, 10);
    QSignalSpy ranges(timeline, &TimelineView::rangeSelected);
    QTest::mousePress(timeline, Qt::LeftButton, Qt::NoModifier, from);
    QMouseEvent move(QEvent::MouseMove, to, timeline->mapToGlobal(to), Qt::NoButton, Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(timeline, &move);
    QTest::mouseRelease(timeline, Qt::LeftButton, Qt::NoModifier, to);
    QCOMPARE(ranges.count(), 1);
    const auto range = timeline->selected_range();
    QVERIFY(range.has_value());
    QTRY_VERIFY_WITH_TIMEOUT(!doc_->pane<RangePane>()->range_stats_pending() && doc_->pane<RangePane>()->range_model()->rowCount() > 0, 5000);
    // The same numbers as the analysis for that window.
    analysis::OpStatsOptions options;
    options.begin_ns = range->first;
    options.end_ns = range->second;
    const auto expected = analysis::ComputeOpStats(doc_->document().trace(), options);
    QCOMPARE(doc_->pane<RangePane>()->range_model()->rows(), expected.by_node);
    QVERIFY(doc_->pane<RangePane>()->range_caption().contains(QString::number(expected.slices)));
    timeline->ClearSelection();
  }

  void StatisticsJumpAndExportCsv() {
    QVERIFY(doc_->pane<StatsPane>()->stats_model()->rowCount() > 10);
    doc_->pane<StatsPane>()->SetStatsByNode(true);
    QVERIFY(doc_->pane<StatsPane>()->stats_model()->rowCount() > 100);
    doc_->pane<StatsPane>()->SetStatsByNode(false);
    doc_->pane<StatsPane>()->SetStatsFilter("MatMul");
    const int rows = doc_->pane<StatsPane>()->stats_proxy()->rowCount();
    QVERIFY(rows >= 1);
    const QString path = scratch_ + "/stats.csv";
    QVERIFY(window_->ExportStatsCsv(path).isEmpty());
    QFile file(path);
    QVERIFY(file.open(QIODevice::ReadOnly));
    QCOMPARE(QString::fromUtf8(file.readAll()).split('\n', Qt::SkipEmptyParts).size(), rows + 1);
    doc_->pane<StatsPane>()->SetStatsFilter(QString());
    // Jumping to the longest slice of the top row selects it.
    const uint32_t slice = doc_->pane<StatsPane>()->stats_proxy()->index(0, 0).data(Qt::UserRole + 2).toUInt();
    doc_->JumpToSlice(slice);
    QCOMPARE(doc_->timeline()->selected_slice(), static_cast<int64_t>(slice));
    QVERIFY(!doc_->timeline()->SliceRect(slice).isEmpty());
    doc_->timeline()->ClearSelection();
    doc_->axis()->FitAll();
  }

  void SearchNextSelectsMatches() {
    QVERIFY(doc_->pane<SearchPane>()->Search("LSTMBlockCellGrad", false).isEmpty());
    QVERIFY(doc_->pane<SearchPane>()->search_status().contains("matches"));
    doc_->pane<SearchPane>()->SearchNext();
    const int64_t first = doc_->timeline()->selected_slice();
    QVERIFY(first >= 0);
    QVERIFY(doc_->pane<SearchPane>()->search_status().startsWith("1 of"));
    doc_->pane<SearchPane>()->SearchNext();
    QVERIFY(doc_->timeline()->selected_slice() != first);
    doc_->pane<SearchPane>()->SearchPrevious();
    QCOMPARE(doc_->timeline()->selected_slice(), first);
    QVERIFY(!doc_->pane<SearchPane>()->Search("(", true).isEmpty());
    doc_->timeline()->ClearSelection();
    doc_->axis()->FitAll();
  }

  void MemoryChartsAndLiveTensorsAtThePeak() {
    MemoryPanel* memory = doc_->pane<MemoryPane>()->memory_panel();
    const auto expected = analysis::ComputeMemoryTimelines(doc_->document().trace());
    QCOMPARE(memory->chart_count(), static_cast<int>(expected.size()));
    QVERIFY(memory->chart_count() >= 1);
    doc_->ShowPane(DocumentView::kMemoryPane);
    QApplication::processEvents();
    // Clicking on the peak marker lists what was live at the peak.
    int chart_index = 0;
    for (int i = 0; i < memory->chart_count(); ++i) {
      if (!analysis::LiveTensorsAt(doc_->document().trace(), expected[static_cast<size_t>(i)],
                                   expected[static_cast<size_t>(i)].peak_ns)
               .empty()) {
        chart_index = i;
        break;
      }
    }
    MemoryChart* chart = memory->chart(chart_index);
    const auto& timeline = chart->timeline();
    const QPoint peak(static_cast<int>(std::lround(chart->XOf(static_cast<double>(timeline.peak_ns)))) + 2, 50);
    QTest::mouseClick(chart, Qt::LeftButton, Qt::NoModifier, peak);
    const auto live = analysis::LiveTensorsAt(doc_->document().trace(), timeline, timeline.peak_ns);
    QCOMPARE(memory->live_model()->rowCount(), static_cast<int>(live.size()));
    QVERIFY(memory->live_model()->rowCount() > 0);
    QVERIFY(memory->live_caption().contains("peak"));
    // The chart draws its curve: the column at the peak is coloured up to near the top.
    const QImage image = chart->grab().toImage();
    QVERIFY(!IsBackground(image.pixel(peak.x() - 2, chart->PlotRect().bottom() - 4)));
    doc_->ShowPane(DocumentView::kStatsPane);
  }

  void DocksAndPaneNamesFollowThePaneTable() {
    const auto panes = PaneTable();
    for (size_t i = 0; i < panes.size(); ++i) {
      QDockWidget* dock = doc_->dock(panes[i].id);
      QCOMPARE(dock->windowTitle(), QString::fromLatin1(panes[i].title));
      QCOMPARE(FindPane(panes[i].name), &panes[i]);
      QCOMPARE(&PaneSpecOf(panes[i].id), &panes[i]);
      doc_->ShowPane(panes[i].id);
      QApplication::processEvents();
      QVERIFY(doc_->PaneInFront(panes[i].id));
      QCOMPARE(doc_->pane(panes[i].id)->widget(), dock->widget());
    }
    // Each pane class's id names the entry that creates it (pane<P>() looks it up by P::kId).
    QVERIFY(dynamic_cast<DetailsPane*>(doc_->pane(DetailsPane::kId)) != nullptr);
    QVERIFY(dynamic_cast<StatsPane*>(doc_->pane(StatsPane::kId)) != nullptr);
    QVERIFY(dynamic_cast<RangePane*>(doc_->pane(RangePane::kId)) != nullptr);
    QVERIFY(dynamic_cast<MemoryPane*>(doc_->pane(MemoryPane::kId)) != nullptr);
    QVERIFY(dynamic_cast<StepsPane*>(doc_->pane(StepsPane::kId)) != nullptr);
    QVERIFY(dynamic_cast<GpuPane*>(doc_->pane(GpuPane::kId)) != nullptr);
    QVERIFY(dynamic_cast<CriticalPathPane*>(doc_->pane(CriticalPathPane::kId)) != nullptr);
    QVERIFY(dynamic_cast<AttributionPane*>(doc_->pane(AttributionPane::kId)) != nullptr);
    QVERIFY(dynamic_cast<StragglersPane*>(doc_->pane(StragglersPane::kId)) != nullptr);
    QVERIFY(dynamic_cast<SearchPane*>(doc_->pane(SearchPane::kId)) != nullptr);
    QVERIFY(dynamic_cast<TracksPane*>(doc_->pane(TracksPane::kId)) != nullptr);
    QVERIFY(FindPane("Statistics") == nullptr);  // titles are not names
    doc_->ShowPane(DocumentView::kStatsPane);
  }

  void ExportsReadBack() {
    const QString json = scratch_ + "/view.json.gz";
    QVERIFY(window_->ExportChromeJson(json, false).isEmpty());
    auto perfetto = trace::ReadTrace(json.toStdString());
    QVERIFY2(perfetto.ok(), perfetto.status().message().c_str());
    QVERIFY(perfetto->slices().size() > 1000);
    const QString timeline_json = scratch_ + "/timeline.json";
    QVERIFY(window_->ExportChromeJson(timeline_json, true).isEmpty());
    auto tf = trace::ReadTrace(timeline_json.toStdString());
    QVERIFY2(tf.ok(), tf.status().message().c_str());
    QCOMPARE(tf->slices().size(), doc_->document().trace().slices().size());
    const QString png = scratch_ + "/view.png";
    QVERIFY(window_->ExportPng(png).isEmpty());
    QImage image(png);
    QCOMPARE(image.size(), doc_->timeline()->size());
    // Writing where it cannot: an error naming the path, nothing thrown.
    QVERIFY(!window_->ExportChromeJson("/nonexistent-dir/x.json", false).isEmpty());
  }

  void CorruptFileShowsAnErrorAndKeepsWhatIsOpen() {
    const QString corrupt = scratch_ + "/corrupt.pb";
    {
      std::ofstream out(corrupt.toStdString(), std::ios::binary);
      out << "\x0a\xff\xff\xff\x0f garbage that is not a RunMetadata";
    }
    const int errors = static_cast<int>(window_->errors().size());
    window_->Open({corrupt});
    window_->loader()->WaitForIdle();
    QCOMPARE(window_->document_count(), 1);
    QCOMPARE(static_cast<int>(window_->errors().size()), errors + 1);
    QVERIFY2(window_->errors().back().contains("corrupt.pb"), qPrintable(window_->errors().back()));
    // A missing path and an empty directory too.
    window_->Open({scratch_ + "/missing.pbtxt"});
    window_->loader()->WaitForIdle();
    QVERIFY(window_->errors().back().contains("missing.pbtxt"));
    const QString empty_dir = scratch_ + "/empty";
    QDir().mkpath(empty_dir);
    window_->Open({empty_dir});
    window_->loader()->WaitForIdle();
    QVERIFY(window_->errors().back().contains("no trace files"));
    QCOMPARE(window_->document_count(), 1);
    QVERIFY(window_->document(0) == doc_);
  }

  void KinetoTraceOpensWithNestedCpuOps() {
    window_->Open({Kineto()});
    window_->loader()->WaitForIdle();
    QCOMPARE(window_->document_count(), 2);
    DocumentView* kineto = window_->document(1);
    QVERIFY(kineto->analysed());
    const trace::Trace& trace = kineto->document().trace();
    int deepest = 0;
    for (uint32_t t = 0; t < trace.tracks().size(); ++t) deepest = std::max(deepest, kineto->document().index().depth_count(t));
    QVERIFY(deepest >= 2);  // aten ops call each other
    QVERIFY(kineto->timeline()->row_count() > 5);
    QVERIFY(kineto->pane<StatsPane>()->stats_model()->rowCount() > 5);
    const QImage image = kineto->timeline()->grab().toImage();
    int drawn = 0;
    for (int x = kTimeAreaLeft; x < image.width() - kTimeAreaRight; x += 4) {
      for (int y = TimelineView::kRulerHeight; y < image.height(); y += 4) drawn += IsBackground(image.pixel(x, y)) ? 0 : 1;
    }
    QVERIFY(drawn > 100);
  }

  void DirectoryOfRanksOpensAsOneTimeline() {
    const QString dir = scratch_ + "/ranks";
    QDir().mkpath(dir);
    QVERIFY(QFile::copy(Sample(), dir + "/rank0.pbtxt"));
    QVERIFY(QFile::copy(Sample(), dir + "/rank1.pbtxt"));
    const int before = window_->document_count();
    window_->Open({dir});
    window_->loader()->WaitForIdle();
    QCOMPARE(window_->document_count(), before + 1);
    DocumentView* merged = window_->document(before);
    const trace::Trace& trace = merged->document().trace();
    QCOMPARE(trace.slices().size(), 2 * doc_->document().trace().slices().size());
    int hosts = 0;
    for (const auto& track : trace.tracks()) hosts += track.parent < 0 ? 1 : 0;
    QCOMPARE(hosts, 2);
    // Each input becomes a process row above its original host and devices.
    QCOMPARE(merged->timeline()->row_count(), 2 * (doc_->timeline()->row_count() + 1));
    QVERIFY(merged->analysed());
  }

  // A merge of more than DocumentView::kExpandedRanks inputs opens with a row per input, each
  // painted where its lanes have work; expanding one shows its rows again.
  void ManyRanksOpenCollapsedWithTheirActivity() {
    const QString dir = scratch_ + "/many_ranks";
    QDir().mkpath(dir);
    const int inputs = static_cast<int>(DocumentView::kExpandedRanks) + 2;
    for (int rank = 0; rank < inputs; ++rank) QVERIFY(QFile::copy(Sample(), dir + QString("/rank%1.pbtxt").arg(rank, 2, 10, QChar('0'))));
    const int before = window_->document_count();
    window_->Open({dir});
    window_->loader()->WaitForIdle();
    QCOMPARE(window_->document_count(), before + 1);
    DocumentView* merged = window_->document(before);
    TimelineView* timeline = merged->timeline();
    QCOMPARE(timeline->row_count(), inputs);
    auto activity = [&](int row) {
      const QImage image = timeline->grab().toImage();
      const int y = TimelineView::kRulerHeight + row * TimelineView::kRowHeight + TimelineView::kRowHeight / 2;
      int count = 0;
      for (int x = kTimeAreaLeft; x < image.width() - kTimeAreaRight; ++x) count += (image.pixel(x, y) & 0xffffff) == 0x7d8fb3;
      return count;
    };
    // The sample's work covers most of its span: every row shows it, at the same pixels.
    const int first = activity(0);
    QVERIFY2(first > 100, qPrintable(QString::number(first)));
    QCOMPARE(activity(inputs - 1), first);
    const uint32_t process = merged->document().rank_merge()->inputs.front().process_track;
    timeline->SetTrackCollapsed(process, false);
    QCOMPARE(timeline->row_count(), inputs - 1 + doc_->timeline()->row_count() + 1);
    QCOMPARE(activity(0), 0);  // an open header shows its lanes below it instead
  }

  // Nothing dropped silently: the status bar names what the current trace's import counted, the
  // tooltip lists every count, and switching tabs shows the other trace's.
  void StatusBarShowsWhatTheImportCounted() {
    const QString quirks = QString::fromStdString(testing::DataPath("corner/two_colon_gpu.pbtxt"));
    const int before = window_->document_count();
    window_->Open({quirks});
    window_->loader()->WaitForIdle();
    QCOMPARE(window_->document_count(), before + 1);
    const trace::Trace& trace = window_->document(before)->document().trace();
    QCOMPARE(trace.import_stats().Get("gpu_aggregate_lane_duplicates_marked"), int64_t{4});
    QVERIFY2(window_->import_status().contains("gpu_aggregate_lane_duplicates_marked 4"), qPrintable(window_->import_status()));
    for (const auto& [name, count] : trace.import_stats().counts()) {
      QVERIFY(window_->import_details().contains(QString::fromStdString(name) + " " + QString::number(count)));
    }
    window_->ShowDocument(0);
    const trace::Trace& first = window_->document(0)->document().trace();
    QCOMPARE(window_->import_status().contains("gpu_aggregate_lane_duplicates_marked"),
             first.import_stats().Get("gpu_aggregate_lane_duplicates_marked") > 0);
    if (first.import_stats().empty()) QCOMPARE(window_->import_status(), QString("Import: nothing repaired or skipped"));
  }

  // A trace cut short (the AlexNet .json.gz's first 12000 bytes) fails to open, naming the cut;
  // allowed, it opens with what it holds, the window title, its tab and a red banner saying
  // TRUNCATED; a whole trace's title and tab say nothing of it.
  void TruncatedTraceOpensOnlyWhenAllowedAndSaysSo() {
    const QString cut = scratch_ + "/t.json.gz";
    {
      std::ifstream in(Kineto().toStdString(), std::ios::binary);
      std::string bytes(12000, '\0');
      in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
      std::ofstream(cut.toStdString(), std::ios::binary) << bytes;
    }
    const int before = window_->document_count();
    window_->Open({cut});
    window_->loader()->WaitForIdle();
    QCOMPARE(window_->document_count(), before);
    QVERIFY2(window_->errors().back().startsWith(cut + ": the compressed file ends early"), qPrintable(window_->errors().back()));
    QVERIFY(window_->errors().back().endsWith("(File > Read Traces Cut Short up to the Cut)"));
    window_->SetAllowTruncated(true);
    window_->Open({cut});
    window_->loader()->WaitForIdle();
    window_->SetAllowTruncated(false);
    QCOMPARE(window_->document_count(), before + 1);
    DocumentView* shown = window_->document(before);
    QCOMPARE(window_->current_document(), shown);
    const auto& cuts = shown->document().truncations();
    QCOMPARE(cuts.size(), size_t{1});
    QCOMPARE(QString::fromStdString(cuts.front().file), cut);
    QVERIFY(cuts.front().gzip_cut);
    QCOMPARE(cuts.front().events_kept, shown->document().trace().import_stats().Get("json_truncated_events_kept"));
    QCOMPARE(window_->windowTitle(), QString("TRUNCATED at byte %1: t.json.gz - stepscope-view").arg(cuts.front().offset));
    auto* tabs = window_->findChild<QTabWidget*>();
    QVERIFY(tabs->tabText(tabs->indexOf(shown)).endsWith("(TRUNCATED)"));
    QVERIFY(shown->truncation_banner() != nullptr);
    QVERIFY(shown->truncation_banner()->isVisible());
    QCOMPARE(shown->truncation_banner()->text(), QString::fromStdString(trace::TruncationLine(cuts.front())));
    window_->ShowDocument(0);
    QCOMPARE(window_->windowTitle(), QString("stepscope-view"));
    QVERIFY(window_->document(0)->truncation_banner() == nullptr);

    // A directory holding it opens as one merged timeline only when allowed, naming that file.
    const QString dir = scratch_ + "/truncated_dir";
    QDir().mkpath(dir);
    QFile::copy(cut, dir + "/t.json.gz");
    QFile::copy(QString::fromStdString(testing::DataPath("analysis/kineto_small.json")), dir + "/whole.json");
    window_->Open({dir});
    window_->loader()->WaitForIdle();
    QCOMPARE(window_->document_count(), before + 1);
    QVERIFY2(window_->errors().back().contains("nothing from this merge was opened"), qPrintable(window_->errors().back()));
    window_->SetAllowTruncated(true);
    window_->Open({dir});
    window_->loader()->WaitForIdle();
    window_->SetAllowTruncated(false);
    QCOMPARE(window_->document_count(), before + 2);
    DocumentView* merged = window_->current_document();
    QVERIFY(merged->document().rank_merge() != nullptr);
    QCOMPARE(merged->document().truncations().size(), size_t{1});
    QCOMPARE(QString::fromStdString(merged->document().truncations().front().file), dir + "/t.json.gz");
    QVERIFY(merged->truncation_banner() != nullptr);
    QVERIFY(window_->windowTitle().startsWith("TRUNCATED at byte "));
  }

  // A big file (here: over 1 MB) shows a preview of its start (its first 1 MB) while the rest
  // loads, with progress in MB; the whole file then takes the preview's tab.
  void BigFileShowsAPreviewThenTheWhole() {
    const auto generated = analysis::testing::GenerateKinetoJson(size_t{5} << 20);
    const QString path = scratch_ + "/big.json";
    QVERIFY(WriteFileAtomically(path.toStdString(), generated.json).ok());
    const int before = window_->document_count();
    window_->loader()->SetPreview(int64_t{1} << 20, int64_t{1} << 20);
    QSignalSpy loaded(window_->loader(), &TraceLoader::documentLoaded);
    QSignalSpy progress(window_->loader(), &TraceLoader::progress);
    window_->Open({path});
    window_->loader()->WaitForIdle();
    window_->loader()->SetPreview(TraceLoader::kPreviewFileBytes, TraceLoader::kPreviewBytes);
    QCOMPARE(loaded.count(), 2);
    const auto preview = loaded.at(0).at(0).value<std::shared_ptr<const TraceDocument>>();
    const auto whole = loaded.at(1).at(0).value<std::shared_ptr<const TraceDocument>>();
    QVERIFY(preview->preview_bytes() > 0);
    QVERIFY(preview->preview_bytes() <= int64_t{1} << 20);
    QCOMPARE(whole->preview_bytes(), int64_t{0});
    QCOMPARE(static_cast<int64_t>(whole->trace().slices().size()), generated.slices);
    QVERIFY(preview->trace().slices().size() < whole->trace().slices().size() / 3);
    // One tab: the whole file in the preview's place.
    QCOMPARE(window_->document_count(), before + 1);
    QCOMPARE(window_->document(before)->shared_document(), whole);
    // Progress in MB read of the file's 5 MB, rising to all of it.
    int last = -1, file_mb = 0;
    for (const QList<QVariant>& signal : progress) {
      if (signal.at(2).toString() != path || signal.at(1).toInt() < 2) continue;
      QVERIFY(signal.at(0).toInt() >= last);
      last = signal.at(0).toInt();
      file_mb = signal.at(1).toInt();
    }
    QCOMPARE(file_mb, 5);
    QCOMPARE(last, 5);
  }

  void CancelDropsTheLoad() {
    const int before = window_->document_count();
    QSignalSpy finished(window_->loader(), &TraceLoader::finished);
    window_->Open({Sample()});
    window_->loader()->Cancel();
    QCOMPARE(finished.count(), 1);
    QCOMPARE(finished.at(0).at(0).toBool(), true);
    QTest::qWait(300);
    QCOMPARE(window_->document_count(), before);
    // A newer open supersedes a running one: only the newer trace arrives.
    window_->Open({Sample()});
    window_->Open({Kineto()});
    window_->loader()->WaitForIdle();
    QTest::qWait(200);
    QCOMPARE(window_->document_count(), before + 1);
    QVERIFY(window_->document(before)->document().path().ends_with("pytorch_kineto_alexnet_train.json.gz"));
  }

  // Six ProfilerStep#N spans of 1 ms, step 4 of 3 ms (its aten::mm 2.5 ms instead of 0.3 ms): the
  // steps pane lists them, marks step 4 as the outlier with aten::mm as what deviated most, and a
  // double click zooms the timeline to the step.
  void StepsPaneListsStepsAndZoomsToOne() {
    QCOMPARE(doc_->pane<StepsPane>()->steps_table()->rowCount(), 1);  // a RunMetadata without markers is one step
    QVERIFY(doc_->pane<StepsPane>()->steps_caption().startsWith("1 steps"));
    const QString path = scratch_ + "/steps.json";
    {
      std::ofstream out(path.toStdString());
      out << "{\"traceEvents\": [\n";
      double t = 1000;
      for (int step = 1; step <= 6; ++step) {
        const double length = step == 4 ? 3000 : 1000, mm = step == 4 ? 2500 : 300 + step;
        out << (step > 1 ? ",\n" : "") << "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#" << step
            << "\", \"pid\": 1, \"tid\": 1, \"ts\": " << t << ", \"dur\": " << length << "},\n"
            << "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"pid\": 1, \"tid\": 1, \"ts\": " << t + 10
            << ", \"dur\": " << mm << "}";
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
    QTableWidget* table = view->pane<StepsPane>()->steps_table();
    QCOMPARE(table->rowCount(), 6);
    QCOMPARE(table->item(3, StepsPane::kStepNumber)->text(), QString("4"));
    QCOMPARE(table->item(3, StepsPane::kStepDuration)->text(), QString("3.000 ms"));
    QCOMPARE(table->item(3, StepsPane::kStepOutlier)->text(), QString("outlier"));
    QVERIFY2(table->item(3, StepsPane::kStepCause)->text().contains("aten::mm"),
             qPrintable(table->item(3, StepsPane::kStepCause)->text()));
    for (int row : {0, 1, 2, 4, 5}) QVERIFY(table->item(row, StepsPane::kStepOutlier)->text().isEmpty());
    QVERIFY2(view->pane<StepsPane>()->steps_caption().startsWith("6 steps: median 1.000 ms"), qPrintable(view->pane<StepsPane>()->steps_caption()));
    QVERIFY(view->pane<StepsPane>()->steps_caption().contains("1 outliers"));
    // Step 4 runs from +3 ms to +6 ms of the trace (times relative to its start).
    view->pane<StepsPane>()->ZoomToStep(3);
    const double begin = view->axis()->begin_ns(), end = view->axis()->end_ns();
    const double step_begin = static_cast<double>(view->document().trace().span_begin_ns()) + 3e6;
    QVERIFY2(begin < step_begin && begin > step_begin - 0.1e6, qPrintable(QString::number(begin)));
    QVERIFY2(end > step_begin + 3e6 && end < step_begin + 3.1e6, qPrintable(QString::number(end)));
  }

 private:
  QString scratch_;
  std::unique_ptr<MainWindow> window_;
  DocumentView* doc_ = nullptr;
};

QTEST_MAIN(ViewTest)
#include "view_test.moc"
