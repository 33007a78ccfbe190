// One allocator's bytes in use over time, on the timeline's time axis (same left margin, same
// window): the per-pixel extent of the curve (peaks kept), the peak marked, the label saying
// where the curve came from (allocation records, or derived from outputs as TensorFlow's
// timeline does). A click picks an instant (snapping to the peak when near it): timeClicked.
#pragma once

#include <QWidget>

#include "profiler/analysis/memory_timeline.h"
#include "viewer/timeline/time_axis.h"

namespace stepscope::viewer {

class MemoryChart : public QWidget {
  Q_OBJECT

 public:
  static constexpr int kHeight = 110;

  MemoryChart(const analysis::AllocatorTimeline& timeline, TimeAxis* axis, QWidget* parent = nullptr);

  const analysis::AllocatorTimeline& timeline() const { return *timeline_; }
  // Widget x of a time (for tests and for the peak marker).
  double XOf(double time_ns) const;
  void SetCursorTime(std::optional<int64_t> time_ns);
  QSize sizeHint() const override { return {800, kHeight}; }

 signals:
  void timeClicked(int64_t time_ns);

 protected:
  void paintEvent(QPaintEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;

 private:
  const analysis::AllocatorTimeline* timeline_;  // owned by the document's analysis
  TimeAxis* axis_;
  std::optional<int64_t> cursor_ns_;
};

}  // namespace stepscope::viewer
