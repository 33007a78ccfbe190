// The GPU pane's stacked bars (gpu_bars.h).
#include "viewer/panes/gpu_bars.h"

#include <QPainter>
#include <algorithm>
#include <cmath>

#include "viewer/panes/pane_widgets.h"

namespace stepscope::viewer {

GpuBars::GpuBars(QWidget* parent) : QWidget(parent) {
  setMinimumHeight(kLegendHeight + kRowHeight);
  setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Preferred);
}

void GpuBars::SetRows(std::vector<Row> rows) {
  rows_ = std::move(rows);
  updateGeometry();
  update();
}

void GpuBars::SetWithoutIdle(bool without_idle) {
  without_idle_ = without_idle;
  update();
}

QSize GpuBars::sizeHint() const {
  return {kLabelWidth + 400 + kTextWidth, kLegendHeight + static_cast<int>(std::max<size_t>(rows_.size(), 1)) * kRowHeight + 4};
}

GpuBars::Segments GpuBars::SegmentsOf(const analysis::GpuTime& time, double width) const {
  Segments s;
  const double whole = static_cast<double>(without_idle_ ? time.busy_ns : time.span_ns);
  if (whole <= 0 || width <= 0) return s;
  const double scale = width / whole;
  const int64_t compute = std::min(time.compute_ns, time.busy_ns);
  const int64_t communication =
      std::clamp<int64_t>(time.communication_ns - time.compute_communication_overlap_ns, 0, time.busy_ns - compute);
  const int64_t memory = std::clamp<int64_t>(time.memory_ns, 0, time.busy_ns - compute - communication);
  s.compute = static_cast<double>(compute) * scale;
  s.communication = static_cast<double>(communication) * scale;
  s.memory = static_cast<double>(memory) * scale;
  s.idle = without_idle_ ? 0 : static_cast<double>(time.idle_ns) * scale;
  s.overlap = static_cast<double>(std::min(time.compute_communication_overlap_ns, compute)) * scale;
  return s;
}

QRect GpuBars::BarRect(int row) const {
  const int bar_width = std::max(40, width() - kLabelWidth - kTextWidth - 12);
  return {kLabelWidth, kLegendHeight + row * kRowHeight + 3, bar_width, kRowHeight - 6};
}

void GpuBars::paintEvent(QPaintEvent*) {
  QPainter painter(this);
  painter.fillRect(rect(), palette().base());
  const QColor text = palette().color(QPalette::Text);
  // Legend.
  int x = 6;
  const struct {
    QRgb color;
    const char* name;
  } legend[] = {{kComputeColor, QT_TR_NOOP("compute")},
                {kCommunicationColor, QT_TR_NOOP("communication")},
                {kMemoryColor, QT_TR_NOOP("memory")},
                {kIdleColor, QT_TR_NOOP("idle")}};
  for (const auto& entry : legend) {
    painter.fillRect(x, 6, 12, 12, QColor::fromRgba(entry.color));
    painter.setPen(text);
    const QString name = tr(entry.name);
    painter.drawText(x + 16, 4, 200, 16, Qt::AlignLeft | Qt::AlignVCenter, name);
    x += 16 + painter.fontMetrics().horizontalAdvance(name) + 14;
  }
  painter.setPen(text);
  painter.setBrush(QBrush(QColor(0x20, 0x20, 0x28), Qt::BDiagPattern));
  painter.drawRect(x, 6, 12, 12);
  painter.drawText(x + 16, 4, 700, 16, Qt::AlignLeft | Qt::AlignVCenter,
                   tr("compute overlapping communication") + (without_idle_ ? tr("   (bars: share of busy)")
                                                                           : tr("   (bars: share of the span)")));
  painter.setBrush(Qt::NoBrush);

  for (size_t i = 0; i < rows_.size(); ++i) {
    const Row& row = rows_[i];
    const QRect bar = BarRect(static_cast<int>(i));
    QFont font = this->font();
    font.setBold(row.gpu);
    painter.setFont(font);
    painter.setPen(text);
    painter.drawText(6, bar.top() - 3, kLabelWidth - 10, kRowHeight, Qt::AlignLeft | Qt::AlignVCenter,
                     painter.fontMetrics().elidedText(row.label, Qt::ElideMiddle, kLabelWidth - 10));
    const int height = row.gpu ? bar.height() : bar.height() - 4;
    const int top = row.gpu ? bar.top() : bar.top() + 2;
    const Segments s = SegmentsOf(row.time, bar.width());
    double at = bar.left();
    auto segment = [&](double w, QRgb color) {
      if (w <= 0) return;
      // A segment that holds any time is at least a pixel wide.
      const QRectF box(at, top, std::max(1.0, w), height);
      painter.fillRect(box, QColor::fromRgba(color));
      at += w;
    };
    const double compute_start = at;
    segment(s.compute, kComputeColor);
    segment(s.communication, kCommunicationColor);
    segment(s.memory, kMemoryColor);
    segment(s.idle, kIdleColor);
    if (s.overlap > 0) {
      painter.setPen(Qt::NoPen);
      painter.setBrush(QBrush(QColor(0x20, 0x20, 0x28), Qt::BDiagPattern));
      painter.drawRect(QRectF(compute_start + s.compute - s.overlap, top, std::max(1.0, s.overlap), height));
      painter.setBrush(Qt::NoBrush);
    }
    painter.setPen(QColor(0x90, 0x94, 0xa0));
    painter.drawRect(QRect(bar.left(), top, bar.width() - 1, height - 1));
    const analysis::GpuTime& t = row.time;
    const double busy_share = t.span_ns > 0 ? 100.0 * static_cast<double>(t.busy_ns) / static_cast<double>(t.span_ns) : 0;
    QString summary = tr("busy %1 of %2 (%3%)").arg(DurationText(t.busy_ns), DurationText(t.span_ns)).arg(busy_share, 0, 'f', 1);
    if (t.compute_communication_overlap_ns > 0) summary += tr(", overlap %1").arg(DurationText(t.compute_communication_overlap_ns));
    painter.setFont(this->font());
    painter.setPen(text);
    painter.drawText(bar.right() + 8, bar.top() - 3, kTextWidth, kRowHeight, Qt::AlignLeft | Qt::AlignVCenter, summary);
  }
}

}  // namespace stepscope::viewer
