// RunCli: finds the command in the table (commands/commands.h), parses its flags, checks its
// arguments, prints help, runs it, and heads its output with what --allow-truncated cut.
#include "profiler/cli/cli.h"

#include <algorithm>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/file_io.h"
#include "base/flags.h"
#include "profiler/cli/command.h"
#include "profiler/cli/commands/commands.h"
#include "profiler/trace/truncation.h"

namespace stepscope::cli {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitUsage = 2;

// The output of a command run with --allow-truncated that read a trace cut short, saying so
// first: a --json document gets AddTruncationNotice; text gets a TruncationLine per cut first.
// Done here, once for every command, so that no command's output can go without it.
std::string WithTruncationNotice(const std::string& output, const std::vector<trace::Truncation>& cuts, bool json) {
  if (cuts.empty()) return output;
  if (json) {
    auto doc = nlohmann::ordered_json::parse(output, nullptr, false);
    if (doc.is_object()) {
      AddTruncationNotice(doc, cuts);
      return doc.dump(2) + "\n";
    }
    return output;  // no document (the command failed): stderr says it
  }
  std::string lines;
  for (const trace::Truncation& cut : cuts) lines += trace::TruncationLine(cut) + "\n";
  return lines + output;
}

std::string TopHelp() {
  std::string help =
      "usage: stepscope <command> [args] [--help]\n\n"
      "Converts, summarizes and analyses training step traces: TensorFlow RunMetadata/StepStats\n"
      "(binary or text), stepscope-train's traces, Chrome/Kineto JSON, TensorFlow 2/JAX XSpace,\n"
      "Perfetto protobuf (.gz transparently; 'stepscope formats' lists them).\n\ncommands:\n";
  const auto commands = AllCommands();
  size_t width = 0;
  for (const CommandSpec& command : commands) width = std::max(width, command.name.size());
  for (const CommandSpec& command : commands) {
    std::string name = "  " + command.name;
    name.resize(width + 4, ' ');
    help += name + command.synopsis + "\n";
  }
  help += "\n'stepscope <command> --help' for details. Exit codes: 0 ok, 1 runtime failure,\n"
          "2 usage or bad input (a trace file cut short included: --allow-truncated reads it up to\n"
          "the cut and says so first), 3 a check failed (diff --fail-on-regression: the regression gate).\n";
  return help;
}

}  // namespace

void AddTruncationNotice(nlohmann::ordered_json& doc, const std::vector<trace::Truncation>& cuts) {
  if (cuts.empty() || !doc.is_object()) return;
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const trace::Truncation& cut : cuts) {
    list.push_back({{"file", cut.file},
                    {"offset", cut.offset},
                    {"gzip_cut", cut.gzip_cut},
                    {"events_kept", cut.events_kept},
                    {"reason", cut.reason}});
  }
  nlohmann::ordered_json noted = nlohmann::ordered_json::object();
  if (doc.contains("schema")) noted["schema"] = doc["schema"];
  noted["truncated"] = std::move(list);
  for (auto& [key, value] : doc.items()) {
    if (key != "schema") noted[key] = std::move(value);
  }
  doc = std::move(noted);
}

int RunCli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  if (args.empty()) {
    err << TopHelp();
    return kExitUsage;
  }
  if (args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    out << TopHelp();
    return kExitOk;
  }
  if (args[0] == "--version") {
    out << "stepscope " << STEPSCOPE_VERSION << "\n";
    return kExitOk;
  }
  for (const CommandSpec& command : AllCommands()) {
    if (command.name != args[0]) continue;
    const std::vector<std::string> rest(args.begin() + 1, args.end());
    auto parsed = ParseFlags(rest, command.all_flags());
    if (!parsed.ok()) {
      err << "stepscope " << command.name << ": " << parsed.status().message() << "\n"
          << "usage: stepscope " << command.name << " " << command.synopsis << "\n";
      return kExitUsage;
    }
    if (parsed->help) {
      out << command.Help();
      return kExitOk;
    }
    const size_t count = parsed->positional.size();
    if (count < command.min_positional || count > command.max_positional) {
      err << "stepscope " << command.name << ": expected " << command.min_positional
          << (command.min_positional == command.max_positional ? "" : " or more")
          << " argument(s), got " << count << "\n"
          << "usage: stepscope " << command.name << " " << command.synopsis << "\n";
      return kExitUsage;
    }
    Status status;
    if (parsed->Has("allow-truncated")) {
      // Every read in the run accepts a cut; the output is held back to be headed by the cuts.
      trace::AllowTruncatedScope scope;
      std::ostringstream held;
      status = command.run(*parsed, held, err);
      const auto& cuts = scope.truncations();
      const bool json = parsed->Has("json");
      out << WithTruncationNotice(held.str(), cuts, json);
      if (json) {
        for (const trace::Truncation& cut : cuts) err << trace::TruncationLine(cut) << "\n";
      }
    } else {
      status = command.run(*parsed, out, err);
    }
    if (!status.ok()) {
      err << "stepscope " << command.name << ": " << status.message() << "\n";
      return ExitCodeFor(status);
    }
    return kExitOk;
  }
  err << "stepscope: unknown command '" << args[0] << "'\n\n" << TopHelp();
  return kExitUsage;
}

}  // namespace stepscope::cli
