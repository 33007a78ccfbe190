// Markers (M, the list, the lines on the timeline), the track controls (filter, pin, reorder,
// counter tracks in the Tracks pane) and the Details pane staying closed once closed, on a real trace: the TensorFlow GPU step of the PTB LSTM (a host, CPU and GPU devices, three
// streams and the aggregate lanes).
#include <QAbstractItemModelTester>
#include <QDockWidget>
#include <QLineEdit>
#include <QListWidget>
#include <QScrollBar>
#include <QTreeView>
#include <QtTest/QtTest>
#include <functional>
#include <set>

#include "tests/test_util.h"
#include "tests/viewer/window_fixture.h"
#include "viewer/app/document_view.h"
#include "viewer/app/main_window.h"
#include "viewer/load/trace_loader.h"
#include "viewer/models/roles.h"
#include "viewer/models/slice_details_model.h"
#include "viewer/models/track_tree_model.h"
#include "viewer/panes/details_pane.h"
#include "viewer/panes/empty_hint.h"
#include "viewer/panes/markers_pane.h"
#include "viewer/panes/tracks_pane.h"
#include "viewer/timeline/marker_painter.h"
#include "viewer/timeline/time_axis.h"
#include "viewer/timeline/timeline_view.h"
#include "viewer/timeline_data/counter_tracks.h"
#include "viewer/timeline_data/markers.h"
#include "viewer/timeline_data/track_layout.h"

using namespace stepscope;
using namespace stepscope::viewer;

namespace {

QString Sample() { return QString::fromStdString(testing::DataPath("ptb_lstm_tf1_gpu_step.pbtxt")); }

bool IsAncestorOrSelf(const trace::Trace& trace, uint32_t above, uint32_t track) {
  for (int32_t t = static_cast<int32_t>(track); t >= 0; t = trace.tracks()[static_cast<size_t>(t)].parent) {
    if (static_cast<uint32_t>(t) == above) return true;
  }
  return false;
}

}  // namespace

