// The track tree model (track_tree_model.h): checkable rows that show or hide timeline tracks
// and counter tracks. A row's internal id is its track + 1, or for a counter the track count + 1
// + the counter.
#include "viewer/models/track_tree_model.h"

#include <QMimeData>

#include "viewer/models/roles.h"
#include "viewer/timeline_data/counter_tracks.h"
#include "viewer/timeline_data/track_layout.h"

namespace stepscope::viewer {

TrackTreeModel::TrackTreeModel(std::shared_ptr<const TraceDocument> document, QObject* parent)
    : QAbstractItemModel(parent), document_(std::move(document)),
      children_(TrackChildren(document_->trace())) {
  const trace::Trace& trace = document_->trace();
  const size_t tracks = trace.tracks().size();
  row_in_parent_.assign(tracks, 0);
  for (const auto& list : children_) {
    for (size_t row = 0; row < list.size(); ++row) row_in_parent_[list[row]] = static_cast<int>(row);
  }
  subtree_slices_.assign(tracks, 0);
  for (uint32_t t = 0; t < tracks; ++t) {
    const auto count = static_cast<int64_t>(trace.track_slices(t).size());
    for (int32_t p = static_cast<int32_t>(t); p >= 0; p = trace.tracks()[p].parent) {
      subtree_slices_[p] += count;
    }
  }
  // As the timeline's layout starts: repeat lanes hidden.
  visible_.assign(tracks, true);
  for (uint32_t t = 0; t < tracks; ++t) visible_[t] = !IsRepeatLane(trace, t);
  counters_of_.assign(tracks, {});
}

namespace {

QString CounterKindText(CounterTrack::Kind kind) {
  switch (kind) {
    case CounterTrack::Kind::kMemory: return TrackTreeModel::tr("counter: memory");
    case CounterTrack::Kind::kUtilization: return TrackTreeModel::tr("counter: GPU utilisation");
    case CounterTrack::Kind::kLaunchDelay: return TrackTreeModel::tr("counter: launch delay");
    case CounterTrack::Kind::kQueue: return TrackTreeModel::tr("counter: queue");
    case CounterTrack::Kind::kTraceCounter: return TrackTreeModel::tr("counter");
  }
  return {};
}

}  // namespace

void TrackTreeModel::SetCounters(const CounterTracks& counters, const TrackLayout& layout) {
  beginResetModel();
  counters_.clear();
  for (auto& list : counters_of_) list.clear();
  for (size_t c = 0; c < counters.tracks().size(); ++c) {
    const CounterTrack& counter = counters.tracks()[c];
    if (counter.track >= counters_of_.size()) continue;  // not this trace's: cannot happen
    std::vector<uint32_t>& siblings = counters_of_[counter.track];
    const auto samples = static_cast<int64_t>(counter.kind == CounterTrack::Kind::kUtilization ? counter.busy.intervals()
                                                                                                : counter.samples.size());
    counters_.push_back({counter.track, static_cast<int>(siblings.size()), QString::fromStdString(counter.name),
                         CounterKindText(counter.kind), QString::fromStdString(counter.origin), samples,
                         c < layout.counter_count() && !layout.counter_hidden(static_cast<uint32_t>(c))});
    siblings.push_back(static_cast<uint32_t>(c));
  }
  endResetModel();
}

void TrackTreeModel::FollowCounterVisibility(const TrackLayout& layout) {
  for (size_t c = 0; c < counters_.size() && c < layout.counter_count(); ++c) {
    const bool visible = !layout.counter_hidden(static_cast<uint32_t>(c));
    if (counters_[c].visible == visible) continue;
    counters_[c].visible = visible;
    const QModelIndex index = IndexOfCounter(static_cast<uint32_t>(c));
    emit dataChanged(index, index, {Qt::CheckStateRole});
  }
}

int64_t TrackTreeModel::CounterOf(const QModelIndex& index) const {
  const size_t tracks = visible_.size();
  if (!index.isValid() || index.internalId() <= tracks) return -1;
  return static_cast<int64_t>(index.internalId() - tracks - 1);
}

QModelIndex TrackTreeModel::IndexOfCounter(uint32_t counter) const {
  const CounterRow& row = counters_[counter];
  const int lanes = static_cast<int>(children_[row.track + 1].size());
  return createIndex(lanes + row.row, kNameColumn, static_cast<quintptr>(visible_.size() + 1 + counter));
}

void TrackTreeModel::FollowOrder(const TrackLayout& layout) {
  beginResetModel();
  for (size_t slot = 0; slot < children_.size(); ++slot) {
    children_[slot] = layout.children(static_cast<int32_t>(slot) - 1);
    for (size_t row = 0; row < children_[slot].size(); ++row) row_in_parent_[children_[slot][row]] = static_cast<int>(row);
  }
  endResetModel();
}

QModelIndex TrackTreeModel::IndexOf(uint32_t track) const {
  return createIndex(row_in_parent_[track], kNameColumn, static_cast<quintptr>(track) + 1);
}

QModelIndex TrackTreeModel::index(int row, int column, const QModelIndex& parent) const {
  if (!hasIndex(row, column, parent)) return {};
  const size_t slot = parent.isValid() ? parent.internalId() : 0;  // internalId = track + 1
  const auto lanes = static_cast<int>(children_[slot].size());
  if (row >= lanes) {
    const uint32_t counter = counters_of_[slot - 1][static_cast<size_t>(row - lanes)];
    return createIndex(row, column, static_cast<quintptr>(visible_.size() + 1 + counter));
  }
  return createIndex(row, column, static_cast<quintptr>(children_[slot][row]) + 1);
}

QModelIndex TrackTreeModel::parent(const QModelIndex& child) const {
  if (!child.isValid()) return {};
  if (const int64_t counter = CounterOf(child); counter >= 0) {
    const uint32_t owner = counters_[static_cast<size_t>(counter)].track;
    return createIndex(row_in_parent_[owner], 0, static_cast<quintptr>(owner) + 1);
  }
  const uint32_t track = static_cast<uint32_t>(child.internalId() - 1);
  const int32_t parent_track = document_->trace().tracks()[track].parent;
  if (parent_track < 0) return {};
  return createIndex(row_in_parent_[parent_track], 0, static_cast<quintptr>(parent_track) + 1);
}

int TrackTreeModel::rowCount(const QModelIndex& parent) const {
  if (parent.isValid() && (parent.column() != 0 || CounterOf(parent) >= 0)) return 0;
  const size_t slot = parent.isValid() ? parent.internalId() : 0;
  return static_cast<int>(children_[slot].size() + (slot > 0 ? counters_of_[slot - 1].size() : 0));
}

int TrackTreeModel::columnCount(const QModelIndex&) const { return kColumnCount; }

QVariant TrackTreeModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid)) return {};
  if (const int64_t counter = CounterOf(index); counter >= 0) return CounterData(counters_[static_cast<size_t>(counter)], index.column(), role);
  const uint32_t track = static_cast<uint32_t>(index.internalId() - 1);
  const trace::Trace& trace = document_->trace();
  const trace::Track& info = trace.tracks()[track];
  if (role == kTrackRole) return QVariant::fromValue(track);
  switch (index.column()) {
    case kNameColumn:
      if (role == Qt::DisplayRole) return QString::fromUtf8(trace.str(info.name));
      if (role == Qt::ToolTipRole) {
        const QString path = QString::fromUtf8(trace.str(info.full_name));
        return IsRepeatLane(trace, track) ? tr("%1\nRepeats slices of other lanes: hidden at first, counted nowhere").arg(path)
                                          : path;
      }
      if (role == Qt::CheckStateRole) return visible_[track] ? Qt::Checked : Qt::Unchecked;
      if (role == kSortRole) return QString::fromUtf8(trace.str(info.name));
      break;
    case kSlicesColumn:
      if (role == Qt::DisplayRole || role == kSortRole) {
        return QVariant::fromValue<qint64>(subtree_slices_[track]);
      }
      if (role == Qt::TextAlignmentRole) return int(Qt::AlignRight | Qt::AlignVCenter);
      break;
    case kKindColumn:
      if (role == Qt::DisplayRole || role == kSortRole) {
        return QString::fromUtf8(trace::TrackKindName(info.kind));
      }
      break;
    default: break;
  }
  return {};
}

