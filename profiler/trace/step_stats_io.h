// Reading and writing TensorFlow step stats files: RunMetadata or StepStats, binary or text,
// told apart by content. Parsing is strict where TensorFlow's schema is ours (a misspelt field
// in a NodeExecStats is an error with line and column) and tolerant where we do not model the
// content (graphs and cost graphs inside a RunMetadata are skipped in text, kept in binary).
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "base/status.h"
#include "profiler/trace/trace.h"

namespace stepscope::tf {
class RunMetadata;
}

namespace stepscope::trace {

enum class StepStatsEncoding { kBinary, kText };

struct ParsedStepStats {
  std::shared_ptr<tf::RunMetadata> run_metadata;  // a bare StepStats is wrapped in one
  SourceFormat format = SourceFormat::kRunMetadataBinary;
  ImportStats stats;  // unknown content skipped or kept
};

// Parses `bytes` (already inflated) as step stats; `name` is used in messages.
StatusOr<ParsedStepStats> ParseStepStats(std::string_view bytes, const std::string& name);

// True when the content looks like a text proto (identifiers, braces, printable) rather than
// binary protobuf.
bool LooksLikeTextProto(std::string_view bytes);

// Serialises a RunMetadata. Text output is TensorFlow's text format (parses in TensorFlow);
// unknown binary content that text cannot express is left out of text output.
StatusOr<std::string> SerializeRunMetadata(const tf::RunMetadata& metadata,
                                           StepStatsEncoding encoding);

}  // namespace stepscope::trace
