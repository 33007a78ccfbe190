// The reader table and what reads through it: telling a format from content or file name, and
// reading a file (streamed or whole) or a directory that is one trace.
#include "profiler/formats/reader.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <optional>
#include <system_error>
#include <vector>

#include "base/file_io.h"
#include "base/file_reader.h"
#include "profiler/formats/chrome_json/chrome_json_reader.h"
#include "profiler/formats/common/format_sniff.h"
#include "profiler/formats/perfetto/perfetto_proto.h"
#include "profiler/formats/step_stats/step_stats_import.h"
#include "profiler/formats/step_stats/step_stats_io.h"
#include "profiler/formats/xspace/xspace_reader.h"

namespace stepscope::trace {
namespace {

// After a UTF-8 byte order mark and white space, `{` or `[`.
bool SniffChromeJson(std::string_view bytes) {
  size_t i = 0;
  if (bytes.substr(0, 3) == "\xEF\xBB\xBF") i = 3;
  while (i < bytes.size() && std::isspace(static_cast<unsigned char>(bytes[i]))) ++i;
  return i < bytes.size() && (bytes[i] == '{' || bytes[i] == '[');
}

bool SniffStepStats(std::string_view bytes) { return LooksLikeTextProto(bytes) || FitsStepStats(bytes); }
bool SniffXSpace(std::string_view bytes) { return FitsXSpace(bytes); }
bool SniffPerfetto(std::string_view bytes) { return FitsPerfettoTrace(bytes); }

StatusOr<Trace> ReadChromeJsonBytes(std::string_view bytes, const std::string& name) {
  return ReadChromeJson(bytes, name);
}

StatusOr<Trace> StreamChromeJson(FileReader& file, std::string head, const StreamReadOptions& options) {
  ChromeJsonReadOptions json;
  json.on_progress = options.on_progress;
  json.preview_bytes = options.preview_bytes;
  json.allow_truncated = options.truncation != nullptr;
  json.truncation = options.truncation;
  return ReadChromeJson(file, head, json);
}

// A gzip stream that ends early under a reader that reads whole files: the file and the offset.
Status CutGzip(const FileReader& reader) {
  return InvalidInput(reader.path() + ": the compressed file ends early: its gzip stream stops at byte " +
                      std::to_string(reader.bytes_read()) + " of the decompressed content");
}

// A Perfetto trace streams too: whole packets a piece at a time.
StatusOr<Trace> StreamPerfetto(FileReader& file, std::string head, const StreamReadOptions& options) {
  PerfettoStreamOptions perfetto;
  perfetto.preview_bytes = options.preview_bytes;
  perfetto.on_progress = options.on_progress;
  StatusOr<Trace> trace = ReadPerfettoProto(file, std::move(head), file.path(), perfetto);
  // A gzip cut is named as such, also where it fell between two packets and reads as whole.
  if (file.cut_short() && (trace.ok() || trace.status().code() == StatusCode::kInvalidInput)) {
    return CutGzip(file);
  }
  return trace;
}

StatusOr<Trace> ReadStepStats(std::string_view bytes, const std::string& name) {
  // Binary: straight from the wire, unless the scan declines the input (then protobuf parses it
  // and names the damage or repairs it).
  if (!LooksLikeTextProto(bytes)) {
    if (std::optional<Trace> trace = ImportBinaryStepStats(bytes, name)) return std::move(*trace);
  }
  ASSIGN_OR_RETURN(ParsedStepStats parsed, ParseStepStats(bytes, name));
  return ImportRunMetadata(std::move(parsed.run_metadata), parsed.format, name, parsed.stats);
}

constexpr TraceReaderEntry kReaders[] = {
    {DetectedFormat::kChromeJson, "chrome-json",
     "Chrome Trace Event JSON: Perfetto/chrome://tracing, PyTorch profiler (Kineto), TensorFlow timeline",
     ".json .json.gz", SniffChromeJson, ReadChromeJsonBytes, StreamChromeJson},
    {DetectedFormat::kStepStats, "step-stats",
     "TensorFlow RunMetadata or StepStats, binary or text (TF 1.x, stepscope-train --profile)",
     ".pb .pbtxt (.gz)", SniffStepStats, ReadStepStats},
    {DetectedFormat::kXSpace, "xspace",
     "TensorFlow 2 / JAX profiler XSpace (tf.profiler, jax.profiler; a plugins/profile/<run>/ directory too)",
     ".xplane.pb (.gz)", SniffXSpace, ReadXSpace, nullptr, ReadXSpaceFiles},
    {DetectedFormat::kPerfettoProto, "perfetto-proto",
     "Perfetto protobuf trace (TracePacket/TrackEvent), as stepscope and the Perfetto SDK write it",
     ".pftrace .perfetto-trace (.gz)", SniffPerfetto, ReadPerfettoProto, StreamPerfetto},
};

// Formats whose content fits up to a cut: a truncated file goes to the reader of what it was.
DetectedFormat DetectCut(std::string_view bytes) {
  if (bytes.empty() || static_cast<unsigned char>(bytes[0]) != 0x0a) return DetectedFormat::kUnknown;
  if (FitsStepStats(bytes, true)) return DetectedFormat::kStepStats;
  if (FitsXSpace(bytes, true)) return DetectedFormat::kXSpace;
  if (FitsPerfettoTrace(bytes, true)) return DetectedFormat::kPerfettoProto;
  return DetectedFormat::kUnknown;
}

// Every file-name ending `extensions` names (TraceReaderEntry::extensions), gzipped ones included.
std::vector<std::string> Endings(std::string_view extensions) {
  const bool gzip = extensions.ends_with("(.gz)");
  if (gzip) extensions.remove_suffix(5);
  std::vector<std::string> endings;
  while (!extensions.empty()) {
    const size_t space = extensions.find(' ');
    const std::string ending(extensions.substr(0, space));
    extensions.remove_prefix(space == std::string_view::npos ? extensions.size() : space + 1);
    if (ending.empty()) continue;
    endings.push_back(ending);
    if (gzip) endings.push_back(ending + ".gz");
  }
  return endings;
}

// The length of the longest ending of `file_name` that `extensions` names, 0 when none.
size_t MatchedEnding(std::string_view extensions, std::string_view file_name) {
  size_t longest = 0;
  for (const std::string& ending : Endings(extensions)) {
    if (file_name.ends_with(ending)) longest = std::max(longest, ending.size());
  }
  return longest;
}

}  // namespace

bool MatchesExtensions(std::string_view extensions, std::string_view file_name) {
  return MatchedEnding(extensions, file_name) > 0;
}

const TraceReaderEntry* TraceReaderForFileName(std::string_view file_name) {
  const TraceReaderEntry* best = nullptr;
  size_t longest = 0;
  for (const TraceReaderEntry& entry : kReaders) {
    const size_t matched = MatchedEnding(entry.extensions, file_name);
    if (matched > longest) {
      longest = matched;
      best = &entry;
    }
  }
  return best;
}

std::vector<std::string> TraceFilePatterns() {
  std::vector<std::string> patterns;
  for (const TraceReaderEntry& entry : kReaders) {
    for (const std::string& ending : Endings(entry.extensions)) {
      if (std::find(patterns.begin(), patterns.end(), "*" + ending) == patterns.end()) patterns.push_back("*" + ending);
    }
  }
  return patterns;
}

std::span<const TraceReaderEntry> TraceReaders() { return kReaders; }

const TraceReaderEntry* FindTraceReader(DetectedFormat format) {
  for (const TraceReaderEntry& entry : kReaders) {
    if (entry.format == format) return &entry;
  }
  return nullptr;
}

DetectedFormat DetectFormat(std::string_view bytes) {
  size_t i = 0;
  if (bytes.substr(0, 3) == "\xEF\xBB\xBF") i = 3;
  while (i < bytes.size() && std::isspace(static_cast<unsigned char>(bytes[i]))) ++i;
  if (i == bytes.size()) return DetectedFormat::kUnknown;
  for (const TraceReaderEntry& entry : kReaders) {
    if (entry.sniff(bytes)) return entry.format;
  }
  return DetectCut(bytes);
}

StatusOr<Trace> ReadTraceFromBytes(std::string_view bytes, const std::string& name) {
  if (bytes.empty()) return InvalidInput(name + ": file is empty");
  const DetectedFormat format = DetectFormat(bytes);
  if (const TraceReaderEntry* entry = FindTraceReader(format)) return entry->read(bytes, name);
  size_t i = 0;
  while (i < bytes.size() && std::isspace(static_cast<unsigned char>(bytes[i]))) ++i;
  if (i == bytes.size()) return InvalidInput(name + ": holds only whitespace; expected a trace");
  // Neither JSON, text, nor any protobuf format we know: the step stats parser names what it
  // finds wrong (most such files are damaged RunMetadata).
  return ReadStepStats(bytes, name);
}

namespace {

StatusOr<Trace> ReadTraceFile(const std::string& path, const ReadTraceOptions& options, Truncation* truncation);

}  // namespace

StatusOr<Trace> ReadTrace(const std::string& path, const ReadTraceOptions& options) {
  AllowTruncatedScope* scope = AllowTruncatedScope::Current();
  if (!options.allow_truncated && scope == nullptr) return ReadTraceFile(path, options, nullptr);
  std::optional<Truncation> cut;
  StatusOr<Trace> trace = ReadTraceFile(path, options, &cut.emplace());
  if (trace.ok() && !cut->file.empty()) {
    if (options.truncation != nullptr) *options.truncation = *cut;
    if (scope != nullptr) scope->Add(std::move(*cut));
  }
  return trace;
}

namespace {

// A directory whose trace files are all of one format that reads such a directory as one trace
// (an XSpace profiler run: `plugins/profile/<run>/`, one `.xplane.pb` per host): that read.
// Null for any other directory.
std::optional<StatusOr<Trace>> ReadRunDirectory(const std::string& path) {
  std::error_code error;
  std::vector<std::string> files;
  const TraceReaderEntry* run_reader = nullptr;
  for (const auto& entry : std::filesystem::directory_iterator(path, error)) {
    if (!entry.is_regular_file(error)) continue;
    const TraceReaderEntry* reader = TraceReaderForFileName(entry.path().filename().string());
    if (reader == nullptr || reader->read_run == nullptr) continue;
    run_reader = reader;
    files.push_back(entry.path().string());
  }
  if (files.empty()) return std::nullopt;
  std::sort(files.begin(), files.end());
  return run_reader->read_run(files);
}

// `truncation` non-null: truncated input is read up to the cut, and described there.
StatusOr<Trace> ReadTraceFile(const std::string& path, const ReadTraceOptions& options, Truncation* truncation) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) {
    if (options.preview_bytes > 0) return Status(StatusCode::kUnavailable, path + ": no preview of a profiler run directory");
    if (std::optional<StatusOr<Trace>> run = ReadRunDirectory(path)) return std::move(*run);
  }
  ASSIGN_OR_RETURN(std::unique_ptr<FileReader> reader, FileReader::Open(path));
  // A gzip stream that ends early ends the content, so that the JSON reader can name the cut in
  // the JSON; the other formats fail on it below.
  reader->AcceptCutGzip();
  // The first bytes tell the format: formats that stream go on from here, the others are read
  // whole.
  std::string bytes(size_t{64} << 10, '\0');
  ASSIGN_OR_RETURN(const size_t got, reader->Read({bytes.data(), bytes.size()}));
  bytes.resize(got);
  if (bytes.empty()) return reader->cut_short() ? CutGzip(*reader) : InvalidInput(path + ": file is empty");
  const FileReader& file = *reader;
  auto progress = [&](int64_t bytes_read) {
    return !options.on_progress || options.on_progress({bytes_read, file.disk_bytes_read(), file.size_on_disk()});
  };
  const TraceReaderEntry* entry = FindTraceReader(DetectFormat(bytes));
  if (entry != nullptr && entry->read_stream != nullptr) {
    StreamReadOptions stream;
    if (options.on_progress) stream.on_progress = progress;
    stream.preview_bytes = options.preview_bytes;
    stream.truncation = truncation;
    return entry->read_stream(*reader, std::move(bytes), stream);
  }
  if (options.preview_bytes > 0) {
    return Status(StatusCode::kUnavailable, path + ": a preview is read of Chrome JSON and Perfetto protobuf only");
  }
  RETURN_IF_ERROR(reader->ReadToEnd(bytes));
  if (reader->cut_short()) return CutGzip(*reader);
  if (!progress(static_cast<int64_t>(bytes.size()))) return Status(StatusCode::kCancelled, path + ": reading was cancelled");
  return ReadTraceFromBytes(bytes, path);
}

}  // namespace

}  // namespace stepscope::trace
