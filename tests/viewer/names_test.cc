// Names as the viewer shows them, on the H100 ResNet-50 step: slice labels cut in the middle keep
// the op type at the end of a TensorFlow scope, kernels show short names, the View menu's "Full
// Kernel Names" switches the timeline and the statistics table, and a lane header keeps its
// device and stream.
#include <QAction>
#include <QMenuBar>
#include <QSettings>
#include <QStandardPaths>
#include <QtTest/QtTest>

#include "base/display_names.h"
#include "tests/test_util.h"
#include "viewer/app/document_view.h"
#include "viewer/app/main_window.h"
#include "viewer/load/document.h"
#include "viewer/load/trace_loader.h"
#include "viewer/models/op_stats_model.h"
#include "viewer/panes/stats_pane.h"
#include "viewer/timeline/elide_text.h"
#include "viewer/timeline/timeline_view.h"

using namespace stepscope;
using namespace stepscope::viewer;

namespace {

QAction* FindAction(QMenuBar* bar, const QString& text) {
  for (QAction* menu : bar->actions()) {
    if (menu->menu() == nullptr) continue;
    for (QAction* action : menu->menu()->actions()) {
      if (action->text().remove('&') == text) return action;
    }
  }
  return nullptr;
}

}  // namespace

class NamesTest : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);  // settings go to a test location
    QSettings().remove("view/full_kernel_names");
    window_ = std::make_unique<MainWindow>(/*interactive=*/false);
    window_->resize(1600, 1000);
    window_->show();
    window_->Open({QString::fromStdString(testing::SamplePath("h100_resnet50_b32_step3.pb.gz"))});
    window_->loader()->WaitForIdle();
    // The PyTorch profiler's AlexNet step, whose kernel slices carry demangled C++ names.
    window_->Open({QString::fromStdString(testing::DataPath("pytorch_kineto_alexnet_train.json.gz"))});
    window_->loader()->WaitForIdle();
    QCOMPARE(window_->document_count(), 2);
    doc_ = window_->document(0);
    kineto_ = window_->document(1);
    QVERIFY(doc_->analysed());
    QVERIFY(kineto_->analysed());
    QApplication::processEvents();
  }

  void cleanupTestCase() { window_.reset(); }

  // "gradient_tape/resnet50/conv2_block1_1_conv/Conv2D/Conv2DBackpropInput" in a box 30
  // characters wide reads "gradient_tape/…/Conv2DBackpropInput", not "gradient_tape/resnet50/c…".
  void NarrowLabelKeepsTheOpType() {
    const trace::Trace& trace = doc_->document().trace();
    int checked = 0;
    for (const trace::Slice& s : trace.slices()) {
      const std::string name(trace.str(trace.slice_name(s)));
      if (!name.starts_with("gradient_tape/resnet50/") || std::count(name.begin(), name.end(), '/') < 3) continue;
      const std::string last = name.substr(name.rfind('/') + 1);
      if (last.size() > 20) continue;
      const QString label = doc_->timeline()->SliceLabel(trace.slice_name(s), 30);
      QVERIFY2(label.endsWith(QString::fromStdString("/" + last)), qPrintable(label));
      QVERIFY2(label.size() <= 30, qPrintable(label));
      QVERIFY(label.contains(QChar(0x2026)));
      if (++checked == 50) break;
    }
    QVERIFY(checked > 10);
  }

  // A kernel's label is its short name, its whole name once the View menu says so (and back).
  void ToggleSwitchesTimelineAndTable() {
    const trace::Trace& trace = kineto_->document().trace();
    trace::StringId kernel = 0;
    bool found = false;
    std::string full;
    for (const trace::Slice& s : trace.slices()) {
      if (s.kind != trace::SliceKind::kKernel) continue;
      full = std::string(trace.str(trace.slice_name(s)));
      if (full.starts_with("void at::native::vectorized_elementwise_kernel<4, ")) {
        kernel = trace.slice_name(s);
        found = true;
        break;
      }
    }
    QVERIFY2(found, "the trace has PyTorch's elementwise kernels");
    TimelineView* timeline = kineto_->timeline();
    const QString short_name = QStringLiteral("vectorized_elementwise_kernel<…>");
    QCOMPARE(timeline->SliceLabel(kernel, 500), short_name);
    QCOMPARE(timeline->SliceLabel(kernel, 20), QStringLiteral("vector…ise_kernel<…>"));

    OpStatsModel* model = kineto_->pane<StatsPane>()->stats_model();
    int row = -1;
    for (int r = 0; r < model->rowCount(); ++r) {
      if (model->rows()[static_cast<size_t>(r)].name == full) row = r;
    }
    QVERIFY2(row >= 0, "the kernel has a row in the statistics table");
    const QModelIndex cell = model->index(row, OpStatsModel::kName);
    QCOMPARE(cell.data().toString(), short_name);
    QCOMPARE(cell.data(Qt::ToolTipRole).toString(), QString::fromStdString(full));

    QAction* toggle = FindAction(window_->menuBar(), "Full Kernel Names");
    QVERIFY(toggle != nullptr);
    QVERIFY(!toggle->isChecked());
    toggle->trigger();
    QVERIFY(timeline->full_names());
    QCOMPARE(timeline->SliceLabel(kernel, 5000), QString::fromStdString(full));
    QCOMPARE(cell.data().toString(), QString::fromStdString(full));
    QCOMPARE(cell.data(Qt::ToolTipRole).toString(), QString::fromStdString(full));
    QVERIFY(doc_->timeline()->full_names());  // every open document
    {
      // Remembered: the next window starts with whole names.
      MainWindow next(/*interactive=*/false);
      QAction* next_toggle = FindAction(next.menuBar(), "Full Kernel Names");
      QVERIFY(next_toggle != nullptr && next_toggle->isChecked());
    }
    toggle->trigger();
    QCOMPARE(timeline->SliceLabel(kernel, 500), short_name);
    QCOMPARE(cell.data().toString(), short_name);
  }

  // The pixel variant keeps a lane's device and stream where Qt's middle elision cut them.
  void LaneNameKeepsDeviceAndStream() {
    const QFontMetrics metrics(window_->font());
    const QString lane = "/job:localhost/replica:0/task:0/device:GPU:0 stream:7";
    const int width = metrics.horizontalAdvance("…/device:GPU:0 stream:7") + 2;
    const QString shown = ElideMiddleToWidth(metrics, lane, width);
    QVERIFY2(shown.endsWith("/device:GPU:0 stream:7"), qPrintable(shown));
    QVERIFY(metrics.horizontalAdvance(shown) <= width);
    QCOMPARE(ElideMiddleToWidth(metrics, lane, metrics.horizontalAdvance(lane)), lane);
  }

 private:
  std::unique_ptr<MainWindow> window_;
  DocumentView* doc_ = nullptr;
  DocumentView* kineto_ = nullptr;
};

QTEST_MAIN(NamesTest)
#include "names_test.moc"
