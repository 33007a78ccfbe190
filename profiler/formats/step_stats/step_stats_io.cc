// Parsing and serialising TensorFlow step stats files, binary and text, with the errors and
// repairs step_stats_io.h describes.
#include "profiler/formats/step_stats/step_stats_io.h"

#include <google/protobuf/arena.h>
#include <google/protobuf/descriptor.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/stubs/logging.h>
#include <google/protobuf/text_format.h>
#include <simdjson.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "profiler/formats/common/proto_utf8.h"
#include "profiler/formats/common/varint.h"
#include "stepscope/tf/run_metadata.pb.h"

namespace stepscope::trace {
namespace {

namespace pb = google::protobuf;

bool IsGraphFile(const pb::FileDescriptor* file) {
  return file->name() == "stepscope/tf/graph.proto" ||
         file->name() == "stepscope/tf/graph_debug_info.proto";
}

// Messages of TensorFlow's graph schema (graph.proto): a field newer than our copy of it is
// skipped in text (and counted) rather than refused; everywhere else a misspelt field is an error.
bool IsUnmodelledMessage(std::string_view full_name) {
  const pb::Descriptor* descriptor =
      pb::DescriptorPool::generated_pool()->FindMessageTypeByName(std::string(full_name));
  return descriptor != nullptr && IsGraphFile(descriptor->file());
}

// stepscope's own fields: numbered >= 1000 in our step stats and RunMetadata messages.
bool IsStepscopeField(const pb::FieldDescriptor* field) {
  return field->number() >= 1000 && !IsGraphFile(field->file());
}

// What text output leaves out, by kind, with counts.
struct LeftOut {
  std::map<std::string, int64_t> extensions;  // "NodeExecStats.op_type" -> count
  std::map<std::string, int64_t> unknown;     // "NodeExecStats #7" -> count
};

// Walks a message tree: counts unknown fields and (when `strip`) clears stepscope's fields.
void StripForText(pb::Message& message, bool strip, LeftOut& left_out) {
  const pb::Reflection* reflection = message.GetReflection();
  const pb::UnknownFieldSet& unknown = reflection->GetUnknownFields(message);
  for (int i = 0; i < unknown.field_count(); ++i) {
    ++left_out.unknown[message.GetDescriptor()->name() + " #" + std::to_string(unknown.field(i).number())];
  }
  std::vector<const pb::FieldDescriptor*> fields;
  reflection->ListFields(message, &fields);
  for (const pb::FieldDescriptor* field : fields) {
    if (strip && IsStepscopeField(field)) {
      const int64_t count = field->is_repeated() ? reflection->FieldSize(message, field) : 1;
      left_out.extensions[message.GetDescriptor()->name() + "." + field->name()] += count;
      reflection->ClearField(&message, field);
      continue;
    }
    if (field->cpp_type() != pb::FieldDescriptor::CPPTYPE_MESSAGE) continue;
    if (field->is_repeated()) {
      const int size = reflection->FieldSize(message, field);
      for (int i = 0; i < size; ++i) {
        StripForText(*reflection->MutableRepeatedMessage(&message, field, i), strip, left_out);
      }
    } else {
      StripForText(*reflection->MutableMessage(&message, field), strip, left_out);
    }
  }
}

// Collects text-format errors (first one wins) and unknown-field warnings. The parser reports
// 0-based lines and columns; users read 1-based ones.
class TextErrorCollector : public pb::io::ErrorCollector {
 public:
  void AddError(int line, pb::io::ColumnNumber column, const std::string& message) override {
    if (first_error_.empty()) first_error_ = Where(line, column) + ": " + message;
  }
  void AddWarning(int line, pb::io::ColumnNumber column, const std::string& message) override {
    // Unknown fields arrive as warnings "Message type \"X\" has no field named \"y\"."; other
    // warnings (e.g. a deprecated field in use) are not problems of the input.
    if (message.find("has no field named") == std::string::npos) return;
    const size_t open = message.find('"');
    const size_t close = open == std::string::npos ? open : message.find('"', open + 1);
    const std::string type =
        close == std::string::npos ? "" : message.substr(open + 1, close - open - 1);
    if (IsUnmodelledMessage(type)) {
      ++skipped_unmodelled_;
    } else if (first_unknown_.empty()) {
      first_unknown_ = Where(line, column) + ": " + message;
    }
  }
  static std::string Where(int line, pb::io::ColumnNumber column) {
    return "line " + std::to_string(line + 1) + " column " + std::to_string(column + 1);
  }
  std::string first_error_;
  std::string first_unknown_;
  int64_t skipped_unmodelled_ = 0;
};

// The first identifier of a text proto (skipping comments and whitespace).
std::string_view FirstTextField(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    if (c == '#') {
      while (i < text.size() && text[i] != '\n') ++i;
    } else if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
    } else {
      break;
    }
  }
  size_t end = i;
  while (end < text.size() &&
         (std::isalnum(static_cast<unsigned char>(text[end])) || text[end] == '_')) {
    ++end;
  }
  return text.substr(i, end - i);
}

