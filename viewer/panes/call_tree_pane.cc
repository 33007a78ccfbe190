// The call tree pane (call_tree_pane.h): the scope read from the timeline's selection on the UI
// thread, the trees computed with QtConcurrent, shown by CallTreeModel and IcicleChart.
#include "viewer/panes/call_tree_pane.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QTabWidget>
#include <QTreeView>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>
#include <new>

#include "base/units.h"
#include "profiler/analysis/step_windows.h"
#include "viewer/load/document.h"
#include "viewer/models/call_tree_model.h"
#include "viewer/models/roles.h"
#include "viewer/panes/icicle_chart.h"
#include "viewer/timeline/timeline_view.h"

namespace stepscope::viewer {
namespace {

QString Duration(int64_t ns) { return QString::fromStdString(FormatDurationSignificant(static_cast<double>(ns))); }

// The step window that holds a slice's start, or the whole trace when there is no such step.
void ScopeToStepOf(const trace::Trace& trace, uint32_t slice, analysis::CallTreeOptions& options, QString& scope) {
  const int64_t start = trace.slices()[slice].start_ns;
  const auto windows = analysis::NumberedStepWindows(std::span(&trace, 1), std::nullopt,
                                                     analysis::StepWindowing::kEveryStep).front();
  for (const analysis::StepWindow& window : windows) {
    if (window.whole || start < window.begin_ns || start >= window.end_ns) continue;
    options.begin_ns = window.begin_ns;
    options.end_ns = window.end_ns;
    scope = QObject::tr("step %1 (of the selected slice)").arg(window.number);
    return;
  }
  scope = QObject::tr("the whole trace (the selected slice is in no step)");
}

}  // namespace

CallTreePane::CallTreePane(PaneHost& host, QObject* parent) : Pane(host, parent) {
  auto* widget = new QWidget(host.panes());
  model_ = new CallTreeModel(this);
  proxy_ = new QSortFilterProxyModel(this);
  proxy_->setSourceModel(model_);
  proxy_->setSortRole(kSortRole);
  view_ = new QTreeView(widget);
  view_->setModel(proxy_);
  view_->setSortingEnabled(true);
  view_->sortByColumn(CallTreeModel::kTotal, Qt::DescendingOrder);
  view_->setAlternatingRowColors(true);
  view_->setUniformRowHeights(true);
  view_->header()->resizeSection(CallTreeModel::kName, 340);
  icicle_ = new IcicleChart(widget);
  caption_ = new QLabel(widget);
  caption_->setToolTip(tr("Ctrl+click slices, or Shift+drag over some rows, to choose what the tree covers; with "
                          "one slice selected, its step; otherwise the whole trace. Self: total minus the nested "
                          "calls. Click a box of the icicle to zoom into it, its top row to go back up."));
  direction_ = new QComboBox(widget);
  direction_->addItems({tr("Top-down"), tr("Bottom-up (self time, then callers)")});

  auto* bar = new QHBoxLayout;
  bar->addWidget(direction_);
  bar->addWidget(caption_, 1);
  auto* splitter = new QSplitter(Qt::Vertical, widget);
  splitter->addWidget(view_);
  splitter->addWidget(icicle_);
  splitter->setStretchFactor(0, 3);
  splitter->setStretchFactor(1, 2);
  auto* layout = new QVBoxLayout(widget);
  layout->setContentsMargins(2, 2, 2, 2);
  layout->addLayout(bar);
  layout->addWidget(splitter, 1);

  connect(direction_, &QComboBox::currentIndexChanged, this, [this](int index) { SetBottomUp(index == 1); });
  connect(view_, &QTreeView::doubleClicked, this, [this](const QModelIndex& index) {
    const QVariant slice = index.data(kSliceRole);
    if (slice.isValid()) this->host().JumpToSlice(slice.toUInt());
  });
  connect(view_, &QTreeView::clicked, this, [this](const QModelIndex& index) {
    icicle_->Focus(model_->NodeOf(proxy_->mapToSource(index)));
  });
  connect(icicle_, &IcicleChart::nodeFocused, this, [this](uint32_t node) {
    const QModelIndex index = proxy_->mapFromSource(model_->IndexOf(node));
    if (index.isValid()) {
      view_->setCurrentIndex(index);
      view_->scrollTo(index);
    }
  });
  connect(&watcher_, &QFutureWatcher<Result>::finished, this, &CallTreePane::ShowResult);
  TimelineView* timeline = host.timeline();
  connect(timeline, &TimelineView::selectionChanged, this, &CallTreePane::SelectionChanged);
  connect(timeline, &TimelineView::sliceSelected, this, &CallTreePane::SelectionChanged);
  caption_->setText(tr("Computed when shown."));
  set_widget(widget);
}

void CallTreePane::Shown() {
  if (dirty_) Recompute();
}

void CallTreePane::SelectionChanged() {
  dirty_ = true;
  // Followed at once once the pane has been looked at; otherwise when it is (a big trace's tree
  // is not computed for nobody).
  if (top_down_ || watcher_.isRunning()) Recompute();
}

void CallTreePane::Recompute() {
  dirty_ = false;
  const TimelineView* timeline = host().timeline();
  const TimelineSelection& selection = timeline->selection();
  analysis::CallTreeOptions options;
  QString scope;
  int64_t step_of_slice = -1;
  if (!selection.slices().empty()) {
    options.slices = selection.slices();
    scope = tr("%n selected slice(s) and what they call", nullptr, static_cast<int>(options.slices.size()));
  } else if (selection.area()) {
    const SelectedArea& area = *selection.area();
    options.begin_ns = area.begin_ns;
    options.end_ns = area.end_ns;
    options.tracks = area.tracks;
    scope = area.tracks.empty() ? tr("%1 selected, every host lane").arg(Duration(area.end_ns - area.begin_ns))
                                : tr("%1 selected on %n track(s)", nullptr, static_cast<int>(area.tracks.size()))
                                      .arg(Duration(area.end_ns - area.begin_ns));
  } else if (timeline->selected_slice() >= 0) {
    step_of_slice = timeline->selected_slice();
  } else {
    scope = tr("the whole trace");
  }
  caption_->setText(tr("Computing the call tree ..."));
  std::shared_ptr<const TraceDocument> document = host().shared_document();
  // setFuture() forgets the previous job: a stale result never reaches the view.
  // The bottom-up tree costs about twice the top-down one: built only while it is shown.
  const bool bottom_up = bottom_up_;
  watcher_.setFuture(QtConcurrent::run([document, chosen = std::move(options), chosen_scope = scope, step_of_slice,
                                        bottom_up] {
    analysis::CallTreeOptions scoped = chosen;
    QString scope_text = chosen_scope;
    if (step_of_slice >= 0) ScopeToStepOf(document->trace(), static_cast<uint32_t>(step_of_slice), scoped, scope_text);
    Result result = ComputeTrees(document->trace(), scoped, bottom_up);
    result.scope = scope_text;
    return result;
  }));
}

CallTreePane::Result CallTreePane::ComputeTrees(const trace::Trace& trace, const analysis::CallTreeOptions& options,
                                                bool bottom_up) {
  Result result;
  try {
    auto top_down = std::make_shared<analysis::CallTree>(analysis::ComputeCallTree(trace, options));
    if (bottom_up) result.bottom_up = std::make_shared<analysis::CallTree>(analysis::BottomUpTree(*top_down));
    result.top_down = std::move(top_down);
  } catch (const std::bad_alloc&) {
    // Nothing may leave a worker (its future would throw on the UI thread): the pane says it.
    result = Result{};
    result.error = tr("Out of memory building the call tree: select a shorter range or fewer tracks, or close "
                      "other traces.");
  }
  return result;
}

void CallTreePane::ShowResult() {
  const Result result = watcher_.result();
  if (!result.error.isEmpty()) {
    top_down_.reset();
    bottom_up_tree_.reset();
    model_->SetTree(nullptr);
    icicle_->SetTree(nullptr);
    caption_->setText(QStringLiteral("%1: %2").arg(result.scope, result.error));
    return;
  }
  top_down_ = result.top_down;
  bottom_up_tree_ = result.bottom_up;
  caption_->setText(tr("%1: %2 slices, %3 in the top-level calls, %4 levels")
                        .arg(result.scope)
                        .arg(top_down_->slices)
                        .arg(Duration(top_down_->root().total_ns))
                        .arg(top_down_->max_depth));
  ShowTree();
}

void CallTreePane::SetBottomUp(bool bottom_up) {
  if (bottom_up == bottom_up_) return;
  bottom_up_ = bottom_up;
  direction_->setCurrentIndex(bottom_up ? 1 : 0);
  if (bottom_up && top_down_ && !bottom_up_tree_ && !watcher_.isRunning()) {
    Recompute();  // shown when it arrives
    return;
  }
  ShowTree();
}

void CallTreePane::ShowTree() {
  const auto tree = bottom_up_ ? bottom_up_tree_ : top_down_;
  if (!tree) {
    if (bottom_up_ && top_down_ && !watcher_.isRunning()) Recompute();
    return;
  }
  model_->SetTree(tree);
  icicle_->SetTree(tree);
  // Bottom-up: the names with the most self time first.
  view_->sortByColumn(bottom_up_ ? CallTreeModel::kSelf : CallTreeModel::kTotal, Qt::DescendingOrder);
  if (model_->rowCount() > 0) view_->expand(proxy_->index(0, 0));
}

QString CallTreePane::caption() const { return caption_->text(); }

}  // namespace stepscope::viewer