class TrackControlsTest : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    window_ = stepscope::testing::OpenTraceWindow(Sample(), {.size = {1400, 700}});
    QCOMPARE(window_->document_count(), 1);
    view_ = window_->document(0);
    QApplication::processEvents();
  }

  void MarkerSetKeepsTimeOrderAndIds() {
    MarkerSet set;
    const int64_t late = set.Add(500).id, early = set.Add(100).id;
    set.Add(300, "mid");
    QCOMPARE(set.markers().size(), size_t{3});
    QCOMPARE(set.markers()[0].id, early);
    QCOMPARE(set.markers()[0].label, std::string("M2"));
    QCOMPARE(set.markers()[1].label, std::string("mid"));
    QCOMPARE(set.markers()[2].id, late);
    QVERIFY(set.Rename(late, "end"));
    QCOMPARE(set.Find(late)->label, std::string("end"));
    QVERIFY(set.Remove(early));
    QVERIFY(!set.Remove(early));
    QVERIFY(!set.Rename(early, "x"));
    QCOMPARE(set.markers().size(), size_t{2});
  }

  void MDropsAMarkerAtTheSelectedSliceDrawnAndListed() {
    TimelineView* timeline = view_->timeline();
    const auto& trace = view_->document().trace();
    // A slice in the middle of the trace (by time): the marker must land on its start.
    uint32_t slice = 0;
    for (uint32_t i = 0; i < trace.slices().size(); ++i) {
      if (trace.slices()[i].start_ns > (trace.span_begin_ns() + trace.span_end_ns()) / 2) {
        slice = i;
        break;
      }
    }
    timeline->SelectSlice(slice);
    timeline->setFocus();
    // Before the first marker the pane says how to drop one; the hint goes with the first.
    const EmptyHint* hint = EmptyHintOf(view_->pane<MarkersPane>()->list());
    QVERIFY(hint != nullptr && hint->shown());
    QTest::keyClick(timeline, Qt::Key_M);
    QCOMPARE(timeline->markers().markers().size(), size_t{1});
    QVERIFY(!hint->shown());
    const Marker marker = timeline->markers().markers().front();
    QCOMPARE(marker.time_ns, trace.slices()[slice].start_ns);
    QCOMPARE(marker.label, std::string("M1"));
    // Drawn: a purple column at the marker's x, down to the bottom of the rows.
    QImage image(timeline->size(), QImage::Format_RGB32);
    timeline->render(&image);
    const int x = kTimeAreaLeft + static_cast<int>(std::lround(timeline->mapping().NsToPx(static_cast<double>(marker.time_ns))));
    int purple = 0;
    for (int y = 0; y < image.height(); ++y) purple += (image.pixel(x, y) & 0xffffff) == (kMarkerColor & 0xffffff);
    QVERIFY2(purple > image.height() * 3 / 4, qPrintable(QString::number(purple)));
    // Listed; renamed and jumped to from the list.
    MarkersPane* pane = view_->pane<MarkersPane>();
    QCOMPARE(pane->list()->count(), 1);
    QVERIFY(pane->list()->item(0)->text().startsWith("M1  @ +"));
    pane->Rename(0, "loss");
    QCOMPARE(timeline->markers().markers().front().label, std::string("loss"));
    QVERIFY(pane->list()->item(0)->text().startsWith("loss"));
    view_->axis()->SetRange(static_cast<double>(trace.span_begin_ns()), static_cast<double>(trace.span_begin_ns()) + 1e5);
    pane->JumpTo(0);
    const double middle = (view_->axis()->begin_ns() + view_->axis()->end_ns()) / 2;
    QVERIFY(std::abs(middle - static_cast<double>(marker.time_ns)) < 1);
    QVERIFY(std::abs(view_->axis()->end_ns() - view_->axis()->begin_ns() - 1e5) < 1);  // the zoom kept
    pane->Delete(0);
    QVERIFY(timeline->markers().empty());
    QCOMPARE(pane->list()->count(), 0);
    QVERIFY(hint->shown());
    timeline->ClearSelection();
  }

  void FilterKeepsMatchesTheirLanesAndWhatIsAboveThem() {
    const auto& trace = view_->document().trace();
    TrackLayout layout(trace, view_->document().index());
    const size_t all_rows = layout.rows().size();
    const int64_t stream = stepscope::testing::TrackNamed(trace, "stream:13");
    QVERIFY(stream >= 0);
    QVERIFY(layout.SetFilter("STREAM:13"));  // ignoring case
    QVERIFY(!layout.rows().empty());
    QVERIFY(layout.rows().size() < all_rows);
    bool has_stream = false;
    for (const TimelineRow& row : layout.rows()) {
      // Every row left is the stream or above it.
      QVERIFY2(IsAncestorOrSelf(trace, row.track, static_cast<uint32_t>(stream)),
               qPrintable(QString::fromStdString(trace.TrackPath(row.track))));
      has_stream |= row.track == stream;
    }
    QVERIFY(has_stream);
    // A regular expression: both streams 13 and 14.
    QVERIFY(layout.SetFilter("stream:1[34]$"));
    std::set<uint32_t> lanes;
    for (const TimelineRow& row : layout.rows()) {
      if (row.kind == TimelineRow::Kind::kSlices) lanes.insert(row.track);
    }
    QCOMPARE(lanes.size(), size_t{2});
    // No valid expression: a substring, which no track holds.
    QVERIFY(!layout.SetFilter("stream:1["));
    QVERIFY(layout.rows().empty());
    layout.SetFilter("");
    QCOMPARE(layout.rows().size(), all_rows);
  }

  void PinnedTracksComeFirstAndMovedTracksSwap() {
    const auto& trace = view_->document().trace();
    TrackLayout layout(trace, view_->document().index());
    const auto stream = static_cast<uint32_t>(stepscope::testing::TrackNamed(trace, "stream:13"));
    const size_t all_rows = layout.rows().size();
    layout.SetPinned(stream, true);
    QVERIFY(layout.pinned_row_count() > 0);
    QCOMPARE(layout.rows().size(), all_rows);  // moved, not repeated
    for (int r = 0; r < layout.pinned_row_count(); ++r) QCOMPARE(layout.rows()[static_cast<size_t>(r)].track, stream);
    for (size_t r = static_cast<size_t>(layout.pinned_row_count()); r < all_rows; ++r) QVERIFY(layout.rows()[r].track != stream);
    layout.SetPinned(stream, false);
    QCOMPARE(layout.pinned_row_count(), 0);

    const int32_t device = trace.tracks()[stream].parent;
    const std::vector<uint32_t> before = layout.children(device);
    QVERIFY(before.size() >= 2);
    QVERIFY(layout.MoveTrack(before[0], +1));
    QCOMPARE(layout.children(device)[0], before[1]);
    QCOMPARE(layout.children(device)[1], before[0]);
    QVERIFY(!layout.MoveTrack(before[1], -1));  // already first
    auto first_row = [&](uint32_t track) {
      for (size_t r = 0; r < layout.rows().size(); ++r) {
        if (layout.rows()[r].track == track) return static_cast<int>(r);
      }
      return -1;
    };
    // Visible lanes only: repeat lanes are hidden.
    if (first_row(before[0]) >= 0 && first_row(before[1]) >= 0) QVERIFY(first_row(before[1]) < first_row(before[0]));
  }

  void PaneFiltersTheTimelineAndPinnedRowsStayOnScroll() {
    TracksPane* pane = view_->pane<TracksPane>();
    TimelineView* timeline = view_->timeline();
    const int rows = timeline->row_count();
    pane->filter_box()->setText("stream:13");
    QVERIFY(timeline->row_count() < rows);
    // The tree hides the same tracks.
    int shown = 0;
    std::function<void(const QModelIndex&)> count = [&](const QModelIndex& parent) {
      for (int r = 0; r < pane->model()->rowCount(parent); ++r) {
        if (pane->tree()->isRowHidden(r, parent)) continue;
        ++shown;
        count(pane->model()->index(r, 0, parent));
      }
    };
    count({});
    QVERIFY(shown >= 3 && shown < static_cast<int>(view_->document().trace().tracks().size()));
    pane->filter_box()->clear();
    QCOMPARE(timeline->row_count(), rows);

    // Pin the last visible lane, then scroll: its rows stay under the ruler. A low window, so
    // the rows need scrolling.
    window_->resize(1400, 300);
    QApplication::processEvents();
    QVERIFY(timeline->findChild<QScrollBar*>()->maximum() > 0);
    const uint32_t last = timeline->layout().rows().back().track;
    pane->tree()->setCurrentIndex(pane->model()->IndexOf(last));
    pane->TogglePin();
    QVERIFY(timeline->layout().pinned(last));
    QCOMPARE(timeline->layout().rows().front().track, last);
    const int pinned = timeline->layout().pinned_row_count();
    const int scrolled_row = pinned;  // the first row that scrolls
    const int top_before = timeline->RowTop(scrolled_row);
    for (int i = 0; i < 5; ++i) QTest::keyClick(timeline, Qt::Key_Down);
    QVERIFY2(timeline->RowTop(scrolled_row) < top_before, "the timeline did not scroll (too few rows?)");
    QCOMPARE(timeline->RowTop(0), TimelineView::kRulerHeight);
    QCOMPARE(timeline->RowAt(TimelineView::kRulerHeight + 2), 0);
    pane->TogglePin();
    QCOMPARE(timeline->layout().pinned_row_count(), 0);
    window_->resize(1400, 700);
  }

  void TracksPaneListsCounterTracksAndHidesThem() {
    TracksPane* pane = view_->pane<TracksPane>();
    TimelineView* timeline = view_->timeline();
    QTRY_VERIFY(timeline->counter_tracks() != nullptr);
    const CounterTracks& counters = *timeline->counter_tracks();
    // The PTB step: the GPU's utilisation, launch delay and queue, and its allocators' memory.
    QVERIFY(counters.tracks().size() >= 3);
    TrackTreeModel* model = pane->model();
    QTRY_COMPARE(model->counter_count(), counters.tracks().size());
    QAbstractItemModelTester tester(model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    for (uint32_t c = 0; c < counters.tracks().size(); ++c) {
      const CounterTrack& counter = counters.tracks()[c];
      const QModelIndex index = model->IndexOfCounter(c);
      QCOMPARE(index.data().toString(), QString::fromStdString(counter.name));
      QVERIFY(index.siblingAtColumn(TrackTreeModel::kKindColumn).data().toString().startsWith("counter"));
      QCOMPARE(index.parent(), model->IndexOf(counter.track));  // under its device, after its lanes
      QCOMPARE(model->index(index.row(), 0, index.parent()), index);
      QVERIFY(index.row() >= static_cast<int>(timeline->layout().children(static_cast<int32_t>(counter.track)).size()));
      QCOMPARE(model->rowCount(index), 0);
      QCOMPARE(index.data(Qt::CheckStateRole).toInt(), int(Qt::Checked));
      QCOMPARE(model->CounterOf(index), static_cast<int64_t>(c));
      QCOMPARE(model->CounterOf(index.parent()), int64_t{-1});
      QVERIFY(!pane->tree()->isRowHidden(index.row(), index.parent()));
    }
    // Unchecked: gone from the timeline; checked: back.
    const int rows = timeline->row_count();
    QVERIFY(model->setData(model->IndexOfCounter(0), Qt::Unchecked, Qt::CheckStateRole));
    QVERIFY(timeline->layout().counter_hidden(0));
    QCOMPARE(timeline->row_count(), rows - TrackLayout::kCounterRows);
    QVERIFY(model->setData(model->IndexOfCounter(0), Qt::Checked, Qt::CheckStateRole));
    QVERIFY(!timeline->layout().counter_hidden(0));
    QCOMPARE(timeline->row_count(), rows);
    // Hidden from the timeline (its label's menu): the box follows.
    const auto last = static_cast<uint32_t>(counters.tracks().size() - 1);
    timeline->SetCounterHidden(last, true);
    QTRY_COMPARE(model->IndexOfCounter(last).data(Qt::CheckStateRole).toInt(), int(Qt::Unchecked));
    timeline->SetCounterHidden(last, false);
    QTRY_COMPARE(model->IndexOfCounter(last).data(Qt::CheckStateRole).toInt(), int(Qt::Checked));
    // The filter hides a counter with its device.
    pane->filter_box()->setText("stream:13");
    const QModelIndex counter = model->IndexOfCounter(0);
    const bool device_kept = !timeline->layout().filtered_out(counters.tracks()[0].track);
    QCOMPARE(pane->tree()->isRowHidden(counter.row(), counter.parent()), !device_kept);
    pane->filter_box()->clear();
  }

  void ClosedDetailsPaneStaysClosedOnSelection() {
    TimelineView* timeline = view_->timeline();
    QDockWidget* dock = nullptr;
    for (QWidget* w = view_->pane<DetailsPane>()->widget(); w != nullptr && dock == nullptr; w = w->parentWidget()) {
      dock = qobject_cast<QDockWidget*>(w);
    }
    QVERIFY(dock != nullptr);
    // Open: a selection shows it.
    QVERIFY(dock->toggleViewAction()->isChecked());
    timeline->SelectSlice(0);
    QTRY_VERIFY(view_->PaneInFront(kDetailsPane));
    // Closed by the user: a selection fills it but does not reopen it.
    dock->close();
    QVERIFY(!dock->toggleViewAction()->isChecked());
    timeline->SelectSlice(1);
    QApplication::processEvents();
    QVERIFY(!dock->isVisible());
    QVERIFY(!dock->toggleViewAction()->isChecked());
    QCOMPARE(view_->pane<DetailsPane>()->details_model()->index(0, 1).data().toString(),
             QString::fromUtf8(view_->document().trace().str(view_->document().trace().slice_name(view_->document().trace().slices()[1]))));
    // Reopened (View > Panes): in front at the next selection again.
    dock->toggleViewAction()->trigger();
    QVERIFY(dock->toggleViewAction()->isChecked());
    timeline->SelectSlice(0);
    QTRY_VERIFY(view_->PaneInFront(kDetailsPane));
    timeline->ClearSelection();
  }

  void cleanupTestCase() { window_.reset(); }

 private:
  std::unique_ptr<MainWindow> window_;
  DocumentView* view_ = nullptr;
};

QTEST_MAIN(TrackControlsTest)
#include "track_controls_test.moc"
