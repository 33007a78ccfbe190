// The comparison view (compare_view.h): two timelines zoomed together over the diff's table.
#include "viewer/compare/compare_view.h"

#include <QApplication>
#include <QComboBox>
#include <QDir>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>

#include "base/units.h"
#include "viewer/timeline/time_axis.h"
#include "viewer/timeline/timeline_view.h"

namespace stepscope::viewer {
namespace {

QString Duration(double ns) { return QString::fromStdString(FormatDurationSignificant(ns)); }
QString Signed(double ns) { return (ns < 0 ? QStringLiteral("-") : QStringLiteral("+")) + Duration(std::fabs(ns)); }
QString Percent(double change) { return QStringLiteral("%1%2%").arg(change < 0 ? "" : "+").arg(100 * change, 0, 'f', 1); }
QString Hex(uint32_t rgb) { return QStringLiteral("#%1").arg(rgb, 6, 16, QLatin1Char('0')); }

// "step 3: run0/lstm_small_step3.pb, 185.6 ms"
QString StepLabel(const analysis::Step& step) {
  const QFileInfo file(QString::fromStdString(step.source.substr(0, step.source.find(", "))));
  QString where = file.dir().dirName() + "/" + file.fileName();
  if (step.marker != "trace" && step.marker != "ranks merged") where += " " + QString::fromStdString(step.marker);
  if (step.marker == "ranks merged") where += QObject::tr(" (ranks merged)");
  return QObject::tr("step %1: %2, %3").arg(step.step).arg(where, Duration(static_cast<double>(step.duration_ns)));
}

QString Legend() {
  analysis::RunDiffRow row;
  QString html;
  for (const char* verdict : {"regressed", "improved", "unchanged", "inconclusive", "new", "gone"}) {
    row.verdict = verdict;
    row.change = 0.3;
    html += QStringLiteral("<span style='background:%1'>&nbsp;&nbsp;&nbsp;&nbsp;</span>&nbsp;%2&nbsp;&nbsp;")
                .arg(Hex(VerdictColor(row)), QString::fromLatin1(verdict));
  }
  return html;
}

}  // namespace

CompareView::CompareView(std::shared_ptr<const Comparison> comparison, size_t step_a, StepDocument a, size_t step_b,
                         StepDocument b, QWidget* parent)
    : QWidget(parent), comparison_(std::move(comparison)), sides_{std::move(a), std::move(b)}, steps_{step_a, step_b} {
  auto* splitter = new QSplitter(Qt::Vertical, this);
  auto* stage = new QWidget(splitter);
  auto* stage_layout = new QVBoxLayout(stage);
  stage_layout->setContentsMargins(0, 0, 0, 0);
  stage_layout->setSpacing(2);
  for (int s = 0; s < 2; ++s) {
    const auto& steps = s == 0 ? comparison_->steps_a : comparison_->steps_b;
    auto* header = new QHBoxLayout;
    header->setContentsMargins(6, 2, 6, 0);
    auto* name = new QLabel(s == 0 ? tr("<b>A</b> (before)") : tr("<b>B</b> (after)"), stage);
    step_choice_[s] = new QComboBox(stage);
    for (const analysis::Step& step : steps) step_choice_[s]->addItem(StepLabel(step));
    step_choice_[s]->setCurrentIndex(static_cast<int>(steps_[s]));
    step_choice_[s]->setToolTip(tr("The step this side shows; the two are aligned on their starts"));
    header->addWidget(name);
    header->addWidget(step_choice_[s], 1);
    if (s == 0) {
      auto* legend = new QLabel(Legend(), stage);
      header->addWidget(legend);
    }
    stage_layout->addLayout(header);
    timeline_slots_[s] = new QVBoxLayout;
    stage_layout->addLayout(timeline_slots_[s], 1);
    connect(step_choice_[s], &QComboBox::currentIndexChanged, this, [this, s](int index) {
      if (index < 0 || static_cast<size_t>(index) == steps_[s]) return;
      QApplication::setOverrideCursor(Qt::WaitCursor);
      const Status status = ShowStep(s, static_cast<size_t>(index));
      QApplication::restoreOverrideCursor();
      if (!status.ok()) emit statusMessage(QString::fromStdString(status.message()));
    });
  }

  auto* pane = new QWidget(splitter);
  auto* bar = new QHBoxLayout;
  table_choice_ = new QComboBox(pane);
  table_choice_->addItems({tr("op types"), tr("nodes"), tr("kernels")});
  tint_choice_ = new QComboBox(pane);
  tint_choice_->addItems({tr("tint by op type"), tr("tint by node")});
  tint_choice_->setCurrentIndex(tint_ == TintLevel::kNode ? 1 : 0);
  tint_choice_->setToolTip(tr("Which row of the diff colours a slice (kernels always by their kernel row)"));
  caption_ = new QLabel(pane);
  caption_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  caption_->setWordWrap(true);
  bar->addWidget(table_choice_);
  bar->addWidget(tint_choice_);
  bar->addWidget(caption_, 1);
  diff_table_ = new QTableWidget(0, kColumns, pane);
  diff_table_->setHorizontalHeaderLabels({tr("Name"), tr("Op type"), tr("Where"), tr("A median/step"),
                                          tr("B median/step"), tr("Delta"), tr("95% CI of delta"), tr("Change"),
                                          tr("q"), tr("Verdict")});
  diff_table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  diff_table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  diff_table_->setSelectionMode(QAbstractItemView::SingleSelection);
  diff_table_->verticalHeader()->hide();
  diff_table_->verticalHeader()->setDefaultSectionSize(20);
  diff_table_->horizontalHeader()->setStretchLastSection(true);
  auto* pane_layout = new QVBoxLayout(pane);
  pane_layout->setContentsMargins(4, 4, 4, 4);
  pane_layout->addLayout(bar);
  pane_layout->addWidget(diff_table_);
  connect(table_choice_, &QComboBox::currentIndexChanged, this,
          [this](int index) { SetTable(static_cast<DiffTable>(std::clamp(index, 0, 2))); });
  connect(tint_choice_, &QComboBox::currentIndexChanged, this,
          [this](int index) { SetTintLevel(index == 1 ? TintLevel::kNode : TintLevel::kOpType); });
  connect(diff_table_, &QTableWidget::activated, this, [this](const QModelIndex& index) { ActivateRow(index.row()); });

  splitter->setStretchFactor(0, 3);
  splitter->setStretchFactor(1, 2);
  splitter->setSizes({620, 380});
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(splitter);

  BuildTimelines();
  FillTable();
}

CompareView::~CompareView() = default;

void CompareView::BuildTimelines() {
  // Both axes cover the union of the two traces in aligned time (A's), each in its own time.
  const double offset = offset_ns();
  const trace::Trace& a = sides_[0].document->trace();
  const trace::Trace& b = sides_[1].document->trace();
  const double begin = std::min(static_cast<double>(a.span_begin_ns()), static_cast<double>(b.span_begin_ns()) - offset);
  const double end = std::max(static_cast<double>(a.span_end_ns()), static_cast<double>(b.span_end_ns()) - offset);
  for (int s = 0; s < 2; ++s) {
    if (timelines_[s] != nullptr) {
      timeline_slots_[s]->removeWidget(timelines_[s]);
      delete timelines_[s];
      delete axes_[s];
    }
    const double shift = s == 0 ? 0 : offset;
    axes_[s] = new TimeAxis(begin + shift, end + shift, this);
    timelines_[s] = new TimelineView(sides_[s].document, axes_[s], this);
    timeline_slots_[s]->addWidget(timelines_[s]);
    connect(axes_[s], &TimeAxis::changed, this, [this, s] { LinkAxes(s); });
    timelines_[s]->SetSliceNote([this, s](uint32_t slice) { return SliceNote(s, slice); });
    connect(timelines_[s], &TimelineView::sliceSelected, this, [this, s](int64_t slice) {
      if (slice < 0) return;
      if (!selecting_) {
        // The same op on the other side.
        const int64_t other = Counterpart(s, static_cast<uint32_t>(slice));
        selecting_ = true;
        if (other >= 0) {
          timelines_[1 - s]->RevealSlice(static_cast<uint32_t>(other));
        } else {
          timelines_[1 - s]->ClearSelection();
        }
        selecting_ = false;
      }
      const trace::Trace& trace = sides_[s].document->trace();
      const trace::Slice& info = trace.slices()[static_cast<size_t>(slice)];
      emit statusMessage(tr("%1: %2 (%3), %4")
                             .arg(s == 0 ? "A" : "B", QString::fromUtf8(trace.str(trace.slice_name(info))),
                                  QString::fromUtf8(trace.str(trace.slice_op_type(info))),
                                  Duration(static_cast<double>(info.dur_ns))));
    });
  }
  // Show the longer of the two steps from their common start.
  const double longest = static_cast<double>(std::max(sides_[0].end_ns - sides_[0].begin_ns,
                                                      sides_[1].end_ns - sides_[1].begin_ns));
  const double margin = std::max(longest, 1.0) * 0.02;
  const double start = static_cast<double>(sides_[0].begin_ns);
  axes_[0]->SetRange(start - margin, start + longest + margin);
  LinkAxes(0);
  ApplyTints();
}

void CompareView::LinkAxes(int from) {
  if (linking_) return;
  linking_ = true;
  const double shift = from == 0 ? offset_ns() : -offset_ns();
  axes_[1 - from]->SetRange(axes_[from]->begin_ns() + shift, axes_[from]->end_ns() + shift);
  linking_ = false;
}

Status CompareView::ShowStep(int side, size_t step) {
  const auto& steps = side == 0 ? comparison_->steps_a : comparison_->steps_b;
  if (step >= steps.size()) return InvalidInput("no step " + std::to_string(step) + " on this side");
  ASSIGN_OR_RETURN(StepDocument opened, OpenStepDocument(steps[step]));
  sides_[side] = std::move(opened);
  steps_[side] = step;
  step_choice_[side]->blockSignals(true);
  step_choice_[side]->setCurrentIndex(static_cast<int>(step));
  step_choice_[side]->blockSignals(false);
  BuildTimelines();
  return Status::Ok();
}

void CompareView::ApplyTints() {
  finder_ = std::make_unique<DiffRowFinder>(comparison_->diff, tint_);
  for (int s = 0; s < 2; ++s) {
    timelines_[s]->SetSliceColors(SliceTints(*sides_[s].document, comparison_->diff, tint_));
  }
}

void CompareView::SetTable(DiffTable table) {
  table_ = table;
  table_choice_->blockSignals(true);
  table_choice_->setCurrentIndex(static_cast<int>(table));
  table_choice_->blockSignals(false);
  FillTable();
}

void CompareView::SetTintLevel(TintLevel level) {
  tint_ = level;
  tint_choice_->blockSignals(true);
  tint_choice_->setCurrentIndex(level == TintLevel::kNode ? 1 : 0);
  tint_choice_->blockSignals(false);
  ApplyTints();
}

void CompareView::FillTable() {
  const analysis::RunDiff& diff = comparison_->diff;
  const std::vector<analysis::RunDiffRow>& rows = RowsOf(diff, table_);
  diff_table_->setRowCount(0);
  diff_table_->setRowCount(static_cast<int>(rows.size()));
  int counts[6] = {};
  for (size_t i = 0; i < rows.size(); ++i) {
    const analysis::RunDiffRow& r = rows[i];
    const bool confident = r.verdict == "regressed" || r.verdict == "improved";
    const QStringList cells = {QString::fromStdString(r.name),
                               QString::fromStdString(r.op_type),
                               QString::fromStdString(r.where),
                               Duration(r.median_a),
                               Duration(r.median_b),
                               Signed(r.delta_ns),
                               diff.confident ? QStringLiteral("[%1, %2]").arg(Signed(r.ci_low_ns), Signed(r.ci_high_ns))
                                              : QString(),
                               r.median_a != 0 ? Percent(r.change) : QString(),
                               diff.confident ? QString::number(r.q, 'g', 2) : QString(),
                               QString::fromStdString(r.verdict)};
    for (int column = 0; column < kColumns; ++column) {
      auto* item = new QTableWidgetItem(cells[column]);
      if (column >= kMedianA && column <= kQ) item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
      if (column == kName) item->setData(Qt::UserRole, static_cast<qulonglong>(i));
      if (column == kVerdict) {
        item->setBackground(QColor::fromRgb(VerdictColor(r)));
        if (confident && std::fabs(r.change) > 0.3) item->setForeground(Qt::white);
      }
      diff_table_->setItem(static_cast<int>(i), column, item);
    }
    const char* names[] = {"regressed", "improved", "unchanged", "inconclusive", "new", "gone"};
    for (int k = 0; k < 6; ++k) counts[k] += r.verdict == names[k];
  }
  // An op type row's name is its op type.
  diff_table_->setColumnHidden(kOpType, table_ == DiffTable::kOpType);
  diff_table_->resizeColumnsToContents();
  diff_table_->setColumnWidth(kName, std::min(diff_table_->columnWidth(kName), 360));

  const analysis::RunDiffRow& step = diff.step;
  QString text = tr("A %1 steps of %2 runs, B %3 steps of %4 runs. Step: A median %5, B median %6, %7 (%8)")
                     .arg(diff.steps_a)
                     .arg(diff.runs_a)
                     .arg(diff.steps_b)
                     .arg(diff.runs_b)
                     .arg(Duration(step.median_a), Duration(step.median_b), Signed(step.delta_ns), Percent(step.change));
  if (diff.confident) {
    text += tr(", CI [%1, %2], p %3: %4")
                .arg(Signed(step.ci_low_ns), Signed(step.ci_high_ns))
                .arg(step.p, 0, 'g', 2)
                .arg(QString::fromStdString(step.verdict));
    text += tr(". %1s: %2 regressed, %3 improved, %4 unchanged, %5 inconclusive, %6 new, %7 gone")
                .arg(QString::fromLatin1(DiffTableName(table_)))
                .arg(counts[0])
                .arg(counts[1])
                .arg(counts[2])
                .arg(counts[3])
                .arg(counts[4])
                .arg(counts[5]);
  } else {
    text += tr(". Too few steps for any confidence (smallest possible p %1): no row can be regressed or improved")
                .arg(diff.min_p, 0, 'g', 2);
  }
  caption_->setText(text);
}

QString CompareView::caption() const { return caption_->text(); }

size_t CompareView::DiffRowOf(int table_row) const {
  const QTableWidgetItem* item = diff_table_->item(table_row, kName);
  return item == nullptr ? static_cast<size_t>(-1) : item->data(Qt::UserRole).toULongLong();
}

void CompareView::ActivateRow(int table_row) {
  const size_t row = DiffRowOf(table_row);
  const std::vector<analysis::RunDiffRow>& rows = RowsOf(comparison_->diff, table_);
  if (row >= rows.size()) return;
  std::array<int64_t, 2> chosen = {-1, -1};
  for (int s = 0; s < 2; ++s) {
    const trace::Trace& trace = sides_[s].document->trace();
    const std::vector<uint32_t> slices =
        SlicesOfRow(trace, comparison_->diff, table_, row, sides_[s].begin_ns, sides_[s].end_ns);
    if (slices.empty()) continue;
    chosen[s] = slices.front();
    if (s == 1 && chosen[0] >= 0) {
      // The same node as on A when B ran it too: an op type or kernel row has many slices.
      const trace::Trace& a = sides_[0].document->trace();
      const std::string_view name = a.str(a.slice_name(a.slices()[chosen[0]]));
      for (uint32_t candidate : slices) {
        if (trace.str(trace.slice_name(trace.slices()[candidate])) == name) {
          chosen[s] = candidate;
          break;
        }
      }
    }
  }
  selecting_ = true;
  for (int s = 0; s < 2; ++s) {
    const trace::Trace& trace = sides_[s].document->trace();
    timelines_[s]->ClearSelection();
    timelines_[s]->SetHighlighted(
        SlicesOfRow(trace, comparison_->diff, table_, row, sides_[s].begin_ns, sides_[s].end_ns));
  }
  selecting_ = false;
  // Fit both slices (in aligned time) into view, then select each.
  double begin = 0, end = 0;
  bool any = false;
  for (int s = 0; s < 2; ++s) {
    if (chosen[s] < 0) continue;
    const trace::Slice& info = sides_[s].document->trace().slices()[static_cast<size_t>(chosen[s])];
    const double shift = s == 0 ? 0 : offset_ns();
    const double b = static_cast<double>(info.start_ns) - shift, e = static_cast<double>(info.end_ns()) - shift;
    begin = any ? std::min(begin, b) : b;
    end = any ? std::max(end, e) : e;
    any = true;
  }
  if (any) {
    const double span = std::max(end - begin, 1000.0);
    axes_[0]->SetRange(begin - span * 0.25, end + span * 0.25);
    selecting_ = true;
    for (int s = 0; s < 2; ++s) {
      if (chosen[s] >= 0) timelines_[s]->RevealSlice(static_cast<uint32_t>(chosen[s]));
    }
    selecting_ = false;
  }
  const analysis::RunDiffRow& r = rows[row];
  emit statusMessage(tr("%1 %2: A %3, B %4 per step (%5): %6")
                         .arg(QString::fromLatin1(DiffTableName(table_)), QString::fromStdString(r.name),
                              Duration(r.median_a), Duration(r.median_b), Percent(r.change),
                              QString::fromStdString(r.verdict)));
}

int64_t CompareView::Counterpart(int side, uint32_t slice) const {
  const trace::Trace& from = sides_[side].document->trace();
  const trace::Trace& to = sides_[1 - side].document->trace();
  if (slice >= from.slices().size()) return -1;
  const std::string_view name = from.str(from.slice_name(from.slices()[slice]));
  // The k-th slice of that name in the step, in start order (then by index: a stable order).
  auto named = [&](const trace::Trace& trace, const StepDocument& step) {
    std::vector<uint32_t> out;
    for (uint32_t i = 0; i < trace.slices().size(); ++i) {
      const trace::Slice& s = trace.slices()[i];
      if (s.duplicate() || s.end_ns() < step.begin_ns || s.start_ns > step.end_ns) continue;
      if (trace.str(trace.slice_name(s)) == name) out.push_back(i);
    }
    std::stable_sort(out.begin(), out.end(),
                     [&](uint32_t x, uint32_t y) { return trace.slices()[x].start_ns < trace.slices()[y].start_ns; });
    return out;
  };
  const std::vector<uint32_t> mine = named(from, sides_[side]);
  const auto at = std::find(mine.begin(), mine.end(), slice);
  if (at == mine.end()) return -1;
  const std::vector<uint32_t> theirs = named(to, sides_[1 - side]);
  const size_t k = static_cast<size_t>(at - mine.begin());
  return k < theirs.size() ? static_cast<int64_t>(theirs[k]) : -1;
}

QString CompareView::SliceNote(int side, uint32_t slice) const {
  if (finder_ == nullptr) return {};
  const auto match = finder_->Find(sides_[side].document->trace(), slice);
  if (!match) return tr("not compared (no op of the diff)");
  const analysis::RunDiffRow& r = RowsOf(comparison_->diff, match->table)[match->row];
  return tr("%1 %2: A %3, B %4 per step, %5: <b>%6</b>")
      .arg(QString::fromLatin1(DiffTableName(match->table)), QString::fromStdString(r.name).toHtmlEscaped(),
           Duration(r.median_a), Duration(r.median_b), r.median_a != 0 ? Percent(r.change) : Signed(r.delta_ns),
           QString::fromStdString(r.verdict));
}

}  // namespace stepscope::viewer
