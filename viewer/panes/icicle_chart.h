// An icicle (a flame graph drawn from the top) of a call tree: the focused node across the
// whole width, its children below it with widths in proportion to their total time, and so on
// down while boxes are at least a pixel wide. A click on a box focuses (zooms into) it; a click
// on the top row goes back up to the parent; the tooltip gives the node's figures.
#pragma once

#include <QWidget>
#include <cstdint>
#include <memory>
#include <vector>

#include "profiler/analysis/call_tree.h"

namespace stepscope::viewer {

class IcicleChart : public QWidget {
  Q_OBJECT

 public:
  static constexpr int kRowHeight = 18;

  explicit IcicleChart(QWidget* parent = nullptr);

  // A new tree: focused on its root.
  void SetTree(std::shared_ptr<const analysis::CallTree> tree);
  void Focus(uint32_t node);
  uint32_t focus() const { return focus_; }
  // Where a node is drawn now (empty when it is not), and the node at a widget position (-1).
  QRectF NodeRect(uint32_t node) const;
  int64_t NodeAt(const QPointF& pos) const;
  QString TooltipAt(const QPointF& pos) const;
  QSize sizeHint() const override { return {600, 8 * kRowHeight}; }

 signals:
  // The node clicked (and now focused), so a view of the same tree can follow.
  void nodeFocused(uint32_t node);

 protected:
  void paintEvent(QPaintEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  bool event(QEvent* event) override;

 private:
  struct Box {
    uint32_t node;
    QRectF rect;
  };
  void Layout();
  void LayOut(uint32_t node, double x, double width, int row);

  std::shared_ptr<const analysis::CallTree> tree_;
  uint32_t focus_ = 0;
  std::vector<Box> boxes_;  // in drawing order, parents before children
};

}  // namespace stepscope::viewer
