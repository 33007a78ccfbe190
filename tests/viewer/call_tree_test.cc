// The call tree pane, the timeline's multi-selection and area, and the range pane's statistics of
// them, on the PyTorch AlexNet trace in a window (offscreen): Ctrl+click builds a set of slices,
// a Shift+drag over one lane's rows selects only that lane's slices, the range pane's sums equal
// a recount, and the call tree pane shows the analysis' tree for each selection.
#include <QComboBox>
#include <QStandardPaths>
#include <QTreeView>
#include <QtTest/QtTest>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include "profiler/analysis/call_tree.h"
#include "profiler/analysis/op_stats.h"
#include "profiler/testing/synthetic_trace.h"
#include "tests/test_util.h"
#include "viewer/app/document_view.h"
#include "viewer/app/main_window.h"
#include "viewer/load/trace_loader.h"
#include "viewer/models/call_tree_model.h"
#include "viewer/models/op_stats_model.h"
#include "viewer/models/roles.h"
#include "viewer/panes/call_tree_pane.h"
#include "viewer/panes/icicle_chart.h"
#include "viewer/panes/range_pane.h"
#include "viewer/timeline/time_axis.h"
#include "viewer/timeline/timeline_view.h"

using namespace stepscope;
using namespace stepscope::viewer;

namespace {

QString Kineto() { return QString::fromStdString(testing::DataPath("pytorch_kineto_alexnet_train.json.gz")); }

// Top-level names of a tree with their totals, as the model's first level shows them.
std::map<std::string, int64_t> TopLevel(const analysis::CallTree& tree) {
  std::map<std::string, int64_t> names;
  for (uint32_t child : tree.children_of(0)) names[tree.name(child)] = tree.nodes[child].total_ns;
  return names;
}

std::map<std::string, int64_t> TopLevel(const CallTreeModel& model) {
  std::map<std::string, int64_t> names;
  for (int row = 0; row < model.rowCount(); ++row) {
    names[model.index(row, CallTreeModel::kName).data().toString().toStdString()] =
        model.index(row, CallTreeModel::kTotal).data(kSortRole).toLongLong();
  }
  return names;
}

}  // namespace

