// The tensors live at one instant of an allocator's timeline (analysis::LiveTensorsAt), largest
// first: name, bytes, producing op and lifetime. kSliceRole is the producer's slice.
#pragma once

#include <QAbstractTableModel>
#include <vector>

#include "profiler/analysis/memory_timeline.h"

namespace stepscope::viewer {

class LiveTensorModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column { kName, kBytes, kAllocated, kProducerOp, kAllocAt, kFreeAt, kColumnCount };

  explicit LiveTensorModel(QObject* parent = nullptr);

  void SetTensors(std::vector<analysis::LiveTensor> tensors);
  const std::vector<analysis::LiveTensor>& tensors() const { return tensors_; }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  std::vector<analysis::LiveTensor> tensors_;
};

}  // namespace stepscope::viewer
