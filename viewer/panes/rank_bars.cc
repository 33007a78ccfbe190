// The stragglers pane's chart for one step (rank_bars.h): a bar per rank on the step's clock.
#include "viewer/panes/rank_bars.h"

#include <QPainter>
#include <algorithm>

#include "viewer/panes/gpu_bars.h"
#include "viewer/panes/pane_widgets.h"

namespace stepscope::viewer {
namespace {

constexpr QRgb kCategoryColors[analysis::kStragglerCategories] = {
    GpuBars::kComputeColor, GpuBars::kCommunicationColor, GpuBars::kMemoryColor, RankBars::kInputColor};

}  // namespace

RankBars::RankBars(QWidget* parent) : QWidget(parent) {
  setMinimumHeight(GpuBars::kLegendHeight + 2 * kRowHeight);
  setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Preferred);
}

void RankBars::SetStep(const analysis::StepStragglers* step) {
  has_step_ = step != nullptr;
  step_ = has_step_ ? *step : analysis::StepStragglers();
  updateGeometry();
  update();
}

QSize RankBars::sizeHint() const {
  const int rows = static_cast<int>(std::max<size_t>(step_.ranks.size(), 2));
  return {kLabelWidth + 400 + kTextWidth, GpuBars::kLegendHeight + rows * kRowHeight + 4};
}

RankBars::Segments RankBars::SegmentsOf(const analysis::RankStep& rank, double width) {
  Segments s;
  const int64_t span = rank.end_ns - rank.begin_ns;
  if (span <= 0 || width <= 0) return s;
  int64_t sum = 0;
  for (int64_t ns : rank.by_category_ns) sum += std::max<int64_t>(ns, 0);
  // Unions of different categories may overlap (a copy beside a kernel): their sum may exceed
  // the span, and then they share the bar in proportion.
  const double scale = width / static_cast<double>(std::max(span, sum));
  for (int c = 0; c < analysis::kStragglerCategories; ++c) {
    s.categories[c] = static_cast<double>(std::max<int64_t>(rank.by_category_ns[c], 0)) * scale;
  }
  s.idle = sum < span ? static_cast<double>(span - sum) * scale : 0;
  return s;
}

int64_t RankBars::LatestEnd() const {
  int64_t latest = 1;
  for (const analysis::RankStep& r : step_.ranks) latest = std::max(latest, r.end_ns);
  return latest;
}

QRect RankBars::RowRect(int row) const {
  const int width = std::max(40, this->width() - kLabelWidth - kTextWidth - 12);
  return {kLabelWidth, GpuBars::kLegendHeight + row * kRowHeight + 3, width, kRowHeight - 6};
}

double RankBars::XOf(int64_t ns) const {
  const QRect area = RowRect(0);
  return area.left() + static_cast<double>(ns) / static_cast<double>(LatestEnd()) * (area.width() - 1);
}

// The straggler ends last: the earliest and the median end are its end less its lateness.
double RankBars::EarliestEndX() const { return XOf(LatestEnd() - step_.lateness_ns); }
double RankBars::MedianEndX() const { return XOf(LatestEnd() - step_.lateness_vs_median_ns); }

