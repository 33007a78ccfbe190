// Everything shown for one open trace: the timeline as the central widget, taking most of the
// room, and around it the panes, each a dock (resizable, hideable, movable, tabbed with its
// neighbours): one class per pane (viewer/panes), listed in the pane table
// (viewer/panes/pane_table.h): slice details, op statistics, statistics of a selected time
// range, memory charts, the steps, the GPU breakdown, the critical path, GPU time per
// annotation, stragglers of a merge of ranks, search results and the track tree. All panes read
// the same immutable document; the analyses arrive later (SetAnalysis) and each pane shows its
// part.
//
// The view holds the panes and gives them what they share (PaneHost): the document, the
// timeline and its axis, bringing a pane to the front, jumping to a slice and the status line.
// Its dock layout is saved and restored as a whole (SaveLayout/RestoreLayout, the main window
// keeps it across runs); ResetLayout puts every dock back where it starts.
#pragma once

#include <QByteArray>
#include <QMainWindow>
#include <memory>
#include <vector>

#include "viewer/panes/pane.h"

class QDockWidget;
class QLabel;

namespace stepscope::viewer {

class TimeAxis;
class TimelineView;

class DocumentView : public QMainWindow, public PaneHost {
  Q_OBJECT

 public:
  using enum PaneId;  // DocumentView::kStatsPane ...
  // A merge of more inputs than this opens with each input's process collapsed.
  static constexpr size_t kExpandedRanks = 8;
  // The docks below the timeline start at this share of the view's height, tab bar included
  // (the timeline keeps the rest: 61 % of a 1600x1000 window; the memory pane room for two
  // charts); the docks on the right at this share of its width.
  static constexpr double kBottomDockShare = 0.31;
  static constexpr double kRightDockShare = 0.22;

  explicit DocumentView(std::shared_ptr<const TraceDocument> document, QWidget* parent = nullptr);
  ~DocumentView() override;

  // PaneHost.
  const TraceDocument& document() const override { return *document_; }
  std::shared_ptr<const TraceDocument> shared_document() const override { return document_; }
  TimelineView* timeline() const override { return timeline_; }
  TimeAxis* axis() const override { return axis_; }
  QWidget* panes() const override { return const_cast<DocumentView*>(this); }
  void ShowPane(PaneId pane) override;
  bool PaneInFront(PaneId pane) const override;
  void ShowStatus(const QString& message) override { emit statusMessage(message); }

  // The pane of class P (DocumentView::pane<StepsPane>()); every pane of the table exists.
  Pane* pane(PaneId id) const { return panes_by_id_[id]; }
  template <class P>
  P* pane() const {
    return static_cast<P*>(pane(P::kId));
  }
  // The pane last brought to the front, by ShowPane or by a click on its tab.
  PaneId current_pane() const { return current_pane_; }
  // The dock holding a pane (its title is the pane table's; its object name "pane-NAME").
  QDockWidget* dock(PaneId id) const { return docks_by_id_[id]; }

  // The dock layout (which docks are shown, where, their sizes) as QMainWindow::saveState
  // writes it; RestoreLayout returns false, changing nothing, for a layout it cannot read.
  QByteArray SaveLayout() const;
  bool RestoreLayout(const QByteArray& layout);
  // Every dock shown, in its starting area and tab group, at its starting size.
  void ResetLayout();

  // The red line over the timeline naming each cut of a document read up to one; null otherwise.
  QLabel* truncation_banner() const { return truncation_banner_; }

  void SetAnalysis(std::shared_ptr<const DocumentAnalysis> analysis);
  // Kernel names whole (View > Full Kernel Names) on the timeline and in every table, or short.
  void SetFullNames(bool full);
  bool analysed() const { return analysis_ != nullptr; }
  const DocumentAnalysis* analysis() const { return analysis_.get(); }
  // Of an overview (viewer/load/overview.h): the rank whose header row is at the timeline's
  // widget y, -1 when there is none (a double-click there asks for the rank in full).
  int32_t OverviewRankAtRow(int y) const;

 public slots:
  void JumpToSlice(uint32_t slice) override;

 signals:
  void statusMessage(const QString& message);
  // A double-click on a rank's header row of an overview: open that rank in full.
  void overviewRankRequested(int32_t rank);

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;
  void showEvent(QShowEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;
  bool event(QEvent* event) override;
  void contextMenuEvent(QContextMenuEvent* event) override;

 private:
  void SizeDocks();

  std::shared_ptr<const TraceDocument> document_;
  std::shared_ptr<const DocumentAnalysis> analysis_;
  TimeAxis* axis_;
  TimelineView* timeline_;
  QLabel* truncation_banner_ = nullptr;
  std::vector<Pane*> panes_by_id_;         // indexed by PaneId (owned as QObject children)
  std::vector<QDockWidget*> docks_by_id_;  // indexed by PaneId
  PaneId current_pane_ = kDefaultPane;
  bool auto_size_ = true;                  // the docks keep their starting shares (SizeDocks)
};

}  // namespace stepscope::viewer
