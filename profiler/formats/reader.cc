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
     ".json .json.gz", SniffChromeJson, ReadChromeJsonBytes},
    {DetectedFormat::kStepStats, "step-stats",
     "TensorFlow RunMetadata or StepStats, binary or text (TF 1.x, stepscope-train --profile)",
     ".pb .pbtxt (.gz)", SniffStepStats, ReadStepStats},
    {DetectedFormat::kXSpace, "xspace",
     "TensorFlow 2 / JAX profiler XSpace (tf.profiler, jax.profiler; a plugins/profile/<run>/ directory too)",
     ".xplane.pb (.gz)", SniffXSpace, ReadXSpace},
    {DetectedFormat::kPerfettoProto, "perfetto-proto",
     "Perfetto protobuf trace (TracePacket/TrackEvent), as stepscope and the Perfetto SDK write it",
     ".pftrace .perfetto-trace (.gz)", SniffPerfetto, ReadPerfettoProto},
};

// Formats whose content fits up to a cut: a truncated file goes to the reader of what it was.
DetectedFormat DetectCut(std::string_view bytes) {
  if (bytes.empty() || static_cast<unsigned char>(bytes[0]) != 0x0a) return DetectedFormat::kUnknown;
  if (FitsStepStats(bytes, true)) return DetectedFormat::kStepStats;
  if (FitsXSpace(bytes, true)) return DetectedFormat::kXSpace;
  if (FitsPerfettoTrace(bytes, true)) return DetectedFormat::kPerfettoProto;
  return DetectedFormat::kUnknown;
}

bool IsXSpaceFileName(const std::filesystem::path& path) {
  const std::string name = path.filename().string();
  return EndsWith(name, ".xplane.pb") || EndsWith(name, ".xplane.pb.gz");
}

}  // namespace

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

// A gzip stream that ends early under a reader that reads whole files: the file and the offset.
Status CutGzip(const FileReader& reader) {
  return InvalidInput(reader.path() + ": the compressed file ends early: its gzip stream stops at byte " +
                      std::to_string(reader.bytes_read()) + " of the decompressed content");
}

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

// `truncation` non-null: truncated input is read up to the cut, and described there.
StatusOr<Trace> ReadTraceFile(const std::string& path, const ReadTraceOptions& options, Truncation* truncation) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) {
    if (options.preview_bytes > 0) return Status(StatusCode::kUnavailable, path + ": no preview of a profiler run directory");
    // A profiler run directory: its .xplane.pb files, one per host.
    std::vector<std::string> files;
    for (const auto& entry : std::filesystem::directory_iterator(path, error)) {
      if (entry.is_regular_file(error) && IsXSpaceFileName(entry.path())) files.push_back(entry.path().string());
    }
    if (!files.empty()) {
      std::sort(files.begin(), files.end());
      return ReadXSpaceFiles(files);
    }
  }
  ASSIGN_OR_RETURN(std::unique_ptr<FileReader> reader, FileReader::Open(path));
  // A gzip stream that ends early ends the content, so that the JSON reader can name the cut in
  // the JSON; the other formats fail on it below.
  reader->AcceptCutGzip();
  // The first bytes tell the format: JSON streams from here, the others are read whole.
  std::string bytes(size_t{64} << 10, '\0');
  ASSIGN_OR_RETURN(const size_t got, reader->Read({bytes.data(), bytes.size()}));
  bytes.resize(got);
  if (bytes.empty()) return reader->cut_short() ? CutGzip(*reader) : InvalidInput(path + ": file is empty");
  const FileReader& file = *reader;
  auto progress = [&](int64_t bytes_read) {
    return !options.on_progress || options.on_progress({bytes_read, file.disk_bytes_read(), file.size_on_disk()});
  };
  if (SniffChromeJson(bytes)) {
    ChromeJsonReadOptions json;
    if (options.on_progress) json.on_progress = progress;
    json.preview_bytes = options.preview_bytes;
    json.allow_truncated = truncation != nullptr;
    json.truncation = truncation;
    return ReadChromeJson(*reader, bytes, json);
  }
  // A Perfetto trace streams too: whole packets a piece at a time.
  if (DetectFormat(bytes) == DetectedFormat::kPerfettoProto) {
    PerfettoStreamOptions perfetto;
    perfetto.preview_bytes = options.preview_bytes;
    if (options.on_progress) perfetto.on_progress = progress;
    StatusOr<Trace> trace = ReadPerfettoProto(*reader, std::move(bytes), path, perfetto);
    // A gzip cut is named as such, also where it fell between two packets and reads as whole.
    if (reader->cut_short() && (trace.ok() || trace.status().code() == StatusCode::kInvalidInput)) {
      return CutGzip(*reader);
    }
    return trace;
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
