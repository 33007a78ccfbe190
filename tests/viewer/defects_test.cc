// The viewer's states and edges, offscreen on real traces: every format the reader table has in
// the welcome text, --help and the file dialogs; Export to Perfetto protobuf read back; panes
// with nothing to show saying what would fill them; flows whose other end is off-screen;
// returning from the search box to the timeline with the matches marked; the dark theme and the
// help overlay.
#include <QAbstractItemView>
#include <QLabel>
#include <QLineEdit>
#include <QProcess>
#include <QSettings>
#include <QStandardPaths>
#include <QTableView>
#include <QTableWidget>
#include <QtTest/QtTest>
#include <filesystem>

#include "profiler/formats/reader.h"
#include "profiler/formats/writer.h"
#include "profiler/testing/synthetic_trace.h"
#include "tests/test_util.h"
#include "viewer/app/document_view.h"
#include "viewer/app/formats_text.h"
#include "viewer/app/main_window.h"
#include "viewer/app/theme.h"
#include "viewer/load/trace_loader.h"
#include "viewer/memory/memory_panel.h"
#include "viewer/panes/details_pane.h"
#include "viewer/panes/empty_hint.h"
#include "viewer/panes/memory_pane.h"
#include "viewer/panes/rank_bars.h"
#include "viewer/panes/search_pane.h"
#include "viewer/panes/stragglers_pane.h"
#include "viewer/models/search_model.h"
#include "viewer/timeline/flow_painter.h"
#include "viewer/timeline/help_overlay.h"
#include "viewer/timeline/overview_strip.h"
#include "viewer/timeline/search_marks.h"
#include "viewer/timeline/time_axis.h"
#include "viewer/timeline/timeline_colors.h"
#include "viewer/timeline/timeline_view.h"

using namespace stepscope;
using namespace stepscope::viewer;

namespace {

QString Sample() { return QString::fromStdString(testing::DataPath("ptb_lstm_tf1_gpu_step.pbtxt")); }

// Every file name the reader table lists (".pb", ".pbtxt.gz", ...).
QStringList ReaderEndings() {
  QStringList endings;
  for (const trace::TraceReaderEntry& entry : trace::TraceReaders()) {
    QString extensions = QString::fromUtf8(entry.extensions.data(), static_cast<qsizetype>(entry.extensions.size()));
    const bool gzip = extensions.endsWith("(.gz)");
    extensions.remove("(.gz)");
    for (const QString& ending : extensions.split(' ', Qt::SkipEmptyParts)) {
      endings << ending;
      if (gzip) endings << ending + ".gz";
    }
  }
  return endings;
}

}  // namespace

