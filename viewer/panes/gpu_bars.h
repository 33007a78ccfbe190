// The GPU pane's chart: one stacked horizontal bar per GPU and, under it, one per stream, each
// the span of its GPU work split into compute, communication (less what overlaps compute),
// memory and idle (analysis::GpuTime). The part of compute that overlaps communication is
// hatched. "Without idle" scales each bar to its busy time instead of its span.
#pragma once

#include <QColor>
#include <QString>
#include <QWidget>
#include <vector>

#include "profiler/analysis/gpu_analyses.h"

namespace stepscope::viewer {

class GpuBars : public QWidget {
  Q_OBJECT

 public:
  static constexpr QRgb kComputeColor = 0xff3b7dd8;
  static constexpr QRgb kCommunicationColor = 0xffe8833a;
  static constexpr QRgb kMemoryColor = 0xff4caf50;
  static constexpr QRgb kIdleColor = 0xffd5d8de;
  static constexpr int kRowHeight = 22;
  static constexpr int kLegendHeight = 22;  // the colour legend above the bars (RankBars too)
  static constexpr int kLabelWidth = 170;
  static constexpr int kTextWidth = 420;

  explicit GpuBars(QWidget* parent = nullptr);

  struct Row {
    QString label;  // "GPU 0", "  stream 7"
    bool gpu = false;
    analysis::GpuTime time;
  };
  void SetRows(std::vector<Row> rows);
  const std::vector<Row>& rows() const { return rows_; }
  void SetWithoutIdle(bool without_idle);
  bool without_idle() const { return without_idle_; }

  // The widths of a bar's segments for `width` pixels: compute, communication less overlap,
  // memory (what of it is not already busy elsewhere), idle (0 without idle); they add up to at
  // most `width`.
  struct Segments {
    double compute = 0, communication = 0, memory = 0, idle = 0, overlap = 0;
  };
  Segments SegmentsOf(const analysis::GpuTime& time, double width) const;
  // The bar of row `row` in widget coordinates.
  QRect BarRect(int row) const;

  QSize sizeHint() const override;

 protected:
  void paintEvent(QPaintEvent* event) override;

 private:
  std::vector<Row> rows_;
  bool without_idle_ = false;
};

}  // namespace stepscope::viewer
