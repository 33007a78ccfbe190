// Drawing the timeline's markers (marker_painter.h): a line across the rows and a labelled flag
// on the ruler, so the label stays readable above the slices.
#include "viewer/timeline/marker_painter.h"

#include <QFontMetrics>
#include <QPainter>
#include <cmath>

#include "viewer/timeline/time_axis.h"

namespace stepscope::viewer {

void PaintMarkers(QPainter& painter, const TimeMapping& mapping, const MarkerSet& markers, int top, int bottom,
                  int ruler_height) {
  if (markers.empty()) return;
  painter.save();
  painter.setClipRect(kTimeAreaLeft, top, static_cast<int>(mapping.width_px()), bottom - top);
  const QColor color = QColor::fromRgb(kMarkerColor);
  QFont font = painter.font();
  font.setPointSizeF(8);
  painter.setFont(font);
  const QFontMetrics metrics(font);
  for (const Marker& m : markers.markers()) {
    const double px = mapping.NsToPx(static_cast<double>(m.time_ns));
    if (px < -1 || px > mapping.width_px() + 1) continue;
    const int x = kTimeAreaLeft + static_cast<int>(std::lround(px));
    painter.setPen(QPen(color, 1));
    painter.drawLine(x, top, x, bottom);
    const QString label = QString::fromStdString(m.label);
    const int w = metrics.horizontalAdvance(label) + 6;
    const QRect flag(x, top + 1, w, ruler_height / 2);
    painter.fillRect(flag, color);
    painter.setPen(Qt::white);
    painter.drawText(flag, Qt::AlignCenter, label);
  }
  painter.restore();
}

}  // namespace stepscope::viewer