class DefectsTest : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    scratch_ = QString::fromStdString(testing::ScratchDir("viewer_defects").string());
    // The theme is remembered in QSettings: here in a file of the scratch directory.
    QCoreApplication::setOrganizationName(QStringLiteral("stepscope-test"));
    QSettings::setDefaultFormat(QSettings::IniFormat);
    QSettings::setPath(QSettings::IniFormat, QSettings::UserScope, scratch_ + "/settings");
    window_ = std::make_unique<MainWindow>(/*interactive=*/false);
    window_->resize(1400, 900);
    window_->show();
  }

  void cleanupTestCase() {
    window_.reset();
    std::filesystem::remove_all(scratch_.toStdString());
  }

  // The welcome text, --help and the file dialogs' filter name every file name of the reader
  // table, and the filter keeps the catch-alls *.gz and *.trace.
  void FormatsComeFromTheReaderTable() {
    const QStringList endings = ReaderEndings();
    QVERIFY(endings.size() >= 8);
    auto* welcome = window_->findChild<QLabel*>(QStringLiteral("welcome"));
    QVERIFY(welcome != nullptr);
    QProcess help;
    help.start(QStringLiteral(STEPSCOPE_VIEW_EXE), {QStringLiteral("--help")});
    QVERIFY(help.waitForFinished(30000));
    QCOMPARE(help.exitCode(), 0);
    const QString help_text = QString::fromLocal8Bit(help.readAllStandardOutput());
    const QStringList filter = TraceFilePatternList();
    for (const trace::TraceReaderEntry& entry : trace::TraceReaders()) {
      const QString name = QString::fromUtf8(entry.name.data(), static_cast<qsizetype>(entry.name.size()));
      QVERIFY2(help_text.contains(name), qPrintable(name));
    }
    for (const QString& ending : endings) {
      if (!ending.endsWith(".gz")) {
        QVERIFY2(welcome->text().contains(ending), qPrintable(ending));
        QVERIFY2(help_text.contains(ending), qPrintable(ending));
      }
      QVERIFY2(filter.contains("*" + ending), qPrintable(ending));
      QVERIFY2(TraceFileFilter().contains("*" + ending + " ") || TraceFileFilter().contains("*" + ending + ")"),
               qPrintable(ending));
    }
    QVERIFY(filter.contains("*.gz"));
    QVERIFY(filter.contains("*.trace"));
  }

  // File > Export > Perfetto protobuf writes what the CLI's writer writes, and it reads back with
  // the same slices and flows.
  void ExportPerfettoProtobufReadsBack() {
    DocumentView* doc = OpenSample();
    const QString out = scratch_ + "/export.pftrace";
    QVERIFY(window_->ExportPerfettoProto(out).isEmpty());
    auto read = trace::ReadTrace(out.toStdString());
    QVERIFY2(read.ok(), read.status().message().c_str());
    const trace::Trace& original = doc->document().trace();
    // Every slice but the repeats on TensorFlow's aggregate lanes (the writer leaves those out).
    size_t kept = 0;
    for (const trace::Slice& slice : original.slices()) kept += !slice.duplicate();
    QVERIFY(kept > 1000);
    QCOMPARE(read->slices().size(), kept);
    // Byte for byte what `stepscope convert --format perfetto-proto` writes.
    auto cli = trace::Serialize(original, trace::OutputFormat::kPerfettoProto);
    QVERIFY(cli.ok());
    QFile file(out);
    QVERIFY(file.open(QIODevice::ReadOnly));
    QCOMPARE(file.readAll().toStdString(), *cli);
    QVERIFY(!window_->ExportPerfettoProto("/nonexistent-dir/x.pftrace").isEmpty());
    bool listed = false;
    for (QAction* action : window_->findChildren<QAction*>()) listed |= action->text().contains(".pftrace");
    QVERIFY(listed);
  }

  // Panes with nothing to show say what would fill them: details before a click, search before
  // a query and with no match, stragglers of one rank (no empty tables), memory of a trace
  // without memory (no empty tensor table).
  void EmptyPanesSayWhatWouldFillThem() {
    DocumentView* doc = OpenSample();
    doc->timeline()->ClearSelection();
    auto* details = qobject_cast<QAbstractItemView*>(doc->pane<DetailsPane>()->widget());
    QVERIFY(details != nullptr);
    EmptyHint* hint = EmptyHintOf(details);
    QVERIFY(hint != nullptr);
    QVERIFY(hint->shown());
    QVERIFY(hint->text().contains("Click a slice"));
    doc->timeline()->SelectSlice(0);
    QVERIFY(!hint->shown());
    doc->timeline()->ClearSelection();
    QVERIFY(hint->shown());

    auto* search = qobject_cast<QAbstractItemView*>(doc->pane<SearchPane>()->widget());
    EmptyHint* search_hint = EmptyHintOf(search);
    QVERIFY(search_hint != nullptr);
    QVERIFY(search_hint->shown());
    QVERIFY(doc->pane<SearchPane>()->Search("no-such-op-xyz", false).isEmpty());
    QVERIFY(search_hint->shown());
    QVERIFY(search_hint->text().contains("no-such-op-xyz"));
    QVERIFY(doc->pane<SearchPane>()->Search("MatMul", false).isEmpty());
    QVERIFY(!search_hint->shown());
    QVERIFY(doc->pane<SearchPane>()->Search("", false).isEmpty());

    StragglersPane* stragglers = doc->pane<StragglersPane>();
    QVERIFY(stragglers->stragglers_caption().startsWith("One rank"));
    QVERIFY(stragglers->stragglers_caption().contains("directory of ranks"));
    QVERIFY(!stragglers->stragglers_table()->isVisibleTo(stragglers->widget()));
    QVERIFY(!stragglers->rank_bars()->isVisibleTo(stragglers->widget()));

    // A generated trace has no allocator: the memory pane says so and shows no tensor table.
    DocumentView* plain = OpenSynthetic();
    QVERIFY(plain->analysed());
    MemoryPanel* memory = plain->pane<MemoryPane>()->memory_panel();
    QCOMPARE(memory->chart_count(), 0);
    auto* table = memory->findChild<QTableView*>();
    QVERIFY(table != nullptr);
    QVERIFY(!table->isVisibleTo(memory));
    bool said = false;
    for (QLabel* label : memory->findChildren<QLabel*>()) {
      said |= label->isVisibleTo(memory) && label->text().contains("records no memory");
    }
    QVERIFY(said);
  }

  // The clipped part of a flow: ends inside stay, ends outside are cut at the edge.
  void ClipFlowCutsAtTheEdge() {
    const QRectF area(100, 20, 800, 400);
    const auto inside = ClipFlow(QPointF(150, 50), QPointF(850, 300), area);
    QVERIFY(inside && !inside->from_cut && !inside->to_cut);
    QCOMPARE(inside->to, QPointF(850, 300));
    // Far out to the right (as a zoomed-in view puts a kernel launched long after).
    const auto right = ClipFlow(QPointF(500, 100), QPointF(5e9, 100), area);
    QVERIFY(right && !right->from_cut && right->to_cut);
    QCOMPARE(right->to, QPointF(900, 100));
    const auto left = ClipFlow(QPointF(-3e9, 300), QPointF(500, 300), area);
    QVERIFY(left && left->from_cut && !left->to_cut);
    QCOMPARE(left->from, QPointF(100, 300));
    // Down and to the right: cut where it leaves through the bottom.
    const auto down = ClipFlow(QPointF(500, 400), QPointF(600, 440), area);
    QVERIFY(down && down->to_cut);
    QCOMPARE(down->to, QPointF(550, 420));
    QVERIFY(!ClipFlow(QPointF(0, 0), QPointF(50, 500), area));  // misses the area
  }

  // With one end of a flow millions of pixels off-screen (zoomed into the launch, the kernel runs
  // long after), L still draws it: a line to the edge of the time area, ending in a head there.
  void FlowsToAnOffScreenEndReachTheEdge() {
    DocumentView* doc = OpenSample();
    TimelineView* timeline = doc->timeline();
    const trace::Trace& trace = doc->document().trace();
    // The launch whose kernel starts longest after the launch call ends.
    const trace::Flow* far = nullptr;
    int64_t gap = 0;
    for (const trace::Flow& flow : trace.flows()) {
      const int64_t g = trace.slices()[flow.to_slice].start_ns - trace.slices()[flow.from_slice].end_ns();
      if (flow.kind == trace::FlowKind::kLaunch && g > gap && timeline->layout().RowOfSlice(flow.from_slice) >= 0 &&
          timeline->layout().RowOfSlice(flow.to_slice) >= 0) {
        far = &flow;
        gap = g;
      }
    }
    QVERIFY(far != nullptr);
    QVERIFY2(gap > 10000, qPrintable(QString::number(gap)));
    const int right_edge = timeline->width() - kTimeAreaRight;
    // Zoomed into 40 ns around the launch's end: the kernel is gap / 40 widths away.
    for (const bool from_side : {true, false}) {
      const uint32_t shown = from_side ? far->from_slice : far->to_slice;
      const trace::Slice& s = trace.slices()[shown];
      const double at = static_cast<double>(from_side ? s.end_ns() : s.start_ns);
      timeline->RevealSlice(shown);
      doc->axis()->SetRange(at - 20, at + 20);
      QVERIFY(!timeline->SliceRect(shown).isEmpty());
      QVERIFY(timeline->SliceRect(from_side ? far->to_slice : far->from_slice).isEmpty());
      const QImage changed_at = FlowPixels(timeline);
      // Drawn across the view to the edge the other end lies beyond.
      int near_edge = 0, total = 0;
      int head_top = changed_at.height(), head_bottom = -1;  // of what is drawn within 5 px of the edge
      for (int y = 0; y < changed_at.height(); ++y) {
        for (int x = 0; x < changed_at.width(); ++x) {
          if (changed_at.pixel(x, y) == 0) continue;
          ++total;
          near_edge += from_side ? x > right_edge - 12 : x < kTimeAreaLeft + 12;
          if (from_side ? x >= right_edge - 5 : x < kTimeAreaLeft + 5) {
            head_top = std::min(head_top, y);
            head_bottom = std::max(head_bottom, y);
          }
        }
      }
      // A line across the view, not a smear over it.
      const int area = (right_edge - kTimeAreaLeft) * (timeline->height() - TimelineView::kRulerHeight);
      QVERIFY2(total < area / 50, qPrintable(QStringLiteral("%1 of %2 pixels").arg(total).arg(area)));
      QVERIFY2(total > 100, qPrintable(QStringLiteral("%1 pixels").arg(total)));
      QVERIFY2(near_edge > 10, qPrintable(QStringLiteral("%1 pixels at the edge").arg(near_edge)));
      // An arrowhead at the edge, wider than the line, says the flow goes on off-screen.
      QVERIFY2(head_bottom - head_top >= 6, qPrintable(QStringLiteral("%1 px high at the edge").arg(head_bottom - head_top)));
    }
    timeline->ClearSelection();
    doc->axis()->FitAll();
  }

  // A flow into a collapsed track (the GPU of a generated trace) goes to the track's header row.
  void FlowsIntoACollapsedTrackGoToItsHeader() {
    DocumentView* doc = OpenSynthetic();
    TimelineView* timeline = doc->timeline();
    const trace::Trace& trace = doc->document().trace();
    const trace::Flow* launch = nullptr;
    for (const trace::Flow& flow : trace.flows()) {
      if (flow.kind == trace::FlowKind::kLaunch) {
        launch = &flow;
        break;
      }
    }
    QVERIFY(launch != nullptr);
    const trace::Flow* far = launch;
    // (the highest track above the kernel that is not above the launch too)
    QSet<int32_t> above_launch;
    for (int32_t t = static_cast<int32_t>(trace.slices()[far->from_slice].track); t >= 0; t = trace.tracks()[t].parent) {
      above_launch.insert(t);
    }
    int32_t device = static_cast<int32_t>(trace.slices()[far->to_slice].track);
    while (trace.tracks()[device].parent >= 0 && !above_launch.contains(trace.tracks()[device].parent)) {
      device = trace.tracks()[device].parent;
    }
    QVERIFY(!above_launch.contains(device));
    doc->axis()->FitAll();
    timeline->SetTrackCollapsed(static_cast<uint32_t>(device), true);
    timeline->RevealSlice(far->from_slice);
    timeline->SetTrackCollapsed(static_cast<uint32_t>(device), true);
    QCOMPARE(timeline->layout().RowOfSlice(far->to_slice), -1);
    QVERIFY(timeline->layout().RowOfSlice(far->from_slice) >= 0);
    int header = -1;
    for (size_t r = 0; r < timeline->layout().rows().size(); ++r) {
      const TimelineRow& row = timeline->layout().rows()[r];
      if (row.kind == TimelineRow::Kind::kHeader && row.track == static_cast<uint32_t>(device)) header = static_cast<int>(r);
    }
    QVERIFY(header >= 0);
    // Drawn into the header's row, where the arrow ends.
    int drawn = 0;
    const QImage collapsed = FlowPixels(timeline);
    for (int y = timeline->RowTop(header); y < timeline->RowTop(header) + TimelineView::kRowHeight; ++y) {
      for (int x = 0; x < collapsed.width(); ++x) drawn += collapsed.pixel(x, y) != 0;
    }
    QVERIFY2(drawn > 20, qPrintable(QString::number(drawn)));
    timeline->SetTrackCollapsed(static_cast<uint32_t>(device), false);
    timeline->ClearSelection();
    doc->axis()->FitAll();
  }

  // A search, then Enter: the first match is selected and the keyboard is the timeline's again
  // (0 fits all instead of typing), n / Shift+N step through the matches, Esc in the box also
  // returns; the matches are marked on the timeline and on the overview strip, whose click goes
  // to the match under it.
  void SearchHandsTheKeyboardBackAndMarksTheMatches() {
    DocumentView* doc = OpenSample();
    TimelineView* timeline = doc->timeline();
    QLineEdit* field = window_->search_field();
    window_->activateWindow();
    QVERIFY(QTest::qWaitForWindowActive(window_.get()));
    field->setFocus();
    QTRY_VERIFY(field->hasFocus());
    QTest::keyClicks(field, "MatMul");
    const std::vector<uint32_t> matches = doc->pane<SearchPane>()->search_model()->matches();
    QVERIFY(matches.size() >= 3);
    QTest::keyClick(field, Qt::Key_Return);
    QTRY_VERIFY(timeline->hasFocus());
    QCOMPARE(timeline->selected_slice(), static_cast<int64_t>(matches[0]));
    doc->axis()->SetRange(doc->axis()->limit_begin_ns(), doc->axis()->limit_begin_ns() + 1000);
    QTest::keyClick(QApplication::focusWidget(), Qt::Key_0);
    QCOMPARE(field->text(), QStringLiteral("MatMul"));
    const double begin = doc->axis()->begin_ns(), end = doc->axis()->end_ns();
    doc->axis()->FitAll();
    QCOMPARE(begin, doc->axis()->begin_ns());
    QCOMPARE(end, doc->axis()->end_ns());
    QTest::keyClick(QApplication::focusWidget(), Qt::Key_N);
    QCOMPARE(timeline->selected_slice(), static_cast<int64_t>(matches[1]));
    QTest::keyClick(QApplication::focusWidget(), Qt::Key_Return);
    QCOMPARE(timeline->selected_slice(), static_cast<int64_t>(matches[2]));
    QTest::keyClick(QApplication::focusWidget(), Qt::Key_N, Qt::ShiftModifier);
    QCOMPARE(timeline->selected_slice(), static_cast<int64_t>(matches[1]));
    field->setFocus();
    QTRY_VERIFY(field->hasFocus());
    QTest::keyClick(field, Qt::Key_Escape);
    QTRY_VERIFY(timeline->hasFocus());
    QCOMPARE(field->text(), QStringLiteral("MatMul"));

    // Every match is marked; on screen, in the marks' colour.
    QCOMPARE(timeline->search_marks().matches().size(), matches.size());
    doc->axis()->FitAll();
    timeline->ClearSelection();
    const QImage image = timeline->grab().toImage();
    int marked = 0;
    for (int y = TimelineView::kRulerHeight; y < image.height(); ++y) {
      for (int x = kTimeAreaLeft; x < image.width() - kTimeAreaRight; ++x) {
        marked += image.pixel(x, y) == QColor::fromRgba(SearchMarks::kOutline).rgb();
      }
    }
    QVERIFY2(marked > 20, qPrintable(QString::number(marked)));
    size_t on_rows = 0;
    const trace::Trace& trace = doc->document().trace();
    for (const TimelineRow& row : timeline->layout().rows()) {
      if (row.kind == TimelineRow::Kind::kSlices) on_rows += timeline->search_marks().OnRow(trace, row.track, row.depth, timeline->mapping()).size();
    }
    QCOMPARE(on_rows, matches.size());  // all of them at Fit All

    // The overview strip counts them all; a click on one zooms nowhere but goes there.
    auto* strip = doc->findChild<OverviewStrip*>();
    QVERIFY(strip != nullptr);
    QVERIFY(strip->isVisible());
    strip->repaint();
    uint32_t counted = 0;
    for (uint32_t c : strip->counts()) counted += c;
    QCOMPARE(counted, static_cast<uint32_t>(matches.size()));
    const trace::Slice& last = trace.slices()[matches.back()];
    doc->axis()->SetRange(doc->axis()->limit_begin_ns(), doc->axis()->limit_begin_ns() + 20000);
    const double span = doc->axis()->end_ns() - doc->axis()->begin_ns();
    QTest::mouseClick(strip, Qt::LeftButton, {}, QPoint(strip->XOf(static_cast<double>(last.start_ns)), 5));
    QVERIFY(std::abs(doc->axis()->end_ns() - doc->axis()->begin_ns() - span) < 1);
    QVERIFY(!timeline->SliceRect(static_cast<uint32_t>(timeline->selected_slice())).isEmpty());
    QVERIFY(timeline->hasFocus());

    // A cleared search takes the marks and the strip away.
    field->clear();
    QVERIFY(timeline->search_marks().empty());
    QVERIFY(!strip->isVisible());
    doc->axis()->FitAll();
  }

  // View > Theme > Dark: the application's palette and the timeline turn dark, slices keep their
  // light hues (black labels stay legible), and the choice is remembered; Light brings back the
  // light timeline.
  void DarkThemeIsRememberedAndTheTimelineFollows() {
    DocumentView* doc = OpenSample();
    TimelineView* timeline = doc->timeline();
    doc->axis()->FitAll();
    auto theme_action = [&](const QString& name) -> QAction* {
      for (QAction* action : window_->findChildren<QAction*>()) {
        if (action->isCheckable() && action->data().toString() == name) return action;
      }
      return nullptr;
    };
    QVERIFY(theme_action("dark") && theme_action("light") && theme_action("system"));
    theme_action("dark")->trigger();
    QApplication::processEvents();
    QVERIFY(IsDarkPalette(timeline->palette()));
    QCOMPARE(QSettings().value(kThemeKey).toString(), QStringLiteral("dark"));
    QCOMPARE(SavedTheme(), Theme::kDark);
    const TimelineColors& dark = TimelineColorsFor(timeline->palette());
    QImage image = timeline->grab().toImage();
    QCOMPARE(QColor(image.pixel(2, 2)), dark.ruler_band);
    // A lane's band and a slice on it: far apart in lightness, with black labels on the slice.
    const trace::Trace& trace = doc->document().trace();
    int checked = 0;
    for (uint32_t s = 0; s < trace.slices().size() && checked < 50; ++s) {
      const QRect box = timeline->SliceRect(s);
      if (box.width() < 4) continue;
      const QColor fill(timeline->SliceColor(s));
      QVERIFY2(fill.lightness() - dark.background.lightness() > 100, qPrintable(fill.name()));
      ++checked;
    }
    QVERIFY(checked > 0);
    theme_action("light")->trigger();
    QApplication::processEvents();
    QVERIFY(!IsDarkPalette(timeline->palette()));
    image = timeline->grab().toImage();
    QCOMPARE(QColor(image.pixel(2, 2)), QColor(0xee, 0xef, 0xf2));
    QCOMPARE(SavedTheme(), Theme::kLight);
    theme_action("system")->trigger();
    QCOMPARE(SavedTheme(), Theme::kSystem);
  }

  // ? (or F1) shows the bindings over the timeline; Esc closes them and keeps the selection.
  void HelpOverlayShowsTheBindingsOverTheTimeline() {
    DocumentView* doc = OpenSample();
    TimelineView* timeline = doc->timeline();
    timeline->SelectSlice(0);
    timeline->setFocus();
    QVERIFY(!timeline->help_shown());
    QTest::keyClick(timeline, Qt::Key_Question);
    QVERIFY(timeline->help_shown());
    auto* overlay = timeline->findChild<HelpOverlay*>(QStringLiteral("help_overlay"));
    QVERIFY(overlay != nullptr);
    QCOMPARE(overlay->geometry(), timeline->rect());
    for (const char* binding : {"W / S", "Shift+N", "Esc", "Ctrl+F", "L</b>"}) {
      QVERIFY2(overlay->text().contains(QLatin1String(binding)), binding);
    }
    // Drawn over the timeline.
    const QImage image = timeline->grab().toImage();
    QVERIFY(QColor(image.pixel(timeline->width() / 2, timeline->height() - 3)).lightness() < 60);
    QTest::keyClick(timeline, Qt::Key_Escape);
    QVERIFY(!timeline->help_shown());
    QCOMPARE(timeline->selected_slice(), int64_t{0});
    QTest::keyClick(timeline, Qt::Key_F1);
    QVERIFY(timeline->help_shown());
    QTest::keyClick(timeline, Qt::Key_Escape);
    QVERIFY(!timeline->help_shown());
    timeline->ClearSelection();
  }

 private:
  // Where showing the flows of the selection changes the timeline: non-zero pixels (0: same).
  static QImage FlowPixels(TimelineView* timeline) {
    timeline->SetShowFlows(false);
    const QImage without = timeline->grab().toImage();
    timeline->SetShowFlows(true);
    const QImage with = timeline->grab().toImage();
    QImage changed(with.size(), QImage::Format_ARGB32);
    changed.fill(0);
    for (int y = TimelineView::kRulerHeight; y < with.height(); ++y) {
      for (int x = kTimeAreaLeft; x < with.width() - kTimeAreaRight; ++x) {
        if (with.pixel(x, y) != without.pixel(x, y)) changed.setPixel(x, y, 0xffffffff);
      }
    }
    return changed;
  }

  DocumentView* OpenSynthetic() {
    if (synthetic_ == nullptr) {
      const QString path = scratch_ + "/synthetic.pftrace";
      const Status written = trace::WriteTrace(synthetic::MakeSyntheticTrace(2000), path.toStdString(),
                                               trace::OutputFormat::kPerfettoProto);
      if (!written.ok()) qFatal("%s", written.message().c_str());
      window_->Open({path});
      window_->loader()->WaitForIdle();
      synthetic_ = window_->current_document();
    }
    window_->ShowDocument(window_->document_count() - 1);
    return synthetic_;
  }

  DocumentView* OpenSample() {
    if (sample_ == nullptr) {
      window_->Open({Sample()});
      window_->loader()->WaitForIdle();
      sample_ = window_->current_document();
      QApplication::processEvents();
    }
    window_->ShowDocument(0);
    return sample_;
  }

  std::unique_ptr<MainWindow> window_;
  DocumentView* sample_ = nullptr;
  DocumentView* synthetic_ = nullptr;
  QString scratch_;
};

QTEST_MAIN(DefectsTest)
#include "defects_test.moc"