class CallTreeTest : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    window_ = std::make_unique<MainWindow>(/*interactive=*/false);
    window_->resize(1600, 1000);
    window_->show();
    window_->Open({Kineto()});
    window_->loader()->WaitForIdle();
    QCOMPARE(window_->document_count(), 1);
    doc_ = window_->document(0);
    QApplication::processEvents();
  }

  void cleanupTestCase() { window_.reset(); }

  void init() {
    doc_->timeline()->ClearSelection();
    doc_->axis()->FitAll();
  }

  // The whole trace first (nothing selected), with the analysis' top-level totals.
  void CallTreePaneShowsTheAnalysisTree() {
    auto* pane = doc_->pane<CallTreePane>();
    doc_->ShowPane(CallTreePane::kId);
    QTRY_VERIFY_WITH_TIMEOUT(!pane->pending() && pane->top_down() != nullptr, 10000);
    const trace::Trace& trace = doc_->document().trace();
    const analysis::CallTree expected = analysis::ComputeCallTree(trace);
    QCOMPARE(TopLevel(*pane->model()), TopLevel(expected));
    // The AlexNet figures counted by hand (tests/analysis/call_tree_test.cc): 86.88382 s at the
    // top, [param|cuda] 43.425283 s.
    QCOMPARE(pane->model()->tree()->root().total_ns, int64_t{86'883'820'000});
    QCOMPARE(TopLevel(*pane->model())["[param|cuda]"], int64_t{43'425'283'000});
    QVERIFY(pane->caption().contains("whole trace"));
    // Bottom-up: the names by self time, the analysis' bottom-up tree.
    pane->SetBottomUp(true);
    QTRY_VERIFY_WITH_TIMEOUT(!pane->pending() && pane->model()->tree() != pane->top_down().get(), 10000);
    QCOMPARE(TopLevel(*pane->model()), TopLevel(analysis::BottomUpTree(expected)));
    pane->SetBottomUp(false);
    // The icicle draws the same tree: a click on a top-level box zooms into it, on the top row
    // back out.
    IcicleChart* icicle = pane->icicle();
    icicle->resize(800, 200);
    const uint32_t first = expected.children_of(0)[0];
    QCOMPARE(QString::fromStdString(pane->model()->tree()->name(first)), QString::fromStdString(expected.name(first)));
    const QRectF box = icicle->NodeRect(first);
    QVERIFY(!box.isEmpty());
    QVERIFY(icicle->TooltipAt(box.center()).contains("calls"));
    QTest::mouseClick(icicle, Qt::LeftButton, Qt::NoModifier, box.center().toPoint());
    QCOMPARE(icicle->focus(), first);
    QCOMPARE(icicle->NodeRect(first).width(), static_cast<qreal>(icicle->width()));
    QTest::mouseClick(icicle, Qt::LeftButton, Qt::NoModifier, QPoint(5, IcicleChart::kRowHeight / 2));
    QCOMPARE(icicle->focus(), 0u);
  }

  void CtrlClickBuildsAMultiSelection() {
    TimelineView* timeline = doc_->timeline();
    const trace::Trace& trace = doc_->document().trace();
    // Three slices wide enough to click, on any lane.
    std::vector<uint32_t> picked;
    for (uint32_t i = 0; i < trace.slices().size() && picked.size() < 3; ++i) {
      const QRect box = timeline->SliceRect(i);
      if (box.width() >= 6 && timeline->SliceAt(box.center()) == i) picked.push_back(i);
    }
    QCOMPARE(picked.size(), size_t{3});
    QSignalSpy changed(timeline, &TimelineView::selectionChanged);
    for (uint32_t slice : picked) {
      QTest::mouseClick(timeline, Qt::LeftButton, Qt::ControlModifier, timeline->SliceRect(slice).center());
    }
    QCOMPARE(timeline->selection().slices(), picked);
    QCOMPARE(changed.count(), 3);
    // Again on the second: out of the set.
    QTest::mouseClick(timeline, Qt::LeftButton, Qt::ControlModifier, timeline->SliceRect(picked[1]).center());
    QCOMPARE(timeline->selection().slices(), (std::vector<uint32_t>{picked[0], picked[2]}));
    QTest::mouseClick(timeline, Qt::LeftButton, Qt::ControlModifier, timeline->SliceRect(picked[1]).center());

    // The range pane: a row per name, its sums a recount of the slices (self: minus the slices
    // that lie inside each one on its lane, one level down).
    auto* range = doc_->pane<RangePane>();
    int64_t count = 0, total = 0, self = 0;
    for (const auto& row : range->range_model()->rows()) {
      count += row.count;
      total += row.total_ns;
      self += row.self_ns;
    }
    int64_t expected_total = 0, expected_self = 0;
    for (uint32_t slice : picked) {
      const trace::Slice& s = trace.slices()[slice];
      expected_total += s.dur_ns;
      int64_t inside = 0;
      for (const trace::Slice& other : trace.track_slices(s.track)) {
        if (other.depth == s.depth + 1 && other.start_ns >= s.start_ns && other.end_ns() <= s.end_ns() && !other.duplicate()) {
          inside += other.dur_ns;
        }
      }
      expected_self += s.dur_ns - inside;
    }
    QCOMPARE(count, int64_t{3});
    QCOMPARE(total, expected_total);
    QCOMPARE(self, expected_self);
    QVERIFY(range->range_caption().startsWith("3 selected slice"));

    // The call tree pane follows: the tree of those slices.
    auto* pane = doc_->pane<CallTreePane>();
    doc_->ShowPane(CallTreePane::kId);
    QTRY_VERIFY_WITH_TIMEOUT(!pane->pending() && pane->caption().contains("selected slice"), 10000);
    const analysis::CallTree expected = analysis::ComputeCallTree(trace, {.slices = picked});
    QCOMPARE(TopLevel(*pane->model()), TopLevel(expected));
    QCOMPARE(pane->model()->tree()->root().total_ns, expected.root().total_ns);

    // A plain click ends the multi-selection.
    QTest::mouseClick(timeline, Qt::LeftButton, Qt::NoModifier, timeline->SliceRect(picked[0]).center());
    QVERIFY(timeline->selection().slices().empty());
    QCOMPARE(timeline->selected_slice(), int64_t{picked[0]});
  }

  void AreaDragSelectsOnlyTheDraggedTracks() {
    TimelineView* timeline = doc_->timeline();
    const trace::Trace& trace = doc_->document().trace();
    // The CPU thread's lane: the track with the most nesting levels; its first and last rows.
    uint32_t lane = 0;
    for (uint32_t t = 0; t < trace.tracks().size(); ++t) {
      if (trace.track_slices(t).size() > trace.track_slices(lane).size()) lane = t;
    }
    int first_row = -1, last_row = -1;
    for (int row = 0; row < timeline->row_count(); ++row) {
      if (timeline->layout().rows()[static_cast<size_t>(row)].track != lane) continue;
      if (first_row < 0) first_row = row;
      last_row = row;
    }
    QVERIFY(first_row >= 0 && timeline->RowTop(last_row) < timeline->height());
    const QPoint from(kTimeAreaLeft + 50, timeline->RowTop(first_row) + TimelineView::kRowHeight / 2);
    const QPoint to(timeline->width() - kTimeAreaRight - 50, timeline->RowTop(last_row) + TimelineView::kRowHeight / 2);
    QTest::mousePress(timeline, Qt::LeftButton, Qt::ShiftModifier, from);
    QMouseEvent move(QEvent::MouseMove, to, timeline->mapToGlobal(to), Qt::NoButton, Qt::LeftButton, Qt::ShiftModifier);
    QApplication::sendEvent(timeline, &move);
    QTest::mouseRelease(timeline, Qt::LeftButton, Qt::ShiftModifier, to);

    QVERIFY(timeline->selection().area().has_value());
    const SelectedArea area = *timeline->selection().area();
    QCOMPARE(area.tracks, std::vector<uint32_t>{lane});
    // Only the lane's slices: a recount over the trace, and there is GPU work in the range too.
    int64_t on_lane = 0, elsewhere = 0;
    for (uint32_t i = 0; i < trace.slices().size(); ++i) {
      const trace::Slice& s = trace.slices()[i];
      if (s.duplicate() || s.end_ns() <= area.begin_ns || s.start_ns > area.end_ns) continue;
      (s.track == lane ? on_lane : elsewhere) += 1;
    }
    QVERIFY(elsewhere > 0);
    const std::vector<uint32_t> in_area = SlicesInArea(trace, area);
    QCOMPARE(static_cast<int64_t>(in_area.size()), on_lane);
    QVERIFY(std::all_of(in_area.begin(), in_area.end(), [&](uint32_t i) { return trace.slices()[i].track == lane; }));

    // The range pane: the op statistics of that lane in that range, per name; its counts add up to
    // the lane's slices there that are ops (annotations apart).
    auto* range = doc_->pane<RangePane>();
    QTRY_VERIFY_WITH_TIMEOUT(!range->range_stats_pending() && range->range_caption().contains("host busy"), 10000);
    analysis::OpStatsOptions options;
    options.begin_ns = area.begin_ns;
    options.end_ns = area.end_ns;
    options.tracks = {lane};
    const analysis::OpStats expected = analysis::ComputeOpStats(trace, options);
    QCOMPARE(range->range_model()->rows(), expected.by_node);
    int64_t ops = 0, counted = 0;
    for (uint32_t i : in_area) ops += !trace::IsAnnotationOrSync(trace.slices()[i].kind);
    for (const auto& row : range->range_model()->rows()) {
      counted += row.count;
      QCOMPARE(QString::fromStdString(row.where), QString("host"));
    }
    QCOMPARE(counted, ops);
    QVERIFY(range->range_caption().contains("on 1 track"));

    // The call tree pane follows the area.
    auto* pane = doc_->pane<CallTreePane>();
    doc_->ShowPane(CallTreePane::kId);
    QTRY_VERIFY_WITH_TIMEOUT(!pane->pending() && pane->caption().contains("on 1 track"), 10000);
    const analysis::CallTree tree =
        analysis::ComputeCallTree(trace, {.begin_ns = area.begin_ns, .end_ns = area.end_ns, .tracks = {lane}});
    QCOMPARE(TopLevel(*pane->model()), TopLevel(tree));
    QCOMPARE(pane->model()->tree()->slices, static_cast<int64_t>(in_area.size()));

    // The shading covers the lane's rows only: a row of another track inside the range keeps
    // its pixels when the area goes.
    const QImage with = timeline->grab().toImage();
    int other_row = -1;
    for (int row = 0; row < timeline->row_count(); ++row) {
      const uint32_t track = timeline->layout().rows()[static_cast<size_t>(row)].track;
      if (track != lane && trace.tracks()[track].parent >= 0 && timeline->RowTop(row) > TimelineView::kRulerHeight) {
        other_row = row;
        break;
      }
    }
    QVERIFY(other_row >= 0);
    timeline->ClearSelection();
    const QImage without = timeline->grab().toImage();
    auto changed_in_row = [&](int row) {
      int changed = 0;
      const int y = timeline->RowTop(row) + 1;
      for (int x = from.x() + 5; x < to.x() - 5; x += 3) changed += with.pixel(x, y) != without.pixel(x, y);
      return changed;
    };
    QVERIFY(changed_in_row(first_row) > 0);
    QCOMPARE(changed_in_row(other_row), 0);
  }

  // A build that runs out of memory (on the pane's worker, in parts on helper threads) is
  // reported as an error, not the end of the program: in a child process whose address space is
  // capped a little above what it holds, the pane's computation of a 2 M-slice trace's trees.
  void OutOfMemoryIsReportedNotFatal() {
#ifdef STEPSCOPE_TEST_SANITIZED
    QSKIP("an address space limit and a sanitizer's shadow memory do not mix");
#else
    const trace::Trace big = synthetic::MakeSyntheticTrace(2'000'000);
    // Within memory, the pane's trees are the analysis' own, built on the cores.
    const CallTreePane::Result fits = CallTreePane::ComputeTrees(doc_->document().trace(), {}, /*bottom_up=*/true);
    QVERIFY(fits.error.isEmpty() && fits.top_down && fits.bottom_up);
    QCOMPARE(fits.bottom_up->nodes.size(), analysis::BottomUpTree(*fits.top_down, 1).nodes.size());
    std::fflush(nullptr);
    const pid_t child = fork();
    QVERIFY(child >= 0);
    if (child == 0) {
      alarm(60);
      if (!stepscope::testing::CapAddressSpaceAboveCurrent(rlim_t{24} << 20)) _exit(3);
      const CallTreePane::Result result = CallTreePane::ComputeTrees(big, {.tracks = {0}, .threads = 2}, /*bottom_up=*/true);
      _exit(result.error.startsWith("Out of memory") && !result.top_down ? 0 : 1);
    }
    int status = 0;
    QCOMPARE(waitpid(child, &status, 0), child);
    QVERIFY2(WIFEXITED(status), qPrintable(QString("the child ended by signal %1").arg(WIFSIGNALED(status) ? WTERMSIG(status) : 0)));
    QCOMPARE(WEXITSTATUS(status), 0);
#endif
  }

 private:
  std::unique_ptr<MainWindow> window_;
  DocumentView* doc_ = nullptr;
};

QTEST_MAIN(CallTreeTest)
#include "call_tree_test.moc"
