// Charts drawn here as inline SVG, so that the report needs no script and no charting library:
// horizontal bars (top ops, idle causes, where the step goes) and a memory curve decimated to
// the pixel with its peaks kept. Every label is escaped; every shape has a <title> for hovering.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace stepscope::report {

struct Bar {
  std::string label;  // trace text: escaped when drawn
  double value = 0;   // the bar's length, against the largest
  std::string text;   // written after the bar, e.g. "12.3 ms (41%)"
};
// One bar per row, longest first as given.
std::string BarChart(const std::vector<Bar>& bars, int width = 900);

// Parts of one whole side by side in one bar (e.g. input, compute, communication, idle), with a
// legend; parts of value 0 are left out.
std::string StackedBar(const std::vector<Bar>& parts, int width = 900);

// A step curve (time, bytes) as an area: per pixel column the curve's minimum and maximum, so
// that no peak between two columns is lost however many points there are; the peak marked.
std::string MemoryCurve(const std::vector<std::pair<int64_t, int64_t>>& points, int64_t span_ns, int width = 900,
                        int height = 160);

}  // namespace stepscope::report
