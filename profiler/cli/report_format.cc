// The table and number helpers of report_format.h.
#include "profiler/cli/report_format.h"

#include <algorithm>
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

NameCells::NameCells(bool full_names, const std::vector<std::string>& names) : full_names_(full_names), names_(names) {
  std::sort(names_.begin(), names_.end());
  names_.erase(std::unique(names_.begin(), names_.end()), names_.end());
  if (!full_names_) shown_ = DistinctShortKernelNames(names_);
}

std::string NameCells::operator()(const std::string& name, size_t width) {
  if (full_names_) return name;
  const auto it = std::lower_bound(names_.begin(), names_.end(), name);
  if (it == names_.end() || *it != name) return ElideMiddle(ShortKernelName(name), width);
  auto [cells, added] = cells_.try_emplace(width);
  if (added) {
    // Cells that two names share are cut again keeping trailing components only, then as much
    // of the end as fits.
    std::vector<std::string>& cells_now = cells->second;
    for (const std::string& shown : shown_) cells_now.push_back(ElideMiddle(shown, width));
    for (const ElidePath path : {ElidePath::kTail, ElidePath::kTailText}) {
      std::map<std::string, int> uses;
      for (const std::string& cell : cells_now) ++uses[cell];
      for (size_t i = 0; i < shown_.size(); ++i) {
        if (uses[cells_now[i]] > 1) cells_now[i] = ElideMiddle(shown_[i], width, path);
      }
    }
  }
  return cells->second[static_cast<size_t>(it - names_.begin())];
}

std::string Align(const std::string& text, int width) {
  const size_t w = static_cast<size_t>(width < 0 ? -width : width);
  const size_t length = Utf8Length(text);  // "…" is one column
  if (length >= w) return text;
  const std::string padding(w - length, ' ');
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
