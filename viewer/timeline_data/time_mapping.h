// Time <-> pixel mapping of the timeline and everything synced to it (memory charts, ruler).
// Plain arithmetic with no Qt dependency, so zoom, pan, fit and the ruler are unit-tested on
// their own. Times are trace nanoseconds (relative to the Trace epoch) held as doubles so that
// deep zoom stays smooth; pixels are relative to the left edge of the time area.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace stepscope::viewer {

class TimeMapping {
 public:
  // The narrowest window the view zooms to: 20 ns across the whole width.
  static constexpr double kMinSpanNs = 20.0;

  TimeMapping() = default;
  TimeMapping(double begin_ns, double end_ns, double width_px);

  double begin_ns() const { return begin_ns_; }
  double end_ns() const { return end_ns_; }
  double span_ns() const { return end_ns_ - begin_ns_; }
  double width_px() const { return width_px_; }
  double ns_per_px() const { return span_ns() / width_px_; }

  double NsToPx(double time_ns) const { return (time_ns - begin_ns_) * width_px_ / span_ns(); }
  double PxToNs(double px) const { return begin_ns_ + px * span_ns() / width_px_; }

  // Keeps the time range; a width below one pixel is taken as one pixel.
  void SetWidth(double width_px);
  // Shows [begin, end); an empty or inverted range becomes kMinSpanNs wide around begin.
  void SetRange(double begin_ns, double end_ns);
  // factor > 1 zooms in. The time under `anchor_px` stays under it.
  void ZoomAt(double anchor_px, double factor);
  // Positive dx moves the view to later times (content slides left).
  void PanPx(double dx_px);
  // Shows [begin, end) with `margin` of the span added on both sides.
  void Fit(double begin_ns, double end_ns, double margin = 0.02);
  // Keeps the view on the data: no zooming out beyond `limit` (with a margin) and no panning
  // past either end by more than half a view.
  void ClampTo(double limit_begin_ns, double limit_end_ns);

  bool operator==(const TimeMapping&) const = default;

 private:
  double begin_ns_ = 0;
  double end_ns_ = 1000;
  double width_px_ = 1000;
};

// A tick of the time ruler. Major ticks carry a label.
struct RulerTick {
  double time_ns = 0;
  double px = 0;
  bool major = false;
  std::string label;
};

// The step between major ticks: 1, 2 or 5 times a power of ten ns, the smallest at least
// `min_spacing_px` apart.
double RulerStepNs(const TimeMapping& mapping, double min_spacing_px);
// Major ticks every RulerStepNs, five minor ticks between; labels in the unit of the step
// ("250 us", "1.5 ms"), enough digits to tell neighbours apart (FormatTimeAt, base/units.h).
std::vector<RulerTick> RulerTicks(const TimeMapping& mapping, double min_spacing_px = 90);

}  // namespace stepscope::viewer
