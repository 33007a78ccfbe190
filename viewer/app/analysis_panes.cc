// The panes of the GPU analyses (gpu_analyses.h), of the critical path (step_analyses.h) and
// of stragglers (stragglers.h): GPU time per GPU and stream with idle causes and launch cost,
// the critical path with what bound it (highlighted on the timeline), GPU time per annotation
// with frequent kernel sequences, and per step the rank that finished last, by how much and why. The figures are the analyses' own; these functions only lay them out.
#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QScrollArea>
#include <QSplitter>
#include <QTableView>
#include <QTabWidget>
#include <QTableWidget>
#include <QTreeWidget>
#include <QVBoxLayout>
#include <algorithm>
#include <set>
#include <cmath>

#include "base/check.h"
#include "viewer/app/document_view.h"
#include "viewer/app/gpu_bars.h"
#include "viewer/app/rank_bars.h"
#include "viewer/models/roles.h"
#include "viewer/timeline/time_axis.h"
#include "viewer/timeline/timeline_view.h"

namespace stepscope::viewer {
namespace {

QString Exact(int64_t ns) { return ExactDuration(ns); }
QString Exact(double ns) { return ExactDuration(static_cast<int64_t>(std::llround(ns))); }

QTableWidget* MakeTable(const QStringList& headers, QWidget* parent) {
  auto* table = new QTableWidget(0, static_cast<int>(headers.size()), parent);
  table->setHorizontalHeaderLabels(headers);
  table->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table->setSelectionBehavior(QAbstractItemView::SelectRows);
  table->setSelectionMode(QAbstractItemView::SingleSelection);
  table->setAlternatingRowColors(true);
  table->verticalHeader()->hide();
  table->verticalHeader()->setDefaultSectionSize(20);
  table->horizontalHeader()->setStretchLastSection(true);
  return table;
}

// A cell holding a duration: its text, and the exact ns under kSortRole.
QTableWidgetItem* DurationItem(int64_t ns) {
  auto* item = new QTableWidgetItem(Exact(ns));
  item->setData(kSortRole, QVariant::fromValue<qint64>(ns));
  item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
  return item;
}
QTableWidgetItem* CountItem(int64_t count) {
  auto* item = new QTableWidgetItem(QString::number(count));
  item->setData(kSortRole, QVariant::fromValue<qint64>(count));
  item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
  return item;
}

// The category a straggler step's reason names (its index into excess_ns), -1 for "none".
int ReasonCategory(const std::string& reason) {
  for (int c = 0; c < analysis::kStragglerCategories; ++c) {
    if (analysis::StragglerCategoryName(static_cast<analysis::StragglerCategory>(c)) == reason) return c;
  }
  return -1;
}

QString GpuLabel(int32_t rank, const std::string& device) {
  const QString name = QString::fromStdString(device);
  return rank >= 0 ? QStringLiteral("rank %1 / %2").arg(rank).arg(name) : name;
}

}  // namespace

// The path's elements for the table, formatted on demand from the compact path and the trace
// (a QTableWidget would hold an item per cell: too much for a path of 10^5 slices).
class PathModel : public QAbstractTableModel {
 public:
  PathModel(const trace::Trace& trace, QObject* parent) : QAbstractTableModel(parent), trace_(trace) {}

