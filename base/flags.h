// Declarative command-line flags: each program or subcommand lists its flags once; parsing,
// typed values, errors naming the flag, and --help text all come from that list.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"

namespace stepscope {

struct FlagSpec {
  std::string name;        // without dashes: "format"
  std::string value_name;  // empty for a boolean switch: "FORMAT"
  std::string help;
  char short_name = 0;     // e.g. 'o' for -o; 0 for none
};

struct ParsedArgs {
  std::vector<std::string> positional;
  std::map<std::string, std::string> values;  // switches map to "true"
  // For each long flag given, how many positional arguments came before it (`A B --vs C`).
  std::map<std::string, size_t> positional_before;
  bool help = false;

  bool Has(const std::string& name) const { return values.count(name) != 0; }
  std::optional<std::string> Get(const std::string& name) const {
    auto it = values.find(name);
    if (it == values.end()) return std::nullopt;
    return it->second;
  }
  std::string GetOr(const std::string& name, const std::string& fallback) const {
    return Get(name).value_or(fallback);
  }
  // Typed values: kInvalidInput naming the flag when the text is not a number in [min, max].
  StatusOr<int64_t> GetInt(const std::string& name, int64_t fallback,
                           int64_t min = INT64_MIN, int64_t max = INT64_MAX) const;
  StatusOr<double> GetDouble(const std::string& name, double fallback,
                             double min = -1e300, double max = 1e300) const;
};

StatusOr<ParsedArgs> ParseFlags(const std::vector<std::string>& args,
                                const std::vector<FlagSpec>& specs);

std::string FlagHelp(const std::vector<FlagSpec>& specs);

}  // namespace stepscope
