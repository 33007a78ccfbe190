// One allocator's memory chart (memory_chart.h): the title, the byte and time axes, the
// decimated curve, its peak and the click.
#include "viewer/memory/memory_chart.h"

#include <QMouseEvent>
#include <QPainter>
#include <algorithm>
#include <cmath>

#include "base/units.h"
#include "viewer/memory/byte_ticks.h"
#include "viewer/memory/decimate.h"
#include "viewer/timeline_data/time_mapping.h"

namespace stepscope::viewer {
namespace {

constexpr int kPeakSnapPx = 6;
constexpr int kRightMargin = 8;
constexpr int kMinTickSpacingPx = 24;  // between byte ticks
constexpr double kPointSize = 8;

}  // namespace

MemoryChart::MemoryChart(const analysis::AllocatorTimeline& timeline, TimeAxis* axis, QWidget* parent)
    : QWidget(parent), timeline_(&timeline), axis_(axis) {
  setMinimumHeight(kMinHeight);
  setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
  QFont small = font();
  small.setPointSizeF(kPointSize);
  setFont(small);
  connect(axis_, &TimeAxis::changed, this, qOverload<>(&QWidget::update));
  setToolTip(title() + tr("\nClick to list the tensors live at that moment; near the red peak marker the peak is picked."));
}

QRect MemoryChart::PlotRect() const {
  return QRect(QPoint(kYAxisWidth, kTitleHeight), QPoint(width() - kRightMargin, height() - kXAxisHeight - 1));
}

QString MemoryChart::title() const {
  const analysis::AllocatorTimeline& timeline = *timeline_;
  const QString origin = timeline.derived_from_outputs ? tr("derived from outputs (as TensorFlow's timeline)")
                                                       : QString::fromStdString(timeline.origin);
  QStringList parts{QString::fromStdString(timeline.allocator)};
  if (!timeline.device.empty()) parts << QString::fromStdString(timeline.device);
  parts << tr("peak %1").arg(QString::fromStdString(FormatBytes(timeline.peak_bytes)));
  if (!origin.isEmpty()) parts << origin;
  return parts.join(QStringLiteral("  \u00b7  "));
}

double MemoryChart::XOf(double time_ns) const {
  const QRect plot = PlotRect();
  return plot.left() + axis_->MappingFor(std::max(1, plot.width())).NsToPx(time_ns);
}

std::vector<MemoryChart::AxisTick> MemoryChart::YTicks() const {
  const QRect plot = PlotRect();
  const int64_t top = timeline_->peak_bytes;
  std::vector<AxisTick> ticks;
  for (const ByteTick& tick : ByteTicks(top, std::max(1, plot.height() / kMinTickSpacingPx))) {
    const double y = top > 0 ? plot.bottom() - static_cast<double>(tick.bytes) / static_cast<double>(top) * (plot.height() - 1)
                             : plot.bottom();
    ticks.push_back({y, QString::fromStdString(tick.label)});
  }
  return ticks;
}

std::vector<MemoryChart::AxisTick> MemoryChart::XTicks() const {
  const QRect plot = PlotRect();
  std::vector<AxisTick> ticks;
  for (const RulerTick& tick : RulerTicks(axis_->MappingFor(std::max(1, plot.width())))) {
    if (tick.major) ticks.push_back({plot.left() + tick.px, QString::fromStdString(tick.label)});
  }
  return ticks;
}

void MemoryChart::SetCursorTime(std::optional<int64_t> time_ns) {
  cursor_ns_ = time_ns;
  update();
}

void MemoryChart::PaintAxes(QPainter& painter, const QRect& plot) {
  const QColor text(0x20, 0x24, 0x30);
  const QColor grid(0xe4, 0xe6, 0xea);
  const QColor axis(0xa0, 0xa4, 0xac);
  const QFontMetrics metrics = painter.fontMetrics();
  painter.setPen(text);
  painter.drawText(QRect(6, 0, width() - 12, kTitleHeight), Qt::AlignLeft | Qt::AlignVCenter,
                   metrics.elidedText(title(), Qt::ElideMiddle, width() - 12));
  for (const AxisTick& tick : YTicks()) {
    const int y = static_cast<int>(std::lround(tick.at));
    painter.setPen(grid);
    painter.drawLine(plot.left(), y, plot.right(), y);
    painter.setPen(axis);
    painter.drawLine(plot.left() - 4, y, plot.left(), y);
    painter.setPen(text);
    painter.drawText(QRect(0, y - metrics.height() / 2, plot.left() - 6, metrics.height()),
                     Qt::AlignRight | Qt::AlignVCenter, tick.label);
  }
  painter.setPen(axis);
  painter.drawLine(plot.left(), plot.top(), plot.left(), plot.bottom());
  painter.drawLine(plot.left(), plot.bottom(), plot.right(), plot.bottom());
  for (const AxisTick& tick : XTicks()) {
    const int x = static_cast<int>(std::lround(tick.at));
    painter.setPen(axis);
    painter.drawLine(x, plot.bottom(), x, plot.bottom() + 4);
    painter.setPen(text);
    painter.drawText(x + 3, height() - 3, tick.label);
  }
}

void MemoryChart::paintEvent(QPaintEvent*) {
  QPainter painter(this);
  painter.fillRect(rect(), Qt::white);
  const analysis::AllocatorTimeline& timeline = *timeline_;
  const QRect plot = PlotRect();
  PaintAxes(painter, plot);
  const TimeMapping mapping = axis_->MappingFor(std::max(1, plot.width()));
  // The peak at the plot's top row, 0 at its bottom row (as YTicks places them).
  const double scale = timeline.peak_bytes > 0 ? (plot.height() - 1) / static_cast<double>(timeline.peak_bytes) : 0;
  auto y_of = [&](int64_t bytes) { return plot.bottom() - static_cast<double>(bytes) * scale; };

  painter.save();
  painter.setClipRect(plot.adjusted(0, 0, 1, 1));
  const std::vector<ColumnExtent> extents = DecimateCurve(timeline.curve, mapping);
  const QColor fill = timeline.derived_from_outputs ? QColor(0xe0, 0xa0, 0x40) : QColor(0x4a, 0x90, 0xd9);
  for (size_t c = 0; c < extents.size(); ++c) {
    const double x = plot.left() + static_cast<double>(c);
    const double top = y_of(extents[c].high);
    painter.fillRect(QRectF(x, top, 1, plot.bottom() - top), fill.lighter(130));
    painter.fillRect(QRectF(x, top, 1, std::max(1.0, y_of(extents[c].low) - top)), fill.darker(120));
  }
  // Peak marker.
  const double peak_x = XOf(static_cast<double>(timeline.peak_ns));
  painter.setPen(QPen(QColor(0xd0, 0x20, 0x20), 1.5));
  painter.drawLine(QPointF(peak_x, plot.top()), QPointF(peak_x, plot.bottom()));
  QPolygonF marker;
  // Its head inside the plot, clear of the title line.
  marker << QPointF(peak_x, plot.top() + 8) << QPointF(peak_x - 5, plot.top()) << QPointF(peak_x + 5, plot.top());
  painter.setBrush(QColor(0xd0, 0x20, 0x20));
  painter.drawPolygon(marker);
  if (cursor_ns_) {
    const double x = XOf(static_cast<double>(*cursor_ns_));
    painter.setPen(QPen(QColor(0x20, 0x20, 0x20), 1, Qt::DashLine));
    painter.drawLine(QPointF(x, plot.top()), QPointF(x, plot.bottom()));
  }
  painter.restore();
}

void MemoryChart::mousePressEvent(QMouseEvent* event) {
  const QRect plot = PlotRect();
  const double x = event->position().x();
  if (x < plot.left()) return;
  const double peak_x = XOf(static_cast<double>(timeline_->peak_ns));
  int64_t time;
  if (std::fabs(x - peak_x) <= kPeakSnapPx) {
    time = timeline_->peak_ns;
  } else {
    time = static_cast<int64_t>(std::llround(axis_->MappingFor(std::max(1, plot.width())).PxToNs(x - plot.left())));
  }
  SetCursorTime(time);
  emit timeClicked(time);
}

}  // namespace stepscope::viewer
