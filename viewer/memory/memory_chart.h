// One allocator's bytes in use over time, on the trace's time window (the axis shared with the
// timeline): a title line naming the allocator, its device, its peak and where the curve came
// from (allocation records, or derived from outputs as TensorFlow's timeline does); a y-axis
// of byte ticks; the per-pixel extent of the curve (peaks kept) with the peak marked; an x-axis
// of time ticks as the timeline's ruler has them. A click picks an instant (snapping to the
// peak when near it): timeClicked.
#pragma once

#include <QWidget>
#include <optional>
#include <vector>

#include "profiler/analysis/memory_timeline.h"
#include "viewer/timeline/time_axis.h"

namespace stepscope::viewer {

class MemoryChart : public QWidget {
  Q_OBJECT

 public:
  // Room for the title, a plot tall enough for three byte ticks, and the time axis.
  static constexpr int kMinHeight = 120;
  static constexpr int kTitleHeight = 16;
  static constexpr int kXAxisHeight = 16;
  static constexpr int kYAxisWidth = 80;  // the byte labels

  // A labelled tick: its widget coordinate (y on the byte axis, x on the time axis).
  struct AxisTick {
    double at = 0;
    QString label;
  };

  MemoryChart(const analysis::AllocatorTimeline& timeline, TimeAxis* axis, QWidget* parent = nullptr);

  const analysis::AllocatorTimeline& timeline() const { return *timeline_; }
  // Widget x of a time (for tests and for the peak marker).
  double XOf(double time_ns) const;
  void SetCursorTime(std::optional<int64_t> time_ns);
  QSize sizeHint() const override { return {800, kMinHeight + 40}; }
  QSize minimumSizeHint() const override { return {kYAxisWidth + 200, kMinHeight}; }

  // What is drawn, at the chart's current size: the plot's rectangle, the title line (whole;
  // elided only when wider than the chart, and then whole in the tooltip) and the ticks.
  QRect PlotRect() const;
  QString title() const;
  std::vector<AxisTick> YTicks() const;
  std::vector<AxisTick> XTicks() const;

 signals:
  void timeClicked(int64_t time_ns);

 protected:
  void paintEvent(QPaintEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;

 private:
  void PaintAxes(QPainter& painter, const QRect& plot);

  const analysis::AllocatorTimeline* timeline_;  // owned by the document's analysis
  TimeAxis* axis_;
  std::optional<int64_t> cursor_ns_;
};

}  // namespace stepscope::viewer
