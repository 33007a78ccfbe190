// Drawing and tooltips of the timeline's counter tracks (counter_painter.h).
#include "viewer/timeline/counter_painter.h"

#include <QFontMetrics>
#include <algorithm>
#include <cmath>

#include "base/units.h"

namespace stepscope::viewer {

QColor CounterPainter::ColorOf(const CounterTrack& track) {
  switch (track.kind) {
    case CounterTrack::Kind::kMemory: return QColor(0x2e, 0x9d, 0x5b);
    case CounterTrack::Kind::kUtilization: return QColor(0x3b, 0x7d, 0xd8);
    case CounterTrack::Kind::kLaunchDelay: return QColor(0xe8, 0x83, 0x3a);
    case CounterTrack::Kind::kQueue: return QColor(0x8e, 0x5c, 0xc4);
    case CounterTrack::Kind::kTraceCounter: break;
  }
  return QColor(0x3a, 0x9a, 0xa8);
}

QString CounterPainter::Measure(const CounterTrack& track) {
  switch (track.kind) {
    case CounterTrack::Kind::kMemory: return tr("bytes in use");
    case CounterTrack::Kind::kUtilization: return tr("busy, per pixel");
    case CounterTrack::Kind::kLaunchDelay: return tr("call end \u2192 start");
    case CounterTrack::Kind::kQueue: return tr("launched, not started");
    case CounterTrack::Kind::kTraceCounter: break;
  }
  return QString::fromStdString(track.unit.empty() ? std::string("counter") : track.unit);
}

double CounterPainter::MaxOf(const std::vector<CounterColumn>& columns) {
  double max = 0;
  for (const CounterColumn& c : columns) {
    if (c.any) max = std::max(max, c.high);
  }
  return max;
}

void CounterPainter::Paint(QPainter& painter, const CounterTrack& track, const std::vector<CounterColumn>& columns,
                           const QRect& area) {
  const double max = MaxOf(columns);
  const QColor color = ColorOf(track);
  const int bottom = area.bottom() + 1;
  const double height = area.height() - 11.0;  // room for the max label above the chart
  // Utilisation always on 0..100 %, so that two GPUs compare at a glance.
  const double scale_max = track.kind == CounterTrack::Kind::kUtilization ? 100.0 : max;
  auto y_of = [&](const CounterColumn& c) {
    if (!c.any || scale_max <= 0) return bottom;
    // Negatives drawn at zero; whole pixels, which the raster engine fills fastest.
    return bottom - static_cast<int>(std::lround(std::clamp(c.high / scale_max, 0.0, 1.0) * height));
  };
  // Runs of columns of one height filled as one opaque rectangle, with a darker top edge: a flat
  // stretch is one fill, a busy one at most a fill per pixel (a polygon or a stroked outline of
  // thousands of points, or translucent fills, cost Qt's rasterizer several times more).
  const QColor fill = QColor::fromRgbF(1 - 0.45f * (1 - color.redF()), 1 - 0.45f * (1 - color.greenF()),
                                       1 - 0.45f * (1 - color.blueF()));
  const QColor edge = color.darker(120);
  const int left = area.left();
  size_t run = 0;
  int run_y = columns.empty() ? bottom : y_of(columns[0]);
  for (size_t c = 1; c <= columns.size(); ++c) {
    const int y = c < columns.size() ? y_of(columns[c]) : -1;
    if (c < columns.size() && y == run_y) continue;
    if (run_y < bottom) {
      const int x = left + static_cast<int>(run), w = static_cast<int>(c - run);
      painter.fillRect(x, run_y, w, 1, edge);
      if (bottom - run_y > 1) painter.fillRect(x, run_y + 1, w, bottom - run_y - 1, fill);
    }
    run = c;
    run_y = y;
  }
  painter.setPen(QColor(0x50, 0x54, 0x60));
  const QString label = tr("max %1").arg(QString::fromStdString(track.Format(max)));
  painter.drawText(QRect(area.left() + 4, area.top(), area.width() - 8, 12), Qt::AlignLeft | Qt::AlignTop, label);
}

void CounterPainter::PaintLabel(QPainter& painter, const CounterTrack& track, int part, const QRect& area) {
  const QString text = part == 0 ? QString::fromStdString(track.name) : Measure(track);
  painter.setPen(part == 0 ? ColorOf(track).darker(140) : QColor(0x70, 0x74, 0x80));
  painter.drawText(area, Qt::AlignVCenter | Qt::AlignLeft,
                   QFontMetrics(painter.font()).elidedText(text, Qt::ElideMiddle, area.width()));
}

QString CounterPainter::Tooltip(const TimeMapping& mapping, const CounterTrack& track, double x_px) {
  const double column = std::floor(x_px);
  const double begin = mapping.PxToNs(column), end = mapping.PxToNs(column + 1);
  const double at = mapping.PxToNs(x_px);
  auto format = [&](double v) { return QString::fromStdString(track.Format(v)).toHtmlEscaped(); };
  QString value;
  if (track.kind == CounterTrack::Kind::kUtilization) {
    const double busy = track.busy.BusyIn(begin, end);
    value = tr("busy <b>%1</b> of this pixel's %2")
                .arg(format(100.0 * busy / (end - begin)),
                     QString::fromStdString(FormatDurationSignificant(end - begin)));
  } else if (!track.samples.step()) {
    const CounterColumn c = track.samples.Window(begin, end);
    value = c.any ? tr("largest in this pixel <b>%1</b>").arg(format(c.high)) : tr("none in this pixel");
  } else {
    value = tr("<b>%1</b>").arg(format(static_cast<double>(track.samples.LevelAt(at))));
    const CounterColumn c = track.samples.Window(begin, end);
    if (c.any && c.low != c.high) value += tr(" (%1 to %2 in this pixel)").arg(format(c.low), format(c.high));
  }
  return QStringLiteral("<b>%1</b> &middot; %2<br>at %3: %4<br>peak %5<br><i>%6</i>")
      .arg(QString::fromStdString(track.name).toHtmlEscaped(), Measure(track).toHtmlEscaped(),
           QString::fromStdString(FormatDurationSignificant(at)), value,
           track.kind == CounterTrack::Kind::kUtilization ? QStringLiteral("100 %") : format(static_cast<double>(track.peak)),
           QString::fromStdString(track.origin).toHtmlEscaped());
}

}  // namespace stepscope::viewer
