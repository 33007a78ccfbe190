// The roofline chart of the roofline pane: op types as points (arithmetic intensity across, FLOP/s
// up, both logarithmic; a point's area grows with the time the ops took), under the device's two
// roofs (memory bandwidth x intensity, then the peak FLOP/s). A click on a point says which.
#pragma once

#include <QString>
#include <QWidget>
#include <cstdint>
#include <optional>
#include <vector>

namespace stepscope::viewer {

struct RooflinePoint {
  QString label;
  double intensity = 0;    // FLOP per byte, > 0
  double flops_per_s = 0;  // > 0
  int64_t time_ns = 0;
};

class RooflineChart : public QWidget {
  Q_OBJECT

 public:
  explicit RooflineChart(QWidget* parent = nullptr);
  // The points and the roofs (0: that roof unknown, not drawn).
  void SetData(std::vector<RooflinePoint> points, double peak_flops_per_s, double peak_bytes_per_s);
  const std::vector<RooflinePoint>& points() const { return points_; }
  // Where a point is drawn, and the point at a position (none when no point is within its radius).
  QPointF PointPosition(size_t index) const;
  std::optional<size_t> PointAt(QPointF position) const;
  QSize sizeHint() const override { return {480, 320}; }

 signals:
  void pointClicked(int index);

 protected:
  void paintEvent(QPaintEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;

 private:
  QRectF Plot() const;
  QPointF Map(double intensity, double flops_per_s) const;
  double Radius(size_t index) const;

  std::vector<RooflinePoint> points_;
  double peak_flops_ = 0, peak_bytes_ = 0;
  // The axes' decades: log10 of the first and last.
  double x_lo_ = -2, x_hi_ = 4, y_lo_ = 6, y_hi_ = 15;
  int64_t max_time_ns_ = 1;
};

}  // namespace stepscope::viewer
