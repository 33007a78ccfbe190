// Everything shown for one open trace: the timeline on top; below it the panes: slice details,
// op statistics (per op type or per node, sortable and filterable), statistics of a selected
// time range, memory charts, the steps (duration, robust z, outliers and what deviated in them;
// a double click zooms the timeline to the step), search results and the track tree. All panes read the same
// immutable document; the analyses arrive later (SetAnalysis) and range statistics are computed
// off the UI thread, stale results dropped.
//
// The panes are one table (Panes()): for each its id, its name on the command line, its tab
// title, how it is built and, for a pane that shows an analysis, how that is computed and shown.
// The tabs, the analyses the loader runs (AnalyseDocument) and stepscope-view's --pane all read
// it, so a new pane or analysis is one entry (plus the field of DocumentAnalysis it fills).
#pragma once

#include <QFutureWatcher>
#include <QWidget>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "profiler/analysis/memory_timeline.h"
#include "profiler/analysis/op_stats.h"
#include "profiler/analysis/steps.h"
#include "viewer/load/document.h"

class QComboBox;
class QLabel;
class QLineEdit;
class QListView;
class QTableWidget;
class QSortFilterProxyModel;
class QTabWidget;
class QTableView;
class QTreeView;

namespace stepscope::viewer {

// What the panes' analyses computed for one document, after its first frame.
struct DocumentAnalysis {
  analysis::OpStats op_stats;                       // the stats pane
  std::vector<analysis::AllocatorTimeline> memory;  // the memory pane
  analysis::StepsReport steps;                      // the steps pane
};

// Runs every pane's analysis on `document` (off the UI thread: the loader calls it).
std::shared_ptr<const DocumentAnalysis> AnalyseDocument(const TraceDocument& document);

class MemoryPanel;
class OpStatsModel;
class SearchModel;
class SliceDetailsModel;
class TimeAxis;
class TimelineView;
class TrackTreeModel;

class DocumentView : public QWidget {
  Q_OBJECT

 public:
  enum Pane { kDetailsPane, kStatsPane, kRangePane, kMemoryPane, kStepsPane, kSearchPane, kTracksPane };
  static constexpr Pane kDefaultPane = kStatsPane;  // shown first, and --pane's default

  struct PaneSpec {
    Pane id;
    const char* name;   // on the command line: --pane NAME
    const char* title;  // on its tab (translated)
    QWidget* (DocumentView::*create)();
    // Only for a pane that shows an analysis: computes it into its field (off the UI thread)
    // and shows it once it has arrived.
    void (*analyse)(const TraceDocument& document, DocumentAnalysis& into) = nullptr;
    void (DocumentView::*show)() = nullptr;
  };
  // In tab order.
  static std::span<const PaneSpec> Panes();
  static const PaneSpec& PaneSpecOf(Pane id);
  // By its name on the command line; null when no pane has that name.
  static const PaneSpec* FindPane(std::string_view name);

  explicit DocumentView(std::shared_ptr<const TraceDocument> document, QWidget* parent = nullptr);
  ~DocumentView() override;

  const TraceDocument& document() const { return *document_; }
  std::shared_ptr<const TraceDocument> shared_document() const { return document_; }
  TimelineView* timeline() const { return timeline_; }
  TimeAxis* axis() const { return axis_; }
  QTabWidget* panes() const { return panes_; }
  void ShowPane(Pane pane);

  void SetAnalysis(std::shared_ptr<const DocumentAnalysis> analysis);
  bool analysed() const { return analysis_ != nullptr; }

  // Search: returns an error for a bad regular expression, else an empty string.
  QString Search(const QString& pattern, bool regex);
  void SearchNext();
  void SearchPrevious();
  QString search_status() const;
  SearchModel* search_model() const { return search_model_; }

  OpStatsModel* stats_model() const { return stats_model_; }
  QSortFilterProxyModel* stats_proxy() const { return stats_proxy_; }
  OpStatsModel* range_model() const { return range_model_; }
  bool range_stats_pending() const { return range_watcher_.isRunning(); }
  QString range_caption() const;
  // The statistics table as shown (sorted, filtered) in CSV.
  QString StatsCsv() const;
  void SetStatsByNode(bool by_node);
  void SetStatsFilter(const QString& text);

  MemoryPanel* memory_panel() const { return memory_panel_; }
  // The steps pane: one row per step (its columns in StepsColumn order), and its caption.
  enum StepsColumn { kStepNumber, kStepStart, kStepDuration, kStepZ, kStepOutlier, kStepCause, kStepColumns };
  QTableWidget* steps_table() const { return steps_table_; }
  QString steps_caption() const;
  // Zooms the timeline to the step of a row of the steps table.
  void ZoomToStep(int row);
  SliceDetailsModel* details_model() const { return details_model_; }
  TrackTreeModel* track_model() const { return track_model_; }

 public slots:
  void JumpToSlice(uint32_t slice);

 signals:
  void statusMessage(const QString& message);

 private:
  QWidget* BuildDetailsPane();
  QWidget* BuildStatsPane();
  QWidget* BuildRangePane();
  QWidget* BuildMemoryPane();
  QWidget* BuildStepsPane();
  QWidget* BuildSearchPane();
  QWidget* BuildTracksPane();
  void ShowDetails(int64_t slice);
  void ComputeRangeStats(int64_t begin_ns, int64_t end_ns);
  void FillStatsTable();
  void ShowMemoryTimelines();
  void ShowSteps();

  std::shared_ptr<const TraceDocument> document_;
  std::shared_ptr<const DocumentAnalysis> analysis_;
  TimeAxis* axis_;
  TimelineView* timeline_;
  QTabWidget* panes_;

  SliceDetailsModel* details_model_;
  QTreeView* details_view_;

  OpStatsModel* stats_model_;
  QSortFilterProxyModel* stats_proxy_;
  QTableView* stats_table_;
  QComboBox* stats_granularity_;
  QLineEdit* stats_filter_;
  QLabel* stats_caption_;

  OpStatsModel* range_model_;
  QLabel* range_caption_;
  QFutureWatcher<analysis::OpStats> range_watcher_;

  MemoryPanel* memory_panel_;
  QTableWidget* steps_table_;
  QLabel* steps_caption_;
  SearchModel* search_model_;
  QListView* search_view_;
  TrackTreeModel* track_model_;
};

}  // namespace stepscope::viewer
