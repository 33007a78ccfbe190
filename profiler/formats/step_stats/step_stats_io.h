// Reading and writing TensorFlow step stats files: RunMetadata or StepStats, binary or text,
// told apart by content. Parsing is strict where TensorFlow's schema is ours (a misspelt field
// in a NodeExecStats is an error with line and column) and tolerant inside graphs and cost graphs
// (TensorFlow's schema of them, in graph.proto: a field newer than it is skipped in text and
// counted, kept in binary).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

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

// Binary input: true when it starts as a bare StepStats rather than a RunMetadata.
bool BinaryLooksLikeBareStepStats(std::string_view bytes);

// Unknown fields of a RunMetadata, its StepStats, devices and nodes (what a pb -> pb conversion
// keeps: `unknown_binary_fields_kept`).
int64_t CountUnknownBinaryFields(const tf::RunMetadata& metadata);

struct SerializeOptions {
  // Text only. false (the default): the text holds TensorFlow's fields only, so TensorFlow's
  // own text parser (`google.protobuf.text_format.Parse` into tensorflow.RunMetadata) reads it;
  // stepscope's fields (numbered >= 1000: op_type, kernel, memcpy, collective, correlation_id,
  // input, host, rank, stepscope_session) are left out. true: they are written by name, for
  // stepscope to read back (TensorFlow's parser then refuses the file).
  bool keep_extensions = false;
};

// Serialises a RunMetadata; binary output is deterministic (map entries in key order) and keeps
// everything, unknown fields included. Text output is protobuf's text format of TensorFlow's
// schema, graphs included. What text output could not carry (stepscope fields without
// keep_extensions, unknown binary fields) is named in `left_out`, one line per kind, with counts.
StatusOr<std::string> SerializeRunMetadata(const tf::RunMetadata& metadata,
                                           StepStatsEncoding encoding,
                                           const SerializeOptions& options = {},
                                           std::vector<std::string>* left_out = nullptr);

}  // namespace stepscope::trace
