// Flows over the timeline (flow_painter.h): clipping to the time area and the arrowheads.
#include "viewer/timeline/flow_painter.h"

#include <QPainter>
#include <QPainterPath>
#include <QPolygonF>
#include <algorithm>
#include <cmath>

namespace stepscope::viewer {
namespace {

constexpr double kHeadLength = 7;
constexpr double kHeadHalfWidth = 4;

// An arrowhead with its tip at `tip`, pointing along `direction` (not normalised).
QPolygonF ArrowHead(QPointF tip, QPointF direction) {
  const double length = std::hypot(direction.x(), direction.y());
  const QPointF unit = length > 0 ? direction / length : QPointF(1, 0);
  const QPointF normal(-unit.y(), unit.x());
  const QPointF base = tip - unit * kHeadLength;
  return QPolygonF({tip, base + normal * kHeadHalfWidth, base - normal * kHeadHalfWidth});
}

}  // namespace

std::optional<FlowLine> ClipFlow(QPointF from, QPointF to, const QRectF& area) {
  // Liang-Barsky: the line from + t (to - from), t in [0, 1], kept where it is inside.
  const double dx = to.x() - from.x();
  const double dy = to.y() - from.y();
  double t0 = 0, t1 = 1;
  const double p[4] = {-dx, dx, -dy, dy};
  const double q[4] = {from.x() - area.left(), area.right() - from.x(), from.y() - area.top(), area.bottom() - from.y()};
  for (int i = 0; i < 4; ++i) {
    if (p[i] == 0) {
      if (q[i] < 0) return std::nullopt;  // parallel to this edge and outside it
      continue;
    }
    const double t = q[i] / p[i];
    if (p[i] < 0) {
      t0 = std::max(t0, t);
    } else {
      t1 = std::min(t1, t);
    }
    if (t0 > t1) return std::nullopt;
  }
  FlowLine line;
  line.from_cut = t0 > 0;
  line.to_cut = t1 < 1;
  line.from = line.from_cut ? QPointF(from.x() + t0 * dx, from.y() + t0 * dy) : from;
  line.to = line.to_cut ? QPointF(from.x() + t1 * dx, from.y() + t1 * dy) : to;
  return line;
}

void PaintFlows(QPainter& painter, const QRectF& area, std::span<const FlowEnds> flows) {
  painter.save();
  painter.setClipRect(area);
  painter.setRenderHint(QPainter::Antialiasing, true);
  for (const FlowEnds& flow : flows) {
    // Never hand the painter the far ends: coordinates millions of pixels out make the raster
    // engine drop the whole path.
    const std::optional<FlowLine> line = ClipFlow(flow.from, flow.to, area);
    if (!line) continue;
    painter.setPen(QPen(flow.color, 1.5));
    if (!line->from_cut && !line->to_cut) {
      QPainterPath path(line->from);
      const double bend = std::max(20.0, std::fabs(line->to.x() - line->from.x()) / 3);
      path.cubicTo(line->from.x() + bend, line->from.y(), line->to.x() - bend, line->to.y(), line->to.x(), line->to.y());
      painter.setBrush(Qt::NoBrush);
      painter.drawPath(path);
      painter.setBrush(flow.color);
      painter.drawPolygon(ArrowHead(line->to, QPointF(1, 0)));
      continue;
    }
    const QPointF direction = line->to - line->from;
    painter.setBrush(Qt::NoBrush);
    painter.drawLine(line->from, line->to);
    // At a cut end an open head points off-screen, the way the flow goes on.
    painter.setPen(QPen(flow.color, 2));
    if (line->to_cut) painter.drawPolygon(ArrowHead(line->to, direction));
    if (line->from_cut) painter.drawPolygon(ArrowHead(line->from, -direction));
    if (!line->to_cut) {
      painter.setBrush(flow.color);
      painter.drawPolygon(ArrowHead(line->to, direction));
    }
  }
  painter.restore();
}

}  // namespace stepscope::viewer
