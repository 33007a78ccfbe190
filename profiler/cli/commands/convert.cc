// The commands that turn traces into other traces or list what can be read and written:
// `convert` (any input to any output of the writer table) and `formats` (the reader and writer
// tables, profiler/formats/reader.h and writer.h).
#include <algorithm>
#include <optional>
#include <string>

#include "profiler/cli/commands/commands.h"
#include "profiler/formats/reader.h"
#include "profiler/formats/writer.h"

namespace stepscope::cli {
namespace {

Status RunConvert(const ParsedArgs& args, std::ostream& out, std::ostream& err) {
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
              "OUT appears complete or not at all.",
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
