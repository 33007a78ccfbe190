// Time <-> pixel arithmetic, the ruler's ticks and the duration text of the viewer
// (time_mapping.h).
#include "viewer/timeline_data/time_mapping.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

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

namespace {

struct Unit {
  double ns;
  const char* name;
};

Unit UnitFor(double ns) {
  const double magnitude = std::fabs(ns);
  if (magnitude >= 1e9) return {1e9, "s"};
  if (magnitude >= 1e6) return {1e6, "ms"};
  if (magnitude >= 1e3) return {1e3, "us"};
  return {1, "ns"};
}

std::string Printf(const char* format, double value, const char* unit) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, format, value, unit);
  return buffer;
}

}  // namespace

std::string FormatDuration(double ns) {
  const Unit unit = UnitFor(ns);
  const double value = ns / unit.ns;
  if (unit.ns == 1) return Printf("%.0f %s", value, unit.name);
  const double magnitude = std::fabs(value);
  const char* format = magnitude >= 100 ? "%.1f %s" : magnitude >= 10 ? "%.2f %s" : "%.3f %s";
  return Printf(format, value, unit.name);
}

std::string FormatTimeAt(double time_ns, double step_ns) {
  // The unit of ten steps: a 500 us step reads "2.5 ms", not "2500 us".
  const Unit unit = UnitFor(step_ns * 10);
  // Digits after the point: enough for the step in this unit (a step of 0.5 ms needs one).
  const double step_in_unit = step_ns / unit.ns;
  int digits = 0;
  while (digits < 6 && std::fabs(step_in_unit * std::pow(10.0, digits) -
                                 std::round(step_in_unit * std::pow(10.0, digits))) > 1e-6) {
    ++digits;
  }
  char format[16];
  std::snprintf(format, sizeof format, "%%.%df %%s", digits);
  std::string text = Printf(format, time_ns / unit.ns, unit.name);
  if (text.rfind("-0 ", 0) == 0 || text.rfind("-0.", 0) == 0) {
    bool all_zero = text.find_first_of("123456789") == std::string::npos;
    if (all_zero) text.erase(0, 1);
  }
  return text;
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
