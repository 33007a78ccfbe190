// The steps pane's overview: one vertical stacked bar per step across the run, its height the
// step's duration, split into input, compute, communication and idle
// (analysis::StepBreakdown); slow steps are outlined red with "slow" above them, and a dashed line
// marks the slow threshold. A click on a bar emits stepClicked (the pane zooms the timeline).
#pragma once

#include <QColor>
#include <QWidget>

#include "profiler/analysis/step_breakdown.h"

namespace stepscope::viewer {

class StepOverviewChart : public QWidget {
  Q_OBJECT

 public:
  // Indexed by analysis::StepPart: input, compute, communication, idle.
  static constexpr QRgb kPartColors[analysis::kStepParts] = {0xffc94a4a, 0xff3b7dd8, 0xffe8833a, 0xffd5d8de};
  static constexpr QRgb kSlowColor = 0xffd01818;
  static constexpr int kLegendHeight = 22;
  static constexpr int kAxisWidth = 64;
  static constexpr int kBottom = 18;  // step numbers under the bars

  explicit StepOverviewChart(QWidget* parent = nullptr);

  void SetBreakdown(analysis::StepBreakdown breakdown);
  const analysis::StepBreakdown& breakdown() const { return breakdown_; }
  // The bar of step `index` (into breakdown().steps) in widget coordinates; its segments stack
  // from the bottom in StepPart order.
  QRectF BarRect(size_t index) const;
  // The step whose bar column holds x, or -1.
  int StepAt(const QPoint& pos) const;

  QSize sizeHint() const override;

 signals:
  void stepClicked(int index);

 protected:
  void paintEvent(QPaintEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;

 private:
  double Scale() const;  // px per ns
  QRectF PlotArea() const;

  analysis::StepBreakdown breakdown_;
  int64_t longest_ns_ = 0;
};

}  // namespace stepscope::viewer
