// The tracks pane: the track tree (TrackTreeModel); unchecking a track hides it on the timeline.
#pragma once

#include "viewer/panes/pane.h"

namespace stepscope::viewer {

class TrackTreeModel;

class TracksPane : public Pane {
 public:
  static constexpr PaneId kId = kTracksPane;
  TracksPane(PaneHost& host, QObject* parent);

 private:
  TrackTreeModel* track_model_;
};

}  // namespace stepscope::viewer
