// OverviewStrip (overview_strip.h): the matches counted per pixel over the whole trace.
#include "viewer/timeline/overview_strip.h"

#include <QMouseEvent>
#include <QPainter>
#include <algorithm>
#include <cmath>

#include "viewer/timeline/search_marks.h"
#include "viewer/timeline/time_axis.h"
#include "viewer/timeline/timeline_view.h"
#include "viewer/timeline_data/time_mapping.h"

namespace stepscope::viewer {

OverviewStrip::OverviewStrip(TimelineView* timeline, TimeAxis* axis, QWidget* parent)
    : QWidget(parent), timeline_(timeline), axis_(axis) {
  setFixedHeight(kHeight);
  setCursor(Qt::PointingHandCursor);
  setToolTip(tr("Where the search matches lie in the whole trace; the box is the timeline's view. Click to go there."));
  connect(axis_, &TimeAxis::changed, this, qOverload<>(&QWidget::update));
  connect(timeline_, &TimelineView::searchMatchesChanged, this, [this] {
    setVisible(!timeline_->search_marks().empty());
    update();
  });
  hide();
}

// The strip's time area lines up with the timeline's.
double OverviewStrip::TimeAt(int x) const {
  const double width = std::max(1, this->width() - kTimeAreaLeft - kTimeAreaRight);
  return axis_->limit_begin_ns() + (x - kTimeAreaLeft) * (axis_->limit_end_ns() - axis_->limit_begin_ns()) / width;
}

int OverviewStrip::XOf(double time_ns) const {
  const double width = std::max(1, this->width() - kTimeAreaLeft - kTimeAreaRight);
  const double span = std::max(1.0, axis_->limit_end_ns() - axis_->limit_begin_ns());
  return kTimeAreaLeft + static_cast<int>(std::floor((time_ns - axis_->limit_begin_ns()) * width / span));
}

void OverviewStrip::Recount() {
  const int width = std::max(1, this->width() - kTimeAreaLeft - kTimeAreaRight);
  counts_.assign(static_cast<size_t>(width), 0);
  const auto& slices = timeline_->document().trace().slices();
  for (uint32_t s : timeline_->search_marks().matches()) {
    const int x = std::clamp(XOf(static_cast<double>(slices[s].start_ns)) - kTimeAreaLeft, 0, width - 1);
    ++counts_[static_cast<size_t>(x)];
  }
}

void OverviewStrip::paintEvent(QPaintEvent*) {
  Recount();
  QPainter painter(this);
  painter.fillRect(rect(), palette().color(QPalette::Window));
  painter.fillRect(QRect(kTimeAreaLeft, 0, static_cast<int>(counts_.size()), height()), palette().color(QPalette::Base));
  const uint32_t most = counts_.empty() ? 0 : *std::max_element(counts_.begin(), counts_.end());
  const QColor tick = QColor::fromRgba(SearchMarks::kOutline);
  for (size_t x = 0; x < counts_.size(); ++x) {
    if (counts_[x] == 0) continue;
    // At least half the height, the busiest pixel the whole of it.
    const double share = most <= 1 ? 1 : std::log1p(counts_[x]) / std::log1p(most);
    const int h = std::max(height() / 2, static_cast<int>(std::lround(share * height())));
    painter.fillRect(QRect(kTimeAreaLeft + static_cast<int>(x), height() - h, 1, h), tick);
  }
  const int x0 = XOf(axis_->begin_ns());
  const int x1 = std::max(x0 + 2, XOf(axis_->end_ns()));
  painter.setPen(palette().color(QPalette::WindowText));
  painter.setBrush(Qt::NoBrush);
  painter.drawRect(QRect(x0, 0, x1 - x0, height() - 1));
  const size_t matches = timeline_->search_marks().matches().size();
  painter.drawText(QRect(4, 0, kTimeAreaLeft - 8, height()), Qt::AlignVCenter | Qt::AlignLeft,
                   matches == 1 ? tr("1 match") : tr("%1 matches").arg(matches));
}

void OverviewStrip::mousePressEvent(QMouseEvent* event) {
  if (event->button() != Qt::LeftButton || event->position().x() < kTimeAreaLeft) return;
  const double t = TimeAt(static_cast<int>(event->position().x()));
  // The match nearest the click, when there is one within a few pixels; else the time clicked.
  const auto& slices = timeline_->document().trace().slices();
  const double tolerance = std::abs(TimeAt(4) - TimeAt(0));
  int64_t nearest = -1;
  double distance = tolerance;
  for (uint32_t s : timeline_->search_marks().matches()) {
    const double d = std::abs(static_cast<double>(slices[s].start_ns) - t);
    if (d <= distance) {
      distance = d;
      nearest = s;
    }
  }
  const double half = (axis_->end_ns() - axis_->begin_ns()) / 2;
  if (nearest >= 0) {
    const trace::Slice& s = slices[static_cast<size_t>(nearest)];
    const double middle = (static_cast<double>(s.start_ns) + static_cast<double>(s.end_ns())) / 2;
    axis_->SetRange(middle - half, middle + half);
    timeline_->RevealSlice(static_cast<uint32_t>(nearest));
  } else {
    axis_->SetRange(t - half, t + half);
  }
  timeline_->setFocus();
}

}  // namespace stepscope::viewer
