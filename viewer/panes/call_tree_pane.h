// The call tree pane: the call tree of nested slices (analysis/call_tree.h) for what is selected
// on the timeline, top-down or bottom-up, as a sortable tree (total, self, calls, share) over an
// icicle of the same tree. What it covers, by the timeline's selection:
//  - Ctrl+clicked slices: those slices and what nests in them;
//  - a Shift+dragged area: its time range on its tracks (on the ruler: every host lane);
//  - one selected slice: the step that contains it;
//  - nothing: the whole trace.
// Computed off the UI thread when the pane is in front (a newer selection drops an older
// result), and when it comes to the front after the selection changed.
#pragma once

#include <QFutureWatcher>
#include <QString>
#include <memory>

#include "profiler/analysis/call_tree.h"
#include "viewer/panes/pane.h"

class QComboBox;
class QLabel;
class QSortFilterProxyModel;
class QTreeView;

namespace stepscope::viewer {

class CallTreeModel;
class IcicleChart;

class CallTreePane : public Pane {
 public:
  static constexpr PaneId kId = kCallTreePane;
  CallTreePane(PaneHost& host, QObject* parent);

  void Shown() override;
  void SetBottomUp(bool bottom_up);
  bool bottom_up() const { return bottom_up_; }

  CallTreeModel* model() const { return model_; }
  QTreeView* tree_view() const { return view_; }
  IcicleChart* icicle() const { return icicle_; }
  bool pending() const { return watcher_.isRunning() || dirty_; }
  QString caption() const;
  // The top-down tree shown (or to be shown bottom-up), null before the first result.
  std::shared_ptr<const analysis::CallTree> top_down() const { return top_down_; }
  struct Result {
    std::shared_ptr<const analysis::CallTree> top_down, bottom_up;
    QString scope;
    QString error;  // why there is no tree (out of memory): the caption says it, the program goes on
  };
  // The trees of `options` over `trace` (the bottom-up one too when asked), each built on the
  // cores; a build that runs out of memory, on any of its threads, gives an error instead.
  static Result ComputeTrees(const trace::Trace& trace, const analysis::CallTreeOptions& options, bool bottom_up);

 private:
  void SelectionChanged();
  void Recompute();
  void ShowResult();
  void ShowTree();

  CallTreeModel* model_;
  QSortFilterProxyModel* proxy_;
  QTreeView* view_;
  IcicleChart* icicle_;
  QLabel* caption_;
  QComboBox* direction_;
  QFutureWatcher<Result> watcher_;
  std::shared_ptr<const analysis::CallTree> top_down_, bottom_up_tree_;
  bool bottom_up_ = false;
  bool dirty_ = true;  // the selection changed since the last computation began
};

}  // namespace stepscope::viewer
