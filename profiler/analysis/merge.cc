// Merging traces (ranks, steps) into one timeline: clock alignment, a process per input with its
// tracks, slices, flows, counters and details, and the stragglers of each step (merge.h).
#include "profiler/analysis/merge.h"

#include <algorithm>
#include <filesystem>
#include <map>

#include "base/check.h"
#include "profiler/analysis/stragglers.h"
#include "profiler/formats/step_stats/node_reader.h"
#include "profiler/formats/step_stats/node_store.h"
#include "profiler/formats/step_stats/step_stats_payload.h"
#include "stepscope/tf/run_metadata.pb.h"

namespace stepscope::analysis {

using trace::Trace;
using trace::TraceBuilder;

namespace {

constexpr trace::StringId kUnmapped = ~trace::StringId{0};

int64_t ClockSyncOf(const Trace& trace) {
  return trace.step_info().clock_sync_ns;
}


// The device (or, without device tracks, the process) that finished last, and its lead over the
// first to finish.
// Puts a device's node times on the merged timeline (its input's clock + offset), so the merged
// RunMetadata (pb/pbtxt output) lines the ranks up as the merged trace does. Times left unset
// (0: a producer without nanos) stay unset.
void ShiftNodeTimes(tf::DeviceStepStats& device, const RankClock& clock) {
  if (clock.offset_ns == 0 && clock.drift_ppm == 0) return;
  auto shift = [](int64_t value, int64_t by) { return value == 0 ? value : value + by; };
  for (tf::NodeExecStats& node : *device.mutable_node_stats()) {
    // One correction per node (a drift moves its times by far less than a ns within a node).
    const int64_t at = node.all_start_nanos() != 0 ? node.all_start_nanos() : node.all_start_micros() * 1000;
    const int64_t offset_ns = clock.CorrectionAt(at);
    const int64_t offset_us = offset_ns / 1000;
    node.set_all_start_micros(shift(node.all_start_micros(), offset_us));
    node.set_all_start_nanos(shift(node.all_start_nanos(), offset_ns));
    node.set_scheduled_micros(shift(node.scheduled_micros(), offset_us));
    node.set_scheduled_nanos(shift(node.scheduled_nanos(), offset_ns));
    for (tf::AllocatorMemoryUsed& memory : *node.mutable_memory()) {
      for (tf::AllocationRecord& record : *memory.mutable_allocation_records()) {
        record.set_alloc_micros(shift(record.alloc_micros(), offset_us));
      }
    }
  }
}

void LastDevice(const Trace& trace, MergedInput& input) {
  std::map<int32_t, int64_t> ends;
  for (const trace::Slice& s : trace.slices()) {
    // Annotations (the profiler's own span) and sync markers are not work: never the straggler.
    if (s.duplicate() || trace::IsAnnotationOrSync(s.kind)) continue;
    int32_t device = trace.DeviceOf(s.track);
    if (device < 0) device = trace.HostOf(s.track);
    auto [it, inserted] = ends.try_emplace(device, s.end_ns());
    if (!inserted) it->second = std::max(it->second, s.end_ns());
  }
  if (ends.empty()) return;
  auto last = ends.begin(), first = ends.begin();
  for (auto it = ends.begin(); it != ends.end(); ++it) {
    if (it->second > last->second) last = it;
    if (it->second < first->second) first = it;
  }
  input.last_device = last->first >= 0 ? trace.TrackPath(static_cast<uint32_t>(last->first)) : "";
  input.last_device_lag_ns = last->second - first->second;
}

// Stragglers as `stragglers` finds them, so both number the steps alike (ProfilerStep#N
// windows, step traces' numbers) and agree on who finished last.
void ReportStragglers(const std::vector<Trace>& traces, AlignMethod align, MergeReport& report) {
  StragglerOptions options;
  options.align = align;
  auto stragglers = ComputeStragglers(traces, options);
  if (!stragglers.ok()) {
    report.stragglers_error = stragglers.status().message();
    return;
  }
  for (const StepStragglers& step : stragglers->steps) {
    StepStraggler straggler;
    straggler.step = step.step;
    straggler.ranks = step.ranks.size();
    for (const RankStep& r : step.ranks) {
      if (r.rank == step.straggler) straggler.input = r.input;
    }
    straggler.lag_ns = step.lateness_ns;
    straggler.lag_vs_median_ns = step.lateness_vs_median_ns;
    report.stragglers.push_back(straggler);
  }
}

// The input's tracks under its process track; each input track's merged track.
std::vector<uint32_t> CopyTracks(const Trace& input, uint32_t process_track, TraceBuilder& builder) {
  std::vector<uint32_t> track_map(input.tracks().size());
  for (uint32_t t = 0; t < input.tracks().size(); ++t) {
    trace::Track copy = input.tracks()[t];
    copy.name = builder.Intern(input.str(copy.name));
    copy.full_name = builder.Intern(input.str(copy.full_name));
    if (copy.parent >= 0) {
      copy.parent = static_cast<int32_t>(track_map[static_cast<size_t>(copy.parent)]);
    } else {
      // The input's host becomes a device-like level under its process.
      copy.parent = static_cast<int32_t>(process_track);
      if (copy.kind == trace::TrackKind::kHost) copy.kind = trace::TrackKind::kDevice;
    }
    track_map[t] = builder.AddTrack(copy);
  }
  return track_map;
}

// The input's work, in its own time: annotations and sync markers (the profiler's own span
// encloses the whole capture) do not decide when a rank finished.
std::pair<int64_t, int64_t> WorkSpan(const Trace& input) {
  int64_t work_begin = INT64_MAX, work_end = INT64_MIN;
  for (const trace::Slice& s : input.slices()) {
    if (s.duplicate() || trace::IsAnnotationOrSync(s.kind)) continue;
    work_begin = std::min(work_begin, s.start_ns);
    work_end = std::max(work_end, s.end_ns());
  }
  if (work_begin > work_end) return {input.span_begin_ns(), input.span_end_ns()};
  return {work_begin, work_end};
}

// Step windows: a step trace's number and span (an input that is itself a merge keeps its
// windows), so the merged trace still has its inputs' steps (StepsOfTrace).
template <typename Correction>
void CopyStepWindows(const Trace& input, int64_t epoch, const Correction& correction, TraceBuilder& builder) {
  const trace::StepInfo& info = input.step_info();
  auto moved = [&](int64_t ns) { return ns + epoch + correction(ns); };
  if (!input.step_windows().empty()) {
    for (trace::StepWindow w : input.step_windows()) {
      w.begin_ns = moved(w.begin_ns);
      w.end_ns = moved(w.end_ns);
      builder.AddStepWindow(w);
    }
  } else if (info.step >= 0 && !input.slices().empty()) {
    builder.AddStepWindow({info.step, info.rank, moved(input.span_begin_ns()), moved(input.span_end_ns())});
  }
}

}  // namespace

std::string MergedProcessName(const Trace& trace, size_t index) {
  const trace::StepInfo& info = trace.step_info();
  std::string name;
  if (info.rank >= 0) {
    name = "rank " + std::to_string(info.rank);
  } else {
    name = std::filesystem::path(trace.source_path()).filename().string();
    if (name.empty()) name = "trace " + std::to_string(index);
  }
  if (!info.host.empty()) name += " (" + info.host + ")";
  if (info.step >= 0) name += " step " + std::to_string(info.step);
  return name;
}

std::vector<ClockAlignment> AlignClocks(std::span<const Trace> traces) {
  std::vector<ClockStamp> stamps;
  for (const Trace& t : traces) {
    stamps.push_back({t.step_info().rank, t.step_info().step, t.step_info().host, ClockSyncOf(t)});
  }
  return AlignClocks(std::span<const ClockStamp>(stamps));
}

std::vector<ClockAlignment> AlignClocks(std::span<const ClockStamp> inputs) {
  // Reference per step: the lowest rank (the first input when ranks are unknown).
  std::map<int64_t, size_t> reference;
  for (size_t i = 0; i < inputs.size(); ++i) {
    auto [it, inserted] = reference.try_emplace(inputs[i].step, i);
    if (!inserted && inputs[i].rank >= 0 && (inputs[it->second].rank < 0 || inputs[i].rank < inputs[it->second].rank)) {
      it->second = i;
    }
  }
  std::vector<ClockAlignment> out(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ClockStamp& input = inputs[i];
    const size_t ref = reference[input.step];
    const ClockStamp& ref_input = inputs[ref];
    if (ref == i) {
      out[i].alignment = "reference";
    } else if (ref_input.host == input.host) {
      out[i].alignment = "same host";
    } else if (input.clock_sync_ns != 0 && ref_input.clock_sync_ns != 0) {
      out[i].alignment = "clock_sync";
      out[i].offset_ns = ref_input.clock_sync_ns - input.clock_sync_ns;
    } else {
      out[i].alignment = "unaligned";
    }
  }
  return out;
}

MergeResult MergeTraces(std::vector<Trace> traces, AlignMethod align) {
  AlignmentReport alignment = AlignRanks(traces, align);
  return MergeTraces(std::move(traces), std::move(alignment));
}

MergeResult MergeTraces(std::vector<Trace> traces, AlignmentReport given_alignment,
                        std::optional<int64_t> epoch_at_most_ns) {
  MergeResult result;
  MergeReport& report = result.report;
  TraceBuilder builder;
  if (epoch_at_most_ns) builder.SetEpochAtMost(*epoch_at_most_ns);
  builder.SetSource(trace::SourceFormat::kSynthetic, "merge of " + std::to_string(traces.size()) + " traces");
  report.alignment = std::move(given_alignment);
  const AlignmentReport& alignment = report.alignment;
  if (traces.size() > 1) ReportStragglers(traces, alignment.method, report);

  std::shared_ptr<tf::RunMetadata> metadata;
  for (const Trace& t : traces) {
    if (HasStepStats(t)) metadata = std::make_shared<tf::RunMetadata>();
  }
  int32_t world_size = -1;  // unknown unless some input knows it
  std::vector<std::pair<int64_t, int64_t>> absolute_spans;
  for (size_t i = 0; i < traces.size(); ++i) {
    const Trace& input = traces[i];  // freed once merged
    const trace::StepInfo& info = input.step_info();
    world_size = std::max(world_size, info.world_size);
    MergedInput merged;
    merged.source = input.source_path();
    merged.process = MergedProcessName(input, i);
    merged.rank = info.rank;
    merged.step = info.step;
    merged.host = info.host;
    const RankClock& clock = alignment.ranks[alignment.rank_of_input[i]];
    merged.alignment = alignment.input_alignment[i];
    merged.offset_ns = clock.CorrectionAt(input.epoch_ns() + input.span_begin_ns());
    // The correction of an instant of the input's own time (relative to its epoch).
    auto correction = [&](int64_t ns) { return clock.drift_ppm == 0 ? merged.offset_ns : clock.CorrectionAt(input.epoch_ns() + ns); };
    if (merged.alignment == "unaligned") ++report.unaligned;
    LastDevice(input, merged);

    // Tracks: one process per input, its hosts below.
    trace::Track process;
    process.name = builder.Intern(merged.process);
    process.full_name = builder.Intern(merged.process);
    process.kind = trace::TrackKind::kHost;
    process.sort_index = static_cast<int32_t>(info.rank >= 0 ? info.rank : static_cast<int32_t>(i)) * 1000;
    const uint32_t process_track = builder.AddTrack(process);
    merged.process_track = process_track;
    const std::vector<uint32_t> track_map = CopyTracks(input, process_track, builder);
    uint32_t device_base = 0;
    if (metadata != nullptr && HasStepStats(input)) {
      device_base = static_cast<uint32_t>(metadata->step_stats().dev_stats_size());
      // Parsed one input at a time and moved over, so only one input is ever whole in memory.
      std::shared_ptr<tf::RunMetadata> source = LoadRunMetadata(input);
      for (auto& device : *source->mutable_step_stats()->mutable_dev_stats()) {
        auto* copy = metadata->mutable_step_stats()->add_dev_stats();
        copy->Swap(&device);
        ShiftNodeTimes(*copy, clock);
        copy->set_rank(info.rank);
        if (!info.host.empty()) copy->set_host(info.host);
      }
    }
    // The input's strings in the merged table, each interned once (not once per slice).
    std::vector<trace::StringId> string_map(input.strings().size(), kUnmapped);
    auto merged_string = [&](trace::StringId id) {
      if (string_map[id] == kUnmapped) string_map[id] = builder.Intern(input.str(id));
      return string_map[id];
    };
    uint32_t base = 0;
    trace::NodeReader nodes(input);  // each slice's node ref, each block read about once
    for (uint32_t s = 0; s < input.slices().size(); ++s) {
      trace::SliceRecord copy = input.Record(input.slices()[s]);
      copy.start_ns += correction(copy.start_ns - input.epoch_ns());  // a record's start is absolute
      copy.track = track_map[copy.track];
      copy.name = merged_string(copy.name);
      copy.op_type = merged_string(copy.op_type);
      trace::NodeRef node_ref = nodes.Ref(s);
      if (node_ref.valid() && metadata != nullptr && HasStepStats(input)) {
        node_ref.device += device_base;
      } else {
        node_ref = {};
      }
      const uint32_t index = builder.AddSlice(copy, node_ref);
      if (s == 0) base = index;
    }
    for (const trace::Flow& flow : input.flows()) {
      builder.AddFlow(flow.from_slice + base, flow.to_slice + base, flow.kind);
    }
    // Kineto launch geometry and copy sizes follow their slices.
    for (trace::KernelArgs args : input.all_kernel_args()) {
      args.slice += base;
      builder.AddKernelArgs(args);
    }
    for (trace::TransferArgs args : input.all_transfer_args()) {
      args.slice += base;
      builder.AddTransferArgs(args);
    }
    // Free-form arguments (XSpace stats, Perfetto debug annotations) too.
    for (const trace::SliceArg& arg : input.all_slice_args()) {
      if (arg.is_number) {
        builder.AddSliceArg(arg.slice + base, merged_string(arg.key), arg.number);
      } else {
        builder.AddSliceArg(arg.slice + base, merged_string(arg.key), merged_string(arg.value), arg.is_json);
      }
    }
    for (const trace::CounterSeries& counter : input.counters()) {
      trace::CounterSeries copy = counter;
      copy.name = builder.Intern(input.str(counter.name));
      copy.track = counter.track >= 0 ? static_cast<int32_t>(track_map[static_cast<size_t>(counter.track)]) : -1;
      for (int64_t& ts : copy.ts_ns) ts += input.epoch_ns() + correction(ts);
      builder.AddCounter(std::move(copy));
    }
    for (const auto& [name, count] : input.import_stats().counts()) builder.import_stats().Add(name, count);
    const auto [work_begin, work_end] = WorkSpan(input);
    absolute_spans.emplace_back(work_begin + input.epoch_ns() + correction(work_begin),
                                work_end + input.epoch_ns() + correction(work_end));
    CopyStepWindows(input, input.epoch_ns(), correction, builder);
    report.inputs.push_back(std::move(merged));
    // Merged: the input goes now, so the merge holds about one copy of the slices, not two.
    traces[i] = Trace();
  }
  builder.import_stats().Add("merge_clock_unaligned", report.unaligned);
  builder.step_info().world_size = world_size;
  if (metadata != nullptr) trace::SetStepStatsPayload(builder, metadata);
  result.trace = std::move(builder).Build();
  FindProcessTracksAfterBuild(result.trace, report.inputs);
  for (size_t i = 0; i < report.inputs.size(); ++i) {
    report.inputs[i].begin_ns = absolute_spans[i].first - result.trace.epoch_ns();
    report.inputs[i].end_ns = absolute_spans[i].second - result.trace.epoch_ns();
  }

  return result;
}

void FindProcessTracksAfterBuild(const Trace& merged, std::span<MergedInput> inputs) {
  size_t next = 0;
  for (uint32_t t = 0; t < merged.tracks().size(); ++t) {
    if (merged.tracks()[t].parent >= 0) continue;
    STEPSCOPE_CHECK(next < inputs.size());
    inputs[next++].process_track = t;
  }
  STEPSCOPE_CHECK(next == inputs.size());
}

Trace OneTrace(std::vector<Trace> traces, AlignMethod align) {
  if (traces.size() == 1) return std::move(traces.front());
  return MergeTraces(std::move(traces), align).trace;
}

}  // namespace stepscope::analysis