  void SetPath(const DocumentAnalysis::PathWindow* path) {
    beginResetModel();
    path_ = path;
    endResetModel();
  }
  int rowCount(const QModelIndex& parent = {}) const override {
    return parent.isValid() || path_ == nullptr ? 0 : static_cast<int>(path_->steps.size());
  }
  int columnCount(const QModelIndex& parent = {}) const override {
    return parent.isValid() ? 0 : DocumentView::kPathColumns;
  }
  QVariant headerData(int section, Qt::Orientation orientation, int role) const override {
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
    static const char* const kHeaders[] = {QT_TR_NOOP("Slice"), QT_TR_NOOP("Edge"), QT_TR_NOOP("Start"),
                                           QT_TR_NOOP("Duration"), QT_TR_NOOP("Held"), QT_TR_NOOP("Wait"),
                                           QT_TR_NOOP("Lane")};
    return section >= 0 && section < DocumentView::kPathColumns ? DocumentView::tr(kHeaders[section]) : QVariant();
  }
  QVariant data(const QModelIndex& index, int role) const override {
    if (path_ == nullptr || !index.isValid() || static_cast<size_t>(index.row()) >= path_->steps.size()) return {};
    const DocumentAnalysis::PathStep& step = path_->steps[static_cast<size_t>(index.row())];
    const trace::Slice& s = trace_.slices()[step.slice];
    if (role == kSliceRole) return step.slice;
    auto raw = [&]() -> QVariant {
      switch (index.column()) {
        case DocumentView::kPathStart: return QVariant::fromValue<qint64>(s.start_ns - trace_.span_begin_ns());
        case DocumentView::kPathDuration: return QVariant::fromValue<qint64>(s.dur_ns);
        case DocumentView::kPathHeld: return QVariant::fromValue<qint64>(step.held_ns);
        case DocumentView::kPathWait: return QVariant::fromValue<qint64>(step.wait_ns);
        default: return {};
      }
    };
    switch (role) {
      case kSortRole: return raw();
      case Qt::TextAlignmentRole:
        return raw().isValid() ? QVariant(Qt::AlignRight | Qt::AlignVCenter) : QVariant();
      case Qt::ToolTipRole:
        if (index.column() != DocumentView::kPathName) return {};
        return QString::fromUtf8(trace_.str(trace_.slice_name(s))) + " (" +
               QString::fromUtf8(trace_.str(trace_.slice_op_type(s))) + ", " + QString::fromLatin1(trace::SliceKindName(s.kind)) + ")";
      case Qt::DisplayRole:
        switch (index.column()) {
          case DocumentView::kPathName: return QString::fromUtf8(trace_.str(trace_.slice_name(s)));
          case DocumentView::kPathEdge: {
            const std::string& edge = DocumentAnalysis::PathEdges()[step.edge];
            return edge.empty() ? DocumentView::tr("start") : QString::fromStdString(edge);
          }
          case DocumentView::kPathStart: return "+" + ExactDuration(s.start_ns - trace_.span_begin_ns());
          case DocumentView::kPathLane: return QString::fromStdString(trace_.TrackPath(s.track));
          default: return ExactDuration(raw().toLongLong());
        }
      default: return {};
    }
  }

