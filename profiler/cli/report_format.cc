// The table and number helpers of report_format.h.
#include "profiler/cli/report_format.h"

#include <cstdio>

namespace stepscope::cli {

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