QVariant TrackTreeModel::CounterData(const CounterRow& counter, int column, int role) const {
  if (role == kTrackRole) return QVariant::fromValue(counter.track);
  switch (column) {
    case kNameColumn:
      if (role == Qt::DisplayRole || role == kSortRole) return counter.name;
      if (role == Qt::ToolTipRole) return counter.origin;
      if (role == Qt::CheckStateRole) return counter.visible ? Qt::Checked : Qt::Unchecked;
      break;
    case kSlicesColumn:
      // Its samples (for utilisation, the busy intervals): what the track is drawn from.
      if (role == Qt::DisplayRole || role == kSortRole) return QVariant::fromValue<qint64>(counter.samples);
      if (role == Qt::TextAlignmentRole) return int(Qt::AlignRight | Qt::AlignVCenter);
      break;
    case kKindColumn:
      if (role == Qt::DisplayRole || role == kSortRole) return counter.kind;
      break;
    default: break;
  }
  return {};
}

bool TrackTreeModel::setData(const QModelIndex& index, const QVariant& value, int role) {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid) || index.column() != kNameColumn ||
      role != Qt::CheckStateRole) {
    return false;
  }
  const bool visible = value.value<Qt::CheckState>() == Qt::Checked || value.toInt() == Qt::Checked;
  if (const int64_t c = CounterOf(index); c >= 0) {
    CounterRow& counter = counters_[static_cast<size_t>(c)];
    if (counter.visible == visible) return true;
    counter.visible = visible;
    emit dataChanged(index, index, {Qt::CheckStateRole});
    emit counterVisibilityChanged(static_cast<uint32_t>(c), visible);
    return true;
  }
  const uint32_t track = static_cast<uint32_t>(index.internalId() - 1);
  if (visible_[track] == visible) return true;
  visible_[track] = visible;
  emit dataChanged(index, index, {Qt::CheckStateRole});
  emit visibilityChanged(track, visible);
  return true;
}

