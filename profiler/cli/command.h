// A `stepscope` subcommand: a small class with a declarative flag table; RunCli parses the flags,
// checks the argument count and prints the generated help.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>  // KnownInt returns a json by value: the complete type
#include <ostream>
#include <string>
#include <vector>

#include "base/status.h"
#include "base/flags.h"

namespace stepscope::cli {

class Command {
 public:
  virtual ~Command() = default;
  virtual std::string name() const = 0;
  virtual std::string synopsis() const = 0;     // "IN OUT [--format F]"
  virtual std::string description() const = 0;  // one paragraph
  virtual std::vector<FlagSpec> flags() const = 0;
  virtual size_t min_positional() const = 0;
  virtual size_t max_positional() const = 0;
  virtual Status Run(const ParsedArgs& args, std::ostream& out, std::ostream& err) const = 0;
  // Exit codes beyond 0, 1 and 2 this command can return, e.g. ", 3 a check failed: ...".
  virtual std::string more_exit_codes() const { return ""; }
  // Whether it reads traces, and so takes the global flags of reading (AllowTruncatedFlag).
  virtual bool reads_traces() const { return true; }

  // The command's flags and, when it reads traces, the global ones.
  std::vector<FlagSpec> all_flags() const {
    std::vector<FlagSpec> all = flags();
    if (reads_traces()) all.push_back(AllowTruncatedFlag());
    return all;
  }

  std::string Help() const {
    return "usage: stepscope " + name() + " " + synopsis() + "\n\n" + description() + "\n\nflags:\n" +
           FlagHelp(all_flags()) +
           "\nexit codes: 0 ok, 1 runtime failure, 2 usage or bad input" +
           (reads_traces() ? " (a trace file cut short included)" : "") + more_exit_codes() + "\n";
  }

  // --allow-truncated: RunCli reads every trace cut short up to its cut and says so first in the
  // output (trace::AllowTruncatedScope).
  static FlagSpec AllowTruncatedFlag() {
    return {"allow-truncated", "",
            "analyse a trace file cut short up to its cut instead of failing; the output starts by saying so"};
  }
};

// summary, ops, kernels, memory, memcpy, streams, overlap, critical-path, diff, merge.
void AddAnalysisCommands(std::vector<std::unique_ptr<Command>>& commands);

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
