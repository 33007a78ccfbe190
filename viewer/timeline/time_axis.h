// The time window shared by the timeline and the memory charts: one object, so zooming or
// panning either moves both. Widgets map it onto their own width with MappingFor().
#pragma once

#include <QObject>

#include "viewer/timeline_data/time_mapping.h"

namespace stepscope::viewer {

// Both widgets draw their time area between these margins, so equal times line up vertically.
inline constexpr int kTimeAreaLeft = 240;   // the track label column
inline constexpr int kTimeAreaRight = 16;   // the timeline's vertical scroll bar

class TimeAxis : public QObject {
  Q_OBJECT

 public:
  // The data extent: the view never zooms out far beyond it nor pans away from it.
  TimeAxis(double limit_begin_ns, double limit_end_ns, QObject* parent = nullptr);

  double begin_ns() const { return begin_ns_; }
  double end_ns() const { return end_ns_; }
  double limit_begin_ns() const { return limit_begin_ns_; }
  double limit_end_ns() const { return limit_end_ns_; }
  TimeMapping MappingFor(double width_px) const { return TimeMapping(begin_ns_, end_ns_, width_px); }

  void SetRange(double begin_ns, double end_ns);
  // Takes the range of a mapping a widget zoomed or panned.
  void Apply(const TimeMapping& mapping) { SetRange(mapping.begin_ns(), mapping.end_ns()); }
  void FitAll();

 signals:
  void changed();

 private:
  double limit_begin_ns_;
  double limit_end_ns_;
  double begin_ns_ = 0;
  double end_ns_ = 1;
};

}  // namespace stepscope::viewer
