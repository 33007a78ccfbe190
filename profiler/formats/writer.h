// Writing a Trace to a file in any output format; the format comes from the caller or from the
// output path's extension. Output lands atomically (temp file + rename): on any failure nothing
// is left at the target path.
#pragma once

#include <optional>
#include <span>
#include <string>

#include "base/status.h"
#include "profiler/formats/chrome_json/chrome_json_writer.h"
#include "profiler/formats/tf_timeline/tf_timeline_writer.h"
#include "profiler/formats/step_stats/step_stats_io.h"
#include "profiler/trace/trace.h"

namespace stepscope::tf {
class RunMetadata;
}

namespace stepscope::trace {

enum class OutputFormat { kPerfettoJson, kTfTimelineJson, kRunMetadataBinary, kRunMetadataText, kPerfettoProto };

// One entry per output format, for `convert --format`, `stepscope formats` and help texts.
struct TraceWriterEntry {
  OutputFormat format;
  std::string_view name;         // the --format name
  std::string_view alias;        // another accepted name, or empty
  std::string_view extensions;   // the output names that select it (as TraceReaderEntry's)
  std::string_view description;  // one line
};
std::span<const TraceWriterEntry> TraceWriters();

// The table's --format names for help texts and messages, in table order: as choices
// ("chrome|perfetto-proto|tf-timeline|pb|pbtxt"), or as a list ("chrome, ..., pb or pbtxt"),
// with each alias when asked ("chrome (alias perfetto), ...").
std::string OutputFormatChoices();
std::string OutputFormatList(bool with_aliases = false);
// The output file names that select a format: ".json .json.gz, .pftrace .perfetto-trace (.gz),
// .pb or .pbtxt".
std::string OutputExtensionList();

// "chrome"/"perfetto", "tf-timeline", "pb", "pbtxt", "perfetto-proto"/"pftrace"; nullopt for
// anything else.
std::optional<OutputFormat> ParseOutputFormat(std::string_view name);
// The writer whose extensions end `path`: .json/.json.gz -> chrome, .pb -> pb, .pbtxt -> pbtxt,
// .pftrace/.perfetto-trace (.gz) -> perfetto-proto.
std::optional<OutputFormat> OutputFormatFromPath(std::string_view path);

// The bytes of `trace` in `format`. `options` and `left_out` as for SerializeRunMetadata
// (pb/pbtxt output; `left_out` names what text output could not carry).
StatusOr<std::string> Serialize(const Trace& trace, OutputFormat format,
                                const SerializeOptions& options = {},
                                std::vector<std::string>* left_out = nullptr);

Status WriteTrace(const Trace& trace, const std::string& path, OutputFormat format,
                  const SerializeOptions& options = {},
                  std::vector<std::string>* left_out = nullptr);

// The RunMetadata for pb/pbtxt output: the source's own (lossless) or, for traces from other
// formats, one built from the slices (device = track, node = slice, op_type extension set).
std::shared_ptr<const tf::RunMetadata> RunMetadataFor(const Trace& trace);

}  // namespace stepscope::trace
