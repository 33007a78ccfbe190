// The op statistics table model (op_stats_model.h): formatted text, raw numbers for sorting.
#include "viewer/models/op_stats_model.h"

#include "base/display_names.h"
#include "base/units.h"
#include "viewer/models/roles.h"

namespace stepscope::viewer {

OpStatsModel::OpStatsModel(QObject* parent) : QAbstractTableModel(parent) {}

void OpStatsModel::SetRows(std::vector<analysis::OpStatsRow> rows) {
  beginResetModel();
  rows_ = std::move(rows);
  // Kernels are told apart among themselves; other rows (op types, scopes) keep their names.
  std::vector<std::string> kernels;
  for (const auto& row : rows_) {
    if (row.kind == "kernel") kernels.push_back(row.name);
  }
  const std::vector<std::string> shown = DistinctShortKernelNames(kernels);
  short_names_.clear();
  short_names_.reserve(rows_.size());
  size_t k = 0;
  for (const auto& row : rows_) {
    short_names_.push_back(QString::fromStdString(row.kind == "kernel" ? shown[k++] : row.name));
  }
  endResetModel();
}

void OpStatsModel::SetFullNames(bool full) {
  if (full == full_names_) return;
  full_names_ = full;
  if (!rows_.empty()) emit dataChanged(index(0, kName), index(rowCount() - 1, kName), {Qt::DisplayRole});
}

int OpStatsModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int OpStatsModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : kColumnCount;
}

QVariant OpStatsModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid)) return {};
  const analysis::OpStatsRow& row = rows_[static_cast<size_t>(index.row())];
  if (role == kSliceRole) return QVariant::fromValue(row.longest_slice);
  const int column = index.column();
  if (role == Qt::TextAlignmentRole) {
    return column >= kCount ? int(Qt::AlignRight | Qt::AlignVCenter) : int(Qt::AlignLeft | Qt::AlignVCenter);
  }
  auto duration = [&](double ns) -> QVariant {
    if (role == kSortRole) return ns;
    return QString::fromStdString(FormatDurationSignificant(ns));
  };
  if (role != Qt::DisplayRole && role != kSortRole && role != Qt::ToolTipRole) return {};
  switch (column) {
    case kName:
      if (role == Qt::DisplayRole && !full_names_) return short_names_[static_cast<size_t>(index.row())];
      return QString::fromStdString(row.name);
    case kOpType: return QString::fromStdString(row.op_type);
    case kWhere: return QString::fromStdString(row.where);
    case kCount: return QVariant::fromValue<qint64>(row.count);
    case kTotal: return duration(static_cast<double>(row.total_ns));
    case kSelf: return duration(static_cast<double>(row.self_ns));
    case kMean: return duration(row.mean_ns);
    case kMin: return duration(static_cast<double>(row.min_ns));
    case kMax: return duration(static_cast<double>(row.max_ns));
    case kP50: return duration(row.p50_ns);
    case kP95: return duration(row.p95_ns);
    case kShare:
      if (role == kSortRole) return row.share;
      return QString::number(row.share * 100.0, 'f', 1) + QStringLiteral(" %");
    default: return {};
  }
}

QVariant OpStatsModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  static const char* const kNames[kColumnCount] = {"Name", "Op type", "Where", "Count", "Total",
                                                   "Self", "Mean", "Min", "Max", "p50", "p95",
                                                   "Share"};
  if (section < 0 || section >= kColumnCount) return {};
  return tr(kNames[section]);
}

}  // namespace stepscope::viewer
