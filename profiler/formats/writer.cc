// The writer table and writing through it: a format told by name or by the output's file name,
// and the bytes of a Trace in any output format.
#include "profiler/formats/writer.h"

#include <algorithm>
#include <string>
#include <vector>

#include "base/file_io.h"
#include "profiler/formats/perfetto/perfetto_proto.h"
#include "profiler/formats/reader.h"
#include "profiler/formats/step_stats/step_stats_io.h"
#include "profiler/formats/step_stats/step_stats_payload.h"
#include "stepscope/tf/run_metadata.pb.h"

namespace stepscope::trace {

namespace {

constexpr TraceWriterEntry kWriters[] = {
    {OutputFormat::kPerfettoJson, "chrome", "perfetto", ".json .json.gz",
     "Chrome Trace Event JSON, the Perfetto-ready flavour (de-duplicated GPU lanes, counters, flows)"},
    {OutputFormat::kPerfettoProto, "perfetto-proto", "pftrace", ".pftrace .perfetto-trace (.gz)",
     "Perfetto protobuf (TracePacket/TrackEvent): a track per lane, overlaps never dropped, interned names"},
    {OutputFormat::kTfTimelineJson, "tf-timeline", "", "",
     "the Chrome JSON TensorFlow's timeline.py writes (step stats inputs)"},
    {OutputFormat::kRunMetadataBinary, "pb", "", ".pb", "TensorFlow RunMetadata, binary (lossless for step stats)"},
    {OutputFormat::kRunMetadataText, "pbtxt", "", ".pbtxt", "TensorFlow RunMetadata, text"},
};

}  // namespace

std::span<const TraceWriterEntry> TraceWriters() { return kWriters; }

namespace {

// `items` joined by ", ", the last by " or ".
std::string Sentence(const std::vector<std::string>& items) {
  std::string text;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) text += i + 1 == items.size() ? " or " : ", ";
    text += items[i];
  }
  return text;
}

}  // namespace

std::string OutputFormatChoices() {
  std::string text;
  for (const TraceWriterEntry& entry : kWriters) text += (text.empty() ? "" : "|") + std::string(entry.name);
  return text;
}

std::string OutputFormatList(bool with_aliases) {
  std::vector<std::string> names;
  for (const TraceWriterEntry& entry : kWriters) {
    names.emplace_back(entry.name);
    if (with_aliases && !entry.alias.empty()) names.back() += " (alias " + std::string(entry.alias) + ")";
  }
  return Sentence(names);
}

std::string OutputExtensionList() {
  std::vector<std::string> extensions;
  for (const TraceWriterEntry& entry : kWriters) {
    if (!entry.extensions.empty()) extensions.emplace_back(entry.extensions);
  }
  return Sentence(extensions);
}

std::optional<OutputFormat> ParseOutputFormat(std::string_view name) {
  for (const TraceWriterEntry& entry : kWriters) {
    if (name == entry.name || (!entry.alias.empty() && name == entry.alias)) return entry.format;
  }
  return std::nullopt;
}

std::optional<OutputFormat> OutputFormatFromPath(std::string_view path) {
  for (const TraceWriterEntry& entry : kWriters) {
    if (MatchesExtensions(entry.extensions, path)) return entry.format;
  }
  return std::nullopt;
}

std::shared_ptr<const tf::RunMetadata> RunMetadataFor(const Trace& trace) {
  if (HasStepStats(trace)) return LoadRunMetadata(trace);
  auto metadata = std::make_shared<tf::RunMetadata>();
  auto* step = metadata->mutable_step_stats();
  const auto& tracks = trace.tracks();
  std::vector<tf::DeviceStepStats*> devices(tracks.size(), nullptr);
  for (uint32_t t = 0; t < tracks.size(); ++t) {
    const auto slices = trace.track_slices(t);
    if (slices.empty()) continue;
    tf::DeviceStepStats* device = step->add_dev_stats();
    device->set_device(trace.TrackPath(t));
    for (const Slice& s : slices) {
      const int64_t start = trace.epoch_ns() + s.start_ns;
      tf::NodeExecStats* node = device->add_node_stats();
      node->set_node_name(std::string(trace.str(trace.slice_name(s))));
      node->set_op_type(std::string(trace.str(trace.slice_op_type(s))));
      node->set_all_start_micros(start / 1000);
      node->set_op_end_rel_micros(s.dur_ns / 1000);
      node->set_all_end_rel_micros(s.dur_ns / 1000);
      node->set_all_start_nanos(start);
      node->set_op_end_rel_nanos(s.dur_ns);
      node->set_all_end_rel_nanos(s.dur_ns);
      if (tracks[t].thread_id > 0) node->set_thread_id(static_cast<uint32_t>(tracks[t].thread_id));
    }
  }
  const StepInfo& info = trace.step_info();
  if (info.rank >= 0 || info.step >= 0 || !info.host.empty() || !info.devices.empty()) {
    auto* session = metadata->mutable_stepscope_session();
    session->set_rank(info.rank);
    session->set_world_size(info.world_size);
    session->set_host(info.host);
    session->set_step(info.step);
    session->set_producer(info.producer);
    for (const DeviceProperties& device : info.devices) {
      tf::DeviceDescription* described = session->add_devices();
      described->set_id(device.id);
      described->set_name(device.name);
      described->set_measured_flops_per_s(device.measured_flops_per_s);
      described->set_measured_by(device.measured_by);
      described->set_sm_count(std::max(device.sm_count, 0));
      described->set_memory_bytes(std::max<int64_t>(device.memory_bytes, 0));
      described->set_clock_khz(std::max<int64_t>(device.clock_khz, 0));
      described->set_compute_major(std::max(device.compute_major, 0));
      described->set_compute_minor(std::max(device.compute_minor, 0));
    }
  }
  return metadata;
}

StatusOr<std::string> Serialize(const Trace& trace, OutputFormat format,
                                const SerializeOptions& options,
                                std::vector<std::string>* left_out) {
  switch (format) {
    case OutputFormat::kPerfettoJson: return ExportPerfettoJson(trace);
    case OutputFormat::kTfTimelineJson: return ExportTfTimelineJson(trace);
    case OutputFormat::kPerfettoProto: return ExportPerfettoProto(trace);
    case OutputFormat::kRunMetadataBinary:
    case OutputFormat::kRunMetadataText: {
      const auto metadata = RunMetadataFor(trace);
      return SerializeRunMetadata(*metadata, format == OutputFormat::kRunMetadataBinary
                                                 ? StepStatsEncoding::kBinary
                                                 : StepStatsEncoding::kText,
                                  options, left_out);
    }
  }
  return Internal("unknown output format");
}

Status WriteTrace(const Trace& trace, const std::string& path, OutputFormat format,
                  const SerializeOptions& options, std::vector<std::string>* left_out) {
  ASSIGN_OR_RETURN(std::string bytes, Serialize(trace, format, options, left_out));
  const bool gzip = EndsWith(path, ".gz");
  return WriteFileAtomically(path, bytes, gzip);
}

}  // namespace stepscope::trace
