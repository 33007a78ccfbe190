// The stragglers pane's chart for one step: a bar per rank on the step's aligned clock, from the
// rank's first start to its last end (so the straggler's bar reaches furthest right), filled
// from its start with its compute, communication, memory and input time (unions, each a share
// of the bar; what is left of the bar is idle), with lines at the earliest and the median end.
#pragma once

#include <QColor>
#include <QString>
#include <QWidget>
#include <vector>

#include "profiler/analysis/stragglers.h"

namespace stepscope::viewer {

class RankBars : public QWidget {
  Q_OBJECT

 public:
  static constexpr QRgb kInputColor = 0xff9c6ade;
  static constexpr QRgb kEarliestEndColor = 0xff2e7d32;
  static constexpr QRgb kMedianEndColor = 0xff6d6f78;
  static constexpr int kRowHeight = 22;
  static constexpr int kLabelWidth = 150;
  static constexpr int kTextWidth = 460;

  explicit RankBars(QWidget* parent = nullptr);

  // The step shown (copied); none clears the chart.
  void SetStep(const analysis::StepStragglers* step);
  bool has_step() const { return has_step_; }
  const analysis::StepStragglers& step() const { return step_; }

  // Widths of a rank's segments in a bar of `width` pixels for the time from its begin to its
  // end: compute, communication, memory, input (in that order, scaled down together when the
  // unions overlap and add up to more than the bar), then idle.
  struct Segments {
    double categories[analysis::kStragglerCategories] = {0, 0, 0, 0};
    double idle = 0;
  };
  static Segments SegmentsOf(const analysis::RankStep& rank, double width);
  // The area of row `row`'s time axis (a bar spans part of it) in widget coordinates.
  QRect RowRect(int row) const;
  // The x of time `ns` (relative to the step's origin) in the bars' area.
  double XOf(int64_t ns) const;
  // The x of the earliest and of the median end.
  double EarliestEndX() const;
  double MedianEndX() const;

  QSize sizeHint() const override;

 protected:
  void paintEvent(QPaintEvent* event) override;

 private:
  int64_t LatestEnd() const;

  analysis::StepStragglers step_;
  bool has_step_ = false;
};

}  // namespace stepscope::viewer
