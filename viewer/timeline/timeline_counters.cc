// The timeline's counter tracks (timeline_view.h): taking them into the row layout, hiding them
// from the label column's context menu. Their drawing is CounterPainter's.
#include <QContextMenuEvent>
#include <QMenu>

#include "viewer/timeline/timeline_view.h"

namespace stepscope::viewer {

void TimelineView::SetCounterTracks(std::shared_ptr<const CounterTracks> counters) {
  counters_ = std::move(counters);
  std::vector<uint32_t> owners;
  if (counters_) {
    for (const CounterTrack& c : counters_->tracks()) owners.push_back(c.track);
  }
  layout_.SetCounters(std::move(owners));
  UpdateScrollBar();
  update();
}

void TimelineView::SetCounterHidden(uint32_t counter, bool hidden) {
  layout_.SetCounterHidden(counter, hidden);
  UpdateScrollBar();
  update();
}

QMenu* TimelineView::CounterMenu(const QPoint& pos) {
  if (!counters_ || counters_->tracks().empty() || pos.x() >= kTimeAreaLeft) return nullptr;
  const int row = RowAt(pos.y());
  const TimelineRow* info = row >= 0 ? &layout_.rows()[static_cast<size_t>(row)] : nullptr;
  const auto count = static_cast<uint32_t>(layout_.counter_count());
  bool any_hidden = false;
  for (uint32_t c = 0; c < count; ++c) any_hidden = any_hidden || layout_.counter_hidden(c);
  if ((info == nullptr || info->kind != TimelineRow::Kind::kCounter) && !any_hidden) return nullptr;
  auto* menu = new QMenu(this);
  if (info != nullptr && info->kind == TimelineRow::Kind::kCounter) {
    const uint32_t counter = info->counter;
    menu->addAction(tr("Hide %1").arg(QString::fromStdString(counters_->tracks()[counter].name)), this,
                    [this, counter] { SetCounterHidden(counter, true); });
    menu->addAction(tr("Hide all counter tracks"), this, [this, count] {
      for (uint32_t c = 0; c < count; ++c) layout_.SetCounterHidden(c, true);
      UpdateScrollBar();
      update();
    });
  }
  if (any_hidden) {
    menu->addAction(tr("Show all counter tracks"), this, [this, count] {
      for (uint32_t c = 0; c < count; ++c) layout_.SetCounterHidden(c, false);
      UpdateScrollBar();
      update();
    });
  }
  return menu;
}

void TimelineView::contextMenuEvent(QContextMenuEvent* event) {
  QMenu* menu = CounterMenu(event->pos());
  if (menu == nullptr) return QWidget::contextMenuEvent(event);
  menu->setAttribute(Qt::WA_DeleteOnClose);
  menu->popup(event->globalPos());
}

}  // namespace stepscope::viewer
