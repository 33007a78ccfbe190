// The statistics pane's MFU and bus-bandwidth summary against `stepscope efficiency --json` on
// the same files: the hand-made H100 step (MFU against a datasheet peak) and a two-device trainer
// step with all-reduces (bus bandwidth per collective).
#include <QStandardPaths>
#include <QtTest/QtTest>
#include <algorithm>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "base/units.h"
#include "profiler/cli/cli.h"
#include "tests/test_util.h"
#include "viewer/app/document_view.h"
#include "viewer/app/main_window.h"
#include "viewer/load/trace_loader.h"
#include "viewer/panes/efficiency_summary.h"
#include "viewer/panes/stats_pane.h"

using namespace stepscope;
using namespace stepscope::viewer;

namespace {

nlohmann::json EfficiencyJson(const std::string& path) {
  std::ostringstream out, err;
  const int code = cli::RunCli({"efficiency", "--json", path}, out, err);
  if (code != 0) qFatal("stepscope efficiency %s: %s", path.c_str(), err.str().c_str());
  return nlohmann::json::parse(out.str());
}

}  // namespace

class EfficiencySummaryTest : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() { QStandardPaths::setTestModeEnabled(true); }

  void MfuAndItsPeakAsTheCli() {
    const std::string path = testing::DataPath("efficiency/h100_mm_step.json");
    const QString summary = SummaryOf(path);
    const nlohmann::json cli = EfficiencyJson(path);
    const double mfu = cli.at("total").at("mfu").get<double>();
    QVERIFY2(summary.startsWith("MFU " + QString::number(100 * mfu, 'f', 1) + "% over 1 steps against 67 TFLOP/s fp32 ("),
             qPrintable(summary));
    // 17,179,869,184 model FLOPs in 1 ms on 67 TFLOP/s: 25.6 % (tests/data/efficiency/README.md).
    QVERIFY(summary.startsWith("MFU 25.6%"));
    QVERIFY2(summary.contains(QString::fromStdString(cli.at("peak").at("source").get<std::string>())), qPrintable(summary));
    QVERIFY(!summary.contains("Bus bandwidth"));  // no collectives
  }

  void BusBandwidthOfTheLongestCollectivesAsTheCli() {
    const std::string path = testing::DataPath("collectives/lstm_small_cpu2_fusion_step3.pb.gz");
    const QString summary = SummaryOf(path);
    const nlohmann::json cli = EfficiencyJson(path);
    // No device recorded: no MFU, and the summary says why as the CLI does.
    QVERIFY(cli.at("total").at("mfu").is_null());
    QVERIFY2(summary.startsWith("MFU unknown, peak unknown: " +
                                QString::fromStdString(cli.at("peak").at("source").get<std::string>())),
             qPrintable(summary));
    std::vector<nlohmann::json> rows;
    for (const nlohmann::json& row : cli.at("collectives")) {
      if (!row.at("busbw_bytes_per_s").is_number()) continue;
      // Both devices of the process record each all-reduce: one figure in the summary.
      auto same = [&](const nlohmann::json& kept) {
        for (const char* key : {"name", "bytes", "count", "time_ns", "busbw_bytes_per_s"}) {
          if (kept.at(key) != row.at(key)) return false;
        }
        return true;
      };
      if (std::none_of(rows.begin(), rows.end(), same)) rows.push_back(row);
    }
    QCOMPARE(rows.size(), size_t{4});  // 39.1 KiB, 1.22 MiB, 1.23 MiB, 7.63 MiB
    QVERIFY(rows.size() > kSummaryCollectives);
    std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
      return a.at("time_ns").template get<int64_t>() > b.at("time_ns").template get<int64_t>();
    });
    for (size_t i = 0; i < rows.size(); ++i) {
      const QString rate = BandwidthText(rows[i].at("busbw_bytes_per_s").get<double>());
      const QString figure = QString("%1 %2 x%3 %4")
                                 .arg(QString::fromStdString(rows[i].at("name").get<std::string>()),
                                      QString::fromStdString(FormatBytes(rows[i].at("bytes").get<int64_t>())))
                                 .arg(rows[i].at("count").get<int64_t>())
                                 .arg(rate);
      // The longest three are named with the CLI's figures, the rest counted.
      QCOMPARE(summary.contains(figure), i < kSummaryCollectives);
    }
    QVERIFY2(summary.contains(QString("; %1 more in stepscope collectives").arg(rows.size() - kSummaryCollectives)),
             qPrintable(summary));
    // The longest all-reduce of this step: 7.63 MiB in 4.010 ms, ring of 2: busbw = algbw = 2.00 GB/s.
    QVERIFY2(summary.contains("all_reduce 7.63 MiB x1 2.00 GB/s"), qPrintable(summary));
  }

 private:
  QString SummaryOf(const std::string& path) {
    MainWindow window(/*interactive=*/false);
    window.Open({QString::fromStdString(path)});
    window.loader()->WaitForIdle();
    if (window.document_count() != 1) qFatal("%s did not open", path.c_str());
    DocumentView* view = window.document(0);
    if (!view->analysed()) qFatal("%s was not analysed", path.c_str());
    QApplication::processEvents();
    return view->pane<StatsPane>()->efficiency_summary();
  }
};

QTEST_MAIN(EfficiencySummaryTest)
#include "efficiency_summary_test.moc"
