// A call tree (analysis::CallTree, top-down or bottom-up) as a Qt tree model: name, total, self,
// calls and share of the root's total. Display text is formatted; kSortRole carries the raw
// number (a QSortFilterProxyModel sorts each node's children by it); kSliceRole is the node's
// longest slice (top-down trees), where a double-click jumps.
#pragma once

#include <QAbstractItemModel>
#include <memory>
#include <vector>

#include "profiler/analysis/call_tree.h"

namespace stepscope::viewer {

class CallTreeModel : public QAbstractItemModel {
  Q_OBJECT

 public:
  enum Column { kName, kTotal, kSelf, kCalls, kShare, kColumnCount };

  explicit CallTreeModel(QObject* parent = nullptr);

  void SetTree(std::shared_ptr<const analysis::CallTree> tree);
  const analysis::CallTree* tree() const { return tree_.get(); }
  // The node an index shows (0, the root, for an invalid index).
  uint32_t NodeOf(const QModelIndex& index) const;
  QModelIndex IndexOf(uint32_t node, int column = 0) const;

  QModelIndex index(int row, int column, const QModelIndex& parent = {}) const override;
  QModelIndex parent(const QModelIndex& child) const override;
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  std::shared_ptr<const analysis::CallTree> tree_;
  std::vector<uint32_t> row_in_parent_;  // per node, its place among its parent's children
};

}  // namespace stepscope::viewer
