// The range pane (range_pane.h): analysis::ComputeOpStats over the selected area (its range, on
// its tracks), run with QtConcurrent, or the statistics of the Ctrl+clicked slices, shown by
// OpStatsModel one row per name.
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
  range_caption_ = new QLabel(tr("Shift+drag over some rows of the timeline (or drag on the ruler) to select an "
                                 "area, or Ctrl+click slices: their statistics per name show here."),
                              range);
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
  connect(host.timeline(), &TimelineView::selectionChanged, this, &RangePane::ShowSelectedSlices);
  set_widget(range);
}

void RangePane::ShowRangeStats() {
  // Ctrl+clicked slices replaced the area while it was computed.
  if (!host().timeline()->selection().slices().empty()) return;
  const analysis::OpStats result = range_watcher_.result();
  const auto selected = host().timeline()->selected_range();
  range_caption_->setText(
      tr("%1 to %2 (%3)%8: %4 slices, %5 names; host busy %6, device busy %7")
          .arg(QString::fromStdString(FormatDurationSignificant(selected ? static_cast<double>(selected->first) : 0)),
               QString::fromStdString(FormatDurationSignificant(selected ? static_cast<double>(selected->second) : 0)),
               QString::fromStdString(FormatDurationSignificant(static_cast<double>(result.window_ns))))
          .arg(result.slices)
          .arg(result.by_node.size())
          .arg(QString::fromStdString(FormatDurationSignificant(static_cast<double>(result.host_busy_ns))),
               QString::fromStdString(FormatDurationSignificant(static_cast<double>(result.device_busy_ns))))
          .arg(range_tracks_ == 0 ? QString() : tr(" on %n track(s)", nullptr, range_tracks_)));
  range_model_->SetRows(result.by_node);
}

void RangePane::ComputeRangeStats(int64_t begin_ns, int64_t end_ns) {
  range_caption_->setText(tr("Computing statistics for %1 ...")
                              .arg(QString::fromStdString(FormatDurationSignificant(static_cast<double>(end_ns - begin_ns)))));
  host().ShowPane(kId);
  std::shared_ptr<const TraceDocument> document = host().shared_document();
  // The area's tracks when this range is the timeline's area (a Shift+drag over some rows).
  std::vector<uint32_t> tracks;
  const auto& area = host().timeline()->selection().area();
  if (area && area->begin_ns == begin_ns && area->end_ns == end_ns) tracks = area->tracks;
  range_tracks_ = static_cast<int>(tracks.size());
  // setFuture() forgets the previous job: a stale result never reaches the table.
  range_watcher_.setFuture(QtConcurrent::run([document, begin_ns, end_ns, tracks] {
    analysis::OpStatsOptions options;
    options.begin_ns = begin_ns;
    options.end_ns = end_ns;
    options.tracks = tracks;
    return analysis::ComputeOpStats(document->trace(), options);
  }));
}

void RangePane::ShowSelectedSlices() {
  const std::vector<uint32_t>& slices = host().timeline()->selection().slices();
  if (slices.empty()) return;  // an area is shown by ComputeRangeStats
  const trace::Trace& trace = host().document().trace();
  std::vector<analysis::OpStatsRow> rows = SliceSetStats(trace, slices);
  int64_t total = 0;
  for (const auto& row : rows) total += row.total_ns;
  range_caption_->setText(tr("%n selected slice(s) (Ctrl+click adds or removes one), %1 in all, %2 names", nullptr,
                             static_cast<int>(slices.size()))
                              .arg(QString::fromStdString(FormatDurationSignificant(static_cast<double>(total))))
                              .arg(rows.size()));
  range_model_->SetRows(std::move(rows));
  host().ShowPane(kId);
}

QString RangePane::range_caption() const { return range_caption_->text(); }

}  // namespace stepscope::viewer
