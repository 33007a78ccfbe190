// The document view (document_view.h): the timeline as the central widget, a dock per pane of
// the pane table, the truncation banner, the dock layout saved, restored and reset, and the few
// actions panes share.
#include "viewer/app/document_view.h"

#include <QContextMenuEvent>
#include <QDockWidget>
#include <QEvent>
#include <QLabel>
#include <QMouseEvent>
#include <QMenu>
#include <QTabBar>
#include <QVBoxLayout>
#include <algorithm>

#include "viewer/load/document.h"
#include "viewer/load/overview.h"
#include "viewer/models/op_stats_model.h"
#include "viewer/models/search_model.h"
#include "viewer/panes/pane_table.h"
#include "viewer/timeline/overview_strip.h"
#include "viewer/timeline/time_axis.h"
#include "viewer/timeline/timeline_view.h"

namespace stepscope::viewer {
namespace {

// Bumped when the docks change so much that an older saved layout would mislead.
constexpr int kLayoutVersion = 1;

// The panes that start on the right of the timeline (what is selected and where to find it);
// every other pane starts below it, where it has the timeline's width.
bool StartsOnTheRight(PaneId id) { return id == kDetailsPane || id == kSearchPane || id == kTracksPane; }

}  // namespace

DocumentView::DocumentView(std::shared_ptr<const TraceDocument> document, QWidget* parent)
    : QMainWindow(parent), document_(std::move(document)) {
  setWindowFlags(Qt::Widget);  // a page of the window's tabs, not a window of its own
  // GroupedDragging: a tab dragged out of its group takes its pane along (docks have no title
  // bar while docked).
  setDockOptions(AnimatedDocks | AllowNestedDocks | AllowTabbedDocks | GroupedDragging);
  setDocumentMode(true);
  setTabPosition(Qt::AllDockWidgetAreas, QTabWidget::North);
  // The right docks take the bottom right corner: the bottom docks then span exactly the
  // timeline's width.
  setCorner(Qt::BottomRightCorner, Qt::RightDockWidgetArea);
  setCorner(Qt::TopRightCorner, Qt::RightDockWidgetArea);

  const trace::Trace& trace = document_->trace();
  axis_ = new TimeAxis(static_cast<double>(trace.span_begin_ns()), static_cast<double>(trace.span_end_ns()), this);
  auto* central = new QWidget(this);
  auto* layout = new QVBoxLayout(central);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(0);
  timeline_ = new TimelineView(document_, axis_, central);
  if (document_->overview() != nullptr) timeline_->installEventFilter(this);  // a rank's header double-clicked
  if (!document_->truncations().empty()) {
    // Read only up to a cut (--allow-truncated): said above everything the document shows.
    QStringList lines;
    for (const trace::Truncation& cut : document_->truncations()) lines << QString::fromStdString(trace::TruncationLine(cut));
    truncation_banner_ = new QLabel(lines.join('\n'), central);
    truncation_banner_->setObjectName("truncationBanner");
    truncation_banner_->setWordWrap(true);
    truncation_banner_->setStyleSheet("QLabel { background: #b00020; color: white; font-weight: bold; padding: 4px; }");
    layout->addWidget(truncation_banner_);
  }
  layout->addWidget(new OverviewStrip(timeline_, axis_, central));  // while a search has matches
  layout->addWidget(timeline_, 1);
  setCentralWidget(central);

  const auto table = PaneTable();
  panes_by_id_.resize(table.size(), nullptr);
  docks_by_id_.resize(table.size(), nullptr);
  const Overview* overview = document_->overview();
  for (const PaneSpec& spec : table) {
    Pane* pane = spec.create(*this, this);
    panes_by_id_[spec.id] = pane;
    auto* dock = new QDockWidget(tr(spec.title), this);
    dock->setObjectName(QStringLiteral("pane-%1").arg(QLatin1String(spec.name)));  // saveState's key
    const bool hinted = overview != nullptr && !spec.on_overview;
    if (hinted) {
      // The pane exists (the window reaches every pane) but, on an overview, shows why it is empty.
      auto* hint = new QLabel(OverviewPaneHint(tr(spec.title), overview->ranks.size()), dock);
      hint->setObjectName(QStringLiteral("overviewHint"));
      hint->setAlignment(Qt::AlignCenter);
      hint->setWordWrap(true);
      hint->setMargin(12);
      pane->widget()->setParent(hint);
      pane->widget()->hide();
      dock->setWidget(hint);
    } else {
      dock->setWidget(pane->widget());
    }
    docks_by_id_[spec.id] = dock;
    // Docked, a pane is named by its tab and needs no title bar (the room goes to the pane);
    // floating, it gets the usual one back, to move and close it by.
    auto* no_title = new QWidget(dock);
    dock->setTitleBarWidget(no_title);
    connect(dock, &QDockWidget::topLevelChanged, dock, [dock, no_title](bool floating) {
      dock->setTitleBarWidget(floating ? nullptr : no_title);
    });
    connect(dock, &QDockWidget::visibilityChanged, pane, [this, pane, id = spec.id, hinted](bool visible) {
      if (!visible) return;
      current_pane_ = id;
      if (!hinted) pane->Shown();
    });
  }
  ResetLayout();

  // A merge of many ranks opens as a row per rank, each showing where its work is; a click on
  // the row (or a jump to one of its slices) opens it.
  if (const RankMerge* merge = document_->rank_merge(); merge != nullptr && merge->inputs.size() > kExpandedRanks) {
    for (const analysis::MergedInput& input : merge->inputs) timeline_->SetTrackCollapsed(input.process_track, true);
  }
}

DocumentView::~DocumentView() = default;

void DocumentView::ResetLayout() {
  QDockWidget* first_bottom = nullptr;
  QDockWidget* first_right = nullptr;
  for (const PaneSpec& spec : PaneTable()) {
    QDockWidget* dock = docks_by_id_[spec.id];
    const bool right = StartsOnTheRight(spec.id);
    QDockWidget*& first = right ? first_right : first_bottom;
    dock->setFloating(false);
    if (first == nullptr) {
      addDockWidget(right ? Qt::RightDockWidgetArea : Qt::BottomDockWidgetArea, dock);
      first = dock;
    } else {
      tabifyDockWidget(first, dock);
    }
    dock->show();
  }
  docks_by_id_[kDetailsPane]->raise();
  docks_by_id_[kDefaultPane]->raise();
  auto_size_ = true;
  SizeDocks();
}

// The starting sizes, as shares of the view's size: applied whenever the view is resized (its
// first sizes, before the window is laid out, are not its last) until the user drags a dock's
// edge, and not at all to a restored layout.
void DocumentView::SizeDocks() {
  if (!auto_size_ || !isVisible() || width() <= 0 || height() <= 0) return;
  resizeDocks({docks_by_id_[kDefaultPane]}, {static_cast<int>(height() * kBottomDockShare)}, Qt::Vertical);
  resizeDocks({docks_by_id_[kDetailsPane]}, {static_cast<int>(width() * kRightDockShare)}, Qt::Horizontal);
}

void DocumentView::showEvent(QShowEvent* event) {
  QMainWindow::showEvent(event);
  SizeDocks();
}

void DocumentView::resizeEvent(QResizeEvent* event) {
  QMainWindow::resizeEvent(event);
  SizeDocks();
}

// A right click on a dock's tab: hide that pane, or show or hide any (the docked panes have no
// title bar with a close button).
void DocumentView::contextMenuEvent(QContextMenuEvent* event) {
  auto* tabs = qobject_cast<QTabBar*>(childAt(event->pos()));
  if (tabs == nullptr) {
    QMainWindow::contextMenuEvent(event);
    return;
  }
  QMenu* menu = createPopupMenu();
  menu->setAttribute(Qt::WA_DeleteOnClose);
  const int tab = tabs->tabAt(tabs->mapFrom(this, event->pos()));
  for (QDockWidget* dock : docks_by_id_) {
    if (tab < 0 || dock->windowTitle() != tabs->tabText(tab)) continue;
    QAction* hide = new QAction(tr("Hide %1").arg(dock->windowTitle()), menu);
    connect(hide, &QAction::triggered, dock, &QWidget::hide);
    menu->insertAction(menu->actions().value(0), hide);
    menu->insertSeparator(menu->actions().value(1));
  }
  menu->popup(event->globalPos());
  event->accept();
}

bool DocumentView::event(QEvent* event) {
  // A press on the view itself (not on a pane or the timeline) is on a dock's edge.
  if (event->type() == QEvent::MouseButtonPress) auto_size_ = false;
  return QMainWindow::event(event);
}

QByteArray DocumentView::SaveLayout() const { return saveState(kLayoutVersion); }

bool DocumentView::RestoreLayout(const QByteArray& layout) {
  if (layout.isEmpty() || !restoreState(layout, kLayoutVersion)) return false;
  auto_size_ = false;  // the sizes came with the layout
  return true;
}

void DocumentView::ShowPane(PaneId pane) {
  current_pane_ = pane;
  QDockWidget* dock = docks_by_id_[pane];
  dock->show();
  dock->raise();
}

bool DocumentView::PaneInFront(PaneId pane) const {
  const QDockWidget* dock = docks_by_id_[pane];
  if (!dock->isVisible()) return false;  // closed, or the window not shown
  // Tabbed with others, a dock is in front only while its tab is the current one: Qt may still
  // call a dock behind another's tab visible (until the window lays the docks out again). The
  // main window's tab bars name each tab's dock in its data; a hidden bar is one no longer used.
  const auto id = reinterpret_cast<quintptr>(dock);
  for (const QTabBar* bar : findChildren<QTabBar*>(Qt::FindDirectChildrenOnly)) {
    if (bar->isHidden()) continue;
    for (int i = 0; i < bar->count(); ++i) {
      if (bar->tabData(i).value<quintptr>() == id) return i == bar->currentIndex();
    }
  }
  return true;
}

void DocumentView::SetAnalysis(std::shared_ptr<const DocumentAnalysis> analysis) {
  analysis_ = std::move(analysis);
  timeline_->SetCounterTracks(analysis_->counter_tracks);
  const bool overview = document_->overview() != nullptr;
  for (const PaneSpec& spec : PaneTable()) {
    if (spec.analyse != nullptr && (!overview || spec.on_overview)) panes_by_id_[spec.id]->ShowAnalysis(analysis_);
  }
}

void DocumentView::JumpToSlice(uint32_t slice) {
  if (slice >= document_->trace().slices().size()) return;
  // The panes in front stay in front (the details pane, which follows the selection, may share
  // a tab group with the pane the jump came from).
  std::vector<PaneId> in_front;
  for (const PaneSpec& spec : PaneTable()) {
    if (PaneInFront(spec.id)) in_front.push_back(spec.id);
  }
  timeline_->FocusSlice(slice);
  for (PaneId id : in_front) {
    if (!PaneInFront(id)) docks_by_id_[id]->raise();
  }
}

void DocumentView::SetFullNames(bool full) {
  timeline_->SetFullNames(full);
  for (OpStatsModel* model : findChildren<OpStatsModel*>()) model->SetFullNames(full);
  for (SearchModel* model : findChildren<SearchModel*>()) model->SetFullNames(full);
}

int32_t DocumentView::OverviewRankAtRow(int y) const {
  const RankMerge* merge = document_->rank_merge();
  const int row = timeline_->RowAt(y);
  if (document_->overview() == nullptr || merge == nullptr || row < 0) return -1;
  const TimelineRow& at = timeline_->layout().rows()[static_cast<size_t>(row)];
  if (at.kind != TimelineRow::Kind::kHeader) return -1;
  for (size_t i = 0; i < merge->inputs.size(); ++i) {
    if (merge->inputs[i].process_track == at.track) return merge->inputs[i].rank >= 0 ? merge->inputs[i].rank : static_cast<int32_t>(i);
  }
  return -1;
}

bool DocumentView::eventFilter(QObject* watched, QEvent* event) {
  // An overview's rank header double-clicked opens the rank in full (the timeline would fit all).
  if (watched == timeline_ && event->type() == QEvent::MouseButtonDblClick) {
    const int32_t rank = OverviewRankAtRow(static_cast<QMouseEvent*>(event)->position().toPoint().y());
    if (rank >= 0) {
      emit overviewRankRequested(rank);
      return true;
    }
  }
  return QMainWindow::eventFilter(watched, event);
}

}  // namespace stepscope::viewer
