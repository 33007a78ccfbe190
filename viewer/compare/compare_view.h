// The comparison of two runs (`stepscope-view A... --vs B...`, File > Compare With...): the step
// of side A on top, the step of side B below, aligned on the steps' starts (a step start sits at
// the same x on both) and zoomed and panned together; slices tinted by the change of their op
// (comparison.h); below them the diff's table in the CLI's order (impact on the step), whose rows,
// activated (double-click, Enter), select that op's longest slice in each side's step and zoom
// both timelines onto them.
//
// Each side has its own TimeAxis in its own trace time; the two are linked with the offset
// between the chosen steps' starts (B time = A time + offset), and both are limited to the union
// of the two traces in that aligned time, so a zoom or pan of either is applied to the other
// exactly.
#pragma once

#include <QWidget>
#include <array>
#include <memory>

#include "viewer/compare/comparison.h"

class QComboBox;
class QLabel;
class QTableWidget;
class QVBoxLayout;

namespace stepscope::viewer {

class TimeAxis;
class TimelineView;

class CompareView : public QWidget {
  Q_OBJECT

 public:
  enum Column { kName, kOpType, kWhere, kMedianA, kMedianB, kDelta, kInterval, kChange, kQ, kVerdict, kColumns };

  // `a` and `b`: the documents of steps_a[step_a] and steps_b[step_b], already opened.
  CompareView(std::shared_ptr<const Comparison> comparison, size_t step_a, StepDocument a, size_t step_b,
              StepDocument b, QWidget* parent = nullptr);
  ~CompareView() override;

  const Comparison& comparison() const { return *comparison_; }
  // Side 0 is A (top), side 1 is B.
  TimelineView* timeline(int side) const { return timelines_[side]; }
  TimeAxis* axis(int side) const { return axes_[side]; }
  const StepDocument& side(int side) const { return sides_[side]; }
  size_t step_index(int side) const { return steps_[side]; }
  // B's trace time minus A's for the same aligned instant: begin of B's step - begin of A's.
  double offset_ns() const { return static_cast<double>(sides_[1].begin_ns - sides_[0].begin_ns); }

  // Shows another step on a side (an index into steps_a or steps_b); reads its file.
  Status ShowStep(int side, size_t step);

  DiffTable table() const { return table_; }
  void SetTable(DiffTable table);
  TintLevel tint_level() const { return tint_; }
  void SetTintLevel(TintLevel level);
  QTableWidget* diff_table() const { return diff_table_; }
  // The row of the diff (an index into RowsOf(diff, table())) a table row shows.
  size_t DiffRowOf(int table_row) const;
  // What activating a table row does: selects the op's longest slice in each side's step (on B
  // the same node as on A when it ran there), outlines its other slices there and fits both
  // selected slices into view.
  void ActivateRow(int table_row);
  // The slice of the other side that stands for `slice` of `side`: the same name, its same
  // occurrence in the step (the k-th of that name in start order); -1 when there is none. A slice
  // selected on one side (a click) selects it on the other.
  int64_t Counterpart(int side, uint32_t slice) const;
  // The tooltip line of a slice: its diff row, both medians, the change and the verdict.
  QString SliceNote(int side, uint32_t slice) const;
  QString caption() const;

 signals:
  void statusMessage(const QString& message);

 private:
  void BuildTimelines();
  void FillTable();
  void ApplyTints();
  void LinkAxes(int from);

  std::shared_ptr<const Comparison> comparison_;
  std::array<StepDocument, 2> sides_;
  std::array<size_t, 2> steps_{};
  std::array<TimeAxis*, 2> axes_{};
  std::array<TimelineView*, 2> timelines_{};
  std::array<QVBoxLayout*, 2> timeline_slots_{};
  std::array<QComboBox*, 2> step_choice_{};
  bool linking_ = false;
  bool selecting_ = false;  // a selection made by the view itself: not mirrored again
  std::unique_ptr<DiffRowFinder> finder_;
  DiffTable table_ = DiffTable::kOpType;
  TintLevel tint_ = TintLevel::kNode;
  QComboBox* table_choice_;
  QComboBox* tint_choice_;
  QLabel* caption_;
  QTableWidget* diff_table_;
};

}  // namespace stepscope::viewer
