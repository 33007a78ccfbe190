// Declarative flags for CLI subcommands: each command lists its flags once; parsing, errors and
// --help text come from that list.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"

namespace stepscope::cli {

struct FlagSpec {
  std::string name;        // without dashes: "format"
  std::string value_name;  // empty for a boolean switch: "FORMAT"
  std::string help;
};

struct ParsedArgs {
  std::vector<std::string> positional;
  std::map<std::string, std::string> values;  // switches map to "true"
  bool help = false;

  bool Has(const std::string& name) const { return values.count(name) != 0; }
  std::optional<std::string> Get(const std::string& name) const {
    auto it = values.find(name);
    if (it == values.end()) return std::nullopt;
    return it->second;
  }
};

StatusOr<ParsedArgs> ParseFlags(const std::vector<std::string>& args,
                                const std::vector<FlagSpec>& specs);

std::string FlagHelp(const std::vector<FlagSpec>& specs);

}  // namespace stepscope::cli
