#include "profiler/cli/cli.h"

#include <algorithm>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/file_io.h"
#include "profiler/cli/command.h"
#include "profiler/cli/gpu_commands.h"
#include "profiler/cli/rank_commands.h"
#include "base/flags.h"
#include "profiler/formats/reader.h"
#include "profiler/trace/truncation.h"
#include "profiler/formats/writer.h"

namespace stepscope::cli {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitUsage = 2;

class ConvertCommand : public Command {
 public:
  std::string name() const override { return "convert"; }
  std::string synopsis() const override {
    return "IN OUT [--format " + trace::OutputFormatChoices() + "] [--keep-extensions]";
  }
  std::string description() const override {
    return "Converts a trace (any input of 'stepscope formats': RunMetadata/StepStats binary or text,\n"
           "Chrome/Kineto JSON, TensorFlow 2/JAX XSpace .xplane.pb or a plugins/profile/<run>/\n"
           "directory, Perfetto protobuf; gzipped or not) into OUT. The format comes from --format\n"
           "or from OUT's extension:\n"
           "  .json, .json.gz -> chrome (the Perfetto-ready flavour)   .pb -> pb   .pbtxt -> pbtxt\n"
           "  .pftrace, .perfetto-trace (.gz) -> perfetto-proto\n"
           "chrome: de-duplicated GPU lanes, allocator counters from allocation records, flows,\n"
           "        ns precision (times rebased on the trace start). Gzipped when OUT ends in .gz.\n"
           "perfetto-proto: Perfetto's native TracePacket/TrackEvent protobuf: a track per lane and\n"
           "        stream (overlapping work never dropped), interned names, args, flows, counter\n"
           "        tracks, a clock snapshot per host; every slice kept (stepscope reads it back).\n"
           "tf-timeline: the events TensorFlow's timeline.py writes (show_dataflow, show_memory).\n"
           "pb/pbtxt: a TensorFlow RunMetadata; step stats inputs are kept losslessly (graphs,\n"
           "        cost graph and session included). pbtxt holds TensorFlow's fields only, so\n"
           "        TensorFlow's text parser reads it; stepscope's own fields (op_type, kernel,\n"
           "        memcpy, collective, correlation_id, input, host, rank, stepscope_session) are\n"
           "        left out and named on stderr unless --keep-extensions (the file is then for\n"
           "        stepscope: TensorFlow refuses it). .pb always keeps them (TensorFlow skips them).\n"
           "OUT appears complete or not at all.";
  }
  std::vector<FlagSpec> flags() const override {
    return {{"format", "FORMAT", trace::OutputFormatList(/*with_aliases=*/true)},
            {"keep-extensions", "", "pbtxt: also write stepscope's fields (for stepscope, not TensorFlow)"}};
  }
  size_t min_positional() const override { return 2; }
  size_t max_positional() const override { return 2; }

  Status Run(const ParsedArgs& args, std::ostream& out, std::ostream& err) const override {
    const std::string& in_path = args.positional[0];
    const std::string& out_path = args.positional[1];
    std::optional<trace::OutputFormat> format;
    if (auto name = args.Get("format")) {
      format = trace::ParseOutputFormat(*name);
      if (!format) {
        return InvalidInput("--format " + *name + ": unknown format (use " + trace::OutputFormatList() + ")");
      }
    } else {
      format = trace::OutputFormatFromPath(out_path);
      if (!format) {
        return InvalidInput(out_path + ": cannot tell the output format from the extension; use " +
                            trace::OutputExtensionList() + ", or pass --format");
      }
    }
    trace::SerializeOptions options;
    options.keep_extensions = args.Has("keep-extensions");
    if (options.keep_extensions && *format != trace::OutputFormat::kRunMetadataText) {
      return InvalidInput("--keep-extensions applies to pbtxt output only (pb always keeps "
                          "stepscope's fields)");
    }
    ASSIGN_OR_RETURN(trace::Trace trace, trace::ReadTrace(in_path));
    std::vector<std::string> left_out;
    RETURN_IF_ERROR(trace::WriteTrace(trace, out_path, *format, options, &left_out));
    for (const std::string& line : left_out) err << "stepscope convert: note: " << line << "\n";
    out << "wrote " << out_path << "\n";
    return Status::Ok();
  }
};

// Lists the reader and writer tables (profiler/trace/reader.h, writer.h).
class FormatsCommand : public Command {
 public:
  std::string name() const override { return "formats"; }
  std::string synopsis() const override { return "[--json]"; }
  std::string description() const override {
    return "Lists the trace formats stepscope reads (told from content, not the file name; gzip\n"
           "undone first) and writes (convert --format NAME, or OUT's extension).";
  }
  std::vector<FlagSpec> flags() const override { return {{"json", "", "machine-readable output"}}; }
  size_t min_positional() const override { return 0; }
  size_t max_positional() const override { return 0; }
  bool reads_traces() const override { return false; }

