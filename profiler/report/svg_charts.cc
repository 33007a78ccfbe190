// Inline SVG charts of the report (svg_charts.h).
#include "profiler/report/svg_charts.h"

#include <algorithm>
#include <cmath>

#include "profiler/report/html_page.h"

namespace stepscope::report {
namespace {

// Colours readable on the light and the dark background alike.
constexpr const char* kPalette[] = {"#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2", "#b279a2", "#9d755d"};

std::string Num(double v) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f", v);
  return buffer;
}

}  // namespace

std::string BarChart(const std::vector<Bar>& bars, int width) {
  constexpr int kRow = 18, kLabel = 300, kText = 170;
  double max = 0;
  for (const Bar& b : bars) max = std::max(max, b.value);
  const int bar_width = width - kLabel - kText;
  const int height = static_cast<int>(bars.size()) * kRow + 4;
  std::string out = "<svg role=\"img\" viewBox=\"0 0 " + std::to_string(width) + " " + std::to_string(height) +
                    "\" width=\"" + std::to_string(width) + "\" height=\"" + std::to_string(height) + "\">\n";
  for (size_t i = 0; i < bars.size(); ++i) {
    const Bar& b = bars[i];
    const double y = static_cast<double>(i) * kRow + 2;
    const double length = max > 0 ? std::max(0.0, b.value) / max * bar_width : 0;
    // Long names are cut for the label; the <title> has them whole.
    std::string label = b.label.size() > 48 ? b.label.substr(0, 47) + "…" : b.label;
    out += "<g><title>" + Escape(b.label + ": " + b.text) + "</title><text x=\"" + std::to_string(kLabel - 6) +
           "\" y=\"" + Num(y + 12) + "\" text-anchor=\"end\">" + Escape(label) + "</text><rect x=\"" +
           std::to_string(kLabel) + "\" y=\"" + Num(y + 2) + "\" width=\"" + Num(std::max(length, 1.0)) +
           "\" height=\"" + std::to_string(kRow - 5) + "\" fill=\"" + kPalette[0] + "\"/><text x=\"" +
           Num(kLabel + length + 6) + "\" y=\"" + Num(y + 12) + "\">" + Escape(b.text) + "</text></g>\n";
  }
  return out + "</svg>\n";
}

std::string StackedBar(const std::vector<Bar>& parts, int width) {
  double total = 0;
  for (const Bar& p : parts) total += std::max(0.0, p.value);
  constexpr int kBar = 26, kLegend = 20;
  std::string out = "<svg role=\"img\" viewBox=\"0 0 " + std::to_string(width) + " " + std::to_string(kBar + kLegend + 8) +
                    "\" width=\"" + std::to_string(width) + "\" height=\"" + std::to_string(kBar + kLegend + 8) + "\">\n";
  double x = 0, legend_x = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    const Bar& p = parts[i];
    if (p.value <= 0 || total <= 0) continue;
    const double w = p.value / total * width;
    const char* colour = kPalette[i % std::size(kPalette)];
    out += "<g><title>" + Escape(p.label + ": " + p.text) + "</title><rect x=\"" + Num(x) + "\" y=\"0\" width=\"" +
           Num(w) + "\" height=\"" + std::to_string(kBar) + "\" fill=\"" + colour + "\"/></g>\n";
    out += "<rect x=\"" + Num(legend_x) + "\" y=\"" + std::to_string(kBar + 8) + "\" width=\"10\" height=\"10\" fill=\"" +
           colour + "\"/><text x=\"" + Num(legend_x + 14) + "\" y=\"" + std::to_string(kBar + 17) + "\">" +
           Escape(p.label + " " + p.text) + "</text>\n";
    x += w;
    legend_x += 14 + 7.0 * static_cast<double>(p.label.size() + p.text.size() + 1) + 18;
  }
  return out + "</svg>\n";
}

std::string MemoryCurve(const std::vector<std::pair<int64_t, int64_t>>& points, int64_t span_ns, int width,
                        int height) {
  if (points.empty() || span_ns <= 0) return "";
  // Per column, the highest value the step function takes in it (a value holds until the next point).
  std::vector<int64_t> high(static_cast<size_t>(width), -1);
  int64_t max_bytes = 0, peak_ns = 0;
  auto column = [&](int64_t t) {
    return std::clamp<int64_t>(t * width / span_ns, 0, width - 1);
  };
  for (size_t i = 0; i < points.size(); ++i) {
    const auto [t, bytes] = points[i];
    const int64_t next = i + 1 < points.size() ? points[i + 1].first : span_ns;
    for (int64_t c = column(t); c <= column(std::max(t, next)); ++c) high[static_cast<size_t>(c)] = std::max(high[static_cast<size_t>(c)], bytes);
    if (bytes > max_bytes) max_bytes = bytes, peak_ns = t;
  }
  if (max_bytes <= 0) return "";
  constexpr int kTop = 14;
  auto y = [&](int64_t bytes) { return height - static_cast<double>(bytes) / static_cast<double>(max_bytes) * (height - kTop); };
  std::string path = "M0 " + std::to_string(height);
  int64_t last = 0;
  for (int c = 0; c < width; ++c) {
    if (high[static_cast<size_t>(c)] >= 0) last = high[static_cast<size_t>(c)];
    if (c < column(points.front().first)) last = 0;
    path += " L" + std::to_string(c) + " " + Num(y(last)) + " L" + std::to_string(c + 1) + " " + Num(y(last));
  }
  path += " L" + std::to_string(width) + " " + std::to_string(height) + " Z";
  const double px = static_cast<double>(column(peak_ns)) + 0.5;
  return "<svg role=\"img\" viewBox=\"0 0 " + std::to_string(width) + " " + std::to_string(height) + "\" width=\"" +
         std::to_string(width) + "\" height=\"" + std::to_string(height) + "\">\n<path d=\"" + path + "\" fill=\"" +
         kPalette[0] + "\" fill-opacity=\"0.45\" stroke=\"" + kPalette[0] + "\" stroke-width=\"0.6\"/>\n<line x1=\"" +
         Num(px) + "\" x2=\"" + Num(px) + "\" y1=\"" + std::to_string(kTop) + "\" y2=\"" + std::to_string(height) +
         "\" stroke=\"" + kPalette[3] + "\"/>\n<text x=\"" + Num(std::min(px + 4, width - 60.0)) + "\" y=\"11\">peak</text>\n</svg>\n";
}

}  // namespace stepscope::report
