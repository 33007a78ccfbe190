// The track tree (host/rank -> device -> stream/thread lanes) as a Qt item model. Column 0
// is checkable: unchecking a track hides it and its subtree from the timeline
// (visibilityChanged). Repeat lanes (IsRepeatLane) start unchecked, as the timeline starts with
// them hidden. Counter tracks (SetCounters, when the analyses bring them) are rows under the
// device they are drawn under, after its lanes, checkable the same way
// (counterVisibilityChanged); their kTrackRole is that device's. Read-only otherwise.
#pragma once

#include <QAbstractItemModel>
#include <memory>
#include <utility>
#include <vector>

#include "viewer/load/document.h"

namespace stepscope::viewer {

class CounterTracks;
class TrackLayout;

class TrackTreeModel : public QAbstractItemModel {
  Q_OBJECT

 public:
  enum Column { kNameColumn, kSlicesColumn, kKindColumn, kColumnCount };

  explicit TrackTreeModel(std::shared_ptr<const TraceDocument> document, QObject* parent = nullptr);

  QModelIndex index(int row, int column, const QModelIndex& parent = {}) const override;
  QModelIndex parent(const QModelIndex& child) const override;
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  bool setData(const QModelIndex& index, const QVariant& value, int role = Qt::EditRole) override;
  Qt::ItemFlags flags(const QModelIndex& index) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;
  // Dragging a track among its siblings (a drop anywhere else is refused): the model itself does
  // not move it, it asks (trackDropped) the layout, whose order it then follows (FollowOrder).
  Qt::DropActions supportedDropActions() const override { return Qt::MoveAction; }
  QStringList mimeTypes() const override;
  QMimeData* mimeData(const QModelIndexList& indexes) const override;
  bool canDropMimeData(const QMimeData* data, Qt::DropAction action, int row, int column,
                       const QModelIndex& parent) const override;
  bool dropMimeData(const QMimeData* data, Qt::DropAction action, int row, int column, const QModelIndex& parent) override;

  bool visible(uint32_t track) const { return visible_[track]; }
  // Takes the siblings' order of the timeline's layout (after a track was moved there).
  void FollowOrder(const TrackLayout& layout);
  // The index of a track's name cell.
  QModelIndex IndexOf(uint32_t track) const;

  // The timeline's counter tracks, each visible unless `layout` hides it.
  void SetCounters(const CounterTracks& counters, const TrackLayout& layout);
  // The check states of the counters as `layout` has them (hidden on the timeline itself).
  void FollowCounterVisibility(const TrackLayout& layout);
  size_t counter_count() const { return counters_.size(); }
  bool counter_visible(uint32_t counter) const { return counters_[counter].visible; }
  // The counter of a row, or -1 for a track's row.
  int64_t CounterOf(const QModelIndex& index) const;
  QModelIndex IndexOfCounter(uint32_t counter) const;

 signals:
  void visibilityChanged(uint32_t track, bool visible);
  void counterVisibilityChanged(uint32_t counter, bool visible);
  // A track was dropped to take place `row` among its siblings (counted before it leaves its own).
  void trackDropped(uint32_t track, int row);

 private:
  std::shared_ptr<const TraceDocument> document_;
  std::vector<std::vector<uint32_t>> children_;  // slot 0: roots; slot t + 1: children of t
  std::vector<int> row_in_parent_;
  std::vector<int64_t> subtree_slices_;
  std::vector<bool> visible_;
  struct CounterRow {
    uint32_t track;  // the device it is drawn under
    int row;         // among that track's counters
    QString name, kind, origin;
    int64_t samples;
    bool visible;
  };
  // The dragged track and the place among its siblings a drop at (row, parent) gives it; -1, -1
  // when it cannot go there (another parent, a counter row, not a track).
  std::pair<int64_t, int> DropPlace(const QMimeData* data, int row, const QModelIndex& parent) const;
  QVariant CounterData(const CounterRow& counter, int column, int role) const;
  std::vector<CounterRow> counters_;
  std::vector<std::vector<uint32_t>> counters_of_;  // per track, its counters in order
};

}  // namespace stepscope::viewer
