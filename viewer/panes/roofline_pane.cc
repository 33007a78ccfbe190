// The roofline pane (roofline_pane.h): analysis::ComputeEfficiency over the document's trace,
// laid out as a caption, a roofline chart and a table of op types.
#include "viewer/panes/roofline_pane.h"

#include <QHeaderView>
#include <QLabel>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>

#include "base/units.h"
#include "viewer/load/document.h"
#include "viewer/panes/document_analysis.h"
#include "viewer/panes/roofline_chart.h"

namespace stepscope::viewer {
namespace {

// The CLI's figure (base/units.h FormatSi), as a QString.
QString Si(double value, const char* unit) { return QString::fromStdString(FormatSi(value, unit)); }

QString Percent(double share) { return QString::number(100 * share, 'f', 1) + "%"; }

}  // namespace

RooflinePane::RooflinePane(PaneHost& host, QObject* parent) : Pane(host, parent) {
  auto* pane = new QWidget(host.panes());
  caption_ = new QLabel(tr("The roofline is computed after loading"), pane);
  caption_->setWordWrap(true);
  caption_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  chart_ = new RooflineChart(pane);
  connect(chart_, &RooflineChart::pointClicked, this, [this](int point) {
    if (point >= 0 && static_cast<size_t>(point) < point_rows_.size()) SelectRow(static_cast<int>(point_rows_[point]));
  });
  table_ = new QTableWidget(0, kRoofColumns, pane);
  table_->setHorizontalHeaderLabels({tr("Op type"), tr("Count"), tr("Time"), tr("FLOP/s"), tr("FLOP/B"), tr("Bound"),
                                     tr("Of roof"), tr("FLOPs from")});
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->verticalHeader()->hide();
  table_->verticalHeader()->setDefaultSectionSize(20);
  table_->horizontalHeader()->setStretchLastSection(true);
  connect(table_, &QTableWidget::cellDoubleClicked, this, [this](int row, int) { SelectRow(row); });
  auto* splitter = new QSplitter(Qt::Vertical, pane);
  splitter->addWidget(chart_);
  splitter->addWidget(table_);
  splitter->setStretchFactor(0, 2);  // the chart takes most of the height
  splitter->setStretchFactor(1, 1);
  auto* layout = new QVBoxLayout(pane);
  layout->setContentsMargins(4, 4, 4, 4);
  layout->addWidget(caption_);
  layout->addWidget(splitter, 1);
  set_widget(pane);
}

void RooflinePane::Analyse(const TraceDocument& document, DocumentAnalysis& into) {
  // With no --device or --peak, the peak is the trace's own device's; ComputeEfficiency fails
  // only on an unknown --device, which the viewer does not pass.
  auto report = analysis::ComputeEfficiency(document.trace());
  if (report.ok()) into.efficiency = std::move(report).value();
}

QString RooflinePane::caption() const { return caption_->text(); }

void RooflinePane::ShowAnalysis(const std::shared_ptr<const DocumentAnalysis>& result) {
  analysis_ = result;
  const analysis::EfficiencyReport& r = analysis_->efficiency;
  QString text;
  if (!r.has_shapes) {
    text = tr("No shapes recorded: no FLOPs, time only (PyTorch: record_shapes=True).");
  } else if (r.total.mfu) {
    text = tr("MFU %1 over %2 steps (model FLOPs %3 in %4; HFU %5).")
               .arg(Percent(*r.total.mfu))
               .arg(r.total.steps)
               .arg(Si(static_cast<double>(r.total.model_flops), "FLOP"),
                    QString::fromStdString(FormatDuration(r.total.duration_ns)), Percent(r.total.hfu.value_or(0)));
  } else {
    text = tr("Model FLOPs %1 in %2: %3.")
               .arg(Si(static_cast<double>(r.total.model_flops), "FLOP"),
                    QString::fromStdString(FormatDuration(r.total.duration_ns)),
                    Si(std::max(0.0, r.total.model_flops_per_s), "FLOP/s"));
  }
  text += r.peak.known() ? tr(" Peak %1 %2, %3 (%4).")
                               .arg(Si(r.peak.flops_per_s, "FLOP/s"),
                                    QString::fromUtf8(analysis::PrecisionName(r.peak.precision).data()),
                                    r.peak.bytes_per_s > 0 ? Si(r.peak.bytes_per_s, "B/s") : tr("bandwidth unknown"),
                                    QString::fromStdString(r.peak.source))
                         : tr(" Peak unknown: %1 (stepscope efficiency --peak gives one).").arg(QString::fromStdString(r.peak.source));
  for (const std::string& note : r.notes) text += " " + QString::fromStdString(note);
  caption_->setText(text);

  std::vector<RooflinePoint> points;
  point_rows_.clear();
  table_->setRowCount(static_cast<int>(r.ops.size()));
  for (size_t i = 0; i < r.ops.size(); ++i) {
    const analysis::EfficiencyRow& row = r.ops[i];
    const analysis::Achieved& a = row.achieved;
    const int n = static_cast<int>(i);
    auto cell = [&](int column, const QString& value) { table_->setItem(n, column, new QTableWidgetItem(value)); };
    cell(kRoofOpType, QString::fromStdString(row.name));
    cell(kRoofCount, QString::number(row.count));
    cell(kRoofTime, QString::fromStdString(FormatDuration(row.time_ns)));
    cell(kRoofFlops, a.flops_per_s < 0 ? "-" : Si(a.flops_per_s, "FLOP/s"));
    cell(kRoofIntensity, a.intensity < 0 ? "-" : QString::number(a.intensity, 'f', 1));
    cell(kRoofBound, a.bound.empty() ? "-" : QString::fromStdString(a.bound));
    cell(kRoofShare, a.share_of_peak < 0 ? "-" : Percent(a.share_of_peak));
    cell(kRoofSource, QString::fromStdString(row.flops_source));
    // Only what has both coordinates is a point (0 FLOPs or bytes has no place on log axes).
    if (a.intensity > 0 && a.flops_per_s > 0) {
      points.push_back({QString::fromStdString(row.name), a.intensity, a.flops_per_s, row.time_ns});
      point_rows_.push_back(i);
    }
  }
  chart_->SetData(std::move(points), r.peak.flops_per_s, r.peak.bytes_per_s);
}

void RooflinePane::SelectRow(int row) {
  if (!analysis_ || row < 0 || static_cast<size_t>(row) >= analysis_->efficiency.ops.size()) return;
  const analysis::EfficiencyRow& op = analysis_->efficiency.ops[row];
  table_->selectRow(row);
  if (op.longest_slice >= 0) host().JumpToSlice(static_cast<uint32_t>(op.longest_slice));
  host().ShowStatus(tr("%1: %2 ops, %3; the longest selected")
                        .arg(QString::fromStdString(op.name))
                        .arg(op.count)
                        .arg(QString::fromStdString(FormatDuration(op.time_ns))));
}

}  // namespace stepscope::viewer
