// The launch-delay track (launch_delay_chart.h): per pixel column the largest delay, on the
// timeline's time axis.
#include "viewer/panes/launch_delay_chart.h"

#include <QPainter>
#include <algorithm>

#include "base/units.h"
#include "viewer/timeline_data/time_mapping.h"

namespace stepscope::viewer {
namespace {

constexpr int kTop = 6;
constexpr int kBottom = 4;

}  // namespace

LaunchDelayChart::LaunchDelayChart(TimeAxis* axis, QWidget* parent) : QWidget(parent), axis_(axis) {
  setFixedHeight(kHeight);
  setMinimumWidth(kTimeAreaLeft + 200);
  connect(axis_, &TimeAxis::changed, this, qOverload<>(&QWidget::update));
  setToolTip(tr("Launch delay (kernel start - runtime call end) of each launch, at the kernel's start; "
                "each pixel shows the largest delay in it."));
}

void LaunchDelayChart::SetPoints(const std::vector<LaunchDelayPoint>* points) {
  points_ = points;
  max_delay_ns_ = 0;
  negative_ = 0;
  if (points_ != nullptr) {
    for (const LaunchDelayPoint& p : *points_) {
      max_delay_ns_ = std::max(max_delay_ns_, p.delay_ns);
      if (p.delay_ns < 0) ++negative_;
    }
  }
  update();
}

std::vector<int64_t> LaunchDelayChart::ColumnMaxima(int width) const {
  std::vector<int64_t> columns(static_cast<size_t>(std::max(1, width)), -1);
  if (points_ == nullptr) return columns;
  const TimeMapping mapping = axis_->MappingFor(width);
  // Only the points in the visible window: binary search on the time-sorted points.
  const auto first = std::lower_bound(points_->begin(), points_->end(), mapping.PxToNs(0),
                                      [](const LaunchDelayPoint& p, double t) { return static_cast<double>(p.time_ns) < t; });
  for (auto it = first; it != points_->end(); ++it) {
    const double x = mapping.NsToPx(static_cast<double>(it->time_ns));
    if (x >= width) break;
    if (x < 0) continue;
    int64_t& column = columns[static_cast<size_t>(x)];
    column = std::max(column, std::max<int64_t>(0, it->delay_ns));
  }
  return columns;
}

void LaunchDelayChart::paintEvent(QPaintEvent*) {
  QPainter painter(this);
  painter.fillRect(rect(), Qt::white);
  const int width = std::max(1, this->width() - kTimeAreaLeft - kTimeAreaRight);
  const int plot_height = height() - kTop - kBottom;
  QFont font = painter.font();
  font.setPointSizeF(8);
  painter.setFont(font);
  painter.setPen(QColor(0x20, 0x24, 0x30));
  const int64_t count = points_ != nullptr ? static_cast<int64_t>(points_->size()) : 0;
  QString label = tr("launch delay\nmax %1\n%2 launches").arg(QString::fromStdString(FormatDurationSignificant(static_cast<double>(max_delay_ns_)))).arg(count);
  if (negative_ > 0) label += tr("\n%1 negative (at 0)").arg(negative_);
  painter.drawText(QRect(6, 2, kTimeAreaLeft - 12, height() - 4), Qt::AlignLeft | Qt::AlignTop | Qt::TextWordWrap, label);
  painter.setPen(QColor(0xc0, 0xc4, 0xcc));
  painter.drawLine(kTimeAreaLeft - 1, 0, kTimeAreaLeft - 1, height());
  painter.drawLine(kTimeAreaLeft, height() - 1, width + kTimeAreaLeft, height() - 1);
  if (max_delay_ns_ <= 0) return;
  const double scale = plot_height / static_cast<double>(max_delay_ns_);
  const QColor fill(0xc0, 0x50, 0x30);
  const std::vector<int64_t> columns = ColumnMaxima(width);
  for (size_t c = 0; c < columns.size(); ++c) {
    if (columns[c] < 0) continue;
    const double bar = std::max(1.0, static_cast<double>(columns[c]) * scale);
    painter.fillRect(QRectF(kTimeAreaLeft + static_cast<double>(c), kTop + plot_height - bar, 1, bar), fill);
  }
}

}  // namespace stepscope::viewer
