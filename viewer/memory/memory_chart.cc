// One allocator's memory chart (memory_chart.h): the decimated curve, its peak and the click.
#include "viewer/memory/memory_chart.h"

#include <QMouseEvent>
#include <QPainter>
#include <algorithm>
#include <cmath>

#include "base/units.h"
#include "viewer/memory/decimate.h"
#include "viewer/models/live_tensor_model.h"

namespace stepscope::viewer {
namespace {

constexpr int kTop = 18;      // title line
constexpr int kBottom = 4;
constexpr int kPeakSnapPx = 6;

}  // namespace

MemoryChart::MemoryChart(const analysis::AllocatorTimeline& timeline, TimeAxis* axis, QWidget* parent)
    : QWidget(parent), timeline_(&timeline), axis_(axis) {
  setFixedHeight(kHeight);
  setMinimumWidth(kTimeAreaLeft + 200);
  connect(axis_, &TimeAxis::changed, this, qOverload<>(&QWidget::update));
  setToolTip(tr("Click to list the tensors live at that moment; near the red peak marker the peak is picked."));
}

double MemoryChart::XOf(double time_ns) const {
  const double width = std::max(1, this->width() - kTimeAreaLeft - kTimeAreaRight);
  return kTimeAreaLeft + axis_->MappingFor(width).NsToPx(time_ns);
}

void MemoryChart::SetCursorTime(std::optional<int64_t> time_ns) {
  cursor_ns_ = time_ns;
  update();
}

void MemoryChart::paintEvent(QPaintEvent*) {
  QPainter painter(this);
  painter.fillRect(rect(), Qt::white);
  const analysis::AllocatorTimeline& timeline = *timeline_;
  const double width = std::max(1, this->width() - kTimeAreaLeft - kTimeAreaRight);
  const TimeMapping mapping = axis_->MappingFor(width);
  const int plot_height = height() - kTop - kBottom;
  const double scale = timeline.peak_bytes > 0 ? plot_height / static_cast<double>(timeline.peak_bytes) : 0;
  auto y_of = [&](int64_t bytes) { return kTop + plot_height - bytes * scale; };

  // Label column: allocator, device, peak, origin.
  QFont font = painter.font();
  font.setPointSizeF(8);
  painter.setFont(font);
  painter.setPen(QColor(0x20, 0x24, 0x30));
  QString origin = timeline.derived_from_outputs ? tr("derived from outputs (as TensorFlow's timeline)")
                                                 : QString::fromStdString(timeline.origin);
  const QString label = QStringLiteral("%1\n%2\npeak %3\n%4")
                            .arg(QString::fromStdString(timeline.allocator),
                                 QString::fromStdString(timeline.device), QString::fromStdString(FormatBytes(timeline.peak_bytes)), origin);
  painter.drawText(QRect(6, 2, kTimeAreaLeft - 12, height() - 4), Qt::AlignLeft | Qt::AlignTop | Qt::TextWordWrap,
                   label);
  painter.setPen(QColor(0xc0, 0xc4, 0xcc));
  painter.drawLine(kTimeAreaLeft - 1, 0, kTimeAreaLeft - 1, height());
  painter.drawLine(kTimeAreaLeft, height() - 1, width + kTimeAreaLeft, height() - 1);

  painter.setClipRect(kTimeAreaLeft, 0, static_cast<int>(width), height());
  const std::vector<ColumnExtent> extents = DecimateCurve(timeline.curve, mapping);
  const QColor fill = timeline.derived_from_outputs ? QColor(0xe0, 0xa0, 0x40) : QColor(0x4a, 0x90, 0xd9);
  for (size_t c = 0; c < extents.size(); ++c) {
    const double x = kTimeAreaLeft + static_cast<double>(c);
    const double top = y_of(extents[c].high);
    painter.fillRect(QRectF(x, top, 1, kTop + plot_height - top), fill.lighter(130));
    painter.fillRect(QRectF(x, top, 1, std::max(1.0, y_of(extents[c].low) - top)), fill.darker(120));
  }
  // Peak marker.
  const double peak_x = XOf(static_cast<double>(timeline.peak_ns));
  painter.setPen(QPen(QColor(0xd0, 0x20, 0x20), 1.5));
  painter.drawLine(QPointF(peak_x, kTop - 2), QPointF(peak_x, height()));
  QPolygonF marker;
  marker << QPointF(peak_x, kTop) << QPointF(peak_x - 5, kTop - 8) << QPointF(peak_x + 5, kTop - 8);
  painter.setBrush(QColor(0xd0, 0x20, 0x20));
  painter.drawPolygon(marker);
  painter.drawText(QPointF(peak_x + 7, kTop - 4), tr("peak %1").arg(QString::fromStdString(FormatBytes(timeline.peak_bytes))));
  if (cursor_ns_) {
    const double x = XOf(static_cast<double>(*cursor_ns_));
    painter.setPen(QPen(QColor(0x20, 0x20, 0x20), 1, Qt::DashLine));
    painter.drawLine(QPointF(x, 0), QPointF(x, height()));
  }
}

void MemoryChart::mousePressEvent(QMouseEvent* event) {
  const double x = event->position().x();
  if (x < kTimeAreaLeft) return;
  const double peak_x = XOf(static_cast<double>(timeline_->peak_ns));
  int64_t time;
  if (std::fabs(x - peak_x) <= kPeakSnapPx) {
    time = timeline_->peak_ns;
  } else {
    const double width = std::max(1, this->width() - kTimeAreaLeft - kTimeAreaRight);
    time = static_cast<int64_t>(std::llround(axis_->MappingFor(width).PxToNs(x - kTimeAreaLeft)));
  }
  SetCursorTime(time);
  emit timeClicked(time);
}

}  // namespace stepscope::viewer
