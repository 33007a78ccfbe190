// The range pane: statistics per name (count, total, self, mean, min, max, ...) of what is selected
// on the timeline: an area (Shift+drag over some rows: its range on their tracks; a drag on the
// ruler: every track), computed off the UI thread, a newer range dropping the older's result; or
// the Ctrl+clicked slices (each slice whole, self minus its direct children).
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
  void ShowSelectedSlices();

  OpStatsModel* range_model_;
  QLabel* range_caption_;
  int range_tracks_ = 0;  // the tracks of the area computed (0: every track)
  QFutureWatcher<analysis::OpStats> range_watcher_;
};

}  // namespace stepscope::viewer
