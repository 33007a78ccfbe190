// The stragglers pane, for a merge of per-rank traces (TraceDocument::rank_merge): a row per
// compared step (the rank that finished last, by how much and why), a row per rank, and the
// chart of the step selected (the largest lateness first). Activating a step row zooms the
// timeline to the step on every rank and selects the straggler's last piece of work.
#pragma once

#include <utility>

#include "viewer/panes/pane.h"

class QLabel;
class QTableWidget;

namespace stepscope::viewer {

class RankBars;

class StragglersPane : public Pane {
 public:
  static constexpr PaneId kId = kStragglersPane;
  // The step table's columns, and the rank table's.
  enum StragglerColumn {
    kStrStep, kStrRanks, kStrStraggler, kStrLateness, kStrVsMedian, kStrReason, kStrExcess, kStrWaitedFor,
    kStrOthersWaited, kStrColumns
  };
  enum RankTotalsColumn { kRankName, kRankSteps, kRankLast, kRankLatenessTotal, kRankLatenessMax, kRankColumns };

  StragglersPane(PaneHost& host, QObject* parent);

  QTableWidget* stragglers_table() const { return stragglers_table_; }
  QTableWidget* rank_totals_table() const { return rank_totals_table_; }
  RankBars* rank_bars() const { return rank_bars_; }
  QString stragglers_caption() const;
  // The caption's tooltip: how the clocks were aligned, each rank's offset, drift and residual.
  QString stragglers_clocks() const;
  // The merged-trace time range [begin, end] of a row's step, over every rank; and the slice the
  // straggler ended the step with (-1 when not found).
  std::pair<int64_t, int64_t> StragglerStepRange(int row) const;
  int64_t StragglerLastSlice(int row) const;
  void ZoomToStragglerStep(int row);

 private:
  // Fills the caption and tables from the document's merge (computed by the loader before it
  // merged the inputs).
  void ShowReport();

  QLabel* stragglers_caption_;
  QTableWidget* stragglers_table_;
  QTableWidget* rank_totals_table_;
  RankBars* rank_bars_;
};

}  // namespace stepscope::viewer
