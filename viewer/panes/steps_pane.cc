// The steps pane (steps_pane.h): analysis::AnalyzeSteps over the trace's steps and
// analysis::ComputeStepBreakdown's overview of them, laid out.
#include "viewer/panes/steps_pane.h"

#include <QHeaderView>
#include <QLabel>
#include <QSplitter>
#include <QTabWidget>
#include <QTableWidget>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>

#include "base/units.h"
#include "profiler/analysis/statistics.h"
#include "viewer/load/document.h"
#include "viewer/panes/document_analysis.h"
#include "viewer/panes/step_overview_chart.h"
#include "viewer/timeline/time_axis.h"

namespace stepscope::viewer {

StepsPane::StepsPane(PaneHost& host, QObject* parent) : Pane(host, parent) {
  auto* pane = new QWidget(host.panes());
  steps_caption_ = new QLabel(tr("Steps are found after loading"), pane);
  steps_table_ = new QTableWidget(0, kStepColumns, pane);
  steps_table_->setHorizontalHeaderLabels(
      {tr("Step"), tr("Start"), tr("Duration"), tr("z"), tr("Outlier"), tr("Deviated most (this step vs its median)")});
  steps_table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  steps_table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  steps_table_->setAlternatingRowColors(true);
  steps_table_->verticalHeader()->hide();
  steps_table_->verticalHeader()->setDefaultSectionSize(20);
  steps_table_->horizontalHeader()->setStretchLastSection(true);
  connect(steps_table_, &QTableWidget::cellDoubleClicked, this, [this](int row, int) { ZoomToStep(row); });
  overview_ = new StepOverviewChart(pane);
  connect(overview_, &StepOverviewChart::stepClicked, this, &StepsPane::ZoomToOverviewStep);
  recommendations_ = new QLabel(pane);
  recommendations_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  auto* splitter = new QSplitter(Qt::Vertical, pane);
  auto* top = new QWidget(splitter);
  auto* top_layout = new QVBoxLayout(top);
  top_layout->setContentsMargins(0, 0, 0, 0);
  top_layout->addWidget(overview_, 1);
  top_layout->addWidget(recommendations_);
  splitter->addWidget(top);
  splitter->addWidget(steps_table_);
  auto* layout = new QVBoxLayout(pane);
  layout->setContentsMargins(4, 4, 4, 4);
  layout->addWidget(steps_caption_);
  layout->addWidget(splitter, 1);
  set_widget(pane);
}

void StepsPane::Analyse(const TraceDocument& document, DocumentAnalysis& into) {
  // Op totals per step only when a step stands out (they explain it).
  into.steps = analysis::AnalyzeSteps(analysis::StepsOfTrace(document.trace(), /*with_totals=*/false), 3);
  if (!into.steps.outliers.empty()) {
    into.steps = analysis::AnalyzeSteps(analysis::StepsOfTrace(document.trace(), /*with_totals=*/true), 3);
  }
  into.step_breakdown = analysis::ComputeStepBreakdown(document.trace());
}

void StepsPane::ShowAnalysis(const std::shared_ptr<const DocumentAnalysis>& result) {
  analysis_ = result;
  const analysis::StepsReport& report = analysis_->steps;
  auto duration = [](double ns) { return QString::fromStdString(FormatDurationSignificant(ns)); };
  steps_caption_->setText(tr("%1 steps: median %2, MAD %3, CV %4%, p95/p50 %5; %6 outliers (robust z, |z| > 3.5)")
                              .arg(report.steps.size())
                              .arg(duration(report.median_ns), duration(report.mad_ns))
                              .arg(100 * report.cv, 0, 'f', 1)
                              .arg(report.p95_over_p50, 0, 'f', 3)
                              .arg(report.outliers.size()));
  overview_->SetBreakdown(analysis_->step_breakdown);
  QStringList lines;
  for (const auto& r : analysis_->step_breakdown.recommendations) {
    lines << QString::fromStdString(analysis::RecommendationText(r));
  }
  for (const analysis::StepSplit& s : analysis_->step_breakdown.steps) {
    if (!s.slow || s.recommendations.empty()) continue;
    lines << tr("slow step %1: %2").arg(s.step >= 0 ? s.step : s.number)
                 .arg(QString::fromStdString(analysis::RecommendationText(s.recommendations.front())));
  }
  recommendations_->setText(lines.join('\n'));
  steps_table_->setRowCount(static_cast<int>(report.steps.size()));
  const int64_t base = host().document().trace().span_begin_ns();
  for (size_t i = 0; i < report.steps.size(); ++i) {
    const analysis::Step& s = report.steps[i];
    const bool outlier = std::fabs(report.z[i]) > analysis::kOutlierZ;
    QString cause;
    for (const analysis::StepOutlier& o : report.outliers) {
      if (o.step != i || o.causes.empty()) continue;
      const analysis::OutlierCause& c = o.causes.front();
      cause = tr("%1 %2: %3 vs %4").arg(QString::fromStdString(c.table), QString::fromStdString(c.name),
                                        duration(static_cast<double>(c.value_ns)), duration(c.usual_ns));
    }
    // A trace that records no step number shows none (not -1).
    const QStringList cells = {s.step >= 0 ? QString::number(s.step) : QString(), "+" + duration(static_cast<double>(s.begin_ns - base)),
                               duration(static_cast<double>(s.duration_ns)), QString::number(report.z[i], 'f', 1),
                               outlier ? tr("outlier") : QString(), cause};
    for (int column = 0; column < kStepColumns; ++column) {
      auto* item = new QTableWidgetItem(cells[column]);
      if (column != kStepCause && column != kStepOutlier) item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
      steps_table_->setItem(static_cast<int>(i), column, item);
    }
  }
  steps_table_->resizeColumnsToContents();
}

QString StepsPane::steps_caption() const { return steps_caption_->text(); }

QString StepsPane::recommendations() const { return recommendations_->text(); }

void StepsPane::ZoomToStep(int row) {
  if (analysis_ == nullptr || row < 0 || static_cast<size_t>(row) >= analysis_->steps.steps.size()) return;
  const analysis::Step& s = analysis_->steps.steps[static_cast<size_t>(row)];
  ZoomToWindow(s.begin_ns, s.end_ns, s.step, s.duration_ns);
}

void StepsPane::ZoomToOverviewStep(int index) {
  if (analysis_ == nullptr || index < 0 || static_cast<size_t>(index) >= analysis_->step_breakdown.steps.size()) return;
  const analysis::StepSplit& s = analysis_->step_breakdown.steps[static_cast<size_t>(index)];
  ZoomToWindow(s.begin_ns, s.end_ns, s.step, s.duration_ns);
}

void StepsPane::ZoomToWindow(int64_t begin_ns, int64_t end_ns, int64_t step, int64_t duration_ns) {
  const double margin = static_cast<double>(std::max<int64_t>(end_ns - begin_ns, 1)) * 0.02;
  host().axis()->SetRange(static_cast<double>(begin_ns) - margin, static_cast<double>(end_ns) + margin);
  const QString length = QString::fromStdString(FormatDurationSignificant(static_cast<double>(duration_ns)));
  host().ShowStatus(step >= 0 ? tr("step %1: %2").arg(step).arg(length) : tr("step: %1").arg(length));
}

}  // namespace stepscope::viewer
