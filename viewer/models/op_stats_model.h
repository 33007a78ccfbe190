// Op statistics (per op type or per node, from analysis::ComputeOpStats) as a table model.
// Display text is formatted ("1.250 ms", "12.5 %"); kSortRole carries the raw number so a
// QSortFilterProxyModel sorts numerically and the CSV export writes numbers; kSliceRole is the
// longest slice of the row, where a double-click jumps.
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

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  std::vector<analysis::OpStatsRow> rows_;
};

}  // namespace stepscope::viewer
