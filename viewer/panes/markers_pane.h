// The markers pane: the document's markers (M on the timeline) in time order; a double click (or
// Jump) centres the timeline on a marker, editing an item's label renames it, Delete removes it.
#pragma once

#include "viewer/panes/pane.h"

class QListWidget;
class QListWidgetItem;

namespace stepscope::viewer {

class MarkersPane : public Pane {
 public:
  static constexpr PaneId kId = kMarkersPane;
  MarkersPane(PaneHost& host, QObject* parent);

  QListWidget* list() const { return list_; }
  // Centres the timeline on the marker of a row, keeping the zoom.
  void JumpTo(int row);
  void Rename(int row, const QString& label);
  void Delete(int row);

 private:
  void Refill();
  int64_t IdOf(int row) const;

  QListWidget* list_;
  bool refilling_ = false;
};

}  // namespace stepscope::viewer
