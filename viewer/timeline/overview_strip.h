// A thin bar above the timeline, over the whole trace: where the search matches lie (a tick per
// pixel with matches, taller for more), and the window the timeline shows. A click centres the
// timeline there, keeping the zoom, on the match nearest the click. Shown while there are
// matches.
#pragma once

#include <QWidget>
#include <cstdint>
#include <vector>

namespace stepscope::viewer {

class TimeAxis;
class TimelineView;

class OverviewStrip : public QWidget {
  Q_OBJECT

 public:
  static constexpr int kHeight = 14;

  OverviewStrip(TimelineView* timeline, TimeAxis* axis, QWidget* parent = nullptr);

  // Matches per pixel of the strip's time area (left to right), as last painted.
  const std::vector<uint32_t>& counts() const { return counts_; }
  // The time at x within the widget; the x of a time.
  double TimeAt(int x) const;
  int XOf(double time_ns) const;
  QSize sizeHint() const override { return {400, kHeight}; }

 protected:
  void paintEvent(QPaintEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;

 private:
  void Recount();

  TimelineView* timeline_;
  TimeAxis* axis_;
  std::vector<uint32_t> counts_;
};

}  // namespace stepscope::viewer