// What a step stats file must have for us to make sense of it.
Status Validate(const tf::RunMetadata& metadata, const std::string& name) {
  const auto& step = metadata.step_stats();
  if (step.dev_stats_size() == 0) {
    return InvalidInput(name + ": contains no dev_stats: not a step stats trace (or empty)");
  }
  for (int d = 0; d < step.dev_stats_size(); ++d) {
    const auto& device = step.dev_stats(d);
    if (device.device().empty()) {
      return InvalidInput(name + ": dev_stats[" + std::to_string(d) +
                          "] has no `device` name");
    }
    for (int n = 0; n < device.node_stats_size(); ++n) {
      if (device.node_stats(n).node_name().empty()) {
        return InvalidInput(name + ": dev_stats[" + std::to_string(d) + "] (" + device.device() +
                            ") node_stats[" + std::to_string(n) + "] has no `node_name`");
      }
    }
  }
  return Status::Ok();
}

// Whether a text proto can hold a string that is not UTF-8: its bytes are not UTF-8, or an
// escape spells a byte (octal, hex) or a code point. Conservative, and cheap next to the parse:
// valid input without such escapes (the common case) skips the walk over every string field.
bool TextMayHoldInvalidUtf8(std::string_view text) {
  if (!simdjson::validate_utf8(text.data(), text.size())) return true;
  for (size_t at = text.find('\\'); at != std::string_view::npos; at = text.find('\\', at + 2)) {
    if (at + 1 == text.size()) return true;
    const char escaped = text[at + 1];
    if ((escaped >= '0' && escaped <= '7') || escaped == 'x' || escaped == 'X' || escaped == 'u' || escaped == 'U') {
      return true;
    }
  }
  return false;
}

}  // namespace

// Binary: a StepStats starts with field 1 = DeviceStepStats whose first field is the device
// *string*; a RunMetadata starts with field 1 = StepStats whose first field is a *message*.
// Peek two levels down to tell them apart.
bool BinaryLooksLikeBareStepStats(std::string_view bytes) {
  size_t pos = 0;
  uint64_t tag = 0;
  uint64_t length = 0;
  if (!ReadVarint(bytes, pos, tag) || tag != 0x0a) return false;
  if (!ReadVarint(bytes, pos, length) || length > bytes.size() - pos) return false;
  std::string_view inner = bytes.substr(pos, length);
  pos = 0;
  if (!ReadVarint(inner, pos, tag) || tag != 0x0a) return false;
  if (!ReadVarint(inner, pos, length) || length > inner.size() - pos) return false;
  const std::string_view first = inner.substr(pos, length);
  // A device name: text starting with '/' (TF's device names always do); bytes past ASCII are
  // allowed (UTF-8, or invalid UTF-8 the parse below repairs).
  if (first.empty() || first[0] != '/') return false;
  for (char c : first) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x80 && !std::isprint(byte)) return false;
  }
  return true;
}

int64_t CountUnknownBinaryFields(const tf::RunMetadata& metadata) {
  int64_t count = 0;
  auto unknown = [](const pb::Message& message) {
    return message.GetReflection()->GetUnknownFields(message).field_count();
  };
  count += unknown(metadata);
  count += unknown(metadata.step_stats());
  for (const auto& device : metadata.step_stats().dev_stats()) {
    count += unknown(device);
    for (const auto& node : device.node_stats()) count += unknown(node);
  }
  return count;
}

bool LooksLikeTextProto(std::string_view bytes) {
  const std::string_view field = FirstTextField(bytes);
  if (field.empty()) return false;
  // Text protos are printable; binary step stats start with tag bytes like 0x0a.
  const size_t probe = std::min<size_t>(bytes.size(), 4096);
  for (size_t i = 0; i < probe; ++i) {
    const auto c = static_cast<unsigned char>(bytes[i]);
    if (c < 0x20 && c != '\n' && c != '\r' && c != '\t') return false;
  }
  return true;
}

