// The steps pane: an overview of the run (a stacked bar per step: input, compute, communication,
// idle; slow steps marked; a click zooms the timeline to the step) with one-line recommendations,
// and one row per step (duration, robust z, outliers and what deviated most in them); a double
// click zooms the timeline to the step.
#pragma once

#include "viewer/panes/pane.h"

class QLabel;
class QTableWidget;

namespace stepscope::viewer {
class StepOverviewChart;
}

namespace stepscope::viewer {

class StepsPane : public Pane {
 public:
  static constexpr PaneId kId = kStepsPane;
  // The table's columns.
  enum StepsColumn { kStepNumber, kStepStart, kStepDuration, kStepZ, kStepOutlier, kStepCause, kStepColumns };

  StepsPane(PaneHost& host, QObject* parent);
  static void Analyse(const TraceDocument& document, DocumentAnalysis& into);
  void ShowAnalysis(const std::shared_ptr<const DocumentAnalysis>& result) override;

  QTableWidget* steps_table() const { return steps_table_; }
  QString steps_caption() const;
  StepOverviewChart* overview() const { return overview_; }
  // The run's recommendations, one per line (analysis::RecommendationText).
  QString recommendations() const;
  // Zooms the timeline to step `index` of the overview (analysis::StepBreakdown::steps).
  void ZoomToOverviewStep(int index);
  // Zooms the timeline to the step of a row of the table.
  void ZoomToStep(int row);

 private:
  std::shared_ptr<const DocumentAnalysis> analysis_;
  QTableWidget* steps_table_;
  QLabel* steps_caption_;
  StepOverviewChart* overview_;
  QLabel* recommendations_;
  void ZoomToWindow(int64_t begin_ns, int64_t end_ns, int64_t step, int64_t duration_ns);
};

}  // namespace stepscope::viewer
