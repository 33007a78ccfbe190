#include "profiler/cli/report_format.h"

#include <cstdio>
#include <cstdlib>

namespace stepscope::cli {

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

std::string FormatDuration(double ns) { return FormatDuration(static_cast<int64_t>(ns + (ns < 0 ? -0.5 : 0.5))); }

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

std::string FormatPercent(double share) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f%%", 100.0 * share);
  return buffer;
}

std::string FormatFixed(double value, int digits) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", digits, value);
  return buffer;
}

std::string Truncate(const std::string& text, size_t width) {
  if (text.size() <= width || width < 4) return text;
  return text.substr(0, width - 3) + "...";
}

std::string Align(const std::string& text, int width) {
  const size_t w = static_cast<size_t>(width < 0 ? -width : width);
  if (text.size() >= w) return text;
  const std::string padding(w - text.size(), ' ');
  return width > 0 ? padding + text : text + padding;
}

void TextTable::Row(const std::vector<std::string>& cells) {
  std::string line = " ";
  for (size_t i = 0; i < cells.size(); ++i) {
    line += ' ';
    line += Align(cells[i], i < widths_.size() ? widths_[i] : 0);
  }
  while (!line.empty() && line.back() == ' ') line.pop_back();
  out_ += line + "\n";
}

}  // namespace stepscope::cli
