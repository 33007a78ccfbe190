// The tracks pane (tracks_pane.h): TrackTreeModel in a tree view, wired to the timeline, with the
// filter box, pin and move buttons acting on the timeline's TrackLayout.
#include "viewer/panes/tracks_pane.h"

#include <QEvent>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLineEdit>
#include <QPushButton>
#include <QTabWidget>
#include <QTreeView>
#include <QVBoxLayout>
#include <algorithm>

#include "viewer/load/document.h"
#include "viewer/models/roles.h"
#include "viewer/models/track_tree_model.h"
#include "viewer/timeline/timeline_view.h"
#include "viewer/timeline_data/counter_tracks.h"

namespace stepscope::viewer {

TracksPane::TracksPane(PaneHost& host, QObject* parent) : Pane(host, parent) {
  auto* pane = new QWidget(host.panes());
  track_model_ = new TrackTreeModel(host.shared_document(), this);
  tree_ = new QTreeView(pane);
  tree_->setModel(track_model_);
  tree_->expandAll();
  tree_->header()->setDefaultSectionSize(300);
  tree_->setDragDropMode(QAbstractItemView::InternalMove);
  tree_->setDefaultDropAction(Qt::MoveAction);
  tree_->setDropIndicatorShown(true);
  filter_ = new QLineEdit(pane);
  filter_->setPlaceholderText(tr("Filter tracks (text or regular expression)"));
  filter_->setClearButtonEnabled(true);
  pin_ = new QPushButton(tr("Pin"), pane);
  pin_->setToolTip(tr("Keep the selected track at the top of the timeline"));
  auto* up = new QPushButton(tr("Up"), pane);
  auto* down = new QPushButton(tr("Down"), pane);
  auto* bar = new QHBoxLayout;
  bar->addWidget(filter_, 1);
  bar->addWidget(pin_);
  bar->addWidget(up);
  bar->addWidget(down);
  auto* layout = new QVBoxLayout(pane);
  layout->setContentsMargins(4, 4, 4, 4);
  layout->addLayout(bar);
  layout->addWidget(tree_, 1);
  TimelineView* timeline = host.timeline();
  connect(track_model_, &TrackTreeModel::visibilityChanged, timeline,
          [timeline](uint32_t track, bool visible) { timeline->SetTrackHidden(track, !visible); });
  connect(track_model_, &TrackTreeModel::counterVisibilityChanged, timeline,
          [timeline](uint32_t counter, bool visible) { timeline->SetCounterHidden(counter, !visible); });
  // The counter tracks arrive with the analyses, and the timeline's own menu hides them; either
  // repaints the timeline, where the pane looks whether its list still holds.
  timeline->installEventFilter(this);
  connect(filter_, &QLineEdit::textChanged, this, &TracksPane::SetFilter);
  connect(pin_, &QPushButton::clicked, this, &TracksPane::TogglePin);
  connect(up, &QPushButton::clicked, this, [this] { Move(-1); });
  connect(down, &QPushButton::clicked, this, [this] { Move(+1); });
  // Queued: the tree is still in its drop when the model is reset to the new order.
  connect(track_model_, &TrackTreeModel::trackDropped, this, &TracksPane::MoveTo, Qt::QueuedConnection);
  // A lane's label dragged on the timeline: the same order, which the tree follows.
  connect(timeline, &TimelineView::trackMoved, this, &TracksPane::FollowMovedTrack);
  connect(tree_->selectionModel(), &QItemSelectionModel::currentChanged, this, &TracksPane::UpdateButtons);
  set_widget(pane);
  FollowCounters();
}

void TracksPane::FollowCounters() {
  const TimelineView* timeline = host().timeline();
  if (timeline->counter_tracks() == listed_counters_) {
    track_model_->FollowCounterVisibility(timeline->layout());
    return;
  }
  listed_counters_ = timeline->counter_tracks();
  track_model_->SetCounters(listed_counters_ != nullptr ? *listed_counters_ : CounterTracks{}, timeline->layout());
  tree_->expandAll();
  HideFilteredRows({});
}

bool TracksPane::eventFilter(QObject* watched, QEvent* event) {
  if (event->type() == QEvent::Paint) FollowCounters();
  return Pane::eventFilter(watched, event);
}

int64_t TracksPane::current_track() const {
  const QModelIndex index = tree_->currentIndex();
  return index.isValid() ? static_cast<int64_t>(index.data(kTrackRole).toUInt()) : -1;
}

void TracksPane::SetFilter(const QString& pattern) {
  TimelineView* timeline = host().timeline();
  const bool valid = timeline->layout().SetFilter(pattern.toStdString());
  // A pattern that is no regular expression (yet) filters by substring: say so, quietly.
  filter_->setStyleSheet(valid ? QString() : QStringLiteral("color: #b03030"));
  timeline->LayoutChanged();
  HideFilteredRows({});
}

void TracksPane::HideFilteredRows(const QModelIndex& parent) {
  const TrackLayout& layout = host().timeline()->layout();
  for (int row = 0; row < track_model_->rowCount(parent); ++row) {
    const QModelIndex index = track_model_->index(row, 0, parent);
    tree_->setRowHidden(row, parent, layout.filtered_out(index.data(kTrackRole).toUInt()));
    HideFilteredRows(index);
  }
}

void TracksPane::TogglePin() {
  const int64_t track = current_track();
  if (track < 0) return;
  TimelineView* timeline = host().timeline();
  const auto t = static_cast<uint32_t>(track);
  timeline->layout().SetPinned(t, !timeline->layout().pinned(t));
  timeline->LayoutChanged();
  UpdateButtons();
}

void TracksPane::Move(int delta) {
  const int64_t track = current_track();
  if (track >= 0) MoveBy(static_cast<uint32_t>(track), delta);
}

void TracksPane::MoveTo(uint32_t track, int row) {
  TimelineView* timeline = host().timeline();
  if (!timeline->layout().MoveTrackTo(track, row)) return;
  timeline->LayoutChanged();
  FollowMovedTrack(track);
}

SavedTrackOrder TracksPane::SaveOrder() const {
  return SaveTrackOrder(host().document().trace(), host().timeline()->layout());
}

void TracksPane::RestoreOrder(const SavedTrackOrder& saved) {
  TimelineView* timeline = host().timeline();
  if (RestoreTrackOrder(host().document().trace(), saved, timeline->layout()) == 0) return;
  timeline->LayoutChanged();
  track_model_->FollowOrder(timeline->layout());
  tree_->expandAll();
  HideFilteredRows({});
}

void TracksPane::MoveBy(uint32_t t, int delta) {
  TimelineView* timeline = host().timeline();
  if (delta == 0 || !timeline->layout().MoveTrack(t, delta)) return;
  timeline->LayoutChanged();
  FollowMovedTrack(t);
}

void TracksPane::FollowMovedTrack(uint32_t track) {
  track_model_->FollowOrder(host().timeline()->layout());
  tree_->expandAll();
  HideFilteredRows({});
  tree_->setCurrentIndex(track_model_->IndexOf(track));
}

void TracksPane::UpdateButtons() {
  const int64_t track = current_track();
  const bool pinned = track >= 0 && host().timeline()->layout().pinned(static_cast<uint32_t>(track));
  pin_->setText(pinned ? tr("Unpin") : tr("Pin"));
}

}  // namespace stepscope::viewer
