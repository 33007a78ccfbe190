// The statistics pane (stats_pane.h): analysis::ComputeOpStats laid out by OpStatsModel.
#include "viewer/panes/stats_pane.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QSortFilterProxyModel>
#include <QTabWidget>
#include <QTableView>
#include <QVBoxLayout>

#include "base/units.h"
#include "viewer/load/document.h"
#include "viewer/models/csv.h"
#include "viewer/models/op_stats_model.h"
#include "viewer/models/roles.h"
#include "viewer/panes/document_analysis.h"
#include "viewer/panes/efficiency_summary.h"
#include "viewer/panes/empty_hint.h"
#include "viewer/panes/pane_widgets.h"

namespace stepscope::viewer {

StatsPane::StatsPane(PaneHost& host, QObject* parent) : Pane(host, parent) {
  auto* stats = new QWidget(host.panes());
  stats_model_ = new OpStatsModel(this);
  stats_proxy_ = new QSortFilterProxyModel(this);
  stats_proxy_->setSourceModel(stats_model_);
  stats_proxy_->setSortRole(kSortRole);
  stats_proxy_->setFilterKeyColumn(-1);
  stats_proxy_->setFilterCaseSensitivity(Qt::CaseInsensitive);
  stats_table_ = MakeModelTable(stats_proxy_, stats);
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
  efficiency_caption_ = new QLabel(stats);
  efficiency_caption_->setWordWrap(true);
  efficiency_caption_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  efficiency_caption_->hide();  // until the analysis gives figures
  auto* stats_layout = new QVBoxLayout(stats);
  stats_layout->setContentsMargins(2, 2, 2, 2);
  stats_layout->addLayout(stats_bar);
  stats_layout->addWidget(efficiency_caption_);
  stats_layout->addWidget(stats_table_);
  connect(stats_granularity_, &QComboBox::currentIndexChanged, this, [this] { FillStatsTable(); });
  connect(stats_filter_, &QLineEdit::textChanged, stats_proxy_, &QSortFilterProxyModel::setFilterFixedString);
  connect(stats_table_, &QTableView::doubleClicked, this, [this](const QModelIndex& index) {
    const QVariant slice = index.data(kSliceRole);
    if (slice.isValid()) this->host().JumpToSlice(slice.toUInt());
  });
  // Empty while the statistics are computed, or when the filter matches no row.
  new EmptyHint(stats_table_, tr("No op matches the filter (or the statistics are still being computed)."));
  set_widget(stats);
}

void StatsPane::Analyse(const TraceDocument& document, DocumentAnalysis& into) {
  into.op_stats = analysis::ComputeOpStats(document.trace());
}

void StatsPane::ShowAnalysis(const std::shared_ptr<const DocumentAnalysis>& result) {
  analysis_ = result;
  // The roofline pane's analysis (the report of `stepscope efficiency`), summed up here.
  efficiency_caption_->setText(EfficiencySummary(result->efficiency));
  efficiency_caption_->setVisible(!efficiency_caption_->text().isEmpty());
  FillStatsTable();
}

QString StatsPane::efficiency_summary() const { return efficiency_caption_->text(); }

void StatsPane::FillStatsTable() {
  if (analysis_ == nullptr) return;
  const bool by_node = stats_granularity_->currentIndex() == 1;
  const analysis::OpStats& stats = analysis_->op_stats;
  stats_model_->SetRows(by_node ? stats.by_node : stats.by_op_type);
  stats_caption_->setText(tr("%1 slices over %2")
                              .arg(stats.slices)
                              .arg(QString::fromStdString(FormatDurationSignificant(static_cast<double>(stats.window_ns)))));
}

void StatsPane::SetStatsByNode(bool by_node) { stats_granularity_->setCurrentIndex(by_node ? 1 : 0); }

void StatsPane::SetStatsFilter(const QString& text) { stats_filter_->setText(text); }

QString StatsPane::StatsCsv() const { return TableToCsv(*stats_proxy_); }

}  // namespace stepscope::viewer
