// The call tree model (call_tree_model.h): a node's internal id is its index in the tree.
#include "viewer/models/call_tree_model.h"

#include <algorithm>

#include "base/units.h"
#include "viewer/models/roles.h"

namespace stepscope::viewer {

CallTreeModel::CallTreeModel(QObject* parent) : QAbstractItemModel(parent) {}

void CallTreeModel::SetTree(std::shared_ptr<const analysis::CallTree> tree) {
  beginResetModel();
  tree_ = std::move(tree);
  row_in_parent_.assign(tree_ ? tree_->nodes.size() : 0, 0);
  if (tree_) {
    for (uint32_t n = 0; n < tree_->nodes.size(); ++n) {
      const auto children = tree_->children_of(n);
      for (uint32_t k = 0; k < children.size(); ++k) row_in_parent_[children[k]] = k;
    }
  }
  endResetModel();
}

uint32_t CallTreeModel::NodeOf(const QModelIndex& index) const {
  return index.isValid() ? static_cast<uint32_t>(index.internalId()) : 0;
}

QModelIndex CallTreeModel::IndexOf(uint32_t node, int column) const {
  if (!tree_ || node == 0 || node >= tree_->nodes.size()) return {};
  return createIndex(static_cast<int>(row_in_parent_[node]), column, static_cast<quintptr>(node));
}

QModelIndex CallTreeModel::index(int row, int column, const QModelIndex& parent) const {
  if (!tree_ || row < 0 || column < 0 || column >= kColumnCount) return {};
  const auto children = tree_->children_of(NodeOf(parent));
  if (static_cast<size_t>(row) >= children.size()) return {};
  return createIndex(row, column, static_cast<quintptr>(children[static_cast<size_t>(row)]));
}

QModelIndex CallTreeModel::parent(const QModelIndex& child) const {
  if (!tree_ || !child.isValid()) return {};
  const int32_t parent = tree_->nodes[NodeOf(child)].parent;
  return parent <= 0 ? QModelIndex() : IndexOf(static_cast<uint32_t>(parent));
}

int CallTreeModel::rowCount(const QModelIndex& parent) const {
  if (!tree_ || parent.column() > 0) return 0;
  return static_cast<int>(tree_->nodes[NodeOf(parent)].child_count);
}

int CallTreeModel::columnCount(const QModelIndex&) const { return kColumnCount; }

QVariant CallTreeModel::data(const QModelIndex& index, int role) const {
  if (!tree_ || !checkIndex(index, CheckIndexOption::IndexIsValid)) return {};
  const uint32_t node_index = NodeOf(index);
  const analysis::CallTreeNode& node = tree_->nodes[node_index];
  if (role == kSliceRole) {
    return node.longest_slice >= 0 ? QVariant::fromValue(static_cast<uint32_t>(node.longest_slice)) : QVariant();
  }
  const int column = index.column();
  if (role == Qt::TextAlignmentRole) {
    return column == kName ? int(Qt::AlignLeft | Qt::AlignVCenter) : int(Qt::AlignRight | Qt::AlignVCenter);
  }
  if (role != Qt::DisplayRole && role != kSortRole && role != Qt::ToolTipRole) return {};
  auto duration = [&](int64_t ns) -> QVariant {
    if (role == kSortRole) return QVariant::fromValue<qint64>(ns);
    return QString::fromStdString(FormatDuration(ns));
  };
  const double whole = static_cast<double>(std::max<int64_t>(1, tree_->root().total_ns));
  switch (column) {
    case kName: return QString::fromStdString(tree_->name(node_index));
    case kTotal: return duration(node.total_ns);
    case kSelf: return duration(node.self_ns);
    case kCalls: return QVariant::fromValue<qint64>(node.calls);
    case kShare: {
      const double share = static_cast<double>(node.total_ns) / whole;
      if (role == kSortRole) return share;
      return QString::number(share * 100.0, 'f', 1) + QStringLiteral(" %");
    }
    default: return {};
  }
}

QVariant CallTreeModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  static const char* const kNames[kColumnCount] = {"Name", "Total", "Self", "Calls", "% of total"};
  if (section < 0 || section >= kColumnCount) return {};
  return tr(kNames[section]);
}

}  // namespace stepscope::viewer
