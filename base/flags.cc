// Parses argv against a program's flag table (`--name=value`, `--name value`, short and boolean
// flags) with errors that name the flag, and writes --help from the same table.
#include "base/flags.h"

#include <charconv>
#include <cmath>
#include <cstdlib>

namespace stepscope {

StatusOr<ParsedArgs> ParseFlags(const std::vector<std::string>& args,
                                const std::vector<FlagSpec>& specs) {
  ParsedArgs parsed;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--help" || arg == "-h") {
      parsed.help = true;
      continue;
    }
    if (arg.size() == 2 && arg[0] == '-' && arg[1] != '-') {
      const FlagSpec* spec = nullptr;
      for (const FlagSpec& candidate : specs) {
        if (candidate.short_name == arg[1]) spec = &candidate;
      }
      if (spec == nullptr) return InvalidInput("unknown flag " + arg);
      if (spec->value_name.empty()) {
        parsed.values[spec->name] = "true";
      } else {
        if (i + 1 >= args.size()) {
          return InvalidInput("flag " + arg + " needs a value (" + spec->value_name + ")");
        }
        parsed.values[spec->name] = args[++i];
      }
      continue;
    }
    if (arg.size() < 3 || arg.compare(0, 2, "--") != 0) {
      parsed.positional.push_back(arg);
      continue;
    }
    std::string name = arg.substr(2);
    std::optional<std::string> value;
    if (const size_t eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name.resize(eq);
    }
    const FlagSpec* spec = nullptr;
    for (const FlagSpec& candidate : specs) {
      if (candidate.name == name) spec = &candidate;
    }
    if (spec == nullptr) return InvalidInput("unknown flag --" + name);
    parsed.positional_before[name] = parsed.positional.size();
    if (spec->value_name.empty()) {
      if (value) return InvalidInput("flag --" + name + " takes no value");
      parsed.values[name] = "true";
      continue;
    }
    if (!value) {
      if (i + 1 >= args.size()) return InvalidInput("flag --" + name + " needs a value (" + spec->value_name + ")");
      value = args[++i];
    }
    parsed.values[name] = *value;
  }
  return parsed;
}

std::string FlagHelp(const std::vector<FlagSpec>& specs) {
  std::string out;
  for (const FlagSpec& spec : specs) {
    std::string left =
        std::string(spec.short_name != 0 ? "  -" + std::string(1, spec.short_name) + ", " : "  ") +
        "--" + spec.name + (spec.value_name.empty() ? "" : " " + spec.value_name);
    if (left.size() < 26) left.resize(26, ' ');
    else left += "\n" + std::string(26, ' ');
    out += left + spec.help + "\n";
  }
  out += "  --help                  show this help\n";
  return out;
}

StatusOr<int64_t> ParsedArgs::GetInt(const std::string& name, int64_t fallback, int64_t min,
                                     int64_t max) const {
  const auto text = Get(name);
  if (!text) return fallback;
  int64_t value = 0;
  const char* end = text->data() + text->size();
  auto [ptr, ec] = std::from_chars(text->data(), end, value);
  if (ec != std::errc() || ptr != end) {
    return InvalidInput("--" + name + " " + *text + ": not an integer");
  }
  if (value < min || value > max) {
    return InvalidInput("--" + name + " " + *text + ": must be between " + std::to_string(min) +
                        " and " + std::to_string(max));
  }
  return value;
}

StatusOr<double> ParsedArgs::GetDouble(const std::string& name, double fallback, double min,
                                       double max) const {
  const auto text = Get(name);
  if (!text) return fallback;
  char* end = nullptr;
  const double value = std::strtod(text->c_str(), &end);
  if (text->empty() || end != text->c_str() + text->size() || !std::isfinite(value)) {
    return InvalidInput("--" + name + " " + *text + ": not a number");
  }
  if (value < min || value > max) {
    return InvalidInput("--" + name + " " + *text + ": must be between " + std::to_string(min) +
                        " and " + std::to_string(max));
  }
  return value;
}

}  // namespace stepscope
