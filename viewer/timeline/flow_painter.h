// Drawing the flows of the selected slice (launches, data flows) over the timeline. A flow whose
// end lies off-screen (scrolled away, far out in time, or in a collapsed track) is drawn up to
// the edge of the time area with an open arrowhead there pointing the way it goes on, so
// following a launch to a kernel outside the view always shows where to go.
#pragma once

#include <QColor>
#include <QPointF>
#include <QRectF>
#include <optional>
#include <span>

class QPainter;

namespace stepscope::viewer {

// A flow as laid out on the widget: its ends may be anywhere (far outside the widget).
struct FlowEnds {
  QPointF from;  // the end of the source slice
  QPointF to;    // the start of the destination slice
  QColor color;
};

// The part of a flow inside `area`, and which ends were cut at its edge.
struct FlowLine {
  QPointF from, to;
  bool from_cut = false;
  bool to_cut = false;
};

// The straight line between the ends clipped to `area` (Liang-Barsky); nullopt when it misses
// the area. Ends inside the area are kept as they are.
std::optional<FlowLine> ClipFlow(QPointF from, QPointF to, const QRectF& area);

// Draws the flows within `area` (the painter is clipped to it): both ends inside, a curve with an
// arrowhead at the destination; an end outside, a straight line to the edge with an open
// arrowhead there pointing off-screen.
void PaintFlows(QPainter& painter, const QRectF& area, std::span<const FlowEnds> flows);

}  // namespace stepscope::viewer
