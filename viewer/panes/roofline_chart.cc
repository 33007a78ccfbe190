// The roofline chart (roofline_chart.h): log-log axes by decades, the two roofs, one disc per op
// type, painted from the points it was handed.
#include "viewer/panes/roofline_chart.h"

#include <QMouseEvent>
#include <QPainter>
#include <QPainterPath>
#include <algorithm>
#include <cmath>

namespace stepscope::viewer {

RooflineChart::RooflineChart(QWidget* parent) : QWidget(parent) {
  setMinimumSize(240, 120);
  setMouseTracking(false);
}

void RooflineChart::SetData(std::vector<RooflinePoint> points, double peak_flops_per_s, double peak_bytes_per_s) {
  points_ = std::move(points);
  peak_flops_ = peak_flops_per_s;
  peak_bytes_ = peak_bytes_per_s;
  // The axes hold every point and the roofs' corner, a decade of room around them.
  double x_min = 1, x_max = 100, y_min = 1e9, y_max = std::max(1e12, peak_flops_);
  max_time_ns_ = 1;
  for (const RooflinePoint& p : points_) {
    x_min = std::min(x_min, p.intensity);
    x_max = std::max(x_max, p.intensity);
    y_min = std::min(y_min, p.flops_per_s);
    y_max = std::max(y_max, p.flops_per_s);
    max_time_ns_ = std::max(max_time_ns_, p.time_ns);
  }
  if (peak_flops_ > 0 && peak_bytes_ > 0) x_max = std::max(x_max, peak_flops_ / peak_bytes_);
  x_lo_ = std::floor(std::log10(x_min)) - 1;
  x_hi_ = std::ceil(std::log10(x_max)) + 1;
  y_lo_ = std::floor(std::log10(y_min)) - 1;
  y_hi_ = std::ceil(std::log10(y_max)) + 1;
  update();
}

// Room on the left for the FLOP/s labels, below for the intensity labels and the axis title.
QRectF RooflineChart::Plot() const { return QRectF(56, 8, std::max(10, width() - 64), std::max(10, height() - 44)); }

QPointF RooflineChart::Map(double intensity, double flops_per_s) const {
  const QRectF plot = Plot();
  const double x = (std::log10(intensity) - x_lo_) / (x_hi_ - x_lo_);
  const double y = (std::log10(flops_per_s) - y_lo_) / (y_hi_ - y_lo_);
  return {plot.left() + x * plot.width(), plot.bottom() - y * plot.height()};
}

// Area proportional to time: a point of the longest op type is 14 px across at most.
double RooflineChart::Radius(size_t index) const {
  return 3 + 11 * std::sqrt(static_cast<double>(points_[index].time_ns) / static_cast<double>(max_time_ns_));
}

QPointF RooflineChart::PointPosition(size_t index) const {
  return Map(points_[index].intensity, points_[index].flops_per_s);
}

std::optional<size_t> RooflineChart::PointAt(QPointF position) const {
  std::optional<size_t> best;
  double best_distance = 0;
  for (size_t i = 0; i < points_.size(); ++i) {
    const QPointF d = PointPosition(i) - position;
    const double distance = std::hypot(d.x(), d.y());
    if (distance <= Radius(i) + 2 && (!best || distance < best_distance)) {
      best = i;
      best_distance = distance;
    }
  }
  return best;
}

void RooflineChart::paintEvent(QPaintEvent*) {
  QPainter painter(this);
  painter.setRenderHint(QPainter::Antialiasing);
  const QRectF plot = Plot();
  const QColor text = palette().color(QPalette::WindowText);
  QColor grid = text;
  grid.setAlphaF(0.15);
  painter.setPen(grid);
  for (double d = x_lo_; d <= x_hi_; d += 1) {
    const double x = Map(std::pow(10, d), std::pow(10, y_lo_)).x();
    painter.drawLine(QPointF(x, plot.top()), QPointF(x, plot.bottom()));
  }
  for (double d = y_lo_; d <= y_hi_; d += 1) {
    const double y = Map(std::pow(10, x_lo_), std::pow(10, d)).y();
    painter.drawLine(QPointF(plot.left(), y), QPointF(plot.right(), y));
  }
  painter.setPen(text);
  painter.drawRect(plot);
  painter.drawText(QRectF(plot.left(), plot.bottom() + 18, plot.width(), 16), Qt::AlignCenter, tr("FLOP per byte"));
  for (double d = y_lo_; d <= y_hi_; d += 3) {
    const double y = Map(1, std::pow(10, d)).y();
    painter.drawText(QRectF(0, y - 8, 52, 16), Qt::AlignRight | Qt::AlignVCenter, QString("1e%1").arg(d) + "/s");
  }
  for (double d = x_lo_; d <= x_hi_; d += 1) {
    const double x = Map(std::pow(10, d), 1).x();
    painter.drawText(QRectF(x - 20, plot.bottom() + 3, 40, 14), Qt::AlignCenter, QString("1e%1").arg(d));
  }
  painter.save();
  painter.setClipRect(plot);
  if (peak_flops_ > 0) {
    QPen roof(QColor(200, 60, 40), 2);
    painter.setPen(roof);
    const double ridge = peak_bytes_ > 0 ? peak_flops_ / peak_bytes_ : std::pow(10, x_lo_);
    painter.drawLine(Map(ridge, peak_flops_), Map(std::pow(10, x_hi_), peak_flops_));
    if (peak_bytes_ > 0) painter.drawLine(Map(std::pow(10, x_lo_), std::pow(10, x_lo_) * peak_bytes_), Map(ridge, peak_flops_));
  }
  for (size_t i = 0; i < points_.size(); ++i) {
    QColor fill = QColor::fromHsv(static_cast<int>((i * 47) % 360), 160, 220);
    fill.setAlphaF(0.75);
    painter.setBrush(fill);
    painter.setPen(text);
    const double r = Radius(i);
    painter.drawEllipse(PointPosition(i), r, r);
  }
  painter.restore();
}

void RooflineChart::mousePressEvent(QMouseEvent* event) {
  if (const auto index = PointAt(event->position())) emit pointClicked(static_cast<int>(*index));
}

}  // namespace stepscope::viewer
