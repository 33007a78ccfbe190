// Time <-> pixel arithmetic and the ruler's ticks (time_mapping.h).
#include "viewer/timeline_data/time_mapping.h"

#include <algorithm>
#include <cmath>

#include "base/units.h"

namespace stepscope::viewer {

TimeMapping::TimeMapping(double begin_ns, double end_ns, double width_px) {
  SetWidth(width_px);
  SetRange(begin_ns, end_ns);
}

void TimeMapping::SetWidth(double width_px) { width_px_ = std::max(1.0, width_px); }

void TimeMapping::SetRange(double begin_ns, double end_ns) {
  if (!(end_ns - begin_ns >= kMinSpanNs)) {  // also catches NaN
    const double middle = std::isfinite(begin_ns) ? (begin_ns + std::max(begin_ns, end_ns)) / 2 : 0;
    begin_ns = middle - kMinSpanNs / 2;
    end_ns = middle + kMinSpanNs / 2;
  }
  begin_ns_ = begin_ns;
  end_ns_ = end_ns;
}

void TimeMapping::ZoomAt(double anchor_px, double factor) {
  if (!(factor > 0)) return;
  const double anchor_ns = PxToNs(anchor_px);
  const double span = std::max(kMinSpanNs, span_ns() / factor);
  const double fraction = anchor_px / width_px_;
  begin_ns_ = anchor_ns - fraction * span;
  end_ns_ = begin_ns_ + span;
}

void TimeMapping::PanPx(double dx_px) {
  const double dt = dx_px * ns_per_px();
  begin_ns_ += dt;
  end_ns_ += dt;
}

void TimeMapping::Fit(double begin_ns, double end_ns, double margin) {
  const double span = std::max(kMinSpanNs, end_ns - begin_ns);
  const double pad = span * margin;
  const double middle = (begin_ns + end_ns) / 2;
  SetRange(middle - span / 2 - pad, middle + span / 2 + pad);
}

void TimeMapping::ClampTo(double limit_begin_ns, double limit_end_ns) {
  const double limit_span = std::max(kMinSpanNs, limit_end_ns - limit_begin_ns);
  const double max_span = limit_span * 1.2;
  if (span_ns() > max_span) {
    const double middle = (begin_ns_ + end_ns_) / 2;
    begin_ns_ = middle - max_span / 2;
    end_ns_ = middle + max_span / 2;
  }
  const double span = span_ns();
  const double lowest_begin = limit_begin_ns - span / 2;
  const double highest_begin = limit_begin_ns + limit_span - span / 2;
  const double begin = std::clamp(begin_ns_, lowest_begin, std::max(lowest_begin, highest_begin));
  end_ns_ = begin + span;
  begin_ns_ = begin;
}

double RulerStepNs(const TimeMapping& mapping, double min_spacing_px) {
  const double min_step = std::max(1.0, min_spacing_px * mapping.ns_per_px());
  double power = std::pow(10.0, std::floor(std::log10(min_step)));
  for (;;) {
    for (double mantissa : {1.0, 2.0, 5.0}) {
      if (mantissa * power >= min_step) return mantissa * power;
    }
    power *= 10;
  }
}

std::vector<RulerTick> RulerTicks(const TimeMapping& mapping, double min_spacing_px) {
  std::vector<RulerTick> ticks;
  const double step = RulerStepNs(mapping, min_spacing_px);
  const double minor = step / 5;
  const double first = std::floor(mapping.begin_ns() / minor) * minor;
  for (int i = 0;; ++i) {
    const double time = first + i * minor;
    if (time > mapping.end_ns()) break;
    if (time < mapping.begin_ns()) continue;
    RulerTick tick;
    tick.time_ns = time;
    tick.px = mapping.NsToPx(time);
    const double steps = time / step;
    tick.major = std::fabs(steps - std::round(steps)) < 1e-6;
    if (tick.major) tick.label = FormatTimeAt(time, step);
    ticks.push_back(std::move(tick));
  }
  return ticks;
}

}  // namespace stepscope::viewer