void RankBars::paintEvent(QPaintEvent*) {
  QPainter painter(this);
  painter.fillRect(rect(), palette().base());
  const QColor text = palette().color(QPalette::Text);
  if (!has_step_) {
    painter.setPen(text);
    painter.drawText(rect().adjusted(8, 0, -8, 0), Qt::AlignLeft | Qt::AlignVCenter, tr("Select a step to compare its ranks"));
    return;
  }
  // Legend.
  int x = 6;
  const char* const names[] = {QT_TR_NOOP("compute"), QT_TR_NOOP("communication"), QT_TR_NOOP("memory"),
                               QT_TR_NOOP("input")};
  auto legend = [&](const QString& name, auto draw_mark) {
    draw_mark(x);
    painter.setPen(text);
    painter.drawText(x + 16, 4, 300, 16, Qt::AlignLeft | Qt::AlignVCenter, name);
    x += 16 + painter.fontMetrics().horizontalAdvance(name) + 14;
  };
  for (int c = 0; c < analysis::kStragglerCategories; ++c) {
    legend(tr(names[c]), [&](int at) { painter.fillRect(at, 6, 12, 12, QColor::fromRgba(kCategoryColors[c])); });
  }
  legend(tr("idle"), [&](int at) { painter.fillRect(at, 6, 12, 12, QColor::fromRgba(GpuBars::kIdleColor)); });
  legend(tr("earliest end"), [&](int at) {
    painter.fillRect(at + 5, 4, 2, 16, QColor::fromRgba(kEarliestEndColor));
  });
  legend(tr("median end"), [&](int at) {
    painter.setPen(QPen(QColor::fromRgba(kMedianEndColor), 1, Qt::DashLine));
    painter.drawLine(at + 6, 4, at + 6, 20);
  });

  const int rows = static_cast<int>(step_.ranks.size());
  for (int i = 0; i < rows; ++i) {
    const analysis::RankStep& r = step_.ranks[static_cast<size_t>(i)];
    const bool straggler = r.rank == step_.straggler;
    const QRect area = RowRect(i);
    QFont font = this->font();
    font.setBold(straggler);
    painter.setFont(font);
    painter.setPen(text);
    const QString label = straggler ? tr("rank %1 (last)").arg(r.rank) : tr("rank %1").arg(r.rank);
    painter.drawText(6, area.top() - 3, kLabelWidth - 10, kRowHeight, Qt::AlignLeft | Qt::AlignVCenter, label);
    const double left = XOf(r.begin_ns), right = XOf(r.end_ns);
    const Segments s = SegmentsOf(r, right - left);
    double at = left;
    auto segment = [&](double w, QRgb color) {
      if (w <= 0) return;
      painter.fillRect(QRectF(at, area.top(), std::max(1.0, w), area.height()), QColor::fromRgba(color));
      at += w;
    };
    for (int c = 0; c < analysis::kStragglerCategories; ++c) segment(s.categories[c], kCategoryColors[c]);
    segment(s.idle, GpuBars::kIdleColor);
    painter.setPen(straggler ? QPen(text, 2) : QPen(QColor(0x90, 0x94, 0xa0)));
    painter.drawRect(QRectF(left, area.top(), std::max(1.0, right - left - 1), area.height() - 1));
    painter.setFont(this->font());
    painter.setPen(text);
    QString summary = tr("late %1 · compute %2 · comm %3")
                          .arg(DurationText(r.lateness_ns), DurationText(r.compute_ns()),
                               DurationText(r.communication_ns()));
    if (r.collective_wait_ns > 0) summary += tr(" (waited %1)").arg(DurationText(r.collective_wait_ns));
    if (r.memory_ns() > 0) summary += tr(" · memory %1").arg(DurationText(r.memory_ns()));
    if (r.input_ns() > 0) summary += tr(" · input %1").arg(DurationText(r.input_ns()));
    painter.drawText(RowRect(0).right() + 8, area.top() - 3, kTextWidth, kRowHeight, Qt::AlignLeft | Qt::AlignVCenter,
                     summary);
  }
  // The end lines over all rows.
  const int top = GpuBars::kLegendHeight, bottom = GpuBars::kLegendHeight + rows * kRowHeight;
  painter.setPen(QPen(QColor::fromRgba(kEarliestEndColor), 2));
  painter.drawLine(QPointF(EarliestEndX(), top), QPointF(EarliestEndX(), bottom));
  painter.setPen(QPen(QColor::fromRgba(kMedianEndColor), 1, Qt::DashLine));
  painter.drawLine(QPointF(MedianEndX(), top), QPointF(MedianEndX(), bottom));
}

}  // namespace stepscope::viewer
