// Plain-text formatting shared by the summary and analysis commands: shares, fixed digits, and
// left/right aligned table columns. Durations and byte sizes come from base/units.h.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/display_names.h"
#include "base/units.h"

namespace stepscope::cli {

inline std::string IntText(int64_t value) { return std::to_string(value); }  // table cells
std::string FormatPercent(double share);  // "12.3%"
std::string FormatFixed(double value, int digits);  // FormatFixed(3.14159, 2): "3.14"
std::string Truncate(const std::string& text, size_t width);
// Pads `text` (width in UTF-8 code points) to |width|: a positive width right-aligns, a negative
// one left-aligns. Longer text is kept whole.
std::string Align(const std::string& text, int width);

// How a table column shows names (kernels, ops, scopes): C++ kernel names short
// (DistinctShortKernelNames over the names the column shows; other names are left as they are),
// then cut in the middle to the column's width (ElideMiddle), where two names would read the same
// spending the room on trailing path components instead of the head; with --full-names, every
// name whole. `names` are all the names the column will show.
class NameCells {
 public:
  NameCells(bool full_names, const std::vector<std::string>& names);
  std::string operator()(const std::string& name, size_t width);

 private:
  bool full_names_;
  std::vector<std::string> names_;  // sorted, distinct
  std::vector<std::string> shown_;  // the short text of names_[i]
  std::map<size_t, std::vector<std::string>> cells_;  // width -> the cell of names_[i]
};

// Columns aligned as by Align, one space apart, each row indented by two.
class TextTable {
 public:
  explicit TextTable(std::vector<int> widths) : widths_(std::move(widths)) {}
  void Row(const std::vector<std::string>& cells);
  std::string str() const { return out_; }

 private:
  std::vector<int> widths_;
  std::string out_;
};

}  // namespace stepscope::cli
