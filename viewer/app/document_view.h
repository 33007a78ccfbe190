// Everything shown for one open trace: the timeline on top and, below it, the panes in tabs:
// one class per pane (viewer/panes), listed in the pane table (viewer/panes/pane_table.h):
// slice details, op statistics, statistics of a selected time range, memory charts, the steps,
// the GPU breakdown, the critical path, GPU time per annotation, stragglers of a merge of ranks,
// search results and the track tree. All panes read the same immutable document; the analyses
// arrive later (SetAnalysis) and each pane shows its part.
//
// The view holds the panes and gives them what they share (PaneHost): the document, the
// timeline and its axis, the tabs, jumping to a slice and the status line.
#pragma once

#include <QWidget>
#include <memory>
#include <vector>

#include "viewer/panes/pane.h"

class QLabel;
class QTabWidget;

namespace stepscope::viewer {

class TimeAxis;
class TimelineView;

class DocumentView : public QWidget, public PaneHost {
  Q_OBJECT

 public:
  using enum PaneId;  // DocumentView::kStatsPane ...
  // A merge of more inputs than this opens with each input's process collapsed.
  static constexpr size_t kExpandedRanks = 8;

  explicit DocumentView(std::shared_ptr<const TraceDocument> document, QWidget* parent = nullptr);
  ~DocumentView() override;

  // PaneHost.
  const TraceDocument& document() const override { return *document_; }
  std::shared_ptr<const TraceDocument> shared_document() const override { return document_; }
  TimelineView* timeline() const override { return timeline_; }
  TimeAxis* axis() const override { return axis_; }
  QTabWidget* panes() const override { return panes_; }
  void ShowPane(PaneId pane) override;
  void ShowStatus(const QString& message) override { emit statusMessage(message); }

  // The pane of class P (DocumentView::pane<StepsPane>()); every pane of the table exists.
  Pane* pane(PaneId id) const { return panes_by_id_[id]; }
  template <class P>
  P* pane() const {
    return static_cast<P*>(pane(P::kId));
  }

  // The red line over the timeline naming each cut of a document read up to one; null otherwise.
  QLabel* truncation_banner() const { return truncation_banner_; }

  void SetAnalysis(std::shared_ptr<const DocumentAnalysis> analysis);
  // Kernel names whole (View > Full Kernel Names) on the timeline and in every table, or short.
  void SetFullNames(bool full);
  bool analysed() const { return analysis_ != nullptr; }
  const DocumentAnalysis* analysis() const { return analysis_.get(); }

 public slots:
  void JumpToSlice(uint32_t slice) override;

 signals:
  void statusMessage(const QString& message);

 private:
  std::shared_ptr<const TraceDocument> document_;
  std::shared_ptr<const DocumentAnalysis> analysis_;
  TimeAxis* axis_;
  TimelineView* timeline_;
  QTabWidget* panes_;
  QLabel* truncation_banner_ = nullptr;
  std::vector<Pane*> panes_by_id_;  // indexed by PaneId (owned as QObject children)
};

}  // namespace stepscope::viewer
