// The icicle chart (icicle_chart.h): boxes laid out once per tree, focus or size, then painted.
#include "viewer/panes/icicle_chart.h"

#include <QHelpEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>
#include <functional>
#include <string_view>

#include "base/units.h"

namespace stepscope::viewer {
namespace {

// A stable colour per name: the same op has the same colour in every tree.
QColor ColorOfName(const std::string& name) {
  const size_t hash = std::hash<std::string_view>()(name);
  return QColor::fromHsv(static_cast<int>(hash % 360), 70 + static_cast<int>((hash >> 9) % 60),
                         215 + static_cast<int>((hash >> 17) % 30));
}

}  // namespace

IcicleChart::IcicleChart(QWidget* parent) : QWidget(parent) {
  setMouseTracking(true);
  setMinimumHeight(4 * kRowHeight);
}

void IcicleChart::SetTree(std::shared_ptr<const analysis::CallTree> tree) {
  tree_ = std::move(tree);
  focus_ = 0;
  Layout();
}

void IcicleChart::Focus(uint32_t node) {
  if (!tree_ || node >= tree_->nodes.size()) return;
  focus_ = node;
  Layout();
}

void IcicleChart::Layout() {
  boxes_.clear();
  if (tree_ && !tree_->nodes.empty()) LayOut(focus_, 0, width(), 0);
  update();
}

void IcicleChart::LayOut(uint32_t node, double x, double width, int row) {
  if (row * kRowHeight >= height()) return;
  boxes_.push_back({node, QRectF(x, row * kRowHeight, width, kRowHeight - 1)});
  const analysis::CallTreeNode& n = tree_->nodes[node];
  if (n.total_ns <= 0) return;
  double child_x = x;
  for (uint32_t child : tree_->children_of(node)) {
    const double child_width = width * static_cast<double>(tree_->nodes[child].total_ns) / static_cast<double>(n.total_ns);
    // Children are by total, descending: once one is under a pixel, so are the rest.
    if (child_width < 1) break;
    LayOut(child, child_x, child_width, row + 1);
    child_x += child_width;
  }
}

QRectF IcicleChart::NodeRect(uint32_t node) const {
  for (const Box& box : boxes_) {
    if (box.node == node) return box.rect;
  }
  return {};
}

int64_t IcicleChart::NodeAt(const QPointF& pos) const {
  for (const Box& box : boxes_) {
    if (box.rect.contains(pos)) return box.node;
  }
  return -1;
}

QString IcicleChart::TooltipAt(const QPointF& pos) const {
  const int64_t node = NodeAt(pos);
  if (node < 0 || !tree_) return {};
  const analysis::CallTreeNode& n = tree_->nodes[static_cast<size_t>(node)];
  const double whole = static_cast<double>(std::max<int64_t>(1, tree_->root().total_ns));
  const QString name = node == 0 ? tr("(everything selected)") : QString::fromStdString(tree_->name(static_cast<uint32_t>(node)));
  return tr("<b>%1</b><br>total %2 (%3 %)<br>self %4<br>calls %5")
      .arg(name.toHtmlEscaped(), QString::fromStdString(FormatDuration(n.total_ns)),
           QString::number(100.0 * static_cast<double>(n.total_ns) / whole, 'f', 1),
           QString::fromStdString(FormatDuration(n.self_ns)))
      .arg(n.calls);
}

void IcicleChart::paintEvent(QPaintEvent*) {
  QPainter painter(this);
  painter.fillRect(rect(), palette().base());
  if (!tree_) return;
  const QFontMetrics metrics(font());
  for (const Box& box : boxes_) {
    const bool top = box.node == focus_;
    const QColor color = box.node == 0 ? QColor(0xd8, 0xdc, 0xe4) : ColorOfName(tree_->name(box.node));
    painter.fillRect(box.rect, color);
    if (top) {
      painter.setPen(QColor(0x40, 0x40, 0x48));
      painter.drawRect(box.rect.adjusted(0, 0, -1, 0));
    }
    if (box.rect.width() < 24) continue;
    QString label = box.node == 0 ? tr("all (%1)").arg(QString::fromStdString(FormatDuration(tree_->root().total_ns)))
                                  : QString::fromStdString(tree_->name(box.node));
    if (top && box.node != 0) label = tr("▲ %1").arg(label);  // a click goes back up
    painter.setPen(QColor(0x20, 0x20, 0x28));
    painter.drawText(box.rect.adjusted(3, 0, -2, 0), Qt::AlignVCenter | Qt::AlignLeft,
                     metrics.elidedText(label, Qt::ElideMiddle, static_cast<int>(box.rect.width()) - 5));
  }
}

void IcicleChart::resizeEvent(QResizeEvent*) { Layout(); }

void IcicleChart::mousePressEvent(QMouseEvent* event) {
  if (event->button() != Qt::LeftButton || !tree_) return;
  const int64_t node = NodeAt(event->position());
  if (node < 0) return;
  // The top row goes back up; any other box becomes the top.
  const uint32_t target = static_cast<uint32_t>(node) == focus_ && focus_ != 0
                              ? static_cast<uint32_t>(std::max(0, tree_->nodes[focus_].parent))
                              : static_cast<uint32_t>(node);
  Focus(target);
  emit nodeFocused(target);
}

bool IcicleChart::event(QEvent* event) {
  if (event->type() == QEvent::ToolTip) {
    auto* help = static_cast<QHelpEvent*>(event);
    const QString text = TooltipAt(help->pos());
    if (text.isEmpty()) {
      QToolTip::hideText();
      event->ignore();
    } else {
      QToolTip::showText(help->globalPos(), text, this);
    }
    return true;
  }
  return QWidget::event(event);
}

}  // namespace stepscope::viewer
