// The window's layout offscreen, on the H100 ResNet-50 sample: the timeline takes most of the
// window, every pane is a dock listed in View > Panes, the dock layout is remembered across
// windows (in a temporary settings file, never the user's) and reset; the memory pane gives
// each allocator a readable chart with its byte and time axes.
#include <QDockWidget>
#include <QMenu>
#include <QMenuBar>
#include <QScrollArea>
#include <QSettings>
#include <QTabBar>
#include <QTemporaryDir>
#include <QtTest/QtTest>
#include <memory>
#include <utility>
#include <vector>

#include "base/units.h"
#include "profiler/analysis/memory_timeline.h"
#include "tests/test_util.h"
#include "tests/viewer/window_fixture.h"
#include "viewer/app/document_view.h"
#include "viewer/app/main_window.h"
#include "viewer/load/trace_loader.h"
#include "viewer/memory/byte_ticks.h"
#include "viewer/memory/memory_chart.h"
#include "viewer/memory/memory_panel.h"
#include "viewer/panes/memory_pane.h"
#include "viewer/panes/pane_table.h"
#include "viewer/timeline/timeline_view.h"

using namespace stepscope;
using namespace stepscope::viewer;

namespace {

QString ResNet() { return QString::fromStdString(testing::SamplePath("h100_resnet50_b32_step3.pb.gz")); }

// A window at the default size showing the sample, as `stepscope-view TRACE` opens it.
std::unique_ptr<MainWindow> OpenWindow(bool remember) {
  return stepscope::testing::OpenTraceWindow(ResNet(), {.size = MainWindow::kDefaultSize, .remember_layout = remember});
}

double TimelineShare(const MainWindow& window) {
  return static_cast<double>(window.current_document()->timeline()->height()) / window.height();
}

}  // namespace

