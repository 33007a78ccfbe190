// The roofline pane: how much of the device the trace uses (analysis/efficiency.h, the numbers of
// `stepscope efficiency`): MFU and the peak it is measured against (which and why) in its
// caption; each costed op type as a point under the device's roofs, and as a row of the table
// (count, time, FLOP/s, FLOP/B, bound, share of the roof). Clicking a point or double-clicking a
// row selects the op type's longest op on the timeline.
#pragma once

#include <vector>

#include "viewer/panes/pane.h"

class QLabel;
class QTableWidget;

namespace stepscope::viewer {

class RooflineChart;

class RooflinePane : public Pane {
 public:
  static constexpr PaneId kId = kRooflinePane;
  enum RooflineColumn { kRoofOpType, kRoofCount, kRoofTime, kRoofFlops, kRoofIntensity, kRoofBound, kRoofShare,
                        kRoofSource, kRoofColumns };

  RooflinePane(PaneHost& host, QObject* parent);
  static void Analyse(const TraceDocument& document, DocumentAnalysis& into);
  void ShowAnalysis(const std::shared_ptr<const DocumentAnalysis>& result) override;

  QString caption() const;
  RooflineChart* chart() const { return chart_; }
  QTableWidget* table() const { return table_; }
  // Selects the longest op of the table's row `row` on the timeline.
  void SelectRow(int row);

 private:
  std::shared_ptr<const DocumentAnalysis> analysis_;
  QLabel* caption_;
  RooflineChart* chart_;
  QTableWidget* table_;
  std::vector<size_t> point_rows_;  // per chart point, its row of analysis_->efficiency.ops
};

}  // namespace stepscope::viewer
