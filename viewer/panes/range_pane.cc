// The range pane (range_pane.h): analysis::ComputeOpStats over the selected range, run with
// QtConcurrent and shown by OpStatsModel.
#include "viewer/panes/range_pane.h"

#include <QHeaderView>
#include <QLabel>
#include <QSortFilterProxyModel>
#include <QTabWidget>
#include <QTableView>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

#include "base/units.h"
#include "viewer/load/document.h"
#include "viewer/models/op_stats_model.h"
#include "viewer/models/roles.h"
#include "viewer/panes/pane_widgets.h"
#include "viewer/timeline/timeline_view.h"

namespace stepscope::viewer {

RangePane::RangePane(PaneHost& host, QObject* parent) : Pane(host, parent) {
  auto* range = new QWidget(host.panes());
  range_model_ = new OpStatsModel(this);
  auto* range_proxy = new QSortFilterProxyModel(this);
  range_proxy->setSourceModel(range_model_);
  range_proxy->setSortRole(kSortRole);
  auto* range_table = MakeModelTable(range_proxy, range);
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
    if (slice.isValid()) this->host().JumpToSlice(slice.toUInt());
  });
  connect(&range_watcher_, &QFutureWatcher<analysis::OpStats>::finished, this, &RangePane::ShowRangeStats);
  connect(host.timeline(), &TimelineView::rangeSelected, this, &RangePane::ComputeRangeStats);
  set_widget(range);
}

void RangePane::ShowRangeStats() {
  const analysis::OpStats result = range_watcher_.result();
  const auto selected = host().timeline()->selected_range();
  range_caption_->setText(
      tr("%1 to %2 (%3): %4 slices, %5 op types; host busy %6, device busy %7")
          .arg(QString::fromStdString(FormatDurationSignificant(selected ? static_cast<double>(selected->first) : 0)),
               QString::fromStdString(FormatDurationSignificant(selected ? static_cast<double>(selected->second) : 0)),
               QString::fromStdString(FormatDurationSignificant(static_cast<double>(result.window_ns))))
          .arg(result.slices)
          .arg(result.by_op_type.size())
          .arg(QString::fromStdString(FormatDurationSignificant(static_cast<double>(result.host_busy_ns))),
               QString::fromStdString(FormatDurationSignificant(static_cast<double>(result.device_busy_ns)))));
  range_model_->SetRows(result.by_op_type);
}

void RangePane::ComputeRangeStats(int64_t begin_ns, int64_t end_ns) {
  range_caption_->setText(tr("Computing statistics for %1 ...")
                              .arg(QString::fromStdString(FormatDurationSignificant(static_cast<double>(end_ns - begin_ns)))));
  host().ShowPane(kId);
  std::shared_ptr<const TraceDocument> document = host().shared_document();
  // setFuture() forgets the previous job: a stale result never reaches the table.
  range_watcher_.setFuture(QtConcurrent::run([document, begin_ns, end_ns] {
    analysis::OpStatsOptions options;
    options.begin_ns = begin_ns;
    options.end_ns = end_ns;
    return analysis::ComputeOpStats(document->trace(), options);
  }));
}

QString RangePane::range_caption() const { return range_caption_->text(); }

}  // namespace stepscope::viewer