StatusOr<ParsedStepStats> ParseStepStats(std::string_view bytes, const std::string& name) {
  ParsedStepStats parsed;
  // One arena for the whole message tree: parsing a 2^20-node step allocates millions of small
  // messages, and the arena makes that (and freeing them) a few large allocations.
  pb::ArenaOptions arena_options;
  // A multiple of 8: the arena keeps its cleanup records at a block's end, and a block of odd size
  // would leave them misaligned.
  arena_options.start_block_size = std::min<size_t>((bytes.size() * 2 + 4096 + 7) & ~size_t{7}, size_t{64} << 20);
  arena_options.max_block_size = size_t{64} << 20;
  auto arena = std::make_shared<pb::Arena>(arena_options);
  parsed.run_metadata = std::shared_ptr<tf::RunMetadata>(
      arena, pb::Arena::CreateMessage<tf::RunMetadata>(arena.get()));
  tf::RunMetadata& metadata = *parsed.run_metadata;

  if (LooksLikeTextProto(bytes)) {
    const std::string_view first = FirstTextField(bytes);
    pb::Message* target = nullptr;
    if (first == "dev_stats") {
      parsed.format = SourceFormat::kStepStatsText;
      target = metadata.mutable_step_stats();
    } else {
      parsed.format = SourceFormat::kRunMetadataText;
      target = &metadata;
    }
    TextErrorCollector errors;
    pb::TextFormat::Parser parser;
    parser.RecordErrorsTo(&errors);
    parser.AllowUnknownField(true);  // so graph contents can be skipped; others checked below
    pb::io::ArrayInputStream input(bytes.data(), static_cast<int>(bytes.size()));
    const bool ok = parser.Parse(&input, target);
    if (!ok || !errors.first_error_.empty()) {
      return InvalidInput(name + ": malformed text proto at " +
                          (errors.first_error_.empty() ? std::string("unknown position")
                                                       : errors.first_error_));
    }
    if (!errors.first_unknown_.empty()) {
      return InvalidInput(name + ": unknown field at " + errors.first_unknown_);
    }
    parsed.stats.Add("unmodelled_text_fields_skipped", errors.skipped_unmodelled_);
    // Octal or hex escapes can spell bytes that are not UTF-8; a node keeping them could not be
    // parsed back from the node store, so its details would be lost.
    if (TextMayHoldInvalidUtf8(bytes)) {
      parsed.stats.Add(kInvalidUtf8StringsRepaired, RepairInvalidUtf8Strings(metadata));
    }
  } else {
    parsed.format = BinaryLooksLikeBareStepStats(bytes) ? SourceFormat::kStepStatsBinary
                                                        : SourceFormat::kRunMetadataBinary;
    pb::Message* target = parsed.format == SourceFormat::kStepStatsBinary
                              ? static_cast<pb::Message*>(metadata.mutable_step_stats())
                              : &metadata;
    const auto invalid = [&] {
      return InvalidInput(name + ": not a valid binary RunMetadata/StepStats (truncated or "
                                 "corrupt protobuf, " + std::to_string(bytes.size()) + " bytes)");
    };
    if (bytes.size() > static_cast<size_t>(INT32_MAX)) return invalid();
    bool ok = false;
    {
      // A failed parse is reported below with the file name; protobuf's own log line (e.g.
      // about invalid UTF-8 in a string field) would only repeat it without one.
      pb::LogSilencer silence;
      ok = target->ParseFromArray(bytes.data(), static_cast<int>(bytes.size()));
    }
    if (!ok) {
      // The parser refuses strings that are not UTF-8; the text parser accepts them and we
      // repair them, so binary input gets the same treatment: repair the wire bytes, parse again.
      std::string repaired_bytes;
      int64_t repaired = 0;
      if (!RepairInvalidUtf8InWireFormat(bytes, *target->GetDescriptor(), &repaired_bytes, &repaired) ||
          repaired == 0 || repaired_bytes.size() > static_cast<size_t>(INT32_MAX)) {
        return invalid();
      }
      target->Clear();
      pb::LogSilencer silence;
      if (!target->ParseFromString(repaired_bytes)) return invalid();
      parsed.stats.Add(kInvalidUtf8StringsRepaired, repaired);
    }
    parsed.stats.Add("unknown_binary_fields_kept", CountUnknownBinaryFields(metadata));
  }
  RETURN_IF_ERROR(Validate(metadata, name));
  return parsed;
}

StatusOr<std::string> SerializeRunMetadata(const tf::RunMetadata& metadata,
                                           StepStatsEncoding encoding,
                                           const SerializeOptions& options,
                                           std::vector<std::string>* left_out) {
  std::string out;
  if (encoding == StepStatsEncoding::kBinary) {
    // Deterministic: map entries (thread_names, attrs) in key order, so that the same trace
    // always gives the same bytes and pb -> pbtxt -> pb is the identity.
    {
      pb::io::StringOutputStream stream(&out);
      pb::io::CodedOutputStream coded(&stream);
      coded.SetSerializationDeterministic(true);
      if (!metadata.SerializeToCodedStream(&coded)) return Internal("serialising RunMetadata failed");
    }
    return out;
  }
  // Text: numbered unknown fields would not parse back (in TensorFlow or here), and stepscope's
  // fields are unknown to TensorFlow unless asked for; both are left out and named.
  tf::RunMetadata copy;
  copy.CopyFrom(metadata);
  LeftOut dropped;
  StripForText(copy, !options.keep_extensions, dropped);
  pb::TextFormat::Printer printer;
  printer.SetHideUnknownFields(true);
  if (!printer.PrintToString(copy, &out)) return Internal("printing RunMetadata failed");
  if (left_out != nullptr) {
    auto list = [](const std::map<std::string, int64_t>& counts) {
      std::string text;
      for (const auto& [name, count] : counts) {
        text += (text.empty() ? "" : ", ") + name + " (" + std::to_string(count) + ")";
      }
      return text;
    };
    if (!dropped.extensions.empty()) {
      left_out->push_back("stepscope fields left out so that TensorFlow can parse the text: " +
                          list(dropped.extensions) + "; --keep-extensions keeps them");
    }
    if (!dropped.unknown.empty()) {
      left_out->push_back("unknown binary fields left out (text cannot carry them; .pb keeps them): " +
                          list(dropped.unknown));
    }
  }
  return out;
}

}  // namespace stepscope::trace
