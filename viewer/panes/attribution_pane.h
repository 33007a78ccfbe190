// The GPU attribution pane: GPU time per annotation as a tree (annotations nest), and the kernel
// sequences that recur, with the host op that launched them.
#pragma once

#include "viewer/panes/pane.h"

class QLabel;
class QTableWidget;
class QTreeWidget;

namespace stepscope::viewer {

class AttributionPane : public Pane {
 public:
  static constexpr PaneId kId = kAttributionPane;
  // The annotation tree's columns, and the pattern table's.
  enum AnnotationColumn { kAnnName, kAnnInstances, kAnnCpu, kAnnWork, kAnnGpu, kAnnBusy, kAnnSelf, kAnnColumns };
  enum PatternColumn { kPatKernels, kPatCount, kPatGpu, kPatSpan, kPatGap, kPatHostOp, kPatColumns };

  AttributionPane(PaneHost& host, QObject* parent);
  static void Analyse(const TraceDocument& document, DocumentAnalysis& into);
  void ShowAnalysis(const std::shared_ptr<const DocumentAnalysis>& result) override;

  QTreeWidget* annotation_tree() const { return annotation_tree_; }
  QTableWidget* pattern_table() const { return pattern_table_; }

 private:
  QLabel* attribution_caption_;
  QTreeWidget* annotation_tree_;
  QTableWidget* pattern_table_;
};

}  // namespace stepscope::viewer
