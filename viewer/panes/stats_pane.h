// The statistics pane: op statistics of the whole trace, per op type or per node, sortable and
// filterable; a double click jumps to the op's longest slice. Above the table, the run's MFU and
// its peak and the collectives' bus bandwidth (efficiency_summary.h), where the trace gives them.
#pragma once

#include "viewer/panes/pane.h"

class QComboBox;
class QLabel;
class QLineEdit;
class QSortFilterProxyModel;
class QTableView;

namespace stepscope::viewer {

class OpStatsModel;

class StatsPane : public Pane {
 public:
  static constexpr PaneId kId = kStatsPane;
  StatsPane(PaneHost& host, QObject* parent);
  static void Analyse(const TraceDocument& document, DocumentAnalysis& into);
  void ShowAnalysis(const std::shared_ptr<const DocumentAnalysis>& result) override;

  OpStatsModel* stats_model() const { return stats_model_; }
  QSortFilterProxyModel* stats_proxy() const { return stats_proxy_; }
  // The statistics table as shown (sorted, filtered) in CSV.
  QString StatsCsv() const;
  void SetStatsByNode(bool by_node);
  void SetStatsFilter(const QString& text);
  // The MFU and bus-bandwidth line as shown; empty when the trace gives neither.
  QString efficiency_summary() const;

 private:
  void FillStatsTable();

  std::shared_ptr<const DocumentAnalysis> analysis_;
  OpStatsModel* stats_model_;
  QSortFilterProxyModel* stats_proxy_;
  QTableView* stats_table_;
  QComboBox* stats_granularity_;
  QLineEdit* stats_filter_;
  QLabel* stats_caption_;
  QLabel* efficiency_caption_;
};

}  // namespace stepscope::viewer
