// The stragglers pane (stragglers_pane.h): analysis::StragglerReport of the merged inputs laid
// out in two tables and RankBars. The figures are the analysis' own.
#include "viewer/panes/stragglers_pane.h"

#include <QHeaderView>
#include <QLabel>
#include <QSplitter>
#include <QTabWidget>
#include <QTableWidget>
#include <QVBoxLayout>
#include <algorithm>
#include <cstdlib>
#include <set>

#include "viewer/load/document.h"
#include "viewer/panes/pane_widgets.h"
#include "viewer/panes/rank_bars.h"
#include "viewer/timeline/time_axis.h"
#include "viewer/timeline/timeline_view.h"

namespace stepscope::viewer {
namespace {

// The category a straggler step's reason names (its index into excess_ns), -1 for "none".
int ReasonCategory(const std::string& reason) {
  for (int c = 0; c < analysis::kStragglerCategories; ++c) {
    if (analysis::StragglerCategoryName(static_cast<analysis::StragglerCategory>(c)) == reason) return c;
  }
  return -1;
}

}  // namespace

StragglersPane::StragglersPane(PaneHost& host, QObject* parent) : Pane(host, parent) {
  auto* pane = new QWidget(host.panes());
  stragglers_caption_ = new QLabel(pane);
  stragglers_caption_->setWordWrap(true);
  stragglers_caption_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  stragglers_table_ = MakeTable({tr("Step"), tr("Ranks"), tr("Last"), tr("Late by"), tr("vs median"), tr("Why"),
                                 tr("Its excess"), tr("Waited for"), tr("Others waited")},
                                pane);
  rank_totals_table_ =
      MakeTable({tr("Rank"), tr("Steps"), tr("Last in"), tr("Lateness total"), tr("Lateness max")}, pane);
  rank_bars_ = new RankBars(pane);
  auto* tables = new QSplitter(Qt::Horizontal, pane);
  tables->addWidget(stragglers_table_);
  tables->addWidget(rank_totals_table_);
  tables->setSizes({820, 480});
  auto* layout = new QVBoxLayout(pane);
  layout->setContentsMargins(4, 4, 4, 4);
  layout->addWidget(stragglers_caption_);
  layout->addWidget(rank_bars_);
  layout->addWidget(tables, 1);
  connect(stragglers_table_, &QTableWidget::currentCellChanged, this, [this](int row) {
    const RankMerge* merge = this->host().document().rank_merge();
    const bool valid = merge != nullptr && merge->stragglers && row >= 0 &&
                       static_cast<size_t>(row) < merge->stragglers->steps.size();
    rank_bars_->SetStep(valid ? &merge->stragglers->steps[static_cast<size_t>(row)] : nullptr);
  });
  connect(stragglers_table_, &QTableWidget::cellActivated, this, [this](int row) { ZoomToStragglerStep(row); });
  set_widget(pane);
  ShowReport();
}

void StragglersPane::ShowReport() {
  const RankMerge* merge = host().document().rank_merge();
  // Nothing to compare: the caption says why and what would fill the pane; no empty tables.
  const bool comparable = merge != nullptr && merge->inputs.size() >= 2 && merge->stragglers;
  stragglers_table_->parentWidget()->setVisible(comparable);
  rank_bars_->setVisible(comparable);
  if (merge == nullptr || merge->inputs.size() < 2) {
    stragglers_caption_->setText(tr("One rank: stragglers compare ranks (which one finishes each step last, and "
                                    "why). Open a directory of ranks or several traces as one timeline (File > Open "
                                    "Directory as One Timeline, Open Files as One Timeline, or --merge)."));
    return;
  }
  if (!merge->stragglers) {
    stragglers_caption_->setText(tr("No stragglers: %1").arg(QString::fromStdString(merge->stragglers_error)));
    return;
  }
  const analysis::StragglerReport& report = *merge->stragglers;
  std::set<int32_t> ranks;
  for (const analysis::StragglerInputInfo& input : report.inputs) ranks.insert(input.rank);
  auto count = [](size_t n, const QString& one, const QString& many) {
    return QStringLiteral("%1 %2").arg(n).arg(n == 1 ? one : many);
  };
  // The clocks' alignment as the CLI states it (`--align`; by default the best available).
  QString caption = tr("%1, %2 compared (%3), %4")
                        .arg(count(ranks.size(), tr("rank"), tr("ranks")))
                        .arg(count(report.steps.size(), tr("step"), tr("steps")))
                        .arg(count(report.inputs.size(), tr("input"), tr("inputs")))
                        .arg(QString::fromStdString(AlignmentText(merge->alignment)));
  if (!report.single_rank_steps.empty()) {
    caption += tr("; %1 only one rank has, not compared")
                   .arg(count(report.single_rank_steps.size(), tr("step"), tr("steps")));
  }
  size_t largest = 0;
  for (size_t i = 0; i < report.steps.size(); ++i) {
    if (report.steps[i].lateness_ns > report.steps[largest].lateness_ns) largest = i;
  }
  if (!report.steps.empty()) {
    const analysis::StepStragglers& worst = report.steps[largest];
    caption += tr(". Step %1 has the largest lateness: rank %2 finished %3 after the first")
                   .arg(worst.step)
                   .arg(worst.straggler)
                   .arg(DurationText(worst.lateness_ns));
    const int reason = ReasonCategory(worst.reason);
    caption += reason < 0 ? tr(", exceeding the others' median in no category.")
                          : tr("; its %1 exceeds the others' median by %2.")
                                .arg(QString::fromStdString(worst.reason))
                                .arg(DurationText(worst.excess_ns[reason]));
  } else {
    caption += tr(": no step has two ranks.");
  }
  stragglers_caption_->setText(caption + tr(" Activate a step to zoom to it."));
  // Each rank's clock as `stepscope align` reports it: what was added to it, its drift, and how
  // far its collectives' ends stay from the others' after the correction.
  QStringList clocks;
  for (const analysis::RankClock& clock : merge->alignment.ranks) {
    const QString offset = (clock.offset_ns < 0 ? QStringLiteral("-") : QString()) + DurationText(static_cast<int64_t>(std::llabs(clock.offset_ns)));
    clocks << tr("rank %1 (%2): offset %3, drift %4 ppm, residual %5, %6 collectives matched")
                  .arg(clock.rank)
                  .arg(QString::fromStdString(clock.host.empty() ? "-" : clock.host), offset)
                  .arg(clock.drift_ppm, 0, 'f', 3)
                  .arg(clock.residual_ns < 0 ? tr("not measured") : DurationText(clock.residual_ns))
                  .arg(clock.matched_collectives);
  }
  for (const std::string& note : merge->alignment.notes) clocks << tr("note: %1").arg(QString::fromStdString(note));
  stragglers_caption_->setToolTip(QString::fromStdString(AlignmentText(merge->alignment)) + "\n" + clocks.join('\n'));

  stragglers_table_->setRowCount(static_cast<int>(report.steps.size()));
  for (size_t i = 0; i < report.steps.size(); ++i) {
    const analysis::StepStragglers& step = report.steps[i];
    const int row = static_cast<int>(i);
    stragglers_table_->setItem(row, kStrStep, CountItem(step.step));
    stragglers_table_->setItem(row, kStrRanks, CountItem(static_cast<int64_t>(step.ranks.size())));
    stragglers_table_->setItem(row, kStrStraggler, new QTableWidgetItem(tr("rank %1").arg(step.straggler)));
    stragglers_table_->setItem(row, kStrLateness, DurationItem(step.lateness_ns));
    stragglers_table_->setItem(row, kStrVsMedian, DurationItem(step.lateness_vs_median_ns));
    stragglers_table_->setItem(row, kStrReason, new QTableWidgetItem(QString::fromStdString(step.reason)));
    const int reason = ReasonCategory(step.reason);
    stragglers_table_->setItem(row, kStrExcess, reason < 0 ? new QTableWidgetItem(QStringLiteral("-"))
                                                           : DurationItem(step.excess_ns[reason]));
    stragglers_table_->setItem(row, kStrWaitedFor, new QTableWidgetItem(step.waited_for >= 0 ? tr("rank %1").arg(step.waited_for)
                                                                                              : QStringLiteral("-")));
    stragglers_table_->setItem(row, kStrOthersWaited, DurationItem(step.others_waited_ns));
  }
  stragglers_table_->resizeColumnsToContents();
  rank_totals_table_->setRowCount(static_cast<int>(report.ranks.size()));
  for (size_t i = 0; i < report.ranks.size(); ++i) {
    const analysis::RankStragglerTotals& t = report.ranks[i];
    const int row = static_cast<int>(i);
    rank_totals_table_->setItem(row, kRankName, new QTableWidgetItem(tr("rank %1").arg(t.rank)));
    rank_totals_table_->setItem(row, kRankSteps, CountItem(t.steps));
    rank_totals_table_->setItem(row, kRankLast, CountItem(t.straggler_steps));
    rank_totals_table_->setItem(row, kRankLatenessTotal, DurationItem(t.lateness_total_ns));
    rank_totals_table_->setItem(row, kRankLatenessMax, DurationItem(t.lateness_max_ns));
  }
  rank_totals_table_->resizeColumnsToContents();
  if (!report.steps.empty()) stragglers_table_->setCurrentCell(static_cast<int>(largest), kStrStep);
}

QString StragglersPane::stragglers_caption() const { return stragglers_caption_->text(); }
QString StragglersPane::stragglers_clocks() const { return stragglers_caption_->toolTip(); }

std::pair<int64_t, int64_t> StragglersPane::StragglerStepRange(int row) const {
  const RankMerge* merge = host().document().rank_merge();
  if (merge == nullptr || !merge->stragglers || row < 0 || static_cast<size_t>(row) >= merge->stragglers->steps.size()) {
    return {0, 0};
  }
  const analysis::StepStragglers& step = merge->stragglers->steps[static_cast<size_t>(row)];
  const int64_t begin = step.origin_ns - host().document().trace().epoch_ns();
  int64_t end = begin;
  for (const analysis::RankStep& r : step.ranks) end = std::max(end, begin + r.end_ns);
  return {begin, end};
}

int64_t StragglersPane::StragglerLastSlice(int row) const {
  const RankMerge* merge = host().document().rank_merge();
  const auto [begin, end] = StragglerStepRange(row);
  if (merge == nullptr || end <= begin) return -1;
  const analysis::StepStragglers& step = merge->stragglers->steps[static_cast<size_t>(row)];
  const auto straggler = std::find_if(step.ranks.begin(), step.ranks.end(),
                                      [&](const analysis::RankStep& r) { return r.rank == step.straggler; });
  if (straggler == step.ranks.end() || straggler->input >= merge->inputs.size()) return -1;
  // The input's process in the merged trace holds its work; the last piece ends at the step's end.
  const trace::Trace& trace = host().document().trace();
  const uint32_t process = merge->inputs[straggler->input].process_track;
  auto in_process = [&](uint32_t track) {
    int32_t t = static_cast<int32_t>(track);
    while (t >= 0 && static_cast<uint32_t>(t) != process) t = trace.tracks()[static_cast<size_t>(t)].parent;
    return t >= 0;
  };
  const int64_t last_end = begin + straggler->end_ns;
  int64_t found = -1;
  const auto& slices = trace.slices();
  for (uint32_t k = 0; k < slices.size(); ++k) {
    const trace::Slice& s = slices[k];
    if (s.end_ns() != last_end || trace::IsAnnotationOrSync(s.kind) || s.duplicate() || !in_process(s.track)) continue;
    if (found < 0 || s.start_ns > slices[static_cast<size_t>(found)].start_ns) found = k;  // the shortest of equals
  }
  return found;
}

void StragglersPane::ZoomToStragglerStep(int row) {
  const auto [begin, end] = StragglerStepRange(row);
  if (end <= begin) return;
  const double margin = static_cast<double>(end - begin) * 0.02;
  host().axis()->SetRange(static_cast<double>(begin) - margin, static_cast<double>(end) + margin);
  const int64_t last = StragglerLastSlice(row);
  if (last >= 0) {
    // Selected and scrolled into view; the pane stays in front (details follow the selection).
    host().timeline()->SelectSlice(last);
    host().timeline()->RevealSlice(static_cast<uint32_t>(last));
    host().ShowPane(kId);
  }
  const analysis::StepStragglers& step = host().document().rank_merge()->stragglers->steps[static_cast<size_t>(row)];
  host().ShowStatus(tr("step %1: rank %2 finished last, %3 after the first (%4)")
                         .arg(step.step)
                         .arg(step.straggler)
                         .arg(DurationText(step.lateness_ns))
                         .arg(QString::fromStdString(step.reason)));
}


}  // namespace stepscope::viewer
