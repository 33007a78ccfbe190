// The GPU pane: stacked bars per GPU and stream, each launch's delay along the timeline's time
// axis, a table of the same figures with the idle causes (a row per GPU, then its streams), and
// the launch statistics.
#pragma once

#include "viewer/panes/pane.h"

class QLabel;
class QTableWidget;

namespace stepscope::viewer {

class GpuBars;
class LaunchDelayChart;

class GpuPane : public Pane {
 public:
  static constexpr PaneId kId = kGpuPane;
  // The table's columns.
  enum GpuColumn {
    kGpuName, kGpuWork, kGpuSpan, kGpuBusy, kGpuIdle, kGpuCompute, kGpuCommunication, kGpuMemory,
    kGpuOverlap, kGpuHostWait, kGpuKernelWait, kGpuOtherIdle, kGpuColumns
  };

  GpuPane(PaneHost& host, QObject* parent);
  static void Analyse(const TraceDocument& document, DocumentAnalysis& into);
  void ShowAnalysis(const std::shared_ptr<const DocumentAnalysis>& result) override;

  QTableWidget* gpu_table() const { return gpu_table_; }
  GpuBars* gpu_bars() const { return gpu_bars_; }
  LaunchDelayChart* launch_delay_chart() const { return launch_delay_chart_; }
  QString launches_caption() const;

 private:
  std::shared_ptr<const DocumentAnalysis> analysis_;
  GpuBars* gpu_bars_;
  LaunchDelayChart* launch_delay_chart_;
  QTableWidget* gpu_table_;
  QLabel* launches_caption_;
};

}  // namespace stepscope::viewer
