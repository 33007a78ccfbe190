// The details pane: every field of the slice selected on the timeline (SliceDetailsModel); a
// double click on a related slice jumps to it.
#pragma once

#include "viewer/panes/pane.h"

class QTreeView;

namespace stepscope::viewer {

class SliceDetailsModel;

class DetailsPane : public Pane {
 public:
  static constexpr PaneId kId = kDetailsPane;
  DetailsPane(PaneHost& host, QObject* parent);

  SliceDetailsModel* details_model() const { return details_model_; }

 private:
  void ShowDetails(int64_t slice);

  SliceDetailsModel* details_model_;
  QTreeView* details_view_;
};

}  // namespace stepscope::viewer
