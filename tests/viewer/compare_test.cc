// The comparison view (`stepscope-view A... --vs B...`) on runs with known changes.
//
// The runs are made from the trainer's real PTB LSTM step trace (tests/data/trainer): two runs
// of three steps a side, each step a copy of that trace with every op stretched by the same
// per-step jitter on both sides (0%, 0.4%, ... 2%), so the per-step totals of every untouched op
// are the same numbers on both sides. Side B then has known causes: every MatMul takes 1.5x as
// long (regressed), every BiasAddGrad half as long (improved), and the ScatterSub node reports
// the op type ScatterSubV2 (ScatterSub gone, ScatterSubV2 new); later ops move with the time a
// change added or took away, as they would in a run. For the alignment, side B is also a
// two-step PyTorch profiler trace (ProfilerStep#5 at the trace's start, #6 1.5 ms later).
#include <QFile>
#include <QImage>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QStandardPaths>
#include <QTableWidget>
#include <QtTest/QtTest>
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>

#include "base/file_io.h"
#include "profiler/formats/reader.h"
#include "profiler/formats/step_stats/step_stats_io.h"
#include "stepscope/tf/run_metadata.pb.h"
#include "tests/test_util.h"
#include "viewer/app/main_window.h"
#include "viewer/compare/compare_view.h"
#include "viewer/load/trace_loader.h"
#include "viewer/timeline/time_axis.h"
#include "viewer/timeline/timeline_view.h"

using namespace stepscope;
using namespace stepscope::viewer;

namespace {

constexpr int kRuns = 2, kStepsPerRun = 3;

double Factor(const std::string& op_type) {
  if (op_type == "MatMul") return 1.5;
  if (op_type == "BiasAddGrad") return 0.5;
  return 1.0;
}

// One step of a run: the trainer's trace with every op's duration times `jitter` (and, on side
// B, times its op type's Factor), later ops on the device moved by what that added.
void WriteStep(const tf::RunMetadata& base, const std::map<std::string, std::string>& op_of, double jitter, bool side_b,
               const std::string& path) {
  tf::RunMetadata metadata = base;
  for (tf::DeviceStepStats& device : *metadata.mutable_step_stats()->mutable_dev_stats()) {
    auto& nodes = *device.mutable_node_stats();
    std::vector<int> order(static_cast<size_t>(nodes.size()));
    for (int i = 0; i < nodes.size(); ++i) order[static_cast<size_t>(i)] = i;
    auto start = [](const tf::NodeExecStats& n) {
      return n.all_start_nanos() != 0 ? n.all_start_nanos() : n.all_start_micros() * 1000;
    };
    std::stable_sort(order.begin(), order.end(), [&](int x, int y) { return start(nodes[x]) < start(nodes[y]); });
    int64_t shift_ns = 0;
    for (int i : order) {
      tf::NodeExecStats& n = nodes[i];
      const auto found = op_of.find(n.node_name());
      const std::string op = found == op_of.end() ? std::string() : found->second;
      const double factor = jitter * (side_b ? Factor(op) : 1.0);
      const bool nanos = n.all_start_nanos() != 0 || n.all_end_rel_nanos() != 0;
      const int64_t dur = nanos ? n.all_end_rel_nanos() : n.all_end_rel_micros() * 1000;
      const int64_t scaled = std::llround(static_cast<double>(dur) * factor);
      if (nanos) {
        n.set_all_start_nanos(n.all_start_nanos() + shift_ns);
        n.set_all_end_rel_nanos(scaled);
        n.set_op_end_rel_nanos(std::min<int64_t>(scaled, std::llround(static_cast<double>(n.op_end_rel_nanos()) * factor)));
        n.set_op_start_rel_nanos(std::min(n.op_start_rel_nanos(), n.op_end_rel_nanos()));
      }
      n.set_all_start_micros(n.all_start_micros() + shift_ns / 1000);
      n.set_all_end_rel_micros(scaled / 1000);
      n.set_op_end_rel_micros(std::min<int64_t>(scaled / 1000, std::llround(static_cast<double>(n.op_end_rel_micros()) * factor)));
      n.set_op_start_rel_micros(std::min(n.op_start_rel_micros(), n.op_end_rel_micros()));
      if (side_b && op == "ScatterSub") n.set_op_type("ScatterSubV2");
      shift_ns += scaled - dur;
    }
  }
  auto bytes = trace::SerializeRunMetadata(metadata, trace::StepStatsEncoding::kBinary);
  QVERIFY2(bytes.ok(), bytes.status().message().c_str());
  QVERIFY(WriteFileAtomically(path, *bytes).ok());
}

// Two ProfilerStep spans: the sample's events, and the same again 1.5 ms later as step 6.
void WriteTwoStepKineto(const std::string& from, const std::string& to) {
  QFile in(QString::fromStdString(from));
  QVERIFY(in.open(QIODevice::ReadOnly));
  QJsonObject root = QJsonDocument::fromJson(in.readAll()).object();
  const QJsonArray events = root.value("traceEvents").toArray();
  QJsonArray both = events;
  for (const QJsonValue& value : events) {
    QJsonObject event = value.toObject();
    if (event.contains("ts")) event["ts"] = event["ts"].toDouble() + 1500;
    if (event.value("name").toString() == "ProfilerStep#5") event["name"] = "ProfilerStep#6";
    both.append(event);
  }
  root["traceEvents"] = both;
  QFile out(QString::fromStdString(to));
  QVERIFY(out.open(QIODevice::WriteOnly));
  out.write(QJsonDocument(root).toJson());
}

bool IsBackground(QRgb pixel) {
  const QColor color(pixel);
  return color == QColor(0xff, 0xff, 0xff) || color == QColor(0xf5, 0xf6, 0xf8);
}

const analysis::RunDiffRow* Row(const std::vector<analysis::RunDiffRow>& rows, const std::string& name) {
  for (const analysis::RunDiffRow& r : rows) {
    if (r.name == name) return &r;
  }
  return nullptr;
}

int TableRowOf(CompareView* view, const std::string& name) {
  const auto& rows = RowsOf(view->comparison().diff, view->table());
  for (int r = 0; r < view->diff_table()->rowCount(); ++r) {
    if (rows[view->DiffRowOf(r)].name == name) return r;
  }
  return -1;
}

// x of a trace time on a timeline, in widget pixels.
double XOf(CompareView* view, int side, double time_ns) {
  return kTimeAreaLeft + view->timeline(side)->mapping().NsToPx(time_ns);
}

}  // namespace