  Status Run(const ParsedArgs& args, std::ostream& out, std::ostream&) const override {
    if (args.Has("json")) {
      out << "{\"schema\":\"stepscope.formats/1\",\"read\":[";
      bool first = true;
      for (const trace::TraceReaderEntry& entry : trace::TraceReaders()) {
        out << (first ? "" : ",") << "{\"name\":\"" << entry.name << "\",\"extensions\":\"" << entry.extensions
            << "\"}";
        first = false;
      }
      out << "],\"write\":[";
      first = true;
      for (const trace::TraceWriterEntry& entry : trace::TraceWriters()) {
        out << (first ? "" : ",") << "{\"name\":\"" << entry.name << "\",\"alias\":\"" << entry.alias
            << "\",\"extensions\":\"" << entry.extensions << "\"}";
        first = false;
      }
      out << "]}\n";
      return Status::Ok();
    }
    auto row = [&](std::string_view name, std::string_view extensions, std::string_view description) {
      std::string left = "  " + std::string(name);
      left.resize(std::max<size_t>(left.size() + 1, 18), ' ');
      std::string ext(extensions);
      ext.resize(std::max<size_t>(ext.size() + 1, 34), ' ');
      out << left << ext << description << "\n";
    };
    out << "read (detected from content, in this order):\n";
    for (const trace::TraceReaderEntry& entry : trace::TraceReaders()) row(entry.name, entry.extensions, entry.description);
    out << "\nwrite (convert --format NAME or OUT's extension):\n";
    for (const trace::TraceWriterEntry& entry : trace::TraceWriters()) {
      const std::string name = entry.alias.empty() ? std::string(entry.name)
                                                   : std::string(entry.name) + " (" + std::string(entry.alias) + ")";
      row(name, entry.extensions, entry.description);
    }
    return Status::Ok();
  }
};

std::vector<std::unique_ptr<Command>> AllCommands() {
  std::vector<std::unique_ptr<Command>> commands;
  commands.push_back(std::make_unique<ConvertCommand>());
  commands.push_back(std::make_unique<FormatsCommand>());
  AddAnalysisCommands(commands);
  AddGpuCommands(commands);
  AddRankCommands(commands);
  return commands;
}

// The output of a command run with --allow-truncated that read a trace cut short, saying so
// first: a --json document gets the top-level key "truncated" (after "schema"), a list of
// {file, offset, gzip_cut, events_kept, reason}; text gets a TruncationLine per cut first.
// Done here, once for every command, so that no command's output can go without it.
std::string WithTruncationNotice(const std::string& output, const std::vector<trace::Truncation>& cuts, bool json) {
  if (cuts.empty()) return output;
  if (json) {
    auto doc = nlohmann::ordered_json::parse(output, nullptr, false);
    if (doc.is_object()) {
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
      return noted.dump(2) + "\n";
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
  for (const auto& command : commands) width = std::max(width, command->name().size());
  for (const auto& command : commands) {
    std::string name = "  " + command->name();
    name.resize(width + 4, ' ');
    help += name + command->synopsis() + "\n";
  }
  help += "\n'stepscope <command> --help' for details. Exit codes: 0 ok, 1 runtime failure,\n"
          "2 usage or bad input (a trace file cut short included: --allow-truncated reads it up to\n"
          "the cut and says so first), 3 a check failed (diff --fail-on-regression: the regression gate).\n";
  return help;
}

}  // namespace

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
  for (const auto& command : AllCommands()) {
    if (command->name() != args[0]) continue;
    const std::vector<std::string> rest(args.begin() + 1, args.end());
    auto parsed = ParseFlags(rest, command->all_flags());
    if (!parsed.ok()) {
      err << "stepscope " << command->name() << ": " << parsed.status().message() << "\n"
          << "usage: stepscope " << command->name() << " " << command->synopsis() << "\n";
      return kExitUsage;
    }
    if (parsed->help) {
      out << command->Help();
      return kExitOk;
    }
    const size_t count = parsed->positional.size();
    if (count < command->min_positional() || count > command->max_positional()) {
      err << "stepscope " << command->name() << ": expected " << command->min_positional()
          << (command->min_positional() == command->max_positional() ? "" : " or more")
          << " argument(s), got " << count << "\n"
          << "usage: stepscope " << command->name() << " " << command->synopsis() << "\n";
      return kExitUsage;
    }
    Status status;
    if (parsed->Has("allow-truncated")) {
      // Every read in the run accepts a cut; the output is held back to be headed by the cuts.
      trace::AllowTruncatedScope scope;
      std::ostringstream held;
      status = command->Run(*parsed, held, err);
      const auto& cuts = scope.truncations();
      const bool json = parsed->Has("json");
      out << WithTruncationNotice(held.str(), cuts, json);
      if (json) {
        for (const trace::Truncation& cut : cuts) err << trace::TruncationLine(cut) << "\n";
      }
    } else {
      status = command->Run(*parsed, out, err);
    }
    if (!status.ok()) {
      err << "stepscope " << command->name() << ": " << status.message() << "\n";
      return ExitCodeFor(status);
    }
    return kExitOk;
  }
  err << "stepscope: unknown command '" << args[0] << "'\n\n" << TopHelp();
  return kExitUsage;
}

}  // namespace stepscope::cli
