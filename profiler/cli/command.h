// A `stepscope` subcommand declared as data: name, synopsis, description, flag table, how many
// positional arguments it takes, and the function that runs it. RunCli (cli.cc) parses the flags
// from the table, checks the argument count, prints the generated help, then calls `run`. The
// table of every command is AllCommands() (commands/commands.h), one file per command family.
#pragma once

#include <functional>
#include <limits>
#include <nlohmann/json.hpp>  // KnownInt returns a json by value: the complete type
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <vector>

#include "base/flags.h"
#include "base/status.h"
#include "profiler/trace/trace.h"

namespace stepscope::cli {

// max_positional of a command taking any number of inputs.
inline constexpr size_t kAnyCount = std::numeric_limits<size_t>::max();

// The traces a command analyses, already read: its `run` reads them (only --rank's where it takes
// --rank) and hands them to `analyse`; `report` reads its inputs once and hands them to each
// command it shows.
struct LoadedInputs {
  std::span<const trace::Trace> traces;  // every input (ResolveTracePaths), in order
  // The traces as one (analysis::OneTrace), where the caller has it: the commands on one trace
  // merge them otherwise.
  const trace::Trace* one = nullptr;
  std::span<const trace::Trace> vs;  // diff: the traces after --vs
};

// Where `analyse` writes: text to `text`, notes to `err`; with --json it sets `doc` instead of
// printing it (run prints it, indented; report keeps it).
struct CommandOutput {
  std::ostream& text;
  std::ostream& err;
  std::optional<nlohmann::ordered_json> doc;
  // Set by a caller that shows only totals: a command may leave out its lists of every element
  // (critical-path's `path`).
  bool brief = false;
};
using AnalyseFunction = std::function<Status(const LoadedInputs& inputs, const ParsedArgs& args, CommandOutput& out)>;

struct CommandSpec {
  std::string name;
  std::string synopsis;     // "IN OUT [--format F]"
  std::string description;  // one paragraph
  std::vector<FlagSpec> flags;
  size_t min_positional = 1;
  size_t max_positional = kAnyCount;
  std::function<Status(const ParsedArgs& args, std::ostream& out, std::ostream& err)> run;
  // The command on traces already read, for the commands `report` shows; `run` reads the inputs
  // and calls it. Empty for the others.
  AnalyseFunction analyse;
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

// A `run` that reads the inputs given (--rank's only, LoadScopedTraces) and calls `analyse`,
// printing its document when it set one (also when it fails: a check that failed, exit 3).
std::function<Status(const ParsedArgs&, std::ostream&, std::ostream&)> LoadThen(AnalyseFunction analyse);
// Calls `analyse` and prints what it wrote: the command's `run` for inputs read some other way.
Status AnalyseAndPrint(const AnalyseFunction& analyse, const LoadedInputs& inputs, const ParsedArgs& args,
                       std::ostream& out, std::ostream& err);

// The --json output of a command: the document, indented, and a newline.
void EmitJson(std::ostream& out, const nlohmann::ordered_json& doc);

// A rank, step or other count the trace may not record (-1 in the model): null when absent, so
// a document never shows a placeholder as a value.
inline nlohmann::ordered_json KnownInt(int64_t value) {
  return value >= 0 ? nlohmann::ordered_json(value) : nlohmann::ordered_json(nullptr);
}

}  // namespace stepscope::cli
