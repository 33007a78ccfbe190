// The roofline pane on the hand-made H100 step (tests/data/efficiency/README.md, every figure
// worked out on paper): its caption gives the MFU and the peak of `stepscope efficiency`, its
// points sit where the figures put them, and a click on a point selects that op type's longest op.
#include <QStandardPaths>
#include <QTableWidget>
#include <QtTest/QtTest>

#include "tests/test_util.h"
#include "viewer/app/document_view.h"
#include "viewer/app/main_window.h"
#include "viewer/load/trace_loader.h"
#include "viewer/panes/roofline_chart.h"
#include "viewer/panes/roofline_pane.h"
#include "viewer/timeline/timeline_view.h"

using namespace stepscope;
using namespace stepscope::viewer;

class RooflinePaneTest : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    window_ = std::make_unique<MainWindow>(/*interactive=*/false);
    window_->resize(1600, 1000);
    window_->show();
    window_->Open({QString::fromStdString(testing::DataPath("efficiency/h100_mm_step.json"))});
    window_->loader()->WaitForIdle();
    QCOMPARE(window_->document_count(), 1);
    view_ = window_->document(0);
    QVERIFY(view_->analysed());
    QApplication::processEvents();
  }

  void cleanupTestCase() { window_.reset(); }

  void CaptionGivesTheMfuAndThePeak() {
    RooflinePane* pane = view_->pane<RooflinePane>();
    // 17,179,869,184 model FLOPs in 1 ms on 67 TFLOP/s (fp32, H100 SXM): 25.6 %.
    QVERIFY2(pane->caption().startsWith("MFU 25.6% over 1 steps"), qPrintable(pane->caption()));
    QVERIFY2(pane->caption().contains("Peak 67 TFLOP/s fp32, 3.35 TB/s"), qPrintable(pane->caption()));
    QVERIFY(pane->caption().contains("NVIDIA H100 80GB HBM3"));
    QTableWidget* table = pane->table();
    QCOMPARE(table->rowCount(), 2);
    QCOMPARE(table->item(0, RooflinePane::kRoofOpType)->text(), QString("aten::mm"));
    QCOMPARE(table->item(0, RooflinePane::kRoofBound)->text(), QString("compute"));
    QCOMPARE(table->item(0, RooflinePane::kRoofShare)->text(), QString("64.1%"));
    QCOMPARE(table->item(1, RooflinePane::kRoofOpType)->text(), QString("aten::relu"));
    QCOMPARE(table->item(1, RooflinePane::kRoofBound)->text(), QString("memory"));
  }

  void PointsSitUnderTheRoofsAndAClickSelectsTheOp() {
    RooflinePane* pane = view_->pane<RooflinePane>();
    view_->ShowPane(DocumentView::kRooflinePane);
    QApplication::processEvents();
    RooflineChart* chart = pane->chart();
    QCOMPARE(chart->points().size(), size_t{2});
    QCOMPARE(chart->points()[0].label, QString("aten::mm"));
    QCOMPARE(chart->points()[0].flops_per_s, 2.0 * 1024 * 2048 * 4096 / 400e-6);
    // The matmul (292.6 FLOP/B, 42.9 TFLOP/s) is right of and above the relu (0.125, 0.21 TFLOP/s).
    const QPointF mm = chart->PointPosition(0), relu = chart->PointPosition(1);
    QVERIFY(mm.x() > relu.x());
    QVERIFY(mm.y() < relu.y());
    QCOMPARE(chart->PointAt(mm), std::optional<size_t>(0));
    QVERIFY(!chart->PointAt(QPointF(-100, -100)).has_value());
    QTest::mouseClick(chart, Qt::LeftButton, Qt::NoModifier, mm.toPoint());
    const int64_t selected = view_->timeline()->selected_slice();
    QVERIFY(selected >= 0);
    const trace::Trace& trace = view_->document().trace();
    QCOMPARE(std::string(trace.str(trace.slice_name(trace.slices()[selected]))), std::string("aten::mm"));
  }

 private:
  std::unique_ptr<MainWindow> window_;
  DocumentView* view_ = nullptr;
};

QTEST_MAIN(RooflinePaneTest)
#include "roofline_pane_test.moc"
