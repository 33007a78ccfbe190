// Everything shown for one open trace: the timeline on top; below it the panes: slice details,
// the GPU breakdown, the critical path, GPU time per annotation and, for a merge of ranks, the
// stragglers (analysis_panes.cc),
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

#include "profiler/analysis/gpu_analyses.h"
#include "profiler/analysis/memory_timeline.h"
#include "profiler/analysis/op_stats.h"
#include "profiler/analysis/step_analyses.h"
#include "profiler/analysis/steps.h"
#include "viewer/app/launch_delay_chart.h"
#include "viewer/load/document.h"

class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;
class QListView;
class QTableWidget;
class QSortFilterProxyModel;
class QTabWidget;
class QTableView;
class QTreeView;
class QTreeWidget;

namespace stepscope::viewer {

// What the panes' analyses computed for one document, after its first frame.
struct DocumentAnalysis {
  analysis::OpStats op_stats;                       // the stats pane
  std::vector<analysis::AllocatorTimeline> memory;  // the memory pane
  analysis::StepsReport steps;                      // the steps pane
  // The GPU pane: time per GPU and stream, why streams sat idle, what launching cost.
  std::vector<analysis::GpuBreakdown> gpu;
  analysis::IdleReport idle;
  analysis::LaunchReport launches;
  std::vector<LaunchDelayPoint> launch_delays;  // every launch's delay at its kernel's start, in time order
  // The critical-path pane: one path per ProfilerStep#N window, else one for the whole trace.
  // A path is kept compact (a path through a big trace has hundreds of thousands of slices):
  // its summary, and per element the slice, the edge and the times that are not the slice's;
  // names, lanes, starts and durations are the slice's own (as analysis::PathElement takes them).
  struct PathStep {
    uint32_t slice = 0;
    uint8_t edge = 0;  // index into PathEdges()
    int64_t held_ns = 0, wait_ns = 0;
  };
  struct PathWindow {
    std::string label;  // "ProfilerStep#3", "whole trace"
    int64_t begin_ns = 0, end_ns = 0;
    int64_t length_ns = 0, busy_ns = 0, wait_ns = 0;
    int64_t bound_ns[analysis::kPathBounds] = {};
    analysis::PathBound bound_by = analysis::PathBound::kCpu;
    std::vector<PathStep> steps;
  };
  // The edges PathStep::edge names ("" for the first element, then PathElement::edge's names).
  static const std::vector<std::string>& PathEdges();
  static PathWindow MakePathWindow(std::string label, int64_t begin_ns, int64_t end_ns,
                                   const analysis::CriticalPath& path);
  std::vector<PathWindow> critical_paths;
  // The GPU attribution pane: GPU time per annotation, frequent kernel sequences.
  analysis::AnnotationReport annotations;
  analysis::KernelPatternReport kernel_patterns;
};

// Runs every pane's analysis on `document` (off the UI thread: the loader calls it).
std::shared_ptr<const DocumentAnalysis> AnalyseDocument(const TraceDocument& document);

class GpuBars;
class PathModel;
class RankBars;
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
  enum Pane {
    kDetailsPane,
    kStatsPane,
    kRangePane,
    kMemoryPane,
    kStepsPane,
    kGpuPane,
    kCriticalPathPane,
    kAttributionPane,
    kStragglersPane,
    kSearchPane,
    kTracksPane
  };
  static constexpr Pane kDefaultPane = kStatsPane;  // shown first, and --pane's default
  // A merge of more inputs than this opens with each input's process collapsed.
  static constexpr size_t kExpandedRanks = 8;

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
  // The red line over the timeline naming each cut of a document read up to one; null otherwise.
  QLabel* truncation_banner() const { return truncation_banner_; }
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
  const DocumentAnalysis* analysis() const { return analysis_.get(); }

