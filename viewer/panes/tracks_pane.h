// The tracks pane: the track tree (TrackTreeModel); unchecking a track hides it on the timeline.
// Above it a filter box (substring or regular expression over track names and paths: the timeline
// and the tree keep the matching tracks), and for the selected track Pin (its rows stay at the
// top of the timeline while the rest scrolls) and Up/Down (its place among its siblings); a track
// can also be dragged to another place among its siblings, here or by its label on the timeline.
// Counter tracks are listed under their device once the analyses bring them, and hide or show
// the same way (in step with their menu on the timeline).
#pragma once

#include <cstdint>

#include "viewer/panes/pane.h"
#include "viewer/timeline_data/track_order.h"

class QLineEdit;
class QPushButton;
class QTreeView;

namespace stepscope::viewer {

class CounterTracks;
class TrackTreeModel;

class TracksPane : public Pane {
 public:
  static constexpr PaneId kId = kTracksPane;
  TracksPane(PaneHost& host, QObject* parent);

  QLineEdit* filter_box() const { return filter_; }
  QTreeView* tree() const { return tree_; }
  TrackTreeModel* model() const { return track_model_; }
  // The track of the tree's current row, or -1.
  int64_t current_track() const;
  void SetFilter(const QString& pattern);
  void TogglePin();
  void Move(int delta);
  // Moves a track to place `row` among its siblings (counted before it leaves its own place), as
  // a drop in the tree does.
  void MoveTo(uint32_t track, int row);
  // The order given to the tracks, to keep with the window's layout (track_order.h), and given back.
  SavedTrackOrder SaveOrder() const;
  void RestoreOrder(const SavedTrackOrder& saved);

 private:
  void HideFilteredRows(const QModelIndex& parent);
  // The timeline's counter tracks arrived (listed) or one was hidden or shown there: looked at
  // as the timeline repaints (eventFilter), which both make it do.
  void FollowCounters();
  bool eventFilter(QObject* watched, QEvent* event) override;
  void UpdateButtons();
  void MoveBy(uint32_t track, int delta);
  // The tree takes the timeline's order after `track` moved there, and selects it.
  void FollowMovedTrack(uint32_t track);

  TrackTreeModel* track_model_;
  QTreeView* tree_;
  QLineEdit* filter_;
  QPushButton* pin_;
  const CounterTracks* listed_counters_ = nullptr;
};

}  // namespace stepscope::viewer
