// Draws the timeline's counter tracks (counter_tracks.h) and says what is under the cursor: each
// counter as a filled step chart of its per-pixel maxima (an event counter as bars where events
// are), scaled to the largest value in view, which a label states; the label column names the
// counter and what it measures. A frame reads one CounterColumn per pixel, whatever the zoom.
#pragma once

#include <QCoreApplication>
#include <QPainter>
#include <QRect>
#include <QString>
#include <vector>

#include "viewer/timeline_data/counter_tracks.h"

namespace stepscope::viewer {

class CounterPainter {
  Q_DECLARE_TR_FUNCTIONS(CounterPainter)

 public:
  // The chart of `track` in `area` (the time area's columns, its rows' height) from its columns
  // (CounterTrack::Columns for the time area's mapping, found while the frame's boxes are).
  static void Paint(QPainter& painter, const CounterTrack& track, const std::vector<CounterColumn>& columns,
                    const QRect& area);
  // The label column of a counter's row: its name on the first row, what it measures on the next.
  static void PaintLabel(QPainter& painter, const CounterTrack& track, int part, const QRect& area);
  // The tooltip (HTML) at `x_px` of the time area: the value at the cursor (a step counter's
  // level, the largest event or the busy fraction of that pixel) and the largest in view.
  static QString Tooltip(const TimeMapping& mapping, const CounterTrack& track, double x_px);
  // What the second label row says ("bytes in use", "busy", "per launch", "kernels queued").
  static QString Measure(const CounterTrack& track);
  static QColor ColorOf(const CounterTrack& track);
  // The largest value among `columns` (0 when none has a sample).
  static double MaxOf(const std::vector<CounterColumn>& columns);
};

}  // namespace stepscope::viewer
