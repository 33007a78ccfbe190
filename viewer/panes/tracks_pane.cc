// The tracks pane (tracks_pane.h): TrackTreeModel in a tree view, wired to the timeline.
#include "viewer/panes/tracks_pane.h"

#include <QHeaderView>
#include <QTabWidget>
#include <QTreeView>

#include "viewer/models/track_tree_model.h"
#include "viewer/timeline/timeline_view.h"

namespace stepscope::viewer {

TracksPane::TracksPane(PaneHost& host, QObject* parent) : Pane(host, parent) {
  track_model_ = new TrackTreeModel(host.shared_document(), this);
  auto* tracks_view = new QTreeView(host.panes());
  tracks_view->setModel(track_model_);
  tracks_view->expandAll();
  tracks_view->header()->setDefaultSectionSize(300);
  TimelineView* timeline = host.timeline();
  connect(track_model_, &TrackTreeModel::visibilityChanged, timeline,
          [timeline](uint32_t track, bool visible) { timeline->SetTrackHidden(track, !visible); });
  set_widget(tracks_view);
}

}  // namespace stepscope::viewer
