// The GPU attribution pane (attribution_pane.h): analysis::ComputeAnnotationTime and
// ComputeKernelPatterns laid out in a tree and a table. The figures are the analyses' own.
#include "viewer/panes/attribution_pane.h"

#include <QHeaderView>
#include <QLabel>
#include <QSplitter>
#include <QTabWidget>
#include <QTableWidget>
#include <QTreeWidget>
#include <QVBoxLayout>
#include <algorithm>

#include "viewer/load/document.h"
#include "viewer/models/roles.h"
#include "viewer/panes/document_analysis.h"
#include "viewer/panes/empty_hint.h"
#include "viewer/panes/pane_widgets.h"

namespace stepscope::viewer {

AttributionPane::AttributionPane(PaneHost& host, QObject* parent) : Pane(host, parent) {
  auto* pane = new QWidget(host.panes());
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
  new EmptyHint(annotation_tree_, tr("Annotations (NVTX ranges, record_function, name scopes) enclosing GPU work "
                                     "would be listed here with the GPU time they launch."));
  new EmptyHint(pattern_table_, tr("Kernel sequences that repeat (the same kernels launched in the same order) "
                                   "would be listed here."));
  set_widget(pane);
}

void AttributionPane::Analyse(const TraceDocument& document, DocumentAnalysis& into) {
  const std::vector<analysis::GpuInput> inputs = {{&document.trace(), {}}};
  into.annotations = analysis::ComputeAnnotationTime(inputs);
  into.kernel_patterns = analysis::ComputeKernelPatterns(inputs);
}

void AttributionPane::ShowAnalysis(const std::shared_ptr<const DocumentAnalysis>& result) {
  const analysis::AnnotationReport& r = result->annotations;
  const analysis::KernelPatternReport& k = result->kernel_patterns;
  attribution_caption_->setText(
      tr("GPU work %1 (%2): outside every annotation %3 (%4), not attributed (no annotation on its stream, "
         "launch unknown) %5 (%6). "
         "Kernel sequences of %7 among %8 kernels: %9 occur at least twice.")
          .arg(r.work).arg(DurationText(r.gpu_ns))
          .arg(r.unannotated_work).arg(DurationText(r.unannotated_gpu_ns))
          .arg(r.unlinked_work).arg(DurationText(r.unlinked_gpu_ns))
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
      item->setText(column, DurationText(ns));
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

}  // namespace stepscope::viewer
