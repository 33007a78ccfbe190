// The search pane: the slices whose name or op type matches (SearchModel); activating a match
// jumps to it, and the window's Find next/previous walk the matches.
#pragma once

#include "viewer/panes/pane.h"

class QListView;

namespace stepscope::viewer {

class EmptyHint;
class SearchModel;

class SearchPane : public Pane {
 public:
  static constexpr PaneId kId = kSearchPane;
  SearchPane(PaneHost& host, QObject* parent);

  // Returns an error for a bad regular expression, else an empty string.
  QString Search(const QString& pattern, bool regex);
  void SearchNext();
  void SearchPrevious();
  QString search_status() const;
  SearchModel* search_model() const { return search_model_; }

 private:
  void JumpToCurrent(int64_t slice);

  SearchModel* search_model_;
  QListView* search_view_;
  EmptyHint* hint_;
};

}  // namespace stepscope::viewer