Qt::ItemFlags TrackTreeModel::flags(const QModelIndex& index) const {
  // Drops land between rows: the root and every track take them, DropPlace says which fit.
  if (!index.isValid()) return Qt::ItemIsDropEnabled;
  Qt::ItemFlags result = Qt::ItemIsEnabled | Qt::ItemIsSelectable;
  if (index.column() == kNameColumn) result |= Qt::ItemIsUserCheckable;
  if (CounterOf(index) < 0) result |= Qt::ItemIsDragEnabled | Qt::ItemIsDropEnabled;
  return result;
}

namespace {
constexpr char kTrackMime[] = "application/x-stepscope-track";
}  // namespace

QStringList TrackTreeModel::mimeTypes() const { return {QString::fromLatin1(kTrackMime)}; }

QMimeData* TrackTreeModel::mimeData(const QModelIndexList& indexes) const {
  for (const QModelIndex& index : indexes) {
    if (!index.isValid() || CounterOf(index) >= 0) continue;
    auto* data = new QMimeData;
    data->setData(QString::fromLatin1(kTrackMime), QByteArray::number(static_cast<qulonglong>(index.internalId() - 1)));
    return data;  // one track at a time (the tree selects one row)
  }
  return nullptr;
}

std::pair<int64_t, int> TrackTreeModel::DropPlace(const QMimeData* data, int row, const QModelIndex& parent) const {
  if (data == nullptr || !data->hasFormat(QString::fromLatin1(kTrackMime))) return {-1, -1};
  bool ok = false;
  const qulonglong dragged = data->data(QString::fromLatin1(kTrackMime)).toULongLong(&ok);
  if (!ok || dragged >= visible_.size()) return {-1, -1};
  const auto track = static_cast<uint32_t>(dragged);
  const int32_t siblings_of = document_->trace().tracks()[track].parent;
  QModelIndex target_parent = parent.isValid() ? parent.siblingAtColumn(0) : parent;
  if (row < 0) {
    // Dropped onto a row: a sibling's place (before it), else nowhere.
    if (!target_parent.isValid() || CounterOf(target_parent) >= 0) return {-1, -1};
    row = target_parent.row();
    target_parent = target_parent.parent();
  }
  const int32_t parent_track = target_parent.isValid() ? static_cast<int32_t>(target_parent.internalId() - 1) : -1;
  if (target_parent.isValid() && CounterOf(target_parent) >= 0) return {-1, -1};
  if (parent_track != siblings_of) return {-1, -1};
  // Counter rows follow the lanes: a drop among them goes after the last lane.
  return {track, std::min(row, static_cast<int>(children_[static_cast<size_t>(parent_track + 1)].size()))};
}

bool TrackTreeModel::canDropMimeData(const QMimeData* data, Qt::DropAction action, int row, int,
                                     const QModelIndex& parent) const {
  return action == Qt::MoveAction && DropPlace(data, row, parent).first >= 0;
}

bool TrackTreeModel::dropMimeData(const QMimeData* data, Qt::DropAction action, int row, int, const QModelIndex& parent) {
  const auto [track, place] = DropPlace(data, row, parent);
  if (action != Qt::MoveAction || track < 0) return false;
  emit trackDropped(static_cast<uint32_t>(track), place);
  // False: the view must not remove the dragged row; the layout moved the track and this model
  // follows its order.
  return false;
}

QVariant TrackTreeModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case kNameColumn: return tr("Track");
    case kSlicesColumn: return tr("Slices");
    case kKindColumn: return tr("Kind");
    default: return {};
  }
}

}  // namespace stepscope::viewer
