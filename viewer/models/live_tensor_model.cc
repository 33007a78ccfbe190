// The live tensors table model (live_tensor_model.h).
#include "viewer/models/live_tensor_model.h"

#include <cmath>

#include "base/units.h"
#include "viewer/models/roles.h"

namespace stepscope::viewer {

LiveTensorModel::LiveTensorModel(QObject* parent) : QAbstractTableModel(parent) {}

void LiveTensorModel::SetTensors(std::vector<analysis::LiveTensor> tensors) {
  beginResetModel();
  tensors_ = std::move(tensors);
  endResetModel();
}

int LiveTensorModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(tensors_.size());
}

int LiveTensorModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : kColumnCount;
}

QVariant LiveTensorModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid)) return {};
  const analysis::LiveTensor& tensor = tensors_[static_cast<size_t>(index.row())];
  if (role == kSliceRole) {
    return tensor.producer_slice >= 0 ? QVariant::fromValue(static_cast<uint32_t>(tensor.producer_slice))
                                      : QVariant();
  }
  const int column = index.column();
  if (role == Qt::TextAlignmentRole) {
    return column == kName || column == kProducerOp ? int(Qt::AlignLeft | Qt::AlignVCenter)
                                                    : int(Qt::AlignRight | Qt::AlignVCenter);
  }
  const bool raw = role == kSortRole;
  if (role != Qt::DisplayRole && !raw) return {};
  switch (column) {
    case kName: return QString::fromStdString(tensor.name);
    case kBytes: return raw ? QVariant::fromValue<qint64>(tensor.bytes) : QVariant(QString::fromStdString(FormatBytes(tensor.bytes)));
    case kAllocated:
      if (raw) return QVariant::fromValue<qint64>(tensor.allocated_bytes);
      return tensor.allocated_bytes > 0 ? QString::fromStdString(FormatBytes(tensor.allocated_bytes)) : QString();
    case kProducerOp: return QString::fromStdString(tensor.producer_op);
    case kAllocAt:
      if (raw) return QVariant::fromValue<qint64>(tensor.alloc_ns);
      return QString::fromStdString(FormatDurationSignificant(static_cast<double>(tensor.alloc_ns)));
    case kFreeAt:
      if (raw) return QVariant::fromValue<qint64>(tensor.free_ns);
      return tensor.free_ns < 0 ? tr("(live at end)")
                                : QString::fromStdString(FormatDurationSignificant(static_cast<double>(tensor.free_ns)));
    default: return {};
  }
}

QVariant LiveTensorModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  static const char* const kNames[kColumnCount] = {"Tensor", "Bytes", "Allocated", "Producer op",
                                                   "Allocated at", "Freed at"};
  if (section < 0 || section >= kColumnCount) return {};
  return tr(kNames[section]);
}

}  // namespace stepscope::viewer
