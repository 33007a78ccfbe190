// The steps pane's overview: a stacked bar per step whose parts are the analysis's split, the slow
// step outlined and named in the recommendations, and a click on a bar zooming the timeline to
// its step.
#include <QtTest/QtTest>
#include <fstream>

#include "profiler/analysis/step_breakdown.h"
#include "tests/test_util.h"
#include "viewer/app/document_view.h"
#include "viewer/app/main_window.h"
#include "viewer/load/trace_loader.h"
#include "viewer/panes/step_overview_chart.h"
#include "viewer/panes/steps_pane.h"
#include "viewer/timeline/time_axis.h"

using namespace stepscope;
using namespace stepscope::viewer;

namespace {

int CountColor(const QImage& image, QRgb color, QRect area) {
  int count = 0;
  for (int y = std::max(0, area.top()); y <= std::min(image.height() - 1, area.bottom()); ++y) {
    for (int x = std::max(0, area.left()); x <= std::min(image.width() - 1, area.right()); ++x) {
      count += (image.pixel(x, y) & 0xffffff) == (color & 0xffffff);
    }
  }
  return count;
}

}  // namespace

class StepsOverviewTest : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    scratch_ = QString::fromStdString(testing::ScratchDir("steps_overview").string());
    // Six ProfilerStep#N spans of 1 ms (a DataLoader annotation of 100 us, then an aten::mm);
    // step 4's DataLoader takes 2.1 ms, so the step lasts 3 ms.
    path_ = scratch_ + "/steps.json";
    std::ofstream out(path_.toStdString());
    out << "{\"traceEvents\": [\n";
    double t = 1000;
    for (int step = 1; step <= 6; ++step) {
      const double input = step == 4 ? 2100 : 100, length = input + 900;
      out << (step > 1 ? ",\n" : "") << "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#" << step
          << "\", \"pid\": 1, \"tid\": 1, \"ts\": " << t << ", \"dur\": " << length << "},\n"
          << "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__\""
          << ", \"pid\": 1, \"tid\": 1, \"ts\": " << t << ", \"dur\": " << input << "},\n"
          << "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"pid\": 1, \"tid\": 1, \"ts\": " << t + input
          << ", \"dur\": 800}";
      t += length;
    }
    out << "\n]}\n";
    out.close();
    window_ = std::make_unique<MainWindow>(/*interactive=*/false);
    window_->resize(1400, 1000);
    window_->show();
    window_->Open({path_});
    window_->loader()->WaitForIdle();
    QCOMPARE(window_->document_count(), 1);
    view_ = window_->document(0);
    QVERIFY(view_->analysed());
    view_->ShowPane(StepsPane::kId);
    QApplication::processEvents();
  }

  void BarsAreTheAnalysisSplitAndTheSlowStepIsMarked() {
    StepOverviewChart* chart = view_->pane<StepsPane>()->overview();
    const analysis::StepBreakdown expected = analysis::ComputeStepBreakdown(view_->document().trace());
    const analysis::StepBreakdown& shown = chart->breakdown();
    QCOMPARE(shown.steps.size(), size_t{6});
    for (size_t i = 0; i < 6; ++i) {
      for (int p = 0; p < analysis::kStepParts; ++p) QCOMPARE(shown.steps[i].part_ns[p], expected.steps[i].part_ns[p]);
      QCOMPARE(shown.steps[i].slow, i == 3);
    }
    // Step 4: 2.1 ms of its 3 ms wait for data; the others 100 us of 1 ms.
    QCOMPARE(shown.steps[3].part(analysis::StepPart::kInput), int64_t{2'100'000});
    QCOMPARE(shown.steps[0].part(analysis::StepPart::kInput), int64_t{100'000});
    QCOMPARE(shown.steps[3].part(analysis::StepPart::kCompute), int64_t{800'000});

    chart->resize(600, 240);
    QImage image(chart->size(), QImage::Format_RGB32);
    chart->render(&image);
    // The slow bar is three times as tall as the others, outlined red; its input part is red-brown.
    const QRectF slow = chart->BarRect(3), usual = chart->BarRect(2);
    QVERIFY2(std::abs(slow.height() - 3 * usual.height()) < 2, qPrintable(QString::number(slow.height())));
    QVERIFY(CountColor(image, StepOverviewChart::kSlowColor, slow.toAlignedRect().adjusted(-3, -3, 3, 3)) > 20);
    QCOMPARE(CountColor(image, StepOverviewChart::kSlowColor, usual.toAlignedRect().adjusted(-3, 0, 3, 0)), 0);
    const QRgb input = StepOverviewChart::kPartColors[static_cast<int>(analysis::StepPart::kInput)];
    const int input_px = CountColor(image, input, slow.toAlignedRect());
    const double expected_px = slow.width() * slow.height() * 0.7;  // 2.1 of 3 ms
    QVERIFY2(std::abs(input_px - expected_px) < expected_px * 0.15, qPrintable(QString::number(input_px)));

    const QString lines = view_->pane<StepsPane>()->recommendations();
    QVERIFY2(lines.contains("slow step 4: input-bound: 70 % of the step waits for data"), qPrintable(lines));
  }

  void ClickingABarZoomsToItsStep() {
    StepOverviewChart* chart = view_->pane<StepsPane>()->overview();
    chart->resize(600, 240);
    QTest::mouseClick(chart, Qt::LeftButton, {}, chart->BarRect(3).center().toPoint());
    const analysis::StepSplit& s = chart->breakdown().steps[3];
    const double begin = view_->axis()->begin_ns(), end = view_->axis()->end_ns();
    QVERIFY2(begin <= static_cast<double>(s.begin_ns) && begin > static_cast<double>(s.begin_ns) - 0.1e6,
             qPrintable(QString::number(begin)));
    QVERIFY2(end >= static_cast<double>(s.end_ns) && end < static_cast<double>(s.end_ns) + 0.1e6,
             qPrintable(QString::number(end)));
  }

  void cleanupTestCase() { window_.reset(); }

 private:
  QString scratch_, path_;
  std::unique_ptr<MainWindow> window_;
  DocumentView* view_ = nullptr;
};

QTEST_MAIN(StepsOverviewTest)
#include "steps_overview_test.moc"
