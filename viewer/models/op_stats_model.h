// Op statistics (per op type or per node, from analysis::ComputeOpStats) as a table model.
// Display text is formatted ("1.250 ms", "12.5 %"); kSortRole carries the raw number so a
// QSortFilterProxyModel sorts numerically and the CSV export writes numbers; kSliceRole is the
// longest slice of the row, where a double-click jumps. Kernel rows show their short names
// (DistinctShortKernelNames: rows that would read the same keep their template arguments) unless
// SetFullNames(true); the tooltip and kSortRole (sorting, CSV) hold the whole name.
#pragma once

#include <QAbstractTableModel>
#include <vector>

#include "profiler/analysis/op_stats.h"

namespace stepscope::viewer {

class OpStatsModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column {
    kName, kOpType, kWhere, kCount, kTotal, kSelf, kMean, kMin, kMax, kP50, kP95, kShare,
    kColumnCount
  };

  explicit OpStatsModel(QObject* parent = nullptr);

  void SetRows(std::vector<analysis::OpStatsRow> rows);
  const std::vector<analysis::OpStatsRow>& rows() const { return rows_; }
  void SetFullNames(bool full);
  bool full_names() const { return full_names_; }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  std::vector<analysis::OpStatsRow> rows_;
  std::vector<QString> short_names_;  // per row: the name shown unless full_names_
  bool full_names_ = false;
};

}  // namespace stepscope::viewer
