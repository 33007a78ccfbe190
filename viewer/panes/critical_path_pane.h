// The critical-path pane: one path per ProfilerStep#N window (else one for the whole trace),
// the window with the longest path shown first; the bound-by summary and a row per path element.
// A row's slice is selected on the timeline when the row is; the checkbox highlights the path on
// the timeline (checked the first time the pane is shown).
#pragma once

#include "viewer/panes/document_analysis.h"
#include "viewer/panes/pane.h"

class QCheckBox;
class QComboBox;
class QLabel;
class QTableView;
class QTableWidget;

namespace stepscope::viewer {

class PathModel;

class CriticalPathPane : public Pane {
 public:
  static constexpr PaneId kId = kCriticalPathPane;
  // The path table's columns.
  enum PathColumn { kPathName, kPathEdge, kPathStart, kPathDuration, kPathHeld, kPathWait, kPathLane, kPathColumns };

  CriticalPathPane(PaneHost& host, QObject* parent);
  static void Analyse(const TraceDocument& document, DocumentAnalysis& into);
  void ShowAnalysis(const std::shared_ptr<const DocumentAnalysis>& result) override;
  void Shown() override;

  QTableView* path_table() const { return path_table_; }
  QTableWidget* bound_table() const { return bound_table_; }
  QCheckBox* path_checkbox() const { return path_checkbox_; }
  QComboBox* path_window() const { return path_window_; }
  QString path_caption() const;
  // The path shown (the window chosen), null before the analysis.
  const DocumentAnalysis::PathWindow* shown_path() const;
  void ShowPathWindow(int index);
  // Fits the timeline to the path shown.
  void ZoomToPath();

 private:
  void ShowPathOnTimeline();  // the path shown, when the checkbox says so

  std::shared_ptr<const DocumentAnalysis> analysis_;
  QComboBox* path_window_;
  QCheckBox* path_checkbox_;
  QLabel* path_caption_;
  QTableWidget* bound_table_;
  QTableView* path_table_;
  PathModel* path_model_;
  int path_shown_ = -1;
  bool path_auto_shown_ = false;
};

}  // namespace stepscope::viewer
