// Reordering tracks by dragging them in the Tracks pane, and the order kept with the window's
// saved layout: on the TensorFlow GPU step of the PTB LSTM (a GPU device with three streams and
// the aggregate lanes), a stream dropped first among its siblings is first on the timeline and in
// the tree, a drop under another parent is refused, and a window that closes and opens the
// trace again shows the order it was given (by name: track_order.h); --reset-layout forgets it.
// A lane's label dragged on the timeline moves it in the same order.
#include <QSettings>
#include <QTemporaryDir>
#include <QTreeView>
#include <QtTest/QtTest>
#include <algorithm>
#include <memory>
#include <vector>

#include "tests/test_util.h"
#include "tests/viewer/window_fixture.h"
#include "viewer/app/document_view.h"
#include "viewer/app/main_window.h"
#include "viewer/load/trace_loader.h"
#include "viewer/models/roles.h"
#include "viewer/models/track_tree_model.h"
#include "viewer/panes/tracks_pane.h"
#include "viewer/timeline/timeline_view.h"
#include "viewer/timeline_data/track_layout.h"
#include "viewer/timeline_data/track_order.h"

using namespace stepscope;
using namespace stepscope::viewer;

namespace {

QString Sample() { return QString::fromStdString(testing::DataPath("ptb_lstm_tf1_gpu_step.pbtxt")); }

std::unique_ptr<MainWindow> OpenWindow() {
  return stepscope::testing::OpenTraceWindow(Sample(), {.size = {1400, 800}, .remember_layout = true});
}

int FirstRow(const TrackLayout& layout, uint32_t track) {
  for (size_t r = 0; r < layout.rows().size(); ++r) {
    if (layout.rows()[r].track == track) return static_cast<int>(r);
  }
  return -1;
}

int LastRow(const TrackLayout& layout, uint32_t track) {
  int last = -1;
  for (size_t r = 0; r < layout.rows().size(); ++r) {
    if (layout.rows()[r].track == track) last = static_cast<int>(r);
  }
  return last;
}

// The left button pressed on the timeline at `from` (a track's label), moved to `to` in two
// steps, released there: as a mouse drags, events sent straight to the widget.
void DragOnTimeline(TimelineView* timeline, QPoint from, QPoint to) {
  QTest::mousePress(timeline, Qt::LeftButton, Qt::NoModifier, from);
  for (const QPoint at : {(from + to) / 2, to}) {
    QMouseEvent move(QEvent::MouseMove, at, timeline->mapToGlobal(at), Qt::NoButton, Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(timeline, &move);
  }
  QTest::mouseRelease(timeline, Qt::LeftButton, Qt::NoModifier, to);
}

}  // namespace

class TrackOrderTest : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    QVERIFY(stepscope::testing::UseTemporarySettings(settings_dir_, "stepscope-view-track-order-test"));
  }

  // The tree view drops through the model: the last stream dropped at row 0 of its device.
  void DroppedTrackMovesFirstOnTheTimelineAndInTheTree() {
    auto window = OpenWindow();
    DocumentView* view = window->current_document();
    const trace::Trace& trace = view->document().trace();
    TracksPane* pane = view->pane<TracksPane>();
    TrackTreeModel* model = pane->model();
    QCOMPARE(pane->tree()->dragDropMode(), QAbstractItemView::InternalMove);
    const int64_t stream = stepscope::testing::TrackNamed(trace, "stream:15");
    QVERIFY(stream >= 0);
    const int32_t device = trace.tracks()[static_cast<size_t>(stream)].parent;
    const TrackLayout& layout = view->timeline()->layout();
    const std::vector<uint32_t> before = layout.children(device);
    QVERIFY(before.size() >= 3 && before.front() != static_cast<uint32_t>(stream));
    const QModelIndex dragged = model->IndexOf(static_cast<uint32_t>(stream));
    QVERIFY(model->flags(dragged).testFlag(Qt::ItemIsDragEnabled));
    std::unique_ptr<QMimeData> data(model->mimeData({dragged}));
    QVERIFY(data != nullptr);
    const QModelIndex device_index = model->IndexOf(static_cast<uint32_t>(device));
    // Under another parent (the roots, the CPU device's lanes): refused.
    QVERIFY(!model->canDropMimeData(data.get(), Qt::MoveAction, 0, 0, {}));
    const int64_t cpu_lane = stepscope::testing::TrackNamed(trace, "ops");
    if (cpu_lane >= 0 && trace.tracks()[static_cast<size_t>(cpu_lane)].parent != device) {
      QVERIFY(!model->canDropMimeData(data.get(), Qt::MoveAction, 0, 0, model->IndexOf(static_cast<uint32_t>(cpu_lane)).parent()));
    }
    QVERIFY(model->canDropMimeData(data.get(), Qt::MoveAction, 0, 0, device_index));
    QVERIFY(!model->dropMimeData(data.get(), Qt::MoveAction, 0, 0, device_index));  // the view removes nothing
    QTRY_COMPARE(layout.children(device).front(), static_cast<uint32_t>(stream));
    QCOMPARE(layout.children(device).size(), before.size());
    // The tree follows, and the timeline's rows: the stream comes before the former first lane.
    QCOMPARE(model->index(0, 0, model->IndexOf(static_cast<uint32_t>(device))).data(kTrackRole).toUInt(),
             static_cast<uint32_t>(stream));
    const int stream_row = FirstRow(layout, static_cast<uint32_t>(stream));
    QVERIFY(stream_row >= 0);
    for (uint32_t sibling : before) {
      const int row = FirstRow(layout, sibling);
      if (sibling != static_cast<uint32_t>(stream) && row >= 0) QVERIFY(stream_row < row);
    }
    // Dropped onto its next sibling's row: just before it; below itself counts from before it leaves.
    const std::vector<uint32_t> moved = layout.children(device);
    std::unique_ptr<QMimeData> again(model->mimeData({model->IndexOf(moved[0])}));
    model->dropMimeData(again.get(), Qt::MoveAction, 3, 0, model->IndexOf(static_cast<uint32_t>(device)));
    QTRY_COMPARE(layout.children(device)[2], moved[0]);
    QCOMPARE(layout.children(device)[0], moved[1]);
  }

  // A lane's label dragged on the timeline moves the lane among its siblings, in the order the
  // Tracks pane keeps: dropped on the upper half of the first lane's label it goes first, on the
  // lower half of the last one's rows after it; over another parent's lanes nothing moves; the
  // tree follows and the order is what the saved layout keeps. A click on a header still
  // collapses it.
  void DraggedLaneLabelMovesTheLaneAmongItsSiblings() {
    MainWindow::ForgetSavedLayout();  // the trace's own order to start from
    // Tall enough for every row, counter tracks included, to be on screen.
    auto window = stepscope::testing::OpenTraceWindow(Sample(), {.size = {1400, 1600}, .remember_layout = true});
    DocumentView* view = window->current_document();
    const trace::Trace& trace = view->document().trace();
    TimelineView* timeline = view->timeline();
    const TrackLayout& layout = timeline->layout();
    TracksPane* pane = view->pane<TracksPane>();
    const auto stream = static_cast<uint32_t>(stepscope::testing::TrackNamed(trace, "stream:15"));
    const int32_t device = trace.tracks()[stream].parent;
    std::vector<uint32_t> shown;  // the device's lanes on the timeline, in order
    for (uint32_t lane : layout.children(device)) {
      if (FirstRow(layout, lane) >= 0) shown.push_back(lane);
    }
    QVERIFY(shown.size() >= 3 && shown.front() != stream);
    const int stream_row = FirstRow(layout, stream);
    QVERIFY(timeline->RowTop(LastRow(layout, shown.back())) + TimelineView::kRowHeight < timeline->height());
    auto upper_half = [&](uint32_t lane) { return QPoint(40, timeline->RowTop(FirstRow(layout, lane)) + 3); };
    auto lower_half = [&](uint32_t lane) {
      return QPoint(60, timeline->RowTop(LastRow(layout, lane)) + TimelineView::kRowHeight - 3);
    };
    QCOMPARE(pane->SaveOrder().size(), size_t{0});

    DragOnTimeline(timeline, upper_half(stream), upper_half(shown.front()));
    QCOMPARE(layout.children(device).front(), stream);
    QVERIFY(FirstRow(layout, stream) < stream_row);
    QCOMPARE(pane->model()->index(0, 0, pane->model()->IndexOf(static_cast<uint32_t>(device))).data(kTrackRole).toUInt(),
             stream);
    QCOMPARE(pane->SaveOrder().size(), size_t{1});

    // Over a lane of another device: refused, nothing moves.
    const std::vector<uint32_t> first = layout.children(device);
    const int64_t cpu_lane = stepscope::testing::TrackNamed(trace, "ops");
    QVERIFY(cpu_lane >= 0 && trace.tracks()[static_cast<size_t>(cpu_lane)].parent != device);
    QVERIFY(FirstRow(layout, static_cast<uint32_t>(cpu_lane)) >= 0);
    DragOnTimeline(timeline, upper_half(stream), upper_half(static_cast<uint32_t>(cpu_lane)));
    QCOMPARE(layout.children(device), first);

    // The lower half of the last shown lane's rows: just after it.
    const uint32_t last = shown.back() == stream ? shown[shown.size() - 2] : shown.back();
    DragOnTimeline(timeline, upper_half(stream), lower_half(last));
    std::vector<uint32_t> expected = first;
    expected.erase(std::find(expected.begin(), expected.end(), stream));
    expected.insert(std::find(expected.begin(), expected.end(), last) + 1, stream);
    QCOMPARE(layout.children(device), expected);
    // Kept with the layout unless that is the trace's own order again.
    const bool own_order = expected == TrackChildren(trace)[static_cast<size_t>(device + 1)];
    QCOMPARE(pane->SaveOrder().size(), own_order ? size_t{0} : size_t{1});

    // A click on the device's header (no drag) collapses it, and again expands it.
    const QPoint header(40, timeline->RowTop(FirstRow(layout, static_cast<uint32_t>(device))) + 9);
    QTest::mouseClick(timeline, Qt::LeftButton, Qt::NoModifier, header);
    QVERIFY(layout.collapsed(static_cast<uint32_t>(device)));
    QTest::mouseClick(timeline, Qt::LeftButton, Qt::NoModifier, header);
    QVERIFY(!layout.collapsed(static_cast<uint32_t>(device)));
    QCOMPARE(layout.children(device), expected);
  }

  // The order comes back in the next window, by name; --reset-layout forgets it.
  void OrderIsKeptWithTheSavedLayout() {
    std::vector<uint32_t> given;
    int32_t device = -1;
    {
      auto window = OpenWindow();
      DocumentView* view = window->current_document();
      const trace::Trace& trace = view->document().trace();
      const auto stream = static_cast<uint32_t>(stepscope::testing::TrackNamed(trace, "stream:15"));
      device = trace.tracks()[stream].parent;
      TracksPane* pane = view->pane<TracksPane>();
      pane->MoveTo(stream, 0);
      given = view->timeline()->layout().children(device);
      QCOMPARE(given.front(), stream);
      QVERIFY(given != TrackChildren(trace)[static_cast<size_t>(device + 1)]);
      QCOMPARE(pane->SaveOrder().size(), size_t{1});
      window->close();  // saves the layout
    }
    {
      auto window = OpenWindow();
      DocumentView* view = window->current_document();
      QCOMPARE(view->timeline()->layout().children(device), given);
      QCOMPARE(view->pane<TracksPane>()->model()->index(0, 0, view->pane<TracksPane>()->model()->IndexOf(static_cast<uint32_t>(device)))
                   .data(kTrackRole)
                   .toUInt(),
               given.front());
    }
    MainWindow::ForgetSavedLayout();
    auto window = OpenWindow();
    const trace::Trace& trace = window->current_document()->document().trace();
    QCOMPARE(window->current_document()->timeline()->layout().children(device), TrackChildren(trace)[static_cast<size_t>(device + 1)]);
  }

  // Restoring by name on its own: a group whose parent is gone is skipped, names not saved follow.
  void RestoreSkipsWhatIsGone() {
    auto window = OpenWindow();
    DocumentView* view = window->current_document();
    const trace::Trace& trace = view->document().trace();
    TrackLayout layout(trace, view->document().index());
    const auto stream = static_cast<uint32_t>(stepscope::testing::TrackNamed(trace, "stream:15"));
    const int32_t device = trace.tracks()[stream].parent;
    QVERIFY(layout.MoveTrack(stream, -10));
    SavedTrackOrder saved = SaveTrackOrder(trace, layout);
    QCOMPARE(saved.size(), size_t{1});
    saved.push_back({"no such parent", "a", "b"});
    saved[0].resize(2);  // only the moved stream named: the others keep their order after it
    TrackLayout fresh(trace, view->document().index());
    QCOMPARE(RestoreTrackOrder(trace, saved, fresh), 1);
    QCOMPARE(fresh.children(device), layout.children(device));
  }

 private:
  QTemporaryDir settings_dir_;
};

QTEST_MAIN(TrackOrderTest)
#include "track_order_test.moc"
