// The document view (document_view.h): the timeline over the tabs of the pane table, the
// truncation banner, and the few actions panes share.
#include "viewer/app/document_view.h"

#include <QLabel>
#include <QSplitter>
#include <QTabWidget>
#include <QVBoxLayout>

#include "viewer/load/document.h"
#include "viewer/panes/pane_table.h"
#include "viewer/timeline/overview_strip.h"
#include "viewer/timeline/time_axis.h"
#include "viewer/timeline/timeline_view.h"

namespace stepscope::viewer {

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

  const auto table = PaneTable();
  panes_by_id_.resize(table.size(), nullptr);
  for (const PaneSpec& spec : table) {
    Pane* pane = spec.create(*this, this);
    panes_by_id_[spec.id] = pane;
    panes_->addTab(pane->widget(), tr(spec.title));
  }
  // Tabs are in table order.
  connect(panes_, &QTabWidget::currentChanged, this, [this](int index) {
    if (index >= 0 && static_cast<size_t>(index) < PaneTable().size()) {
      panes_by_id_[PaneTable()[static_cast<size_t>(index)].id]->Shown();
    }
  });

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
  layout->addWidget(new OverviewStrip(timeline_, axis_, this));  // while a search has matches
  layout->addWidget(splitter);
  ShowPane(kDefaultPane);
}

DocumentView::~DocumentView() = default;

void DocumentView::ShowPane(PaneId pane) {
  // Tabs are in table order.
  panes_->setCurrentIndex(static_cast<int>(&PaneSpecOf(pane) - PaneTable().data()));
}

void DocumentView::SetAnalysis(std::shared_ptr<const DocumentAnalysis> analysis) {
  analysis_ = std::move(analysis);
  for (const PaneSpec& spec : PaneTable()) {
    if (spec.analyse != nullptr) panes_by_id_[spec.id]->ShowAnalysis(analysis_);
  }
}

void DocumentView::JumpToSlice(uint32_t slice) {
  if (slice >= document_->trace().slices().size()) return;
  const int pane = panes_->currentIndex();
  timeline_->FocusSlice(slice);
  // Keep the pane the jump came from in front (details follow the selection anyway).
  panes_->setCurrentIndex(pane);
}

}  // namespace stepscope::viewer
