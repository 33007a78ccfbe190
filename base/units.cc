// The duration and byte formatters of base/units.h: snprintf with fixed formats and units
// chosen by magnitude, so a figure reads the same in a report, a pane and a progress line.
#include "base/units.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace stepscope {
namespace {

std::string Printf(const char* format, double value, const char* unit) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, format, value, unit);
  return buffer;
}

}  // namespace

std::string FormatDuration(int64_t ns) {
  char buffer[32];
  const double value = static_cast<double>(ns);
  const int64_t magnitude = std::llabs(ns);
  if (magnitude >= 1000000000) {
    std::snprintf(buffer, sizeof buffer, "%.3f s", value / 1e9);
  } else if (magnitude >= 1000000) {
    std::snprintf(buffer, sizeof buffer, "%.3f ms", value / 1e6);
  } else if (magnitude >= 1000) {
    std::snprintf(buffer, sizeof buffer, "%.1f us", value / 1e3);
  } else {
    std::snprintf(buffer, sizeof buffer, "%lld ns", static_cast<long long>(ns));
  }
  return buffer;
}

std::string FormatSignedDuration(int64_t ns, bool plus_sign) {
  // FormatDuration prints the minus itself (its formats are symmetric about zero).
  return (plus_sign && ns > 0 ? "+" : "") + FormatDuration(ns);
}

std::string FormatDuration(double ns) {
  return FormatDuration(static_cast<int64_t>(ns + (ns < 0 ? -0.5 : 0.5)));
}

DurationUnit DurationUnitFor(double ns) {
  const double magnitude = std::fabs(ns);
  if (magnitude >= 1e9) return {1e9, "s"};
  if (magnitude >= 1e6) return {1e6, "ms"};
  if (magnitude >= 1e3) return {1e3, "us"};
  return {1, "ns"};
}

std::string FormatDurationSignificant(double ns) {
  const DurationUnit unit = DurationUnitFor(ns);
  const double value = ns / unit.ns;
  if (unit.ns == 1) return Printf("%.0f %s", value, unit.name);
  const double magnitude = std::fabs(value);
  const char* format = magnitude >= 100 ? "%.1f %s" : magnitude >= 10 ? "%.2f %s" : "%.3f %s";
  return Printf(format, value, unit.name);
}

std::string FormatTimeAt(double time_ns, double step_ns) {
  // The unit of ten steps: a 500 us step reads "2.5 ms", not "2500 us".
  const DurationUnit unit = DurationUnitFor(step_ns * 10);
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
    const bool all_zero = text.find_first_of("123456789") == std::string::npos;
    if (all_zero) text.erase(0, 1);
  }
  return text;
}

std::string FormatClockDuration(double seconds) {
  char text[32];
  const int s = static_cast<int>(std::lround(seconds));
  if (s >= 3600) std::snprintf(text, sizeof(text), "%dh%02dm", s / 3600, (s / 60) % 60);
  else if (s >= 60) std::snprintf(text, sizeof(text), "%dm%02ds", s / 60, s % 60);
  else std::snprintf(text, sizeof(text), "%ds", s);
  return text;
}

std::string FormatSi(double value, std::string_view unit) {
  static const char* const kPrefix[] = {"", "k", "M", "G", "T", "P", "E"};
  size_t p = 0;
  // 999.5 and up rounds to "1e+03" at three digits: the next prefix's "1" instead.
  while (std::fabs(value) >= 999.5 && p < 6) {
    value /= 1000;
    ++p;
  }
  char text[64];
  std::snprintf(text, sizeof text, "%.3g %s%.*s", value, kPrefix[p], static_cast<int>(unit.size()), unit.data());
  return text;
}

std::string FormatBytes(int64_t bytes) {
  char buffer[32];
  const double b = static_cast<double>(bytes);
  const int64_t magnitude = std::llabs(bytes);
  if (magnitude >= (1LL << 30)) {
    std::snprintf(buffer, sizeof buffer, "%.2f GiB", b / (1LL << 30));
  } else if (magnitude >= (1LL << 20)) {
    std::snprintf(buffer, sizeof buffer, "%.2f MiB", b / (1LL << 20));
  } else if (magnitude >= (1LL << 10)) {
    std::snprintf(buffer, sizeof buffer, "%.1f KiB", b / (1LL << 10));
  } else {
    std::snprintf(buffer, sizeof buffer, "%lld B", static_cast<long long>(bytes));
  }
  return buffer;
}

}  // namespace stepscope