 private:
  const trace::Trace& trace_;
  const DocumentAnalysis::PathWindow* path_ = nullptr;
};

const std::vector<std::string>& DocumentAnalysis::PathEdges() {
  static const std::vector<std::string> kEdges = {"",       "dataflow", "launch", "lane",     "stream",
                                                  "nested", "child",    "sync",   "readback", "cross_stream"};
  return kEdges;
}

DocumentAnalysis::PathWindow DocumentAnalysis::MakePathWindow(std::string label, int64_t begin_ns, int64_t end_ns,
                                                              const analysis::CriticalPath& path) {
  PathWindow window;
  window.label = std::move(label);
  window.begin_ns = begin_ns;
  window.end_ns = end_ns;
  window.length_ns = path.length_ns;
  window.busy_ns = path.busy_ns;
  window.wait_ns = path.wait_ns;
  std::copy(std::begin(path.bound_ns), std::end(path.bound_ns), window.bound_ns);
  window.bound_by = path.bound_by;
  window.steps.reserve(path.elements.size());
  const auto& edges = PathEdges();
  for (const analysis::PathElement& e : path.elements) {
    const auto edge = std::find(edges.begin(), edges.end(), e.edge);
    STEPSCOPE_CHECK(edge != edges.end());  // every edge the analysis names is listed
    window.steps.push_back({e.slice, static_cast<uint8_t>(edge - edges.begin()), e.held_ns, e.wait_ns});
  }
  return window;
}

// ---- GPU --------------------------------------------------------------------------------------

QWidget* DocumentView::BuildGpuPane() {
  // In a scroll area without scroll bars: on a small window bars, the delay chart and the table
  // keep their heights and the table is cut at the bottom (never drawn over each other); no
  // vertical bar narrows the delay chart, so its time axis stays under the timeline's.
  auto* scroll = new QScrollArea(panes_);
  scroll->setFrameShape(QFrame::NoFrame);
  scroll->setWidgetResizable(true);
  scroll->setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  auto* pane = new QWidget(scroll);
  launches_caption_ = new QLabel(tr("The GPU breakdown is computed after loading"), pane);
  launches_caption_->setWordWrap(true);
  launches_caption_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  auto* without_idle = new QCheckBox(tr("Bars without idle (share of busy)"), pane);
  gpu_bars_ = new GpuBars(pane);
  launch_delay_chart_ = new LaunchDelayChart(axis_, pane);
  gpu_table_ = MakeTable({tr("GPU / stream"), tr("Work"), tr("Span"), tr("Busy"), tr("Idle"), tr("Compute"),
                          tr("Communication"), tr("Memory"), tr("Compute ∩ comm"), tr("Idle: host wait"),
                          tr("Idle: kernel wait"), tr("Idle: other")},
                         pane);
  // What each figure is, where it could be misread as a sum over streams.
  const std::pair<int, QString> tips[] = {
      {kGpuSpan, tr("First start to last end of the work")},
      {kGpuBusy, tr("Time at least one piece of work runs (a GPU's row: on any of its streams)")},
      {kGpuIdle, tr("Span - busy: a GPU's row, the time none of its streams runs work")},
      {kGpuHostWait, tr("Idle gaps whose next work's launch call ended after the gap began. A GPU's row: "
                        "its own idle time (no stream busy), not its streams' waits summed")},
      {kGpuKernelWait, tr("Idle gaps whose next work was already launched (queued). A GPU's row: its own idle time")},
      {kGpuOtherIdle, tr("Idle gaps whose next work has no known launch. A GPU's row: its own idle time")}};
  for (const auto& [column, tip] : tips) gpu_table_->horizontalHeaderItem(column)->setToolTip(tip);
  connect(without_idle, &QCheckBox::toggled, gpu_bars_, &GpuBars::SetWithoutIdle);
  auto* bar = new QHBoxLayout;
  bar->setContentsMargins(4, 0, 4, 0);
  bar->addWidget(launches_caption_, 1);
  bar->addWidget(without_idle);
  auto* layout = new QVBoxLayout(pane);
  layout->setContentsMargins(0, 4, 0, 4);  // no side margins: the delay chart lines up with the timeline
  layout->addLayout(bar);
  layout->addWidget(gpu_bars_);
  layout->addWidget(launch_delay_chart_);
  layout->addWidget(gpu_table_, 1);
  gpu_table_->setMinimumHeight(110);
  scroll->setWidget(pane);
  return scroll;
}

void DocumentView::ShowGpu() {
  const DocumentAnalysis& a = *analysis_;
  std::vector<GpuBars::Row> bars;
  gpu_table_->setRowCount(0);
  auto add_row = [this](const QString& label, bool gpu, const analysis::GpuTime& t, const int64_t idle_ns[3]) {
    const int row = gpu_table_->rowCount();
    gpu_table_->insertRow(row);
    auto* name = new QTableWidgetItem(label);
    if (gpu) {
      QFont font = name->font();
      font.setBold(true);
      name->setFont(font);
    }
    gpu_table_->setItem(row, kGpuName, name);
    gpu_table_->setItem(row, kGpuWork, CountItem(t.slices));
    const int64_t values[] = {t.span_ns,   t.busy_ns,          t.idle_ns,  t.compute_ns,
                              t.communication_ns, t.memory_ns, t.compute_communication_overlap_ns};
    for (int i = 0; i < 7; ++i) gpu_table_->setItem(row, kGpuSpan + i, DurationItem(values[i]));
    for (int i = 0; i < 3; ++i) gpu_table_->setItem(row, kGpuHostWait + i, DurationItem(idle_ns[i]));
  };
  for (const analysis::GpuBreakdown& g : a.gpu) {
    // Idle causes of a stream (ComputeIdle lists them per rank, device and stream).
    auto idle_of = [&](const std::string& stream, int64_t out[3]) {
      for (const analysis::StreamIdle& s : a.idle.streams) {
        if (s.rank != g.rank || s.device != g.device || s.stream != stream) continue;
        for (int c = 0; c < 3; ++c) out[c] += s.by_cause[c].total_ns;
      }
    };
    // The GPU's own: time no stream of it runs work, never its streams' waits summed (streams
    // wait at the same time: the sum can be several spans).
    int64_t gpu_idle[3] = {0, 0, 0};
    for (const analysis::GpuIdle& gi : a.idle.gpus) {
      if (gi.rank != g.rank || gi.device != g.device) continue;
      for (int c = 0; c < 3; ++c) gpu_idle[c] += gi.by_cause[c].total_ns;
    }
    const QString label = GpuLabel(g.rank, g.device);
    add_row(label, true, g.time, gpu_idle);
    bars.push_back({label, true, g.time});
    for (const analysis::GpuStreamTime& s : g.streams) {
      int64_t stream_idle[3] = {0, 0, 0};
      idle_of(s.stream, stream_idle);
      const QString stream = QString::fromStdString(s.stream);
      add_row(QStringLiteral("    ") + stream, false, s.time, stream_idle);
      bars.push_back({QStringLiteral("    ") + stream, false, s.time});
    }
  }
  gpu_table_->resizeColumnsToContents();
  gpu_bars_->SetRows(std::move(bars));
  launch_delay_chart_->SetPoints(&a.launch_delays);
  launch_delay_chart_->setVisible(!a.launch_delays.empty());
  gpu_bars_->setFixedHeight(gpu_bars_->sizeHint().height());

  const analysis::LaunchReport& l = a.launches;
  if (a.gpu.empty()) {
    launches_caption_->setText(tr("No GPU work in this trace (kernels, copies, memsets on GPU streams)."));
    return;
  }
  // Each GPU's idle time (no stream busy) by cause, summed over the GPUs.
  analysis::IntervalStats causes[3];
  for (const analysis::GpuIdle& gi : a.idle.gpus) {
    for (int c = 0; c < 3; ++c) {
      causes[c].total_ns += gi.by_cause[c].total_ns;
      causes[c].count += gi.by_cause[c].count;
    }
  }
  launches_caption_->setText(
      tr("<b>GPU idle</b> (no stream of the GPU busy) by the work after each gap: host wait %1 (%2), "
         "kernel wait %3 (%4), other %5 (%6)%19.<br>"
         "<b>Launches</b>: %7 of %8 pieces of work linked to their runtime call; launch delay p50 %9, p95 %10, "
         "max %11; runtime call p50 %12, p95 %13, max %14; %15 calls over %16, %17 delays over %18.")
          .arg(Exact(causes[0].total_ns)).arg(causes[0].count)
          .arg(Exact(causes[1].total_ns)).arg(causes[1].count)
          .arg(Exact(causes[2].total_ns)).arg(causes[2].count)
          .arg(l.work - l.unlinked).arg(l.work)
          .arg(Exact(l.delay.p50_ns), Exact(l.delay.p95_ns), Exact(l.delay.max_ns), Exact(l.cpu.p50_ns),
               Exact(l.cpu.p95_ns), Exact(l.cpu.max_ns))
          .arg(l.long_runtime_count)
          .arg(Exact(l.runtime_cutoff_ns))
          .arg(l.long_delay_count)
          .arg(Exact(l.delay_cutoff_ns))
          .arg(a.idle.gpus.size() > 1 ? tr(", summed over %1 GPUs").arg(a.idle.gpus.size()) : QString()));
}

QString DocumentView::launches_caption() const { return launches_caption_->text(); }

// ---- critical path ----------------------------------------------------------------------------

QWidget* DocumentView::BuildCriticalPathPane() {
  auto* pane = new QWidget(panes_);
  path_window_ = new QComboBox(pane);
  path_window_->setVisible(false);
  // Off until the pane is first shown: other panes keep the timeline's plain colours.
  path_checkbox_ = new QCheckBox(tr("Show the path on the timeline"), pane);
  path_checkbox_->setChecked(false);
  path_caption_ = new QLabel(tr("The critical path is computed after loading"), pane);
  path_caption_->setWordWrap(true);
  path_caption_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  bound_table_ = MakeTable({tr("Bound by"), tr("Time"), tr("Share")}, pane);
  bound_table_->setSelectionMode(QAbstractItemView::NoSelection);
  path_model_ = new PathModel(document_->trace(), this);
  path_table_ = new QTableView(pane);
  path_table_->setModel(path_model_);
  path_table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  path_table_->setSelectionMode(QAbstractItemView::SingleSelection);
  path_table_->setAlternatingRowColors(true);
  path_table_->setWordWrap(false);
  path_table_->verticalHeader()->hide();
  path_table_->verticalHeader()->setDefaultSectionSize(20);
  path_table_->horizontalHeader()->setStretchLastSection(true);
  path_table_->horizontalHeader()->setDefaultSectionSize(100);
  path_table_->setColumnWidth(kPathName, 320);
  path_table_->setColumnWidth(kPathEdge, 70);
  auto* split = new QSplitter(Qt::Horizontal, pane);
  split->addWidget(bound_table_);
  split->addWidget(path_table_);
  split->setStretchFactor(0, 1);
  split->setStretchFactor(1, 4);
  split->setSizes({340, 960});
  auto* bar = new QHBoxLayout;
  bar->addWidget(path_window_);
  bar->addWidget(path_checkbox_);
  bar->addWidget(path_caption_, 1);
  auto* layout = new QVBoxLayout(pane);
  layout->setContentsMargins(4, 4, 4, 4);
  layout->addLayout(bar);
  layout->addWidget(split, 1);
  connect(panes_, &QTabWidget::currentChanged, this, [this, pane](int index) {
    if (panes_->widget(index) != pane || path_auto_shown_) return;
    path_auto_shown_ = true;
    path_checkbox_->setChecked(true);
  });
  connect(path_window_, &QComboBox::currentIndexChanged, this, [this](int index) { ShowPathWindow(index); });
  connect(path_checkbox_, &QCheckBox::toggled, this, [this] { ShowPathOnTimeline(); });
  connect(path_table_->selectionModel(), &QItemSelectionModel::selectionChanged, this, [this] {
    const auto rows = path_table_->selectionModel()->selectedRows();
    if (rows.size() != 1) return;
    const QVariant slice = rows.front().data(kSliceRole);
    if (slice.isValid()) JumpToSlice(slice.toUInt());
  });
  return pane;
}

void DocumentView::ShowCriticalPath() {
  const auto& windows = analysis_->critical_paths;
  const QSignalBlocker block(path_window_);
  path_window_->clear();
  // The window shown first: the one whose path is longest (the step to look at).
  int longest = 0;
  for (size_t i = 0; i < windows.size(); ++i) {
    path_window_->addItem(tr("%1: %2").arg(QString::fromStdString(windows[i].label), Exact(windows[i].length_ns)));
    if (windows[i].length_ns > windows[static_cast<size_t>(longest)].length_ns) longest = static_cast<int>(i);
  }
  path_window_->setVisible(windows.size() > 1);
  path_window_->setCurrentIndex(longest);
  ShowPathWindow(windows.empty() ? -1 : longest);
}

const DocumentAnalysis::PathWindow* DocumentView::shown_path() const {
  if (analysis_ == nullptr || path_shown_ < 0 || static_cast<size_t>(path_shown_) >= analysis_->critical_paths.size()) {
    return nullptr;
  }
  return &analysis_->critical_paths[static_cast<size_t>(path_shown_)];
}

void DocumentView::ShowPathWindow(int index) {
  path_shown_ = index;
  const DocumentAnalysis::PathWindow* path = shown_path();
  path_model_->SetPath(path);
  bound_table_->setRowCount(0);
  if (path == nullptr || path->steps.empty()) {
    path_caption_->setText(tr("No critical path: the trace holds no work."));
    ShowPathOnTimeline();
    return;
  }
  path_caption_->setText(tr("%1: %2 slices, %3 (busy %4, waiting %5); bound by <b>%6</b>")
                             .arg(QString::fromStdString(path->label))
                             .arg(path->steps.size())
                             .arg(Exact(path->length_ns), Exact(path->busy_ns), Exact(path->wait_ns),
                                  QString::fromLatin1(analysis::PathBoundName(path->bound_by))));
  bound_table_->setRowCount(analysis::kPathBounds);
  for (int b = 0; b < analysis::kPathBounds; ++b) {
    auto* name = new QTableWidgetItem(QString::fromLatin1(analysis::PathBoundName(static_cast<analysis::PathBound>(b))));
    if (b == static_cast<int>(path->bound_by)) {
      QFont font = name->font();
      font.setBold(true);
      name->setFont(font);
    }
    bound_table_->setItem(b, 0, name);
    bound_table_->setItem(b, 1, DurationItem(path->bound_ns[b]));
    const double share =
        path->length_ns > 0 ? 100.0 * static_cast<double>(path->bound_ns[b]) / static_cast<double>(path->length_ns) : 0;
    auto* share_item = new QTableWidgetItem(QStringLiteral("%1%").arg(share, 0, 'f', 1));
    share_item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    bound_table_->setItem(b, 2, share_item);
  }
  bound_table_->resizeColumnsToContents();
  ShowPathOnTimeline();
}

void DocumentView::ShowPathOnTimeline() {
  const DocumentAnalysis::PathWindow* path = shown_path();
  std::vector<uint32_t> slices;
  if (path_checkbox_->isChecked() && path != nullptr) {
    slices.reserve(path->steps.size());
    for (const DocumentAnalysis::PathStep& step : path->steps) slices.push_back(step.slice);
  }
  timeline_->SetPathSlices(std::move(slices));
}

QString DocumentView::path_caption() const { return path_caption_->text(); }

void DocumentView::ZoomToPath() {
  const DocumentAnalysis::PathWindow* path = shown_path();
  if (path == nullptr || path->steps.empty()) return;
  const auto& slices = document_->trace().slices();
  int64_t begin = slices[path->steps.front().slice].start_ns, end = begin;
  for (const DocumentAnalysis::PathStep& step : path->steps) {
    begin = std::min(begin, slices[step.slice].start_ns);
    end = std::max(end, slices[step.slice].end_ns());
  }
  const double margin = static_cast<double>(std::max<int64_t>(end - begin, 1)) * 0.02;
  axis_->SetRange(static_cast<double>(begin) - margin, static_cast<double>(end) + margin);
}

// ---- GPU attribution --------------------------------------------------------------------------

QWidget* DocumentView::BuildAttributionPane() {
  auto* pane = new QWidget(panes_);
  attribution_caption_ = new QLabel(tr("GPU time per annotation is computed after loading"), pane);
  attribution_caption_->setWordWrap(true);
  annotation_tree_ = new QTreeWidget(pane);
  annotation_tree_->setColumnCount(kAnnColumns);
  annotation_tree_->setHeaderLabels(
      {tr("Annotation"), tr("Instances"), tr("CPU"), tr("GPU work"), tr("GPU time"), tr("GPU busy"), tr("Self GPU")});
  annotation_tree_->setAlternatingRowColors(true);
  annotation_tree_->setUniformRowHeights(true);
  pattern_table_ =
      MakeTable({tr("Kernel sequence"), tr("Count"), tr("GPU time"), tr("Span"), tr("Gaps"), tr("Launched by")}, pane);
  pattern_table_->setWordWrap(false);
  auto* split = new QSplitter(Qt::Horizontal, pane);
  split->addWidget(annotation_tree_);
  split->addWidget(pattern_table_);
  split->setSizes({700, 600});
  auto* layout = new QVBoxLayout(pane);
  layout->setContentsMargins(4, 4, 4, 4);
  layout->addWidget(attribution_caption_);
  layout->addWidget(split, 1);
  return pane;
}

void DocumentView::ShowAttribution() {
  const analysis::AnnotationReport& r = analysis_->annotations;
  const analysis::KernelPatternReport& k = analysis_->kernel_patterns;
  attribution_caption_->setText(
      tr("GPU work %1 (%2): outside every annotation %3 (%4), not attributed (no annotation on its stream, "
         "launch unknown) %5 (%6). "
         "Kernel sequences of %7 among %8 kernels: %9 occur at least twice.")
          .arg(r.work).arg(Exact(r.gpu_ns))
          .arg(r.unannotated_work).arg(Exact(r.unannotated_gpu_ns))
          .arg(r.unlinked_work).arg(Exact(r.unlinked_gpu_ns))
          .arg(k.length).arg(k.kernels).arg(k.distinct_patterns));
  annotation_tree_->clear();
  std::vector<QTreeWidgetItem*> parents;  // by depth
  for (const analysis::AnnotationTime& row : r.rows) {
    // Depth first: a row's parent is the last row one level up.
    const size_t depth = std::min(row.path.empty() ? 0 : row.path.size() - 1, parents.size());
    parents.resize(depth);
    QTreeWidgetItem* item = depth == 0 ? new QTreeWidgetItem(annotation_tree_) : new QTreeWidgetItem(parents.back());
    item->setText(kAnnName, QString::fromStdString(row.path.empty() ? std::string() : row.path.back()) +
                                (row.name_scope ? tr(" (name scope)") : QString()));
    item->setText(kAnnInstances, QString::number(row.instances));
    item->setText(kAnnWork, QString::number(row.work));
    const std::pair<int, int64_t> durations[] = {
        {kAnnCpu, row.cpu_ns}, {kAnnGpu, row.gpu_ns}, {kAnnBusy, row.gpu_busy_ns}, {kAnnSelf, row.self_gpu_ns}};
    for (const auto& [column, ns] : durations) {
      item->setText(column, Exact(ns));
      item->setData(column, kSortRole, QVariant::fromValue<qint64>(ns));
    }
    for (int column = kAnnInstances; column < kAnnColumns; ++column) item->setTextAlignment(column, Qt::AlignRight);
    parents.push_back(item);
  }
  annotation_tree_->expandToDepth(1);
  for (int column = 0; column < kAnnColumns; ++column) annotation_tree_->resizeColumnToContents(column);
  annotation_tree_->setColumnWidth(kAnnName, std::min(annotation_tree_->columnWidth(kAnnName), 320));

  pattern_table_->setRowCount(static_cast<int>(k.patterns.size()));
  for (size_t i = 0; i < k.patterns.size(); ++i) {
    const analysis::KernelPattern& p = k.patterns[i];
    QStringList kernels;
    for (const std::string& kernel : p.kernels) kernels << QString::fromStdString(kernel);
    const int row = static_cast<int>(i);
    auto* sequence = new QTableWidgetItem(kernels.join(QStringLiteral(" → ")));
    sequence->setToolTip(kernels.join(QStringLiteral("\n")));
    pattern_table_->setItem(row, kPatKernels, sequence);
    pattern_table_->setItem(row, kPatCount, CountItem(p.count));
    pattern_table_->setItem(row, kPatGpu, DurationItem(p.gpu_ns));
    pattern_table_->setItem(row, kPatSpan, DurationItem(p.span_ns));
    pattern_table_->setItem(row, kPatGap, DurationItem(p.gap_ns));
    pattern_table_->setItem(row, kPatHostOp, new QTableWidgetItem(QString::fromStdString(p.host_op)));
  }
  pattern_table_->resizeColumnsToContents();
  pattern_table_->setColumnWidth(kPatKernels, std::min(pattern_table_->columnWidth(kPatKernels), 360));
}

// ---- Stragglers -------------------------------------------------------------------------------

QWidget* DocumentView::BuildStragglersPane() {
  auto* pane = new QWidget(panes_);
  stragglers_caption_ = new QLabel(pane);
  stragglers_caption_->setWordWrap(true);
  stragglers_caption_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  stragglers_table_ = MakeTable({tr("Step"), tr("Ranks"), tr("Last"), tr("Late by"), tr("vs median"), tr("Why"),
                                 tr("Its excess"), tr("Waited for"), tr("Others waited")},
                                pane);
  rank_totals_table_ =
      MakeTable({tr("Rank"), tr("Steps"), tr("Last in"), tr("Lateness total"), tr("Lateness max")}, pane);
  rank_bars_ = new RankBars(pane);
  auto* tables = new QSplitter(Qt::Horizontal, pane);
  tables->addWidget(stragglers_table_);
  tables->addWidget(rank_totals_table_);
  tables->setSizes({820, 480});
  auto* layout = new QVBoxLayout(pane);
  layout->setContentsMargins(4, 4, 4, 4);
  layout->addWidget(stragglers_caption_);
  layout->addWidget(rank_bars_);
  layout->addWidget(tables, 1);
  connect(stragglers_table_, &QTableWidget::currentCellChanged, this, [this](int row) {
    const RankMerge* merge = document_->rank_merge();
    const bool valid = merge != nullptr && merge->stragglers && row >= 0 &&
                       static_cast<size_t>(row) < merge->stragglers->steps.size();
    rank_bars_->SetStep(valid ? &merge->stragglers->steps[static_cast<size_t>(row)] : nullptr);
  });
  connect(stragglers_table_, &QTableWidget::cellActivated, this, [this](int row) { ZoomToStragglerStep(row); });

  const RankMerge* merge = document_->rank_merge();
  if (merge == nullptr || merge->inputs.size() < 2) {
    stragglers_caption_->setText(tr("Stragglers compare the ranks of one run: open a directory of per-rank traces, "
                                    "or several traces merged (--merge)."));
    return pane;
  }
  if (!merge->stragglers) {
    stragglers_caption_->setText(tr("No stragglers: %1").arg(QString::fromStdString(merge->stragglers_error)));
    return pane;
  }
  const analysis::StragglerReport& report = *merge->stragglers;
  std::set<int32_t> ranks;
  for (const analysis::StragglerInputInfo& input : report.inputs) ranks.insert(input.rank);
  auto count = [](size_t n, const QString& one, const QString& many) {
    return QStringLiteral("%1 %2").arg(n).arg(n == 1 ? one : many);
  };
  QString caption = tr("%1, %2 compared (%3)")
                        .arg(count(ranks.size(), tr("rank"), tr("ranks")))
                        .arg(count(report.steps.size(), tr("step"), tr("steps")))
                        .arg(count(report.inputs.size(), tr("input"), tr("inputs")));
  if (!report.single_rank_steps.empty()) {
    caption += tr("; %1 only one rank has, not compared")
                   .arg(count(report.single_rank_steps.size(), tr("step"), tr("steps")));
  }
  size_t largest = 0;
  for (size_t i = 0; i < report.steps.size(); ++i) {
    if (report.steps[i].lateness_ns > report.steps[largest].lateness_ns) largest = i;
  }
  if (!report.steps.empty()) {
    const analysis::StepStragglers& worst = report.steps[largest];
    caption += tr(". Step %1 has the largest lateness: rank %2 finished %3 after the first")
                   .arg(worst.step)
                   .arg(worst.straggler)
                   .arg(Exact(worst.lateness_ns));
    const int reason = ReasonCategory(worst.reason);
    caption += reason < 0 ? tr(", exceeding the others' median in no category.")
                          : tr("; its %1 exceeds the others' median by %2.")
                                .arg(QString::fromStdString(worst.reason))
                                .arg(Exact(worst.excess_ns[reason]));
  } else {
    caption += tr(": no step has two ranks.");
  }
  stragglers_caption_->setText(caption + tr(" Activate a step to zoom to it."));

  stragglers_table_->setRowCount(static_cast<int>(report.steps.size()));
  for (size_t i = 0; i < report.steps.size(); ++i) {
    const analysis::StepStragglers& step = report.steps[i];
    const int row = static_cast<int>(i);
    stragglers_table_->setItem(row, kStrStep, CountItem(step.step));
    stragglers_table_->setItem(row, kStrRanks, CountItem(static_cast<int64_t>(step.ranks.size())));
    stragglers_table_->setItem(row, kStrStraggler, new QTableWidgetItem(tr("rank %1").arg(step.straggler)));
    stragglers_table_->setItem(row, kStrLateness, DurationItem(step.lateness_ns));
    stragglers_table_->setItem(row, kStrVsMedian, DurationItem(step.lateness_vs_median_ns));
    stragglers_table_->setItem(row, kStrReason, new QTableWidgetItem(QString::fromStdString(step.reason)));
    const int reason = ReasonCategory(step.reason);
    stragglers_table_->setItem(row, kStrExcess, reason < 0 ? new QTableWidgetItem(QStringLiteral("-"))
                                                           : DurationItem(step.excess_ns[reason]));
    stragglers_table_->setItem(row, kStrWaitedFor, new QTableWidgetItem(step.waited_for >= 0 ? tr("rank %1").arg(step.waited_for)
                                                                                              : QStringLiteral("-")));
    stragglers_table_->setItem(row, kStrOthersWaited, DurationItem(step.others_waited_ns));
  }
  stragglers_table_->resizeColumnsToContents();
  rank_totals_table_->setRowCount(static_cast<int>(report.ranks.size()));
  for (size_t i = 0; i < report.ranks.size(); ++i) {
    const analysis::RankStragglerTotals& t = report.ranks[i];
    const int row = static_cast<int>(i);
    rank_totals_table_->setItem(row, kRankName, new QTableWidgetItem(tr("rank %1").arg(t.rank)));
    rank_totals_table_->setItem(row, kRankSteps, CountItem(t.steps));
    rank_totals_table_->setItem(row, kRankLast, CountItem(t.straggler_steps));
    rank_totals_table_->setItem(row, kRankLatenessTotal, DurationItem(t.lateness_total_ns));
    rank_totals_table_->setItem(row, kRankLatenessMax, DurationItem(t.lateness_max_ns));
  }
  rank_totals_table_->resizeColumnsToContents();
  if (!report.steps.empty()) stragglers_table_->setCurrentCell(static_cast<int>(largest), kStrStep);
  return pane;
}

QString DocumentView::stragglers_caption() const { return stragglers_caption_->text(); }

std::pair<int64_t, int64_t> DocumentView::StragglerStepRange(int row) const {
  const RankMerge* merge = document_->rank_merge();
  if (merge == nullptr || !merge->stragglers || row < 0 || static_cast<size_t>(row) >= merge->stragglers->steps.size()) {
    return {0, 0};
  }
  const analysis::StepStragglers& step = merge->stragglers->steps[static_cast<size_t>(row)];
  const int64_t begin = step.origin_ns - document_->trace().epoch_ns();
  int64_t end = begin;
  for (const analysis::RankStep& r : step.ranks) end = std::max(end, begin + r.end_ns);
  return {begin, end};
}

int64_t DocumentView::StragglerLastSlice(int row) const {
  const RankMerge* merge = document_->rank_merge();
  const auto [begin, end] = StragglerStepRange(row);
  if (merge == nullptr || end <= begin) return -1;
  const analysis::StepStragglers& step = merge->stragglers->steps[static_cast<size_t>(row)];
  const auto straggler = std::find_if(step.ranks.begin(), step.ranks.end(),
                                      [&](const analysis::RankStep& r) { return r.rank == step.straggler; });
  if (straggler == step.ranks.end() || straggler->input >= merge->inputs.size()) return -1;
  // The input's process in the merged trace holds its work; the last piece ends at the step's end.
  const trace::Trace& trace = document_->trace();
  const uint32_t process = merge->inputs[straggler->input].process_track;
  auto in_process = [&](uint32_t track) {
    int32_t t = static_cast<int32_t>(track);
    while (t >= 0 && static_cast<uint32_t>(t) != process) t = trace.tracks()[static_cast<size_t>(t)].parent;
    return t >= 0;
  };
  const int64_t last_end = begin + straggler->end_ns;
  int64_t found = -1;
  const auto& slices = trace.slices();
  for (uint32_t k = 0; k < slices.size(); ++k) {
    const trace::Slice& s = slices[k];
    if (s.end_ns() != last_end || trace::IsAnnotationOrSync(s.kind) || s.duplicate() || !in_process(s.track)) continue;
    if (found < 0 || s.start_ns > slices[static_cast<size_t>(found)].start_ns) found = k;  // the shortest of equals
  }
  return found;
}

void DocumentView::ZoomToStragglerStep(int row) {
  const auto [begin, end] = StragglerStepRange(row);
  if (end <= begin) return;
  const double margin = static_cast<double>(end - begin) * 0.02;
  axis_->SetRange(static_cast<double>(begin) - margin, static_cast<double>(end) + margin);
  const int64_t last = StragglerLastSlice(row);
  if (last >= 0) {
    // Selected and scrolled into view; the pane stays in front (details follow the selection).
    const int pane = panes_->currentIndex();
    timeline_->SelectSlice(last);
    timeline_->RevealSlice(static_cast<uint32_t>(last));
    panes_->setCurrentIndex(pane);
  }
  const analysis::StepStragglers& step = document_->rank_merge()->stragglers->steps[static_cast<size_t>(row)];
  emit statusMessage(tr("step %1: rank %2 finished last, %3 after the first (%4)")
                         .arg(step.step)
                         .arg(step.straggler)
                         .arg(Exact(step.lateness_ns))
                         .arg(QString::fromStdString(step.reason)));
}

}  // namespace stepscope::viewer
