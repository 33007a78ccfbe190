// Reordering tracks by dragging them in the Tracks pane, and the order kept with the window's
// saved layout: on the TensorFlow GPU step of the PTB LSTM (a GPU device with three streams and
// the aggregate lanes), a stream dropped first among its siblings is first on the timeline and in
// the tree, a drop under another parent is refused, and a window that closes and opens the
// trace again shows the order it was given (by name: track_order.h); --reset-layout forgets it.
#include <QSettings>
#include <QTemporaryDir>
#include <QTreeView>
#include <QtTest/QtTest>
#include <memory>

#include "tests/test_util.h"
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

int64_t TrackNamed(const trace::Trace& trace, std::string_view name) {
  for (uint32_t t = 0; t < trace.tracks().size(); ++t) {
    if (trace.str(trace.tracks()[t].name) == name) return t;
  }
  return -1;
}

std::unique_ptr<MainWindow> OpenWindow() {
  auto window = std::make_unique<MainWindow>(/*interactive=*/false);
  window->SetRememberLayout(true);
  window->resize(1400, 800);
  window->show();
  window->Open({Sample()});
  window->loader()->WaitForIdle();
  QApplication::processEvents();
  return window;
}

int FirstRow(const TrackLayout& layout, uint32_t track) {
  for (size_t r = 0; r < layout.rows().size(); ++r) {
    if (layout.rows()[r].track == track) return static_cast<int>(r);
  }
  return -1;
}

}  // namespace

class TrackOrderTest : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    QVERIFY(settings_dir_.isValid());
    QSettings::setPath(QSettings::NativeFormat, QSettings::UserScope, settings_dir_.path());
    QCoreApplication::setOrganizationName("stepscope-test");
    QCoreApplication::setApplicationName("stepscope-view-track-order-test");
    QVERIFY(QSettings().fileName().startsWith(settings_dir_.path()));
  }

  // The tree view drops through the model: the last stream dropped at row 0 of its device.
  void DroppedTrackMovesFirstOnTheTimelineAndInTheTree() {
    auto window = OpenWindow();
    DocumentView* view = window->current_document();
    const trace::Trace& trace = view->document().trace();
    TracksPane* pane = view->pane<TracksPane>();
    TrackTreeModel* model = pane->model();
    QCOMPARE(pane->tree()->dragDropMode(), QAbstractItemView::InternalMove);
    const int64_t stream = TrackNamed(trace, "stream:15");
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
    const int64_t cpu_lane = TrackNamed(trace, "ops");
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

  // The order comes back in the next window, by name; --reset-layout forgets it.
  void OrderIsKeptWithTheSavedLayout() {
    std::vector<uint32_t> given;
    int32_t device = -1;
    {
      auto window = OpenWindow();
      DocumentView* view = window->current_document();
      const trace::Trace& trace = view->document().trace();
      const auto stream = static_cast<uint32_t>(TrackNamed(trace, "stream:15"));
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
    const auto stream = static_cast<uint32_t>(TrackNamed(trace, "stream:15"));
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