class CompareTest : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    scratch_ = testing::ScratchDir("viewer_compare");
    const std::string sample = testing::DataPath("trainer/lstm_small_step3.pb");
    auto trace = trace::ReadTrace(sample);
    QVERIFY(trace.ok());
    std::map<std::string, std::string> op_of;
    for (const trace::Slice& s : trace->slices()) {
      op_of[std::string(trace->str(trace->slice_name(s)))] = std::string(trace->str(trace->slice_op_type(s)));
    }
    std::ifstream in(sample, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto parsed = trace::ParseStepStats(bytes, sample);
    QVERIFY(parsed.ok());
    for (int side = 0; side < 2; ++side) {
      for (int run = 0; run < kRuns; ++run) {
        const auto dir = scratch_ / (side == 0 ? "a" : "b") / ("run" + std::to_string(run));
        std::filesystem::create_directories(dir);
        (side == 0 ? a_ : b_) << QString::fromStdString(dir.string());
        for (int k = 0; k < kStepsPerRun; ++k) {
          const int copy = run * kStepsPerRun + k;
          WriteStep(*parsed->run_metadata, op_of, 1.0 + 0.004 * copy, side == 1,
                    (dir / ("lstm_small_step" + std::to_string(3 + k) + ".pb")).string());
        }
      }
    }
    kineto_ = QString::fromStdString((scratch_ / "kineto_two_steps.json").string());
    WriteTwoStepKineto(testing::DataPath("analysis/kineto_small.json"), kineto_.toStdString());

    window_ = std::make_unique<MainWindow>(/*interactive=*/false);
    window_->resize(1400, 900);
    window_->show();
    window_->Compare(a_, b_);
    window_->WaitForComparison();
    QVERIFY2(window_->errors().isEmpty(), qPrintable(window_->errors().join("; ")));
    QCOMPARE(window_->comparison_count(), 1);
    view_ = window_->comparison(0);
    QApplication::processEvents();
  }

  void cleanupTestCase() {
    window_.reset();
    std::filesystem::remove_all(scratch_);
  }

  // The numbers are the CLI's (analysis::DiffRuns): the known causes, and nothing else.
  void DiffFindsTheKnownChanges() {
    const analysis::RunDiff& diff = view_->comparison().diff;
    QCOMPARE(diff.steps_a, size_t{kRuns * kStepsPerRun});
    QCOMPARE(diff.runs_b, size_t{kRuns});
    QVERIFY(diff.confident);
    QCOMPARE(QString::fromStdString(diff.step.verdict), QString("regressed"));
    const std::map<std::string, std::string> expected = {{"MatMul", "regressed"},
                                                         {"BiasAddGrad", "improved"},
                                                         {"ScatterSub", "gone"},
                                                         {"ScatterSubV2", "new"}};
    for (const analysis::RunDiffRow& r : diff.by_op_type) {
      const auto it = expected.find(r.name);
      const std::string want = it == expected.end() ? "unchanged" : it->second;
      QVERIFY2(r.verdict == want, qPrintable(QString::fromStdString(r.name + ": " + r.verdict + ", want " + want)));
    }
    const analysis::RunDiffRow* matmul = Row(diff.by_op_type, "MatMul");
    QVERIFY(matmul != nullptr);
    QVERIFY2(std::fabs(matmul->change - 0.5) < 0.01, qPrintable(QString::number(matmul->change)));
    // The table is the CLI's: its rows in the diff's order (impact on the step), MatMul first.
    QCOMPARE(view_->diff_table()->rowCount(), static_cast<int>(diff.by_op_type.size()));
    for (int r = 0; r < view_->diff_table()->rowCount(); ++r) QCOMPARE(view_->DiffRowOf(r), static_cast<size_t>(r));
    QCOMPARE(view_->diff_table()->item(0, CompareView::kName)->text(), QString("MatMul"));
    QCOMPARE(view_->diff_table()->item(0, CompareView::kVerdict)->text(), QString("regressed"));
    QCOMPARE(view_->diff_table()->item(0, CompareView::kChange)->text(), QString("+50.0%"));
    QVERIFY2(view_->caption().contains("1 regressed, 1 improved"), qPrintable(view_->caption()));
  }

  // Step starts sit at the same x on both timelines, whatever the zoom, also when B's step is
  // not at the start of its trace.
  void StepStartsMapToTheSameX() {
    MainWindow window(/*interactive=*/false);
    window.resize(1400, 900);
    window.show();
    window.Compare({a_.front()}, {kineto_}, -1, 6);
    window.WaitForComparison();
    QVERIFY2(window.errors().isEmpty(), qPrintable(window.errors().join("; ")));
    CompareView* view = window.comparison(0);
    QApplication::processEvents();
    QCOMPARE(view->comparison().steps_b.size(), size_t{2});
    QCOMPARE(view->comparison().steps_b[view->step_index(1)].step, int64_t{6});
    // Step 6 begins 1.5 ms into B's trace; A's step is its whole trace.
    QCOMPARE(view->side(1).begin_ns - view->side(0).begin_ns, int64_t{1500000});
    QCOMPARE(view->offset_ns(), 1.5e6);
    auto check = [&](const char* when) {
      const double xa = XOf(view, 0, static_cast<double>(view->side(0).begin_ns));
      const double xb = XOf(view, 1, static_cast<double>(view->side(1).begin_ns));
      QVERIFY2(std::fabs(xa - xb) < 1e-3, qPrintable(QString("%1: %2 vs %3").arg(when).arg(xa).arg(xb)));
      // And a later instant too: the same time after the step start.
      const double later = 0.3 * static_cast<double>(view->side(1).end_ns - view->side(1).begin_ns);
      QVERIFY(std::fabs(XOf(view, 0, static_cast<double>(view->side(0).begin_ns) + later) -
                        XOf(view, 1, static_cast<double>(view->side(1).begin_ns) + later)) < 1e-3);
    };
    check("initial");
    // The initial view shows the longer step from the common start: its start is on screen.
    QVERIFY(XOf(view, 0, static_cast<double>(view->side(0).begin_ns)) >= kTimeAreaLeft);
    view->timeline(1)->ZoomAtPx(200, 3.0);
    check("zoomed on B");
    view->timeline(0)->PanPx(-150);
    check("panned on A");
    QTest::keyClick(view->timeline(1), Qt::Key_S);
    check("S on B");
    // The other step of B: step 5, at its trace's start, so the offset is 0 now.
    QVERIFY(view->ShowStep(1, 0).ok());
    QCOMPARE(view->offset_ns(), 0.0);
    check("step 5");
    // A step that is not there is refused and changes nothing.
    QVERIFY(!view->ShowStep(1, 7).ok());
    QCOMPARE(view->step_index(1), size_t{0});
  }

  // Zooming or panning one side moves the other by exactly the same.
  void ZoomAndPanAreLinked() {
    for (int side : {0, 1}) {
      for (int action = 0; action < 4; ++action) {
        const double before_a = view_->axis(0)->begin_ns(), before_span = view_->axis(0)->end_ns() - before_a;
        TimelineView* timeline = view_->timeline(side);
        switch (action) {
          case 0: timeline->ZoomAtPx(400, 2.0); break;
          case 1: timeline->PanPx(120); break;
          case 2: QTest::keyClick(timeline, Qt::Key_W); break;
          case 3: QTest::keyClick(timeline, Qt::Key_A); break;
        }
        const QString what = QString("side %1, action %2").arg(side).arg(action);
        const double span_a = view_->axis(0)->end_ns() - view_->axis(0)->begin_ns();
        const double span_b = view_->axis(1)->end_ns() - view_->axis(1)->begin_ns();
        QVERIFY2(view_->axis(0)->begin_ns() != before_a || span_a != before_span, qPrintable(what + ": nothing moved"));
        QVERIFY2(std::fabs(span_a - span_b) <= 1e-6 * span_a, qPrintable(what));
        QVERIFY2(std::fabs((view_->axis(1)->begin_ns() - view_->axis(0)->begin_ns()) - view_->offset_ns()) < 1e-3,
                 qPrintable(what));
        QCOMPARE(view_->timeline(0)->mapping().width_px(), view_->timeline(1)->mapping().width_px());
      }
    }
    view_->axis(0)->FitAll();
    QVERIFY(std::fabs(view_->axis(1)->begin_ns() - view_->axis(0)->begin_ns() - view_->offset_ns()) < 1e-3);
  }

  // Every slice has the colour of its diff row's verdict; the known ops have the known hues.
  void TintsFollowTheVerdicts() {
    for (TintLevel level : {TintLevel::kOpType, TintLevel::kNode}) {
      view_->SetTintLevel(level);
      const analysis::RunDiff& diff = view_->comparison().diff;
      const DiffRowFinder finder(diff, level);
      std::map<std::string, int> hues;  // verdict -> slices checked
      for (int side = 0; side < 2; ++side) {
        const trace::Trace& trace = view_->side(side).document->trace();
        for (uint32_t i = 0; i < trace.slices().size(); ++i) {
          const auto match = finder.Find(trace, i);
          const uint32_t color = view_->timeline(side)->SliceColor(i);
          if (!match) {
            QCOMPARE(color, kNotComparedColor);
            continue;
          }
          const analysis::RunDiffRow& row = RowsOf(diff, match->table)[match->row];
          QCOMPARE(color, VerdictColor(row));
          const int r = color >> 16 & 0xff, g = color >> 8 & 0xff, b = color & 0xff;
          const std::string op(trace.str(trace.slice_op_type(trace.slices()[i])));
          if (row.verdict == "regressed") QVERIFY2(r > g + 40 && r > b + 40, op.c_str());
          if (row.verdict == "improved") QVERIFY2(g > r + 30 && g > b + 30, op.c_str());
          if (row.verdict == "unchanged") QVERIFY(r == g && g == b);
          if (row.verdict == "new") QVERIFY(b > r + 60);
          if (row.verdict == "gone") QVERIFY(r > b + 60);
          if (level == TintLevel::kOpType) {
            const std::string want = op == "MatMul"         ? "regressed"
                                     : op == "BiasAddGrad"  ? "improved"
                                     : op == "ScatterSub"   ? "gone"
                                     : op == "ScatterSubV2" ? "new"
                                                            : "unchanged";
            QVERIFY2(row.verdict == want, qPrintable(QString::fromStdString(op + ": " + row.verdict)));
          }
          ++hues[row.verdict];
        }
      }
      // By op type all five; by node the renamed op type is the same node on both sides.
      for (const char* verdict : {"regressed", "improved", "unchanged", "new", "gone"}) {
        const bool expected = level == TintLevel::kOpType || (std::string(verdict) != "new" && std::string(verdict) != "gone");
        QVERIFY2((hues[verdict] > 0) == expected, verdict);
      }
    }
    // On screen: the longest MatMul of A's step is painted in its row's red.
    view_->SetTintLevel(TintLevel::kNode);
    view_->SetTable(DiffTable::kOpType);
    view_->ActivateRow(TableRowOf(view_, "MatMul"));
    QApplication::processEvents();
    const int64_t slice = view_->timeline(0)->selected_slice();
    QVERIFY(slice >= 0);
    const QRect box = view_->timeline(0)->SliceRect(static_cast<uint32_t>(slice));
    QVERIFY(box.width() > 20);
    const QImage image = view_->timeline(0)->grab().toImage();
    QCOMPARE(image.pixel(box.center().x(), box.top() + 3) & 0xffffff,
             view_->timeline(0)->SliceColor(static_cast<uint32_t>(slice)));
  }

  // Activating a row of the diff selects that op in each side's step and shows both.
  void ActivatingARowSelectsTheOpOnBothSides() {
    view_->SetTable(DiffTable::kOpType);
    for (const std::string name : {"MatMul", "BiasAddGrad", "LSTMBlockCell"}) {
      const int row = TableRowOf(view_, name);
      QVERIFY(row >= 0);
      view_->timeline(0)->ClearSelection();
      view_->timeline(1)->ClearSelection();
      // As a double-click or Enter on the row would.
      emit view_->diff_table()->activated(view_->diff_table()->model()->index(row, CompareView::kName));
      QApplication::processEvents();
      for (int side = 0; side < 2; ++side) {
        const int64_t slice = view_->timeline(side)->selected_slice();
        QVERIFY2(slice >= 0, name.c_str());
        const trace::Trace& trace = view_->side(side).document->trace();
        const trace::Slice& s = trace.slices()[static_cast<size_t>(slice)];
        QCOMPARE(QString::fromUtf8(trace.str(trace.slice_op_type(s))), QString::fromStdString(name));
        QVERIFY(s.end_ns() > view_->side(side).begin_ns && s.start_ns < view_->side(side).end_ns);
        QVERIFY2(!view_->timeline(side)->SliceRect(static_cast<uint32_t>(slice)).isEmpty(), name.c_str());
      }
      // The same node on both sides (the copies hold the same nodes).
      const auto name_of = [&](int side) {
        const trace::Trace& trace = view_->side(side).document->trace();
        return std::string(trace.str(trace.slice_name(trace.slices()[static_cast<size_t>(view_->timeline(side)->selected_slice())])));
      };
      QCOMPARE(name_of(0), name_of(1));
      // Every slice of the op in the step is outlined (a step trace: all of them in the trace).
      for (int side = 0; side < 2; ++side) {
        const trace::Trace& trace = view_->side(side).document->trace();
        size_t of_op = 0;
        for (const trace::Slice& s : trace.slices()) of_op += !s.duplicate() && trace.str(trace.slice_op_type(s)) == name;
        QCOMPARE(view_->timeline(side)->highlighted().size(), of_op);
        for (uint32_t h : view_->timeline(side)->highlighted()) {
          QCOMPARE(std::string(trace.str(trace.slice_op_type(trace.slices()[h]))), name);
        }
      }
    }
    QCOMPARE(view_->timeline(0)->highlighted().size(), size_t{40});  // LSTMBlockCell: 2 layers x 20 time steps
    // Node table: a single node's row selects that node.
    view_->SetTable(DiffTable::kNode);
    const analysis::RunDiffRow& top = RowsOf(view_->comparison().diff, DiffTable::kNode).front();
    view_->ActivateRow(0);
    for (int side = 0; side < 2; ++side) {
      const trace::Trace& trace = view_->side(side).document->trace();
      QCOMPARE(std::string(trace.str(trace.slice_name(trace.slices()[static_cast<size_t>(view_->timeline(side)->selected_slice())]))),
               top.name);
    }
    // A row only one side has (gone): selected on A, nothing on B.
    view_->SetTable(DiffTable::kOpType);
    view_->ActivateRow(TableRowOf(view_, "ScatterSub"));
    QVERIFY(view_->timeline(0)->selected_slice() >= 0);
    QCOMPARE(view_->timeline(1)->selected_slice(), int64_t{-1});
  }

  // A click on a slice of one side selects the same op on the other (the same occurrence of
  // its name in the step); hovering a slice tells its row of the diff.
  void ClickSelectsTheSameOpOnTheOtherSide() {
    view_->SetTable(DiffTable::kOpType);
    view_->ActivateRow(TableRowOf(view_, "MatMul"));  // brings a MatMul into view on both sides
    QApplication::processEvents();
    for (int side : {0, 1}) {
      TimelineView* timeline = view_->timeline(side);
      const uint32_t target = static_cast<uint32_t>(timeline->selected_slice());
      const QPoint at = timeline->SliceRect(target).center();
      timeline->ClearSelection();
      view_->timeline(1 - side)->ClearSelection();
      QTest::mouseClick(timeline, Qt::LeftButton, {}, at);
      QCOMPARE(timeline->selected_slice(), static_cast<int64_t>(target));
      const int64_t other = view_->timeline(1 - side)->selected_slice();
      QVERIFY(other >= 0);
      QCOMPARE(other, view_->Counterpart(side, target));
      const trace::Trace& mine = view_->side(side).document->trace();
      const trace::Trace& theirs = view_->side(1 - side).document->trace();
      QCOMPARE(theirs.str(theirs.slice_name(theirs.slices()[static_cast<size_t>(other)])),
               mine.str(mine.slice_name(mine.slices()[target])));
      // The tooltip names the row and its verdict.
      view_->SetTintLevel(TintLevel::kOpType);
      const QString tip = timeline->TooltipAt(at);
      QVERIFY2(tip.contains("op type MatMul") && tip.contains("+50.0%") && tip.contains("regressed"), qPrintable(tip));
      view_->SetTintLevel(TintLevel::kNode);
      QVERIFY2(timeline->TooltipAt(at).contains("node " + QString::fromUtf8(mine.str(mine.slice_name(mine.slices()[target])))),
               qPrintable(timeline->TooltipAt(at)));
    }
    // Esc clears the selection and the outlines.
    QTest::keyClick(view_->timeline(0), Qt::Key_Escape);
    QCOMPARE(view_->timeline(0)->selected_slice(), int64_t{-1});
    QVERIFY(view_->timeline(0)->highlighted().empty());
  }

  // GPU kernels take the colour of their kernel row (by normalised name). One step a side: no
  // confidence, which the caption says, and no row regressed or improved.
  void KernelsFollowTheirKernelRow() {
    const QString kineto = QString::fromStdString(testing::DataPath("pytorch_kineto_alexnet_train.json.gz"));
    MainWindow window(/*interactive=*/false);
    window.show();
    window.Compare({kineto}, {kineto});
    window.WaitForComparison();
    QCOMPARE(window.comparison_count(), 1);
    CompareView* view = window.comparison(0);
    const analysis::RunDiff& diff = view->comparison().diff;
    QVERIFY(!diff.confident);
    QVERIFY2(view->caption().contains("Too few steps"), qPrintable(view->caption()));
    QVERIFY(!diff.by_kernel.empty());
    const trace::Trace& trace = view->side(0).document->trace();
    const DiffRowFinder finder(diff, view->tint_level());
    int kernels = 0;
    for (uint32_t i = 0; i < trace.slices().size(); ++i) {
      const trace::Slice& s = trace.slices()[i];
      if (s.kind != trace::SliceKind::kKernel || s.duplicate()) continue;
      const auto match = finder.Find(trace, i);
      QVERIFY(match && match->table == DiffTable::kKernel);
      const analysis::RunDiffRow& row = diff.by_kernel[match->row];
      QCOMPARE(row.name, analysis::NormalizeKernelName(trace.str(trace.slice_name(s))));
      QCOMPARE(row.verdict, std::string("unchanged"));
      QCOMPARE(view->timeline(0)->SliceColor(i), VerdictColor(row));
      ++kernels;
    }
    QVERIFY(kernels > 10);
  }

  // The headless screenshot of the command line: the window's size, and both timelines drawn.
  void HeadlessScreenshotShowsBothSides() {
    const QString out = QString::fromStdString((scratch_ / "compare.png").string());
    QProcess process;
    QStringList arguments = {"--screenshot", out, "--size", "1200x800"};
    arguments << a_ << "--vs" << b_;
    process.start(STEPSCOPE_VIEW_EXE, arguments);
    QVERIFY(process.waitForFinished(60000));
    QCOMPARE(process.exitCode(), 0);
    QVERIFY2(process.readAllStandardOutput().contains("(1200x800)"), "wrote ... (1200x800)");
    const QImage image(out);
    QCOMPARE(image.size(), QSize(1200, 800));
    // Both timelines, at the layout's place in a window of this size (the same window offscreen).
    MainWindow window(/*interactive=*/false);
    window.resize(1200, 800);
    window.show();
    window.Compare(a_, b_);
    window.WaitForComparison();
    QApplication::processEvents();
    CompareView* view = window.comparison(0);
    for (int side = 0; side < 2; ++side) {
      TimelineView* timeline = view->timeline(side);
      const QPoint origin = timeline->mapTo(&window, QPoint(0, 0));
      int drawn = 0, tinted = 0;
      for (int y = TimelineView::kRulerHeight; y < timeline->height(); ++y) {
        for (int x = kTimeAreaLeft; x < timeline->width() - kTimeAreaRight; x += 2) {
          const QRgb pixel = image.pixel(origin.x() + x, origin.y() + y);
          if (IsBackground(pixel)) continue;
          ++drawn;
          const QColor c(pixel);
          tinted += c.red() > c.green() + 40 && c.red() > c.blue() + 40;  // a regressed op
        }
      }
      QVERIFY2(drawn > 500, qPrintable(QString("side %1: %2 pixels drawn").arg(side).arg(drawn)));
      QVERIFY2(tinted > 100, qPrintable(QString("side %1: %2 red pixels").arg(side).arg(tinted)));
    }
    // Bad input: an empty side B is a usage error.
    QProcess bad;
    bad.start(STEPSCOPE_VIEW_EXE, QStringList{"--screenshot", out, a_.front(), "--vs"});
    QVERIFY(bad.waitForFinished(60000));
    QCOMPARE(bad.exitCode(), 2);
    // An unreadable file: exit 2, naming the side and the file.
    QProcess unreadable;
    unreadable.start(STEPSCOPE_VIEW_EXE, QStringList{"--screenshot", out, a_.front(), "--vs", "/nonexistent.pb"});
    QVERIFY(unreadable.waitForFinished(60000));
    QCOMPARE(unreadable.exitCode(), 2);
    QVERIFY(unreadable.readAllStandardError().contains("side B: /nonexistent.pb"));
  }

  // As the window does it (no waiting): the comparison arrives as a tab of its own, next to the
  // trace tabs; a failure is reported and opens nothing.
  void ComparisonOpensInItsOwnTab() {
    MainWindow window(/*interactive=*/false);
    window.show();
    window.Open({a_.front() + "/lstm_small_step3.pb"});
    window.loader()->WaitForIdle();
    QCOMPARE(window.document_count(), 1);
    window.Compare({a_.front()}, {b_.front()});
    QTRY_COMPARE_WITH_TIMEOUT(window.comparison_count(), 1, 30000);
    QCOMPARE(window.document_count(), 1);  // the trace tab is still the only document
    QVERIFY(window.document(0) != nullptr);
    QCOMPARE(window.comparison(0)->comparison().steps_a.size(), size_t{kStepsPerRun});
    window.Compare({a_.front()}, {QString::fromStdString((scratch_ / "missing").string())});
    window.WaitForComparison();
    QCOMPARE(window.comparison_count(), 1);
    QCOMPARE(window.errors().size(), 1);
    QVERIFY2(window.errors().front().startsWith("side B: "), qPrintable(window.errors().front()));
  }

 private:
  std::filesystem::path scratch_;
  QStringList a_, b_;
  QString kineto_;
  std::unique_ptr<MainWindow> window_;
  CompareView* view_ = nullptr;
};

QTEST_MAIN(CompareTest)
#include "compare_test.moc"
