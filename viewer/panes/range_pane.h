// The range pane: op statistics of the time range selected on the timeline (Shift+drag, or a
// drag on the ruler), computed off the UI thread; a newer range drops the older's result.
#pragma once

#include <QFutureWatcher>

#include "profiler/analysis/op_stats.h"
#include "viewer/panes/pane.h"

class QLabel;

namespace stepscope::viewer {

class OpStatsModel;

class RangePane : public Pane {
 public:
  static constexpr PaneId kId = kRangePane;
  RangePane(PaneHost& host, QObject* parent);

  OpStatsModel* range_model() const { return range_model_; }
  bool range_stats_pending() const { return range_watcher_.isRunning(); }
  QString range_caption() const;

 private:
  void ComputeRangeStats(int64_t begin_ns, int64_t end_ns);
  void ShowRangeStats();

  OpStatsModel* range_model_;
  QLabel* range_caption_;
  QFutureWatcher<analysis::OpStats> range_watcher_;
};

}  // namespace stepscope::viewer
