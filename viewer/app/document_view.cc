#include "viewer/app/document_view.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QListView>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QTabWidget>
#include <QTableView>
#include <QTableWidget>
#include <QTreeView>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>
#include <algorithm>
#include <cmath>

#include "base/check.h"
#include "profiler/analysis/statistics.h"
#include "viewer/memory/memory_panel.h"
#include "viewer/models/csv.h"
#include "viewer/models/op_stats_model.h"
#include "viewer/models/roles.h"
#include "viewer/models/search_model.h"
#include "viewer/models/slice_details_model.h"
#include "viewer/models/track_tree_model.h"
#include "viewer/timeline/time_axis.h"
#include "viewer/timeline/timeline_view.h"

namespace stepscope::viewer {
namespace {

QTableView* MakeTable(QAbstractItemModel* model, QWidget* parent) {
  auto* table = new QTableView(parent);
  table->setModel(model);
  table->setSortingEnabled(true);
  table->setSelectionBehavior(QAbstractItemView::SelectRows);
  table->setAlternatingRowColors(true);
  table->verticalHeader()->setDefaultSectionSize(20);
  table->verticalHeader()->hide();
  table->horizontalHeader()->setSectionResizeMode(QHeaderView::Interactive);
  table->horizontalHeader()->setDefaultSectionSize(90);
  return table;
}

}  // namespace

std::span<const DocumentView::PaneSpec> DocumentView::Panes() {
  static constexpr PaneSpec kPanes[] = {
      {.id = kDetailsPane, .name = "details", .title = QT_TR_NOOP("Details"), .create = &DocumentView::BuildDetailsPane},
      {.id = kStatsPane,
       .name = "stats",
       .title = QT_TR_NOOP("Statistics"),
       .create = &DocumentView::BuildStatsPane,
       .analyse = [](const TraceDocument& document,
                     DocumentAnalysis& into) { into.op_stats = analysis::ComputeOpStats(document.trace()); },
       .show = &DocumentView::FillStatsTable},
      {.id = kRangePane, .name = "range", .title = QT_TR_NOOP("Range"), .create = &DocumentView::BuildRangePane},
      {.id = kMemoryPane,
       .name = "memory",
       .title = QT_TR_NOOP("Memory"),
       .create = &DocumentView::BuildMemoryPane,
       .analyse = [](const TraceDocument& document,
                     DocumentAnalysis& into) { into.memory = analysis::ComputeMemoryTimelines(document.trace()); },
       .show = &DocumentView::ShowMemoryTimelines},
      {.id = kStepsPane,
       .name = "steps",
       .title = QT_TR_NOOP("Steps"),
       .create = &DocumentView::BuildStepsPane,
       .analyse =
           [](const TraceDocument& document, DocumentAnalysis& into) {
             // Op totals per step only when a step stands out (they explain it).
             into.steps = analysis::AnalyzeSteps(analysis::StepsOfTrace(document.trace(), /*with_totals=*/false), 3);
             if (!into.steps.outliers.empty()) {
               into.steps = analysis::AnalyzeSteps(analysis::StepsOfTrace(document.trace(), /*with_totals=*/true), 3);
             }
           },
       .show = &DocumentView::ShowSteps},
      {.id = kGpuPane,
       .name = "gpu",
       .title = QT_TR_NOOP("GPU"),
       .create = &DocumentView::BuildGpuPane,
       .analyse =
           [](const TraceDocument& document, DocumentAnalysis& into) {
             const std::vector<analysis::GpuInput> inputs = {{&document.trace(), {}}};
             into.gpu = analysis::ComputeGpuBreakdown(inputs);
             // The reports are copied before the originals go: the copies land in memory the
             // analyses freed, not on top of it, so that memory goes back to the system
             // (retaining the originals kept 100 bytes per slice of a 10^6-slice trace).
             {
               const analysis::IdleReport idle = analysis::ComputeIdle(inputs);
               into.idle = idle;
             }
             {
               // The pane shows the statistics, the outliers and each launch's delay (16 bytes a
               // launch), not every launch's record (a big trace has millions) nor the rows per
               // op and kernel (a 10^7-slice trace's held 100 MB).
               analysis::LaunchReport launches =
                   analysis::ComputeLaunches(inputs, {.keep_delays = true, .by_op = false});
               into.launch_delays.reserve(launches.delays.size());
               for (const auto& d : launches.delays) into.launch_delays.push_back({d.gpu_start_ns, d.delay_ns});
               std::stable_sort(into.launch_delays.begin(), into.launch_delays.end(),
                                [](const LaunchDelayPoint& a, const LaunchDelayPoint& b) { return a.time_ns < b.time_ns; });
               std::vector<analysis::LaunchReport::Delay>().swap(launches.delays);
               into.launches = launches;
             }
           },
       .show = &DocumentView::ShowGpu},
      {.id = kCriticalPathPane,
       .name = "critical-path",
       .title = QT_TR_NOOP("Critical path"),
       .create = &DocumentView::BuildCriticalPathPane,
       .analyse =
           [](const TraceDocument& document, DocumentAnalysis& into) {
             // As `stepscope critical-path`: one path per ProfilerStep#N window, else the whole trace.
             const trace::Trace& trace = document.trace();
             analysis::VisitCriticalPathsPerStep(
                 trace, [&](const analysis::StepWindow& w, const analysis::CriticalPath& path) {
                   into.critical_paths.push_back(
                       w.whole ? DocumentAnalysis::MakePathWindow("whole trace", trace.span_begin_ns(),
                                                                  trace.span_end_ns(), path)
                               : DocumentAnalysis::MakePathWindow(w.marker, w.begin_ns, w.end_ns, path));
                 });
           },
       .show = &DocumentView::ShowCriticalPath},
      {.id = kAttributionPane,
       .name = "attribution",
       .title = QT_TR_NOOP("GPU attribution"),
       .create = &DocumentView::BuildAttributionPane,
       .analyse =
           [](const TraceDocument& document, DocumentAnalysis& into) {
             const std::vector<analysis::GpuInput> inputs = {{&document.trace(), {}}};
             into.annotations = analysis::ComputeAnnotationTime(inputs);
             into.kernel_patterns = analysis::ComputeKernelPatterns(inputs);
           },
       .show = &DocumentView::ShowAttribution},
      // Computed from the inputs by the loader before it merged them (TraceDocument::rank_merge).
      {.id = kStragglersPane,
       .name = "stragglers",
       .title = QT_TR_NOOP("Stragglers"),
       .create = &DocumentView::BuildStragglersPane},
      {.id = kSearchPane, .name = "search", .title = QT_TR_NOOP("Search"), .create = &DocumentView::BuildSearchPane},
      {.id = kTracksPane, .name = "tracks", .title = QT_TR_NOOP("Tracks"), .create = &DocumentView::BuildTracksPane},
  };
  return kPanes;
}

const DocumentView::PaneSpec& DocumentView::PaneSpecOf(Pane id) {
  const auto panes = Panes();
  const auto it = std::find_if(panes.begin(), panes.end(), [id](const PaneSpec& pane) { return pane.id == id; });
  STEPSCOPE_CHECK(it != panes.end());  // every Pane has its entry
  return *it;
}

const DocumentView::PaneSpec* DocumentView::FindPane(std::string_view name) {
  for (const PaneSpec& pane : Panes()) {
    if (name == pane.name) return &pane;
  }
  return nullptr;
}

std::shared_ptr<const DocumentAnalysis> AnalyseDocument(const TraceDocument& document) {
  auto result = std::make_shared<DocumentAnalysis>();
  for (const DocumentView::PaneSpec& pane : DocumentView::Panes()) {
    if (pane.analyse != nullptr) pane.analyse(document, *result);
  }
  return result;
}

DocumentView::DocumentView(std::shared_ptr<const TraceDocument> document, QWidget* parent)
    : QWidget(parent), document_(std::move(document)) {
  const trace::Trace& trace = document_->trace();
  axis_ = new TimeAxis(static_cast<double>(trace.span_begin_ns()), static_cast<double>(trace.span_end_ns()), this);
  auto* splitter = new QSplitter(Qt::Vertical, this);
  timeline_ = new TimelineView(document_, axis_, splitter);
  panes_ = new QTabWidget(splitter);
  panes_->setDocumentMode(true);  // no frame: the memory charts line up with the timeline
  splitter->setStretchFactor(0, 3);
  splitter->setStretchFactor(1, 2);
  splitter->setSizes({640, 360});

  for (const PaneSpec& pane : Panes()) panes_->addTab((this->*pane.create)(), tr(pane.title));

  connect(timeline_, &TimelineView::sliceSelected, this, &DocumentView::ShowDetails);
  // A merge of many ranks opens as a row per rank, each showing where its work is; a click on
  // the row (or a jump to one of its slices) opens it.
  if (const RankMerge* merge = document_->rank_merge(); merge != nullptr && merge->inputs.size() > kExpandedRanks) {
    for (const analysis::MergedInput& input : merge->inputs) timeline_->SetTrackCollapsed(input.process_track, true);
  }

  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  if (!document_->truncations().empty()) {
    // Read only up to a cut (--allow-truncated): said above everything the document shows.
    QStringList lines;
    for (const trace::Truncation& cut : document_->truncations()) lines << QString::fromStdString(trace::TruncationLine(cut));
    truncation_banner_ = new QLabel(lines.join('\n'), this);
    truncation_banner_->setObjectName("truncationBanner");
    truncation_banner_->setWordWrap(true);
    truncation_banner_->setStyleSheet("QLabel { background: #b00020; color: white; font-weight: bold; padding: 4px; }");
    layout->addWidget(truncation_banner_);
  }
  layout->addWidget(splitter);
  ShowPane(kDefaultPane);
}

DocumentView::~DocumentView() = default;

QWidget* DocumentView::BuildDetailsPane() {
  details_model_ = new SliceDetailsModel(this);
  details_view_ = new QTreeView(panes_);
  details_view_->setModel(details_model_);
  details_view_->setAlternatingRowColors(true);
  details_view_->header()->setDefaultSectionSize(220);
  connect(details_view_, &QTreeView::doubleClicked, this, [this](const QModelIndex& index) {
    const QVariant slice = index.data(kSliceRole);
    if (slice.isValid()) JumpToSlice(slice.toUInt());
  });
  return details_view_;
}

QWidget* DocumentView::BuildStatsPane() {
  auto* stats = new QWidget(panes_);
  stats_model_ = new OpStatsModel(this);
  stats_proxy_ = new QSortFilterProxyModel(this);
  stats_proxy_->setSourceModel(stats_model_);
  stats_proxy_->setSortRole(kSortRole);
  stats_proxy_->setFilterKeyColumn(-1);
  stats_proxy_->setFilterCaseSensitivity(Qt::CaseInsensitive);
  stats_table_ = MakeTable(stats_proxy_, stats);
  stats_table_->horizontalHeader()->resizeSection(OpStatsModel::kName, 260);
  stats_table_->sortByColumn(OpStatsModel::kTotal, Qt::DescendingOrder);
  stats_granularity_ = new QComboBox(stats);
  stats_granularity_->addItems({tr("per op type"), tr("per node")});
  stats_filter_ = new QLineEdit(stats);
  stats_filter_->setPlaceholderText(tr("Filter by name, op type or place"));
  stats_filter_->setClearButtonEnabled(true);
  stats_caption_ = new QLabel(tr("Computing statistics..."), stats);
  auto* stats_bar = new QHBoxLayout;
  stats_bar->addWidget(stats_granularity_);
  stats_bar->addWidget(stats_filter_, 1);
  stats_bar->addWidget(stats_caption_);
  auto* stats_layout = new QVBoxLayout(stats);
  stats_layout->setContentsMargins(2, 2, 2, 2);
  stats_layout->addLayout(stats_bar);
  stats_layout->addWidget(stats_table_);
  connect(stats_granularity_, &QComboBox::currentIndexChanged, this, [this] { FillStatsTable(); });
  connect(stats_filter_, &QLineEdit::textChanged, stats_proxy_, &QSortFilterProxyModel::setFilterFixedString);
  connect(stats_table_, &QTableView::doubleClicked, this, [this](const QModelIndex& index) {
    const QVariant slice = index.data(kSliceRole);
    if (slice.isValid()) JumpToSlice(slice.toUInt());
  });
  return stats;
}

QWidget* DocumentView::BuildRangePane() {
  auto* range = new QWidget(panes_);
  range_model_ = new OpStatsModel(this);
  auto* range_proxy = new QSortFilterProxyModel(this);
  range_proxy->setSourceModel(range_model_);
  range_proxy->setSortRole(kSortRole);
  auto* range_table = MakeTable(range_proxy, range);
  range_table->horizontalHeader()->resizeSection(OpStatsModel::kName, 260);
  range_table->sortByColumn(OpStatsModel::kTotal, Qt::DescendingOrder);
  range_caption_ = new QLabel(tr("Shift+drag on the timeline (or drag on the ruler) to select a time range."), range);
  range_caption_->setToolTip(
      tr("Host busy: the time in the range when at least one host thread runs an op (nested ops and "
         "threads running at once counted once). Device busy: the same over the GPU streams. Neither "
         "exceeds the range; the table's totals add up every slice, nesting levels included."));
  auto* range_layout = new QVBoxLayout(range);
  range_layout->setContentsMargins(2, 2, 2, 2);
  range_layout->addWidget(range_caption_);
  range_layout->addWidget(range_table);
  connect(range_table, &QTableView::doubleClicked, this, [this](const QModelIndex& index) {
    const QVariant slice = index.data(kSliceRole);
    if (slice.isValid()) JumpToSlice(slice.toUInt());
  });
  connect(&range_watcher_, &QFutureWatcher<analysis::OpStats>::finished, this, [this] {
    const analysis::OpStats result = range_watcher_.result();
    const auto selected = timeline_->selected_range();
    range_caption_->setText(
        tr("%1 to %2 (%3): %4 slices, %5 op types; host busy %6, device busy %7")
            .arg(QString::fromStdString(FormatDuration(selected ? static_cast<double>(selected->first) : 0)),
                 QString::fromStdString(FormatDuration(selected ? static_cast<double>(selected->second) : 0)),
                 QString::fromStdString(FormatDuration(static_cast<double>(result.window_ns))))
            .arg(result.slices)
            .arg(result.by_op_type.size())
            .arg(QString::fromStdString(FormatDuration(static_cast<double>(result.host_busy_ns))),
                 QString::fromStdString(FormatDuration(static_cast<double>(result.device_busy_ns)))));
    range_model_->SetRows(result.by_op_type);
  });
  connect(timeline_, &TimelineView::rangeSelected, this, &DocumentView::ComputeRangeStats);
  return range;
}

QWidget* DocumentView::BuildMemoryPane() {
  memory_panel_ = new MemoryPanel(document_, axis_, panes_);
  connect(memory_panel_, &MemoryPanel::sliceActivated, this, &DocumentView::JumpToSlice);
  return memory_panel_;
}

QWidget* DocumentView::BuildSearchPane() {
  search_model_ = new SearchModel(document_, this);
  search_view_ = new QListView(panes_);
  search_view_->setModel(search_model_);
  search_view_->setUniformItemSizes(true);
  connect(search_view_, &QListView::activated, this, [this](const QModelIndex& index) {
    search_model_->SetCurrent(index.row());
    JumpToSlice(index.data(kSliceRole).toUInt());
  });
  return search_view_;
}

QWidget* DocumentView::BuildTracksPane() {
  track_model_ = new TrackTreeModel(document_, this);
  auto* tracks_view = new QTreeView(panes_);
  tracks_view->setModel(track_model_);
  tracks_view->expandAll();
  tracks_view->header()->setDefaultSectionSize(300);
  connect(track_model_, &TrackTreeModel::visibilityChanged, timeline_,
          [this](uint32_t track, bool visible) { timeline_->SetTrackHidden(track, !visible); });
  return tracks_view;
}

void DocumentView::ShowPane(Pane pane) {
  // Tabs are in table order.
  panes_->setCurrentIndex(static_cast<int>(&PaneSpecOf(pane) - Panes().data()));
}

void DocumentView::SetAnalysis(std::shared_ptr<const DocumentAnalysis> analysis) {
  analysis_ = std::move(analysis);
  for (const PaneSpec& pane : Panes()) {
    if (pane.show != nullptr) (this->*pane.show)();
  }
}

void DocumentView::FillStatsTable() {
  if (analysis_ == nullptr) return;
  const bool by_node = stats_granularity_->currentIndex() == 1;
  const analysis::OpStats& stats = analysis_->op_stats;
  stats_model_->SetRows(by_node ? stats.by_node : stats.by_op_type);
  stats_caption_->setText(tr("%1 slices over %2")
                              .arg(stats.slices)
                              .arg(QString::fromStdString(FormatDuration(static_cast<double>(stats.window_ns)))));
}

void DocumentView::ShowMemoryTimelines() {
  // The charts share the analysis (the pointer aliases its memory field).
  memory_panel_->SetTimelines(
      std::shared_ptr<const std::vector<analysis::AllocatorTimeline>>(analysis_, &analysis_->memory));
}

QWidget* DocumentView::BuildStepsPane() {
  auto* pane = new QWidget(panes_);
  steps_caption_ = new QLabel(tr("Steps are found after loading"), pane);
  steps_table_ = new QTableWidget(0, kStepColumns, pane);
  steps_table_->setHorizontalHeaderLabels(
      {tr("Step"), tr("Start"), tr("Duration"), tr("z"), tr("Outlier"), tr("Deviated most (this step vs its median)")});
  steps_table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  steps_table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  steps_table_->setAlternatingRowColors(true);
  steps_table_->verticalHeader()->hide();
  steps_table_->verticalHeader()->setDefaultSectionSize(20);
  steps_table_->horizontalHeader()->setStretchLastSection(true);
  connect(steps_table_, &QTableWidget::cellDoubleClicked, this, [this](int row, int) { ZoomToStep(row); });
  auto* layout = new QVBoxLayout(pane);
  layout->setContentsMargins(4, 4, 4, 4);
  layout->addWidget(steps_caption_);
  layout->addWidget(steps_table_);
  return pane;
}

void DocumentView::ShowSteps() {
  const analysis::StepsReport& report = analysis_->steps;
  auto duration = [](double ns) { return QString::fromStdString(FormatDuration(ns)); };
  steps_caption_->setText(tr("%1 steps: median %2, MAD %3, CV %4%, p95/p50 %5; %6 outliers (robust z, |z| > 3.5)")
                              .arg(report.steps.size())
                              .arg(duration(report.median_ns), duration(report.mad_ns))
                              .arg(100 * report.cv, 0, 'f', 1)
                              .arg(report.p95_over_p50, 0, 'f', 3)
                              .arg(report.outliers.size()));
  steps_table_->setRowCount(static_cast<int>(report.steps.size()));
  const int64_t base = document_->trace().span_begin_ns();
  for (size_t i = 0; i < report.steps.size(); ++i) {
    const analysis::Step& s = report.steps[i];
    const bool outlier = std::fabs(report.z[i]) > analysis::kOutlierZ;
    QString cause;
    for (const analysis::StepOutlier& o : report.outliers) {
      if (o.step != i || o.causes.empty()) continue;
      const analysis::OutlierCause& c = o.causes.front();
      cause = tr("%1 %2: %3 vs %4").arg(QString::fromStdString(c.table), QString::fromStdString(c.name),
                                        duration(static_cast<double>(c.value_ns)), duration(c.usual_ns));
    }
    // A trace that records no step number shows none (not -1).
    const QStringList cells = {s.step >= 0 ? QString::number(s.step) : QString(), "+" + duration(static_cast<double>(s.begin_ns - base)),
                               duration(static_cast<double>(s.duration_ns)), QString::number(report.z[i], 'f', 1),
                               outlier ? tr("outlier") : QString(), cause};
    for (int column = 0; column < kStepColumns; ++column) {
      auto* item = new QTableWidgetItem(cells[column]);
      if (column != kStepCause && column != kStepOutlier) item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
      steps_table_->setItem(static_cast<int>(i), column, item);
    }
  }
  steps_table_->resizeColumnsToContents();
}

QString DocumentView::steps_caption() const { return steps_caption_->text(); }

void DocumentView::ZoomToStep(int row) {
  if (analysis_ == nullptr || row < 0 || static_cast<size_t>(row) >= analysis_->steps.steps.size()) return;
  const analysis::Step& s = analysis_->steps.steps[static_cast<size_t>(row)];
  const double margin = static_cast<double>(std::max<int64_t>(s.end_ns - s.begin_ns, 1)) * 0.02;
  axis_->SetRange(static_cast<double>(s.begin_ns) - margin, static_cast<double>(s.end_ns) + margin);
  const QString length = QString::fromStdString(FormatDuration(static_cast<double>(s.duration_ns)));
  emit statusMessage(s.step >= 0 ? tr("step %1: %2").arg(s.step).arg(length) : tr("step: %1").arg(length));
}

void DocumentView::SetStatsByNode(bool by_node) { stats_granularity_->setCurrentIndex(by_node ? 1 : 0); }

void DocumentView::SetStatsFilter(const QString& text) { stats_filter_->setText(text); }

QString DocumentView::StatsCsv() const { return TableToCsv(*stats_proxy_); }

QString DocumentView::range_caption() const { return range_caption_->text(); }

void DocumentView::ShowDetails(int64_t slice) {
  if (slice < 0) {
    details_model_->ShowNothing();
    return;
  }
  details_model_->ShowSlice(*document_, static_cast<uint32_t>(slice));
  details_view_->expandToDepth(0);
  ShowPane(kDetailsPane);
  const trace::Slice& s = document_->trace().slices()[static_cast<size_t>(slice)];
  emit statusMessage(tr("%1 (%2), %3")
                         .arg(QString::fromUtf8(document_->trace().str(document_->trace().slice_name(s))),
                              QString::fromUtf8(document_->trace().str(document_->trace().slice_op_type(s))),
                              QString::fromStdString(FormatDuration(static_cast<double>(s.dur_ns)))));
}

void DocumentView::ComputeRangeStats(int64_t begin_ns, int64_t end_ns) {
  range_caption_->setText(tr("Computing statistics for %1 ...")
                              .arg(QString::fromStdString(FormatDuration(static_cast<double>(end_ns - begin_ns)))));
  ShowPane(kRangePane);
  std::shared_ptr<const TraceDocument> document = document_;
  // setFuture() forgets the previous job: a stale result never reaches the table.
  range_watcher_.setFuture(QtConcurrent::run([document, begin_ns, end_ns] {
    analysis::OpStatsOptions options;
    options.begin_ns = begin_ns;
    options.end_ns = end_ns;
    return analysis::ComputeOpStats(document->trace(), options);
  }));
}

QString DocumentView::Search(const QString& pattern, bool regex) {
  const QString error = search_model_->SetQuery(pattern, regex);
  if (error.isEmpty() && !pattern.isEmpty()) ShowPane(kSearchPane);
  return error;
}

void DocumentView::SearchNext() {
  const int64_t slice = search_model_->Next();
  if (slice < 0) return;
  search_view_->setCurrentIndex(search_model_->index(search_model_->current()));
  JumpToSlice(static_cast<uint32_t>(slice));
}

void DocumentView::SearchPrevious() {
  const int64_t slice = search_model_->Previous();
  if (slice < 0) return;
  search_view_->setCurrentIndex(search_model_->index(search_model_->current()));
  JumpToSlice(static_cast<uint32_t>(slice));
}

QString DocumentView::search_status() const {
  const int count = search_model_->rowCount();
  // Repeats on TensorFlow's aggregate lanes are no matches of their own: said, not listed.
  const QString repeats = search_model_->repeats() > 0
                              ? tr(" (%1 repeats on aggregate lanes not listed)").arg(search_model_->repeats())
                              : QString();
  if (count == 0) return tr("no matches") + repeats;
  if (search_model_->current() < 0) return tr("%1 matches").arg(count) + repeats;
  return tr("%1 of %2").arg(search_model_->current() + 1).arg(count) + repeats;
}

void DocumentView::JumpToSlice(uint32_t slice) {
  if (slice >= document_->trace().slices().size()) return;
  const int pane = panes_->currentIndex();
  timeline_->FocusSlice(slice);
  // Keep the pane the jump came from in front (details follow the selection anyway).
  panes_->setCurrentIndex(pane);
}

}  // namespace stepscope::viewer