  // The GPU pane (analysis_panes.cc): stacked bars per GPU and stream, a table of the same
  // figures with the idle causes (columns in GpuColumn order; a row per GPU, then its streams),
  // and the launch statistics.
  enum GpuColumn {
    kGpuName, kGpuWork, kGpuSpan, kGpuBusy, kGpuIdle, kGpuCompute, kGpuCommunication, kGpuMemory,
    kGpuOverlap, kGpuHostWait, kGpuKernelWait, kGpuOtherIdle, kGpuColumns
  };
  QTableWidget* gpu_table() const { return gpu_table_; }
  GpuBars* gpu_bars() const { return gpu_bars_; }
  LaunchDelayChart* launch_delay_chart() const { return launch_delay_chart_; }
  QString launches_caption() const;
  // The critical-path pane: the bound-by summary, a row per path element (PathColumn order);
  // a row's slice is selected on the timeline when the row is; the checkbox shows the path on
  // the timeline.
  enum PathColumn { kPathName, kPathEdge, kPathStart, kPathDuration, kPathHeld, kPathWait, kPathLane, kPathColumns };
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
  // The GPU attribution pane: annotations as a tree (AnnotationColumn order), kernel patterns as
  // a table (PatternColumn order).
  enum AnnotationColumn { kAnnName, kAnnInstances, kAnnCpu, kAnnWork, kAnnGpu, kAnnBusy, kAnnSelf, kAnnColumns };
  enum PatternColumn { kPatKernels, kPatCount, kPatGpu, kPatSpan, kPatGap, kPatHostOp, kPatColumns };
  QTreeWidget* annotation_tree() const { return annotation_tree_; }
  QTableWidget* pattern_table() const { return pattern_table_; }
  // The stragglers pane, for a merge of per-rank traces (TraceDocument::rank_merge): a row per
  // compared step (StragglerColumn order), a row per rank (RankTotalsColumn order), and the
  // chart of the step selected (the largest lateness first). Activating a step row zooms the
  // timeline to the step on every rank and selects the straggler's last piece of work.
  enum StragglerColumn {
    kStrStep, kStrRanks, kStrStraggler, kStrLateness, kStrVsMedian, kStrReason, kStrExcess, kStrWaitedFor,
    kStrOthersWaited, kStrColumns
  };
  enum RankTotalsColumn { kRankName, kRankSteps, kRankLast, kRankLatenessTotal, kRankLatenessMax, kRankColumns };
  QTableWidget* stragglers_table() const { return stragglers_table_; }
  QTableWidget* rank_totals_table() const { return rank_totals_table_; }
  RankBars* rank_bars() const { return rank_bars_; }
  QString stragglers_caption() const;
  // The merged-trace time range [begin, end] of a row's step, over every rank; and the slice the
  // straggler ended the step with (-1 when not found).
  std::pair<int64_t, int64_t> StragglerStepRange(int row) const;
  int64_t StragglerLastSlice(int row) const;
  void ZoomToStragglerStep(int row);

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
  QWidget* BuildGpuPane();
  QWidget* BuildCriticalPathPane();
  QWidget* BuildAttributionPane();
  QWidget* BuildStragglersPane();
  void ShowGpu();
  void ShowCriticalPath();
  void ShowPathOnTimeline();  // the path shown, when the checkbox says so
  void ShowAttribution();
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
  QLabel* truncation_banner_ = nullptr;
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

  GpuBars* gpu_bars_;
  LaunchDelayChart* launch_delay_chart_;
  QTableWidget* gpu_table_;
  QLabel* launches_caption_;
  QComboBox* path_window_;
  QCheckBox* path_checkbox_;
  QLabel* path_caption_;
  QTableWidget* bound_table_;
  QTableView* path_table_;
  PathModel* path_model_;
  int path_shown_ = -1;
  bool path_auto_shown_ = false;
  QLabel* attribution_caption_;
  QTreeWidget* annotation_tree_;
  QTableWidget* pattern_table_;
  QLabel* stragglers_caption_;
  QTableWidget* stragglers_table_;
  QTableWidget* rank_totals_table_;
  RankBars* rank_bars_;
};

}  // namespace stepscope::viewer
