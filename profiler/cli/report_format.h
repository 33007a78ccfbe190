// Plain-text formatting shared by the summary and analysis commands: shares, fixed digits, and
// left/right aligned table columns. Durations and byte sizes come from base/units.h.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/units.h"

namespace stepscope::cli {

inline std::string IntText(int64_t value) { return std::to_string(value); }  // table cells
std::string FormatPercent(double share);  // "12.3%"
std::string FormatFixed(double value, int digits);  // FormatFixed(3.14159, 2): "3.14"
std::string Truncate(const std::string& text, size_t width);
// Pads `text` to |width|: a positive width right-aligns, a negative one left-aligns. Longer text
// is kept whole.
std::string Align(const std::string& text, int width);

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
