// The critical-path pane (critical_path_pane.h): analysis::CriticalPathFinder per step window,
// kept compact (DocumentAnalysis::PathWindow) and laid out by PathModel and a bound-by table.
#include "viewer/panes/critical_path_pane.h"

#include <QAbstractTableModel>
#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QSplitter>
#include <QTabWidget>
#include <QTableView>
#include <QTableWidget>
#include <QVBoxLayout>
#include <algorithm>
#include <iterator>

#include "base/check.h"
#include "viewer/load/document.h"
#include "viewer/models/roles.h"
#include "viewer/panes/empty_hint.h"
#include "viewer/panes/gpu_bars.h"
#include "viewer/panes/pane_widgets.h"
#include "viewer/timeline/time_axis.h"
#include "viewer/timeline/timeline_view.h"

namespace stepscope::viewer {

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
    return parent.isValid() ? 0 : CriticalPathPane::kPathColumns;
  }
  QVariant headerData(int section, Qt::Orientation orientation, int role) const override {
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
    static const char* const kHeaders[] = {QT_TR_NOOP("Slice"), QT_TR_NOOP("Edge"), QT_TR_NOOP("Start"),
                                           QT_TR_NOOP("Duration"), QT_TR_NOOP("Held"), QT_TR_NOOP("Wait"),
                                           QT_TR_NOOP("Lane")};
    return section >= 0 && section < CriticalPathPane::kPathColumns ? CriticalPathPane::tr(kHeaders[section]) : QVariant();
  }
  QVariant data(const QModelIndex& index, int role) const override {
    if (path_ == nullptr || !index.isValid() || static_cast<size_t>(index.row()) >= path_->steps.size()) return {};
    const DocumentAnalysis::PathStep& step = path_->steps[static_cast<size_t>(index.row())];
    const trace::Slice& s = trace_.slices()[step.slice];
    if (role == kSliceRole) return step.slice;
    auto raw = [&]() -> QVariant {
      switch (index.column()) {
        case CriticalPathPane::kPathStart: return QVariant::fromValue<qint64>(s.start_ns - trace_.span_begin_ns());
        case CriticalPathPane::kPathDuration: return QVariant::fromValue<qint64>(s.dur_ns);
        case CriticalPathPane::kPathHeld: return QVariant::fromValue<qint64>(step.held_ns);
        case CriticalPathPane::kPathWait: return QVariant::fromValue<qint64>(step.wait_ns);
        default: return {};
      }
    };
    switch (role) {
      case kSortRole: return raw();
      case Qt::TextAlignmentRole:
        return raw().isValid() ? QVariant(Qt::AlignRight | Qt::AlignVCenter) : QVariant();
      case Qt::ToolTipRole:
        if (index.column() != CriticalPathPane::kPathName) return {};
        return QString::fromUtf8(trace_.str(trace_.slice_name(s))) + " (" +
               QString::fromUtf8(trace_.str(trace_.slice_op_type(s))) + ", " + QString::fromLatin1(trace::SliceKindName(s.kind)) + ")";
      case Qt::DisplayRole:
        switch (index.column()) {
          case CriticalPathPane::kPathName: return QString::fromUtf8(trace_.str(trace_.slice_name(s)));
          case CriticalPathPane::kPathEdge: {
            const std::string& edge = DocumentAnalysis::PathEdges()[step.edge];
            return edge.empty() ? CriticalPathPane::tr("start") : QString::fromStdString(edge);
          }
          case CriticalPathPane::kPathStart: return "+" + DurationText(s.start_ns - trace_.span_begin_ns());
          case CriticalPathPane::kPathLane: return QString::fromStdString(trace_.TrackPath(s.track));
          default: return DurationText(static_cast<int64_t>(raw().toLongLong()));
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
                                                  "nested", "child",    "sync",   "readback", "cross_stream",
                                                  "rank"};
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

DocumentAnalysis::PathWindow DocumentAnalysis::MakeRankPathWindow(const MergedRankPath& path, size_t ranks) {
  PathWindow window;
  window.label = (path.step >= 0 ? "step " + std::to_string(path.step) : std::string("whole trace")) + " across " +
                 std::to_string(ranks) + " ranks";
  window.begin_ns = path.begin_ns;
  window.end_ns = path.end_ns;
  window.length_ns = path.length_ns;
  std::copy(std::begin(path.bound_ns), std::end(path.bound_ns), window.bound_ns);
  window.bound_by = path.bound_by;
  window.across_ranks = true;
  window.rank_jumps = path.jumps;
  const auto& edges = PathEdges();
  for (const analysis::PathElement& e : path.elements) {
    const auto edge = std::find(edges.begin(), edges.end(), e.edge);
    STEPSCOPE_CHECK(edge != edges.end());  // every edge the analysis names is listed
    window.steps.push_back({e.slice, static_cast<uint8_t>(edge - edges.begin()), e.held_ns, e.wait_ns});
    window.busy_ns += e.held_ns;
  }
  window.wait_ns = std::max<int64_t>(0, window.length_ns - window.busy_ns);
  if (path.held_by >= 0) {
    const analysis::RankHold& hold = path.holds[static_cast<size_t>(path.held_by)];
    window.note = "waiting for rank " + std::to_string(hold.rank) + " (its op " + (hold.op.empty() ? "-" : hold.op) +
                  ", late by " + DurationText(hold.late_ns).toStdString() + ")";
  }
  if (!path.waits.empty()) {
    window.note += (window.note.empty() ? "" : "; ") + std::to_string(path.waits.size()) +
                   (path.waits.size() == 1 ? " jump" : " jumps") + " between ranks, transfers " +
                   DurationText(path.transfer_ns).toStdString();
  }
  return window;
}

CriticalPathPane::CriticalPathPane(PaneHost& host, QObject* parent) : Pane(host, parent) {
  auto* pane = new QWidget(host.panes());
  path_window_ = new QComboBox(pane);
  path_window_->setVisible(false);
  // Off until the pane is first shown: other panes keep the timeline's plain colours.
  path_checkbox_ = new QCheckBox(tr("Show the path on the timeline"), pane);
  path_checkbox_->setChecked(false);
  path_caption_ = new QLabel(tr("The critical path is computed after loading"), pane);
  path_caption_->setWordWrap(true);
  path_caption_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  bound_table_ = MakeTable({tr("Bound by"), tr("Time"), tr("Share")}, pane);
  new EmptyHint(bound_table_, tr("The critical path is computed after loading."));
  bound_table_->setSelectionMode(QAbstractItemView::NoSelection);
  path_model_ = new PathModel(host.document().trace(), this);
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
  connect(path_window_, &QComboBox::currentIndexChanged, this, [this](int index) { ShowPathWindow(index); });
  connect(path_checkbox_, &QCheckBox::toggled, this, [this] { ShowPathOnTimeline(); });
  connect(path_table_->selectionModel(), &QItemSelectionModel::selectionChanged, this, [this] {
    const auto rows = path_table_->selectionModel()->selectedRows();
    if (rows.size() != 1) return;
    const QVariant slice = rows.front().data(kSliceRole);
    if (slice.isValid()) this->host().JumpToSlice(slice.toUInt());
  });
  set_widget(pane);
}

void CriticalPathPane::Shown() {
  // The path is highlighted once the pane is first looked at; other panes keep the timeline's
  // plain colours.
  if (path_auto_shown_) return;
  path_auto_shown_ = true;
  path_checkbox_->setChecked(true);
}

void CriticalPathPane::Analyse(const TraceDocument& document, DocumentAnalysis& into) {
  // As `stepscope critical-path`: one path per ProfilerStep#N window, else the whole trace.
  const trace::Trace& trace = document.trace();
  analysis::VisitCriticalPathsPerStep(
      trace, [&](const analysis::StepWindow& w, const analysis::CriticalPath& path) {
        into.critical_paths.push_back(
            w.whole ? DocumentAnalysis::MakePathWindow("whole trace", trace.span_begin_ns(), trace.span_end_ns(), path)
                    : DocumentAnalysis::MakePathWindow(w.marker, w.begin_ns, w.end_ns, path));
      });
  // A merge of ranks: each step's path across them (`stepscope critical-path DIR`), listed first.
  if (const RankMerge* merge = document.rank_merge(); merge != nullptr && !merge->rank_paths.empty()) {
    std::vector<DocumentAnalysis::PathWindow> across;
    for (const MergedRankPath& path : merge->rank_paths) {
      across.push_back(DocumentAnalysis::MakeRankPathWindow(path, merge->alignment.ranks.size()));
    }
    into.critical_paths.insert(into.critical_paths.begin(), std::make_move_iterator(across.begin()),
                               std::make_move_iterator(across.end()));
  }
}

void CriticalPathPane::ShowAnalysis(const std::shared_ptr<const DocumentAnalysis>& result) {
  analysis_ = result;
  const auto& windows = analysis_->critical_paths;
  const QSignalBlocker block(path_window_);
  path_window_->clear();
  // The window shown first: the one whose path is longest (the step to look at); of a merge of
  // ranks, the longest path across them.
  int longest = 0;
  for (size_t i = 0; i < windows.size(); ++i) {
    path_window_->addItem(tr("%1: %2").arg(QString::fromStdString(windows[i].label), DurationText(windows[i].length_ns)));
    const DocumentAnalysis::PathWindow& best = windows[static_cast<size_t>(longest)];
    if (windows[i].across_ranks == best.across_ranks ? windows[i].length_ns > best.length_ns : windows[i].across_ranks) {
      longest = static_cast<int>(i);
    }
  }
  path_window_->setVisible(windows.size() > 1);
  path_window_->setCurrentIndex(longest);
  ShowPathWindow(windows.empty() ? -1 : longest);
}

const DocumentAnalysis::PathWindow* CriticalPathPane::shown_path() const {
  if (analysis_ == nullptr || path_shown_ < 0 || static_cast<size_t>(path_shown_) >= analysis_->critical_paths.size()) {
    return nullptr;
  }
  return &analysis_->critical_paths[static_cast<size_t>(path_shown_)];
}

void CriticalPathPane::ShowPathWindow(int index) {
  path_shown_ = index;
  const DocumentAnalysis::PathWindow* path = shown_path();
  path_model_->SetPath(path);
  bound_table_->setRowCount(0);
  if (path == nullptr || path->steps.empty()) {
    path_caption_->setText(tr("No critical path: the trace holds no work."));
    if (EmptyHint* hint = EmptyHintOf(bound_table_)) hint->SetText(tr("No critical path: the trace holds no work."));
    ShowPathOnTimeline();
    return;
  }
  path_caption_->setText(tr("%1: %2 slices, %3 (busy %4, waiting %5); bound by <b>%6</b>")
                             .arg(QString::fromStdString(path->label))
                             .arg(path->steps.size())
                             .arg(DurationText(path->length_ns), DurationText(path->busy_ns), DurationText(path->wait_ns),
                                  QString::fromLatin1(analysis::PathBoundName(path->bound_by))) +
                             (path->note.empty() ? QString() : QStringLiteral("; ") + QString::fromStdString(path->note)));
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

void CriticalPathPane::ShowPathOnTimeline() {
  const DocumentAnalysis::PathWindow* path = shown_path();
  std::vector<uint32_t> slices;
  std::vector<size_t> jumps;
  if (path_checkbox_->isChecked() && path != nullptr) {
    slices.reserve(path->steps.size());
    for (const DocumentAnalysis::PathStep& step : path->steps) slices.push_back(step.slice);
    jumps = path->rank_jumps;
  }
  host().timeline()->SetPathSlices(std::move(slices), std::move(jumps));
}

QString CriticalPathPane::path_caption() const { return path_caption_->text(); }

void CriticalPathPane::ZoomToPath() {
  const DocumentAnalysis::PathWindow* path = shown_path();
  if (path == nullptr || path->steps.empty()) return;
  const auto& slices = host().document().trace().slices();
  int64_t begin = slices[path->steps.front().slice].start_ns, end = begin;
  for (const DocumentAnalysis::PathStep& step : path->steps) {
    begin = std::min(begin, slices[step.slice].start_ns);
    end = std::max(end, slices[step.slice].end_ns());
  }
  const double margin = static_cast<double>(std::max<int64_t>(end - begin, 1)) * 0.02;
  host().axis()->SetRange(static_cast<double>(begin) - margin, static_cast<double>(end) + margin);
}

}  // namespace stepscope::viewer
