// The commands that turn traces into other traces or list what can be read and written:
// `convert` (any input to any output of the writer table) and `formats` (the reader and writer
// tables, profiler/formats/reader.h and writer.h).
#include <algorithm>
#include <filesystem>
#include <optional>
#include <string>

#include "profiler/cli/commands/commands.h"
#include "profiler/formats/inputs.h"
#include "profiler/formats/reader.h"
#include "profiler/formats/writer.h"

namespace stepscope::cli {
namespace {

// OUT's name for input `path` converted into directory `dir`: the input's file name without its
// trace extension (and .gz), with the first extension the output format's writer names.
std::string OutputInDirectory(const std::string& dir, const std::string& path, trace::OutputFormat format) {
  std::string name = std::filesystem::path(path).filename().string();
  auto strip = [&](std::string_view suffix) {
    const bool ends = name.size() > suffix.size() && name.ends_with(suffix);
    if (ends) name.resize(name.size() - suffix.size());
    return ends;
  };
  strip(".gz");
  if (!strip(".xplane.pb")) {
    const size_t dot = name.rfind('.');
    if (dot != std::string::npos && dot > 0) name.resize(dot);
  }
  std::string_view extension = ".json";  // a writer that names none (tf-timeline) writes JSON
  for (const trace::TraceWriterEntry& entry : trace::TraceWriters()) {
    if (entry.format != format || entry.extensions.empty()) continue;
    extension = entry.extensions.substr(0, entry.extensions.find(' '));
    break;
  }
  return (std::filesystem::path(dir) / (name + std::string(extension))).string();
}

Status ConvertOne(const std::string& in_path, const std::string& out_path, trace::OutputFormat format,
                  const trace::SerializeOptions& options, std::ostream& out, std::ostream& err) {
  ASSIGN_OR_RETURN(trace::Trace trace, trace::ReadTrace(in_path));
  std::vector<std::string> left_out;
  RETURN_IF_ERROR(trace::WriteTrace(trace, out_path, format, options, &left_out));
  for (const std::string& line : left_out) err << "stepscope convert: note: " << line << "\n";
  out << "wrote " << out_path << "\n";
  return Status::Ok();
}

// IN goes through the input resolver: a file or a profiler run directory is one trace and OUT
// one file. Several traces (a directory of trace files, a glob) are converted each into OUT when
// OUT is a directory (--format then says the format); into one file they are refused: joining
// them is `merge`'s job, which says how.
Status RunConvert(const ParsedArgs& args, std::ostream& out, std::ostream& err) {
  const std::string& in_path = args.positional[0];
  const std::string& out_path = args.positional[1];
  std::error_code error;
  const bool out_is_directory = std::filesystem::is_directory(out_path, error);
  std::optional<trace::OutputFormat> format;
  if (auto name = args.Get("format")) {
    format = trace::ParseOutputFormat(*name);
    if (!format) {
      return InvalidInput("--format " + *name + ": unknown format (use " + trace::OutputFormatList() + ")");
    }
  } else if (!out_is_directory) {
    format = trace::OutputFormatFromPath(out_path);
    if (!format) {
      return InvalidInput(out_path + ": cannot tell the output format from the extension; use " +
                          trace::OutputExtensionList() + ", or pass --format");
    }
  }
  trace::SerializeOptions options;
  options.keep_extensions = args.Has("keep-extensions");
  if (options.keep_extensions && format && *format != trace::OutputFormat::kRunMetadataText) {
    return InvalidInput("--keep-extensions applies to pbtxt output only (pb always keeps "
                        "stepscope's fields)");
  }
  ASSIGN_OR_RETURN(const std::vector<std::string> inputs, trace::ResolveTracePaths({in_path}));
  if (inputs.size() == 1 && !out_is_directory) return ConvertOne(inputs[0], out_path, *format, options, out, err);
  if (!out_is_directory) {
    return InvalidInput(in_path + ": holds " + std::to_string(inputs.size()) +
                        " traces and " + out_path +
                        " is one file; give an existing directory as OUT (with --format) to convert each, "
                        "or join them with 'stepscope merge " + in_path + " -o " + out_path + "'");
  }
  if (!format) return InvalidInput(out_path + ": is a directory; pass --format to say what to write into it");
  std::vector<std::string> outputs;
  for (const std::string& input : inputs) {
    outputs.push_back(OutputInDirectory(out_path, input, *format));
    for (size_t i = 0; i + 1 < outputs.size(); ++i) {
      if (outputs[i] == outputs.back()) {
        return InvalidInput(inputs[i] + " and " + input + ": both would be written to " + outputs.back());
      }
    }
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    RETURN_IF_ERROR(ConvertOne(inputs[i], outputs[i], *format, options, out, err));
  }
  return Status::Ok();
}

Status RunFormats(const ParsedArgs& args, std::ostream& out, std::ostream&) {
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

}  // namespace

CommandSpec ConvertCommand() {
  return {.name = "convert",
          .synopsis = "IN OUT [--format " + trace::OutputFormatChoices() + "] [--keep-extensions]",
          .description =
              "Converts a trace (any input of 'stepscope formats': RunMetadata/StepStats binary or text,\n"
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
              "OUT appears complete or not at all. IN may be a profiler run directory (one trace); a\n"
              "directory of trace files or a glob is converted file by file into OUT when OUT is an\n"
              "existing directory (--format required; each named after its input), and refused\n"
              "otherwise (stepscope merge joins them into one trace).",
          .flags =
              {{"format", "FORMAT", trace::OutputFormatList(/*with_aliases=*/true)},
              {"keep-extensions", "", "pbtxt: also write stepscope's fields (for stepscope, not TensorFlow)"}},
          .min_positional = 2,
          .max_positional = 2,
          .run = RunConvert};
}

CommandSpec FormatsCommand() {
  return {.name = "formats",
          .synopsis = "[--json]",
          .description =
              "Lists the trace formats stepscope reads (told from content, not the file name; gzip\n"
              "undone first) and writes (convert --format NAME, or OUT's extension).",
          .flags = {{"json", "", "machine-readable output"}},
          .min_positional = 0,
          .max_positional = 0,
          .run = RunFormats,
          .reads_traces = false};
}

}  // namespace stepscope::cli
