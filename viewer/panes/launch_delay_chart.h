// Launch delays as a counter track: for each launch, its kernel's start against the delay from
// the runtime call's end to that start (analysis::ComputeLaunches), on the timeline's time axis
// (same left margin, same window). Each pixel column shows the largest delay of the launches in
// it, so an outlier is never averaged away; negative delays (work that started before its call
// returned) are drawn at zero and counted in the label.
#pragma once

#include <QWidget>
#include <cstdint>
#include <vector>

#include "viewer/timeline/time_axis.h"

namespace stepscope::viewer {

struct LaunchDelayPoint {
  int64_t time_ns = 0;   // the kernel's (copy's) start, trace time
  int64_t delay_ns = 0;  // start - runtime call end
};

class LaunchDelayChart : public QWidget {
  Q_OBJECT

 public:
  static constexpr int kHeight = 64;

  LaunchDelayChart(TimeAxis* axis, QWidget* parent = nullptr);

  // Points in time order.
  void SetPoints(const std::vector<LaunchDelayPoint>* points);
  // The largest delay per pixel column of a plot `width` pixels wide (-1: no launch there).
  std::vector<int64_t> ColumnMaxima(int width) const;
  QSize sizeHint() const override { return {800, kHeight}; }

 protected:
  void paintEvent(QPaintEvent* event) override;

 private:
  TimeAxis* axis_;
  const std::vector<LaunchDelayPoint>* points_ = nullptr;  // owned by the document's analysis
  int64_t max_delay_ns_ = 0;
  int64_t negative_ = 0;
};

}  // namespace stepscope::viewer
