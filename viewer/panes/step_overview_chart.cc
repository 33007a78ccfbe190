// The steps pane's stacked bar per step (step_overview_chart.h): layout, painting and clicks.
#include "viewer/panes/step_overview_chart.h"

#include <QMouseEvent>
#include <QPainter>
#include <algorithm>

#include "base/units.h"

namespace stepscope::viewer {

namespace {
constexpr double kMaxBarWidth = 36;
constexpr double kGap = 0.25;  // of a column, between bars
}  // namespace

StepOverviewChart::StepOverviewChart(QWidget* parent) : QWidget(parent) {
  setMinimumHeight(kLegendHeight + kBottom + 80);
  setMouseTracking(false);
}

void StepOverviewChart::SetBreakdown(analysis::StepBreakdown breakdown) {
  breakdown_ = std::move(breakdown);
  longest_ns_ = 0;
  for (const auto& s : breakdown_.steps) longest_ns_ = std::max(longest_ns_, s.duration_ns);
  updateGeometry();
  update();
}

QSize StepOverviewChart::sizeHint() const {
  const int bars = static_cast<int>(std::max<size_t>(breakdown_.steps.size(), 1));
  return {kAxisWidth + std::min(bars * 30, 1200) + 8, 200};
}

QRectF StepOverviewChart::PlotArea() const {
  // Room above the bars for the "slow" tags.
  return QRectF(kAxisWidth, kLegendHeight + 14, std::max(1, width() - kAxisWidth - 8),
                std::max(1, height() - kLegendHeight - 14 - kBottom));
}

double StepOverviewChart::Scale() const {
  return longest_ns_ > 0 ? PlotArea().height() / static_cast<double>(longest_ns_) : 0;
}

QRectF StepOverviewChart::BarRect(size_t index) const {
  if (index >= breakdown_.steps.size()) return {};
  const QRectF area = PlotArea();
  const double column = area.width() / static_cast<double>(breakdown_.steps.size());
  const double bar = std::min(kMaxBarWidth, std::max(1.0, column * (1 - kGap)));
  const double x = area.left() + column * static_cast<double>(index) + (column - bar) / 2;
  const double height = static_cast<double>(breakdown_.steps[index].duration_ns) * Scale();
  return QRectF(x, area.bottom() - height, bar, height);
}

int StepOverviewChart::StepAt(const QPoint& pos) const {
  const QRectF area = PlotArea();
  if (breakdown_.steps.empty() || pos.x() < area.left() || pos.x() >= area.right()) return -1;
  const double column = area.width() / static_cast<double>(breakdown_.steps.size());
  const auto index = static_cast<size_t>((pos.x() - area.left()) / column);
  return index < breakdown_.steps.size() ? static_cast<int>(index) : -1;
}

void StepOverviewChart::mousePressEvent(QMouseEvent* event) {
  const int step = StepAt(event->position().toPoint());
  if (step >= 0) emit stepClicked(step);
}

void StepOverviewChart::paintEvent(QPaintEvent*) {
  QPainter painter(this);
  painter.fillRect(rect(), palette().base());
  // Legend.
  int x = 6;
  for (int p = 0; p < analysis::kStepParts; ++p) {
    painter.fillRect(x, 7, 12, 12, QColor::fromRgb(kPartColors[p]));
    const QString name = QString::fromUtf8(analysis::StepPartName(static_cast<analysis::StepPart>(p)));
    painter.setPen(palette().color(QPalette::Text));
    painter.drawText(x + 16, 4, 200, 18, Qt::AlignLeft | Qt::AlignVCenter, name);
    x += 16 + painter.fontMetrics().horizontalAdvance(name) + 14;
  }
  painter.setPen(QPen(QColor::fromRgb(kSlowColor), 2));
  painter.drawLine(x, 13, x + 12, 13);
  painter.setPen(palette().color(QPalette::Text));
  painter.drawText(x + 16, 4, 400, 18, Qt::AlignLeft | Qt::AlignVCenter, tr("slow: above median + 3 MAD"));
  if (breakdown_.steps.empty()) {
    painter.drawText(rect(), Qt::AlignCenter, tr("No steps"));
    return;
  }
  const QRectF area = PlotArea();
  const double scale = Scale();
  // Axis: the longest step at the top, 0 at the bottom.
  painter.drawText(QRectF(0, area.top() - 8, kAxisWidth - 6, 16), Qt::AlignRight | Qt::AlignVCenter,
                   QString::fromStdString(FormatDurationSignificant(static_cast<double>(longest_ns_))));
  painter.drawText(QRectF(0, area.bottom() - 8, kAxisWidth - 6, 16), Qt::AlignRight | Qt::AlignVCenter, "0");
  painter.drawLine(QPointF(area.left() - 2, area.top()), QPointF(area.left() - 2, area.bottom()));
  const bool label_every = area.width() / static_cast<double>(breakdown_.steps.size()) > 24;
  for (size_t i = 0; i < breakdown_.steps.size(); ++i) {
    const analysis::StepSplit& s = breakdown_.steps[i];
    const QRectF bar = BarRect(i);
    double bottom = bar.bottom();
    for (int p = 0; p < analysis::kStepParts; ++p) {
      const double h = static_cast<double>(s.part_ns[p]) * scale;
      painter.fillRect(QRectF(bar.left(), bottom - h, bar.width(), h), QColor::fromRgb(kPartColors[p]));
      bottom -= h;
    }
    if (s.slow) {
      painter.setPen(QPen(QColor::fromRgb(kSlowColor), 2));
      painter.drawRect(bar.adjusted(-1, -1, 1, 1));
      painter.drawText(QRectF(bar.center().x() - 20, bar.top() - 16, 40, 14), Qt::AlignCenter, tr("slow"));
    }
    if (label_every || s.slow) {
      painter.setPen(palette().color(QPalette::Text));
      const QString label = s.step >= 0 ? QString::number(s.step) : QString::number(s.number);
      painter.drawText(QRectF(bar.center().x() - 24, area.bottom() + 2, 48, kBottom - 2), Qt::AlignCenter, label);
    }
  }
  if (breakdown_.slow_above_ns > 0 && breakdown_.slow_above_ns <= static_cast<double>(longest_ns_)) {
    const double y = area.bottom() - breakdown_.slow_above_ns * scale;
    painter.setPen(QPen(QColor::fromRgb(kSlowColor), 1, Qt::DashLine));
    painter.drawLine(QPointF(area.left(), y), QPointF(area.right(), y));
  }
}

}  // namespace stepscope::viewer