class LayoutTest : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    QVERIFY(stepscope::testing::UseTemporarySettings(settings_dir_, "stepscope-view-layout-test"));
  }

  void TheTimelineTakesMostOfTheWindow() {
    auto window = OpenWindow(false);
    QCOMPARE(window->document_count(), 1);
    QCOMPARE(window->size(), MainWindow::kDefaultSize);
    QTRY_VERIFY2(TimelineShare(*window) >= 0.6,
                 qPrintable(QStringLiteral("timeline %1 px of %2").arg(window->current_document()->timeline()->height()).arg(window->height())));
    // And its width, beside the docks on the right.
    QVERIFY(window->current_document()->timeline()->width() >= 0.7 * window->width());
  }

  void EveryPaneIsADockListedInTheViewMenu() {
    auto window = OpenWindow(false);
    DocumentView* doc = window->current_document();
    QMenu* panes = nullptr;
    for (QAction* menu : window->menuBar()->actions()) {
      if (menu->menu() == nullptr) continue;
      for (QAction* item : menu->menu()->actions()) {
        if (item->menu() != nullptr && item->text().remove('&') == "Panes") panes = item->menu();
      }
    }
    QVERIFY(panes != nullptr);
    emit panes->aboutToShow();
    QCOMPARE(panes->actions().size(), static_cast<int>(PaneTable().size()));
    for (const PaneSpec& spec : PaneTable()) {
      QDockWidget* dock = doc->dock(spec.id);
      QVERIFY(dock->features() & QDockWidget::DockWidgetClosable);
      QVERIFY(dock->features() & QDockWidget::DockWidgetMovable);
      QVERIFY(panes->actions().contains(dock->toggleViewAction()));
      QVERIFY(dock->toggleViewAction()->isCheckable());
      QVERIFY(dock->toggleViewAction()->isChecked());
      QVERIFY(!dock->isFloating());
    }
    // Unchecking the entry hides the dock; checking it shows it again.
    QAction* memory = doc->dock(kMemoryPane)->toggleViewAction();
    memory->trigger();
    QVERIFY(doc->dock(kMemoryPane)->isHidden());
    memory->trigger();
    QVERIFY(!doc->dock(kMemoryPane)->isHidden());
  }

  // Of the panes tabbed together, only the one whose tab is current is in front (on screen),
  // whichever way it got there: ShowPane, a click on a tab, the tab bar's current index; the
  // others are behind it though Qt may still call them visible.
  void OnlyTheCurrentTabsPaneIsInFront() {
    auto window = OpenWindow(false);
    DocumentView* doc = window->current_document();
    auto groups = [doc] {
      std::vector<std::pair<QTabBar*, std::vector<PaneId>>> out;
      for (QTabBar* bar : doc->findChildren<QTabBar*>()) {
        if (!bar->isVisible() || bar->parentWidget() != doc) continue;
        std::vector<PaneId> panes;
        for (int i = 0; i < bar->count(); ++i) {
          for (const PaneSpec& spec : PaneTable()) {
            if (doc->dock(spec.id)->windowTitle() == bar->tabText(i)) panes.push_back(spec.id);
          }
        }
        out.emplace_back(bar, panes);
      }
      return out;
    };
    auto check = [&](const char* when) {
      for (const auto& [bar, panes] : groups()) {
        for (int i = 0; i < static_cast<int>(panes.size()); ++i) {
          QVERIFY2(doc->PaneInFront(panes[static_cast<size_t>(i)]) == (i == bar->currentIndex()),
                   qPrintable(QString("%1: %2 (tab %3, current %4)").arg(when, bar->tabText(i)).arg(i).arg(bar->currentIndex())));
        }
      }
    };
    QVERIFY(!groups().empty());
    check("as opened");
    doc->ShowPane(kMemoryPane);
    QApplication::processEvents();
    QVERIFY(doc->PaneInFront(kMemoryPane));
    QVERIFY(!doc->PaneInFront(kStatsPane));
    check("after ShowPane(Memory)");
    for (const auto& [bar, panes] : groups()) {
      for (int i = 0; i < bar->count(); ++i) {
        bar->setCurrentIndex(i);  // as a click on the tab does
        QApplication::processEvents();
        check(qPrintable("after choosing the tab " + bar->tabText(i)));
      }
    }
  }

  // Docked panes have no title bar: a right click on a pane's tab offers to hide it.
  void ARightClickOnATabHidesItsPane() {
    auto window = OpenWindow(false);
    DocumentView* doc = window->current_document();
    QTabBar* tabs = nullptr;
    int memory_tab = -1;
    for (QTabBar* bar : doc->findChildren<QTabBar*>()) {
      for (int i = 0; i < bar->count(); ++i) {
        if (bar->isVisible() && bar->tabText(i) == "Memory") {
          tabs = bar;
          memory_tab = i;
        }
      }
    }
    QVERIFY(tabs != nullptr);
    const QPoint at = tabs->tabRect(memory_tab).center();
    QContextMenuEvent click(QContextMenuEvent::Mouse, at, tabs->mapToGlobal(at));
    QApplication::sendEvent(tabs, &click);
    auto* menu = qobject_cast<QMenu*>(QApplication::activePopupWidget());
    QVERIFY(menu != nullptr);
    QAction* hide = nullptr;
    for (QAction* action : menu->actions()) {
      if (action->text() == "Hide Memory") hide = action;
    }
    QVERIFY(hide != nullptr);
    // The rest of the menu: every pane with its check box.
    QVERIFY(menu->actions().contains(doc->dock(kStatsPane)->toggleViewAction()));
    hide->trigger();
    menu->close();
    QVERIFY(doc->dock(kMemoryPane)->isHidden());
    QVERIFY(!doc->dock(kMemoryPane)->toggleViewAction()->isChecked());
  }

  void AHiddenDockStaysHiddenInTheNextWindow() {
    {
      auto window = OpenWindow(true);
      window->current_document()->dock(kMemoryPane)->toggleViewAction()->trigger();
      window->resize(1500, 950);
      QApplication::processEvents();
      window->close();  // saves the layout
    }
    auto window = OpenWindow(true);
    DocumentView* doc = window->current_document();
    QVERIFY(doc->dock(kMemoryPane)->isHidden());
    QVERIFY(!doc->dock(kStatsPane)->isHidden());
    QVERIFY(!window->current_document()->dock(kMemoryPane)->toggleViewAction()->isChecked());
    // The window's own size came back too, once the window restores it (SetRememberLayout).
    MainWindow restored(/*interactive=*/false);
    restored.SetRememberLayout(true);
    QCOMPARE(restored.size(), QSize(1500, 950));

    // A window that does not remember starts from the defaults.
    auto fresh = OpenWindow(false);
    QVERIFY(!fresh->current_document()->dock(kMemoryPane)->isHidden());
  }

  void ResetLayoutRestoresTheDefaults() {
    {
      auto window = OpenWindow(true);
      window->current_document()->dock(kMemoryPane)->toggleViewAction()->trigger();
      window->current_document()->dock(kStatsPane)->setFloating(true);
      window->close();
    }
    // As `stepscope-view --reset-layout` does before it opens the window.
    MainWindow::ForgetSavedLayout();
    auto window = OpenWindow(true);
    DocumentView* doc = window->current_document();
    QVERIFY(!doc->dock(kMemoryPane)->isHidden());
    QVERIFY(!doc->dock(kStatsPane)->isFloating());
    QTRY_VERIFY(TimelineShare(*window) >= 0.6);

    // View > Reset Layout, in a window whose docks were moved.
    doc->dock(kMemoryPane)->toggleViewAction()->trigger();
    doc->dock(kStatsPane)->setFloating(true);
    doc->resizeDocks({doc->dock(kStepsPane)}, {700}, Qt::Vertical);
    QApplication::processEvents();
    QVERIFY(TimelineShare(*window) < 0.6);
    window->ResetLayout();
    QVERIFY(!doc->dock(kMemoryPane)->isHidden());
    QVERIFY(!doc->dock(kStatsPane)->isFloating());
    QTRY_VERIFY(TimelineShare(*window) >= 0.6);
    QVERIFY(QSettings().value("layout/docks").isNull());
  }

  // The sample's two allocators (the GPU's and cuda_host_bfc) each get a chart at least
  // MemoryChart::kMinHeight tall, its byte ticks up to its peak and its time ticks.
  void EveryAllocatorHasAReadableChart() {
    auto window = OpenWindow(false);
    DocumentView* doc = window->current_document();
    QVERIFY(doc->analysed());
    doc->ShowPane(kMemoryPane);
    QApplication::processEvents();
    MemoryPanel* memory = doc->pane<MemoryPane>()->memory_panel();
    const auto expected = analysis::ComputeMemoryTimelines(doc->document().trace());
    QCOMPARE(memory->chart_count(), static_cast<int>(expected.size()));
    QCOMPARE(memory->chart_count(), 2);
    bool host_allocator = false;
    for (int i = 0; i < memory->chart_count(); ++i) {
      MemoryChart* chart = memory->chart(i);
      const analysis::AllocatorTimeline& timeline = expected[static_cast<size_t>(i)];
      host_allocator |= timeline.allocator == "cuda_host_bfc";
      QVERIFY2(chart->height() >= MemoryChart::kMinHeight, qPrintable(QString::number(chart->height())));
      QVERIFY(chart->height() >= 120);
      QVERIFY(chart->width() >= 400);
      // The title names the allocator, its peak and the curve's origin, and fits the chart.
      const QString title = chart->title();
      QVERIFY(title.contains(QString::fromStdString(timeline.allocator)));
      QVERIFY(title.contains(QString::fromStdString(FormatBytes(timeline.peak_bytes))));
      QVERIFY(!timeline.origin.empty() || timeline.derived_from_outputs);
      QVERIFY(chart->fontMetrics().horizontalAdvance(title) <= chart->width() - 12);
      // Byte ticks from 0 up the plot, labelled as byte counts; the top one near the peak.
      const auto y_ticks = chart->YTicks();
      QVERIFY(y_ticks.size() >= 3);
      QCOMPARE(y_ticks.front().label, QStringLiteral("0 B"));
      const QRect plot = chart->PlotRect();
      QVERIFY(plot.height() >= 60);
      for (size_t t = 1; t < y_ticks.size(); ++t) {
        QVERIFY(y_ticks[t].at < y_ticks[t - 1].at);
        QVERIFY(y_ticks[t].at >= plot.top() - 0.5);
        QVERIFY(!y_ticks[t].label.isEmpty());
      }
      // Time ticks across the plot, in the ruler's units.
      const auto x_ticks = chart->XTicks();
      QVERIFY(x_ticks.size() >= 3);
      for (const auto& tick : x_ticks) {
        QVERIFY(tick.at >= plot.left() - 0.5 && tick.at <= plot.right() + 0.5);
        QVERIFY(tick.label.contains(QRegularExpression("^-?[0-9.]+ (s|ms|us|ns)$")));
      }
      // Two charts fit the pane at the default size without scrolling: each wholly on screen.
      QWidget* viewport = memory->charts_area()->viewport();
      QVERIFY(viewport->rect().contains(QRect(chart->mapTo(viewport, QPoint(0, 0)), chart->size())));
    }
    QVERIFY(host_allocator);
  }

  void ByteTicksAreRoundAndBelowTheTop() {
    const auto gib = ByteTicks(int64_t{3} << 30 | 12345, 4);
    QCOMPARE(gib.size(), size_t{4});
    QCOMPARE(gib[1].bytes, int64_t{1} << 30);
    QCOMPARE(gib[3].label, std::string("3.00 GiB"));
    const auto mib = ByteTicks(int64_t{700} << 20, 4);
    QCOMPARE(mib[1].bytes, int64_t{200} << 20);
    QCOMPARE(mib.back().bytes, int64_t{600} << 20);
    QCOMPARE(ByteTicks(0, 4).size(), size_t{1});
    QCOMPARE(ByteTicks(3, 4).size(), size_t{4});  // 0, 1, 2, 3 B
    const auto binary = ByteTicks(int64_t{8} << 20, 3);  // 0, 4, 8 MiB rather than 0, 5 MiB
    QCOMPARE(binary.size(), size_t{3});
    QCOMPARE(binary[2].label, std::string("8.00 MiB"));
  }

 private:
  QTemporaryDir settings_dir_;
};

QTEST_MAIN(LayoutTest)
#include "layout_test.moc"
