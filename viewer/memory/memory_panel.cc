// The memory pane's widget (memory_panel.h): a chart per allocator, scrolling when many, beside
// the live tensors table.
#include "viewer/memory/memory_panel.h"

#include <QHeaderView>
#include <QLabel>
#include <QScrollArea>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QTableView>
#include <QVBoxLayout>
#include <algorithm>

#include "base/units.h"
#include "viewer/memory/memory_chart.h"
#include "viewer/models/live_tensor_model.h"
#include "viewer/models/roles.h"

namespace stepscope::viewer {

MemoryPanel::MemoryPanel(std::shared_ptr<const TraceDocument> document, TimeAxis* axis, QWidget* parent)
    : QWidget(parent), document_(std::move(document)), axis_(axis) {
  // The charts beside the live tensors rather than above them: each chart then has the pane's
  // whole height, and many charts scroll.
  auto* splitter = new QSplitter(Qt::Horizontal, this);
  auto* scroll = new QScrollArea(splitter);
  scroll->setWidgetResizable(true);
  scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  scroll->setVerticalScrollBarPolicy(Qt::ScrollBarAsNeeded);
  scroll->setFrameShape(QFrame::NoFrame);
  auto* charts = new QWidget(scroll);
  charts_layout_ = new QVBoxLayout(charts);
  charts_layout_->setContentsMargins(0, 0, 0, 0);
  charts_layout_->setSpacing(2);
  placeholder_ = new QLabel(tr("Computing memory timelines..."), charts);
  placeholder_->setAlignment(Qt::AlignLeft | Qt::AlignTop);
  charts_layout_->addWidget(placeholder_, 1);
  scroll->setWidget(charts);

  auto* live = new QWidget(splitter);
  auto* live_layout = new QVBoxLayout(live);
  live_layout->setContentsMargins(0, 0, 0, 0);
  live_caption_ = new QLabel(tr("Click a chart (its red peak marker for the peak) to list the live tensors."), live);
  live_caption_->setWordWrap(true);
  live_model_ = new LiveTensorModel(this);
  auto* proxy = new QSortFilterProxyModel(this);
  proxy->setSourceModel(live_model_);
  proxy->setSortRole(kSortRole);
  live_table_ = new QTableView(live);
  live_table_->setModel(proxy);
  live_table_->setSortingEnabled(true);
  live_table_->sortByColumn(LiveTensorModel::kBytes, Qt::DescendingOrder);
  live_table_->horizontalHeader()->setStretchLastSection(true);
  live_table_->horizontalHeader()->setDefaultSectionSize(110);
  live_table_->verticalHeader()->setDefaultSectionSize(20);
  live_table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  live_layout->addWidget(live_caption_);
  live_layout->addWidget(live_table_);
  connect(live_table_, &QTableView::doubleClicked, this, [this](const QModelIndex& index) {
    const QVariant slice = index.data(kSliceRole);
    if (slice.isValid()) emit sliceActivated(slice.toUInt());
  });

  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(splitter);
  splitter->setStretchFactor(0, 7);
  splitter->setStretchFactor(1, 3);
  splitter->setSizes({7000, 3000});  // scaled to the width: most of it for the charts
  splitter->setChildrenCollapsible(false);
  splitter_ = splitter;
  charts_scroll_ = scroll;
}

void MemoryPanel::SetTimelines(std::shared_ptr<const std::vector<analysis::AllocatorTimeline>> timelines) {
  timelines_ = std::move(timelines);
  for (MemoryChart* chart : charts_) delete chart;
  charts_.clear();
  if (timelines_->empty()) {
    placeholder_->setText(tr("This trace records no memory (no allocation records, outputs or memory events)."));
    placeholder_->show();
    charts_layout_->setStretchFactor(placeholder_, 1);
    // No allocator: a tensor table could never fill, so none is shown.
    live_caption_->parentWidget()->hide();
    return;
  }
  placeholder_->hide();
  charts_layout_->setStretchFactor(placeholder_, 0);
  live_caption_->parentWidget()->show();
  for (size_t i = 0; i < timelines_->size(); ++i) {
    auto* chart = new MemoryChart((*timelines_)[i], axis_);
    charts_layout_->insertWidget(static_cast<int>(i), chart, 1);  // the charts share the height
    connect(chart, &MemoryChart::timeClicked, this,
            [this, i](int64_t time) { ShowLiveAt(static_cast<int>(i), time); });
    charts_.push_back(chart);
  }
  live_table_->horizontalHeader()->resizeSection(LiveTensorModel::kName, 420);
}

void MemoryPanel::ShowLiveAt(int chart_index, int64_t time_ns) {
  if (timelines_ == nullptr || chart_index < 0 || chart_index >= chart_count()) return;
  const analysis::AllocatorTimeline& timeline = (*timelines_)[static_cast<size_t>(chart_index)];
  for (int i = 0; i < chart_count(); ++i) {
    charts_[static_cast<size_t>(i)]->SetCursorTime(i == chart_index ? std::optional<int64_t>(time_ns) : std::nullopt);
  }
  auto tensors = live_tensors_.At(timeline, time_ns);
  int64_t total = 0;
  for (const auto& tensor : tensors) total += tensor.bytes;
  const int64_t level = analysis::BytesAt(timeline.curve, time_ns);
  QString caption = tr("%1 at %2%3: %4 in use; %5 live tensors totalling %6")
                        .arg(QString::fromStdString(timeline.allocator),
                             QString::fromStdString(FormatDurationSignificant(static_cast<double>(time_ns))),
                             time_ns == timeline.peak_ns ? tr(" (the peak)") : QString(), QString::fromStdString(FormatBytes(level)))
                        .arg(tensors.size())
                        .arg(QString::fromStdString(FormatBytes(total)));
  if (tensors.empty()) caption += tr(" (this trace records no tensors for this allocator)");
  live_caption_->setText(caption);
  live_model_->SetTensors(std::move(tensors));
}

QString MemoryPanel::live_caption() const { return live_caption_->text(); }

}  // namespace stepscope::viewer
