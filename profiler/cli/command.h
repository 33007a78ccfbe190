// A `stepscope` subcommand declared as data: name, synopsis, description, flag table, how many
// positional arguments it takes, and the function that runs it. RunCli (cli.cc) parses the flags
// from the table, checks the argument count, prints the generated help, then calls `run`. The
// table of every command is AllCommands() (commands/commands.h), one file per command family.
#pragma once

#include <functional>
#include <limits>
#include <nlohmann/json.hpp>  // KnownInt returns a json by value: the complete type
#include <ostream>
#include <string>
#include <vector>

#include "base/flags.h"
#include "base/status.h"

namespace stepscope::cli {

// max_positional of a command taking any number of inputs.
inline constexpr size_t kAnyCount = std::numeric_limits<size_t>::max();

struct CommandSpec {
  std::string name;
  std::string synopsis;     // "IN OUT [--format F]"
  std::string description;  // one paragraph
  std::vector<FlagSpec> flags;
  size_t min_positional = 1;
  size_t max_positional = kAnyCount;
  std::function<Status(const ParsedArgs& args, std::ostream& out, std::ostream& err)> run;
  // Exit codes beyond 0, 1 and 2 this command can return, e.g. ", 3 a check failed: ...".
  std::string more_exit_codes;
  // Whether it reads traces, and so takes the global flags of reading (AllowTruncatedFlag).
  bool reads_traces = true;

  // The command's flags and, when it reads traces, the global ones.
  std::vector<FlagSpec> all_flags() const;
  std::string Help() const;
};

// --allow-truncated: RunCli reads every trace cut short up to its cut and says so first in the
// output (trace::AllowTruncatedScope).
FlagSpec AllowTruncatedFlag();

// Rows per table in text output unless --top says otherwise.
constexpr size_t kDefaultTop = 15;

// A positive integer flag value, or `fallback` when the flag is absent.
StatusOr<size_t> PositiveFlag(const ParsedArgs& args, const std::string& name, size_t fallback);

// The --json output of a command: the document, indented, and a newline.
void EmitJson(std::ostream& out, const nlohmann::ordered_json& doc);

// A rank, step or other count the trace may not record (-1 in the model): null when absent, so
// a document never shows a placeholder as a value.
inline nlohmann::ordered_json KnownInt(int64_t value) {
  return value >= 0 ? nlohmann::ordered_json(value) : nlohmann::ordered_json(nullptr);
}

}  // namespace stepscope::cli
