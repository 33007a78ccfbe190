// Durations and byte sizes as people read them: the one place every part of stepscope (the CLI,
// the viewer, the trainer) turns a figure into text, so one slice reads the same everywhere.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace stepscope {

// A report's duration, fixed digits per unit: "2.000 s", "1.234 ms", "12.0 us", "850 ns". A
// double is rounded to the nearest ns first (halves away from zero).
std::string FormatDuration(int64_t ns);
std::string FormatDuration(double ns);

// A duration that can be negative (a difference, an offset): "-1.234 ms"; with `plus_sign`, a
// positive one reads "+1.234 ms" (zero never has a sign). The digits are FormatDuration's.
std::string FormatSignedDuration(int64_t ns, bool plus_sign = false);

// A duration with four significant digits (whole ns below 1 us), unit by size: "830 ns",
// "12.50 us", "250.0 ms", "2.000 s"; for labels whose scale varies (a zoomed view).
std::string FormatDurationSignificant(double ns);

// A point in time with the precision `step_ns` needs (a ruler's ticks `step_ns` apart), in the
// unit of ten steps: "2.5 ms", not "2500 us"; never "-0".
std::string FormatTimeAt(double time_ns, double step_ns);

// Wall-clock seconds rounded to the second: "42s", "3m05s", "1h02m" (an ETA, a run's length).
std::string FormatClockDuration(double seconds);

// A figure with a decimal SI prefix and three significant digits, the unit after it: FLOPs and
// rates span a dozen orders of magnitude. 1234567, "FLOP/s" -> "1.23 MFLOP/s"; 830, "B/s" ->
// "830 B/s"; 999.7 -> "1 k", never "1e+03"; prefixes up to E.
std::string FormatSi(double value, std::string_view unit);

// A byte count in binary units: "1.50 GiB", "1.50 MiB", "12.0 KiB", "830 B".
std::string FormatBytes(int64_t bytes);

// The unit a duration of `ns` is shown in: 1e9 "s", 1e6 "ms", 1e3 "us" or 1 "ns".
struct DurationUnit {
  double ns;
  const char* name;
};
DurationUnit DurationUnitFor(double ns);

}  // namespace stepscope
