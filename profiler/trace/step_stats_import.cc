#include "profiler/trace/step_stats_import.h"

#include <algorithm>
#include <limits>
#include <map>
#include <unordered_map>

#include "profiler/trace/tf_names.h"
#include "stepscope/tf/run_metadata.pb.h"

namespace stepscope::trace {
namespace {

// Byte counts of a corrupt file may be anywhere in int64: the memory curve saturates instead.
int64_t SaturatingAdd(int64_t a, int64_t b) {
  int64_t sum = 0;
  if (!__builtin_add_overflow(a, b, &sum)) return sum;
  return b > 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
}
int64_t SaturatingSub(int64_t a, int64_t b) {
  int64_t difference = 0;
  if (!__builtin_sub_overflow(a, b, &difference)) return difference;
  return b < 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
}

// Sort keys so that devices read CPU, then GPU, by index; lanes read executor, streams by id,
// memcpy, then the stream:all aggregate.
int DeviceSortKey(std::string_view device) {
  const size_t colon = device.find(':');
  const std::string_view type = device.substr(0, colon);
  int index = 0;
  if (colon != std::string_view::npos) {
    for (char c : device.substr(colon + 1)) {
      if (c < '0' || c > '9') break;
      index = index * 10 + (c - '0');
    }
  }
  const int type_rank = type == "CPU" ? 0 : type == "GPU" ? 1 : 2;
  return type_rank * 100000 + index;
}

int LaneSortKey(const TfDeviceName& name) {
  switch (name.kind) {
    case TfLaneKind::kExecutor: return 0;
    case TfLaneKind::kStream: return 10 + static_cast<int>(std::max<int64_t>(name.stream_id, 0));
    case TfLaneKind::kMemcpy: return 1000000;
    case TfLaneKind::kAllStreams: return 1000001;
  }
  return 0;
}

TrackKind LaneTrackKind(TfLaneKind kind) {
  switch (kind) {
    case TfLaneKind::kExecutor: return TrackKind::kOpLane;
    case TfLaneKind::kStream: return TrackKind::kGpuStream;
    case TfLaneKind::kMemcpy: return TrackKind::kGpuMemcpy;
    case TfLaneKind::kAllStreams: return TrackKind::kGpuAllStreams;
  }
  return TrackKind::kOther;
}

// Input names in labels: "^ctrl" (control), "name:1" (slot), "name/_3" (partition copy).
std::string_view ProducerOf(std::string_view input) {
  if (!input.empty() && input[0] == '^') input.remove_prefix(1);
  const size_t colon = input.rfind(':');
  if (colon != std::string_view::npos) {
    bool digits = colon + 1 < input.size();
    for (size_t i = colon + 1; i < input.size(); ++i) digits &= input[i] >= '0' && input[i] <= '9';
    if (digits) input = input.substr(0, colon);
  }
  return input;
}

class Importer {
 public:
  Importer(std::shared_ptr<tf::RunMetadata> metadata, SourceFormat format,
           const std::string& path)
      : metadata_(std::move(metadata)) {
    builder_.SetSource(format, path);
  }

  Trace Run(const ImportStats& parse_stats) {
    for (const auto& [name, count] : parse_stats.counts()) builder_.import_stats().Add(name, count);
    ReadSession();
    const auto& step = metadata_->step_stats();
    device_names_.reserve(step.dev_stats_size());
    for (const auto& device : step.dev_stats()) device_names_.push_back(ParseTfDeviceName(device.device()));
    DefaultTask();
    for (int d = 0; d < step.dev_stats_size(); ++d) ImportDevice(d);
    MarkAggregateDuplicates();
    AddFlows();
    AddAllocatorCounters();
    builder_.SetRunMetadata(std::move(metadata_));
    return std::move(builder_).Build();
  }

 private:
  void ReadSession() {
    if (!metadata_->has_stepscope_session()) return;
    const auto& session = metadata_->stepscope_session();
    StepInfo& info = builder_.step_info();
    info.step = session.step();
    info.rank = session.rank();
    info.clock_sync_ns = session.clock_sync_nanos();
    info.world_size = session.world_size();
    info.host = session.host();
    info.producer = session.producer();
    info.dropped_records = session.dropped_records() + session.dropped_gpu_records();
    builder_.import_stats().Add("collector_dropped_records", static_cast<int64_t>(session.dropped_records()));
    builder_.import_stats().Add("collector_dropped_gpu_records",
                                static_cast<int64_t>(session.dropped_gpu_records()));
  }

  // Tracer lanes ("/device:GPU:0/stream:14") carry no task: they belong to the process that
  // recorded the executor devices.
  void DefaultTask() {
    for (const auto& name : device_names_) {
      if (!name.task.empty()) {
        default_task_ = name.task;
        return;
      }
    }
    default_task_ = "/job:localhost/replica:0/task:0";
  }

  uint32_t HostTrack(const std::string& task) {
    auto [it, inserted] = host_tracks_.try_emplace(task, 0);
    if (inserted) {
      Track host;
      const std::string& display =
          builder_.step_info().host.empty() ? task : builder_.step_info().host + " " + task;
      host.name = builder_.Intern(display);
      host.full_name = builder_.Intern(task);
      host.kind = TrackKind::kHost;
      host.sort_index = builder_.step_info().rank >= 0 ? builder_.step_info().rank
                                                      : static_cast<int32_t>(host_tracks_.size());
      it->second = builder_.AddTrack(host);
    }
    return it->second;
  }

  uint32_t DeviceTrack(const std::string& task, const std::string& device) {
    const uint32_t host = HostTrack(task);
    auto [it, inserted] = device_tracks_.try_emplace({task, device}, 0);
    if (inserted) {
      Track track;
      track.name = builder_.Intern(device);
      track.full_name = builder_.Intern(task + "/device:" + device);
      track.parent = static_cast<int32_t>(host);
      track.kind = TrackKind::kDevice;
      track.sort_index = DeviceSortKey(device);
      it->second = builder_.AddTrack(track);
    }
    return it->second;
  }

  void ImportDevice(int d) {
    const auto& device = metadata_->step_stats().dev_stats(d);
    const TfDeviceName& name = device_names_[d];
    if (!name.parsed) builder_.import_stats().Add("device_name_unrecognised");
    const std::string& task = name.task.empty() ? default_task_ : name.task;
    const uint32_t device_track = DeviceTrack(task, name.device);
    const bool gpu_lane = name.kind != TfLaneKind::kExecutor;

    // Executor ops get one lane per thread when the producer recorded threads.
    std::map<uint32_t, uint32_t> thread_tracks;
    auto lane_track = [&](uint32_t thread_id) {
      auto [it, inserted] = thread_tracks.try_emplace(thread_id, 0);
      if (inserted) {
        Track lane;
        std::string lane_name = name.lane.empty() ? "ops" : name.lane;
        if (!gpu_lane && thread_id != 0) {
          lane_name = "thread " + std::to_string(thread_id);
          auto found = device.thread_names().find(thread_id);
          if (found != device.thread_names().end()) lane_name += " (" + found->second + ")";
        }
        lane.name = builder_.Intern(lane_name);
        lane.full_name = builder_.Intern(device.device());
        lane.parent = static_cast<int32_t>(device_track);
        lane.kind = LaneTrackKind(name.kind);
        lane.sort_index = LaneSortKey(name) * 1000 + static_cast<int32_t>(thread_tracks.size());
        lane.thread_id = gpu_lane ? -1 : thread_id;
        lane.source_device = d;
        // Ops of one executor run concurrently; GPU streams may run kernels concurrently too.
        lane.concurrent = true;
        it->second = builder_.AddTrack(lane);
      }
      return it->second;
    };

    for (int n = 0; n < device.node_stats_size(); ++n) {
      const auto& node = device.node_stats(n);
      Slice slice;
      slice.start_ns = NodeStartNs(node);
      slice.dur_ns = NodeDurationNs(node);
      // A negative duration, or an end past the int64 nanosecond range, cannot be drawn or
      // summed: clamp it and count the repair.
      const int64_t longest = (int64_t{1} << 62) - std::max<int64_t>(slice.start_ns, 0);
      if (slice.dur_ns < 0 || slice.dur_ns > longest) {
        slice.dur_ns = std::clamp<int64_t>(slice.dur_ns, 0, longest);
        builder_.import_stats().Add("durations_clamped");
      }
      slice.track = lane_track(gpu_lane ? 0 : node.thread_id());
      std::string_view op;
      if (gpu_lane) {
        const TfKernelName kernel = ParseTfKernelName(node.node_name(), node.timeline_label());
        slice.name = builder_.Intern(kernel.name);
        op = kernel.op;
        // Copies launched by an op read `<node>:<Op>:MEMCPY<kind>`: the copy is what ran.
        const std::string_view full = node.node_name();
        const size_t last_colon = full.rfind(':');
        if (last_colon != std::string_view::npos && (full.substr(last_colon + 1, 6) == "MEMCPY" ||
                                                     full.substr(last_colon + 1, 6) == "MEMSET")) {
          op = full.substr(last_colon + 1);
        }
        if (op.substr(0, 6) == "MEMCPY") {
          slice.kind = SliceKind::kMemcpy;
        } else if (op.substr(0, 6) == "MEMSET") {
          slice.kind = SliceKind::kMemset;
        } else {
          slice.kind = SliceKind::kKernel;
        }
      } else {
        slice.name = builder_.Intern(node.node_name());
        if (!node.op_type().empty()) {
          op = node.op_type();
        } else if (node.node_name() == "RecvTensor") {
          op = "RecvTensor";
        } else {
          const TfOpLabel label = ParseTfOpLabel(node.timeline_label());
          op = label.matched ? label.op : std::string_view("unknown");
          if (!label.matched) builder_.import_stats().Add("op_type_unknown_label");
        }
        slice.kind = node.has_collective() ? SliceKind::kCollective
                     : node.has_memcpy()   ? SliceKind::kMemcpy
                                           : SliceKind::kOp;
      }
      if (node.has_kernel()) slice.kind = SliceKind::kKernel;
      slice.op_type = builder_.Intern(op);
      const uint32_t index = builder_.AddSlice(
          slice, NodeRef{static_cast<uint32_t>(d), static_cast<uint32_t>(n)});
      added_.push_back(Added{index, d, n, slice});
    }
  }

  // TF's /stream:all repeats every kernel and /memcpy every copy of the stream lanes. Mark a
  // record there as a duplicate when its twin (same name, op, start, duration) is on a stream.
  void MarkAggregateDuplicates() {
    struct Key {
      uint32_t device;
      StringId name, op;
      int64_t start, dur;
      bool operator==(const Key&) const = default;
    };
    struct KeyHash {
      size_t operator()(const Key& k) const {
        size_t h = std::hash<int64_t>()(k.start) * 31 + std::hash<int64_t>()(k.dur);
        return ((h * 31 + k.name) * 31 + k.op) * 31 + k.device;
      }
    };
    std::unordered_map<Key, int, KeyHash> on_streams;
    auto& tracks = builder_.tracks();
    auto key_of = [&](const Added& a) {
      const uint32_t device = static_cast<uint32_t>(tracks[a.slice.track].parent);
      return Key{device, a.slice.name, a.slice.op_type, a.slice.start_ns, a.slice.dur_ns};
    };
    for (const Added& a : added_) {
      if (tracks[a.slice.track].kind == TrackKind::kGpuStream) ++on_streams[key_of(a)];
    }
    int64_t marked = 0;
    for (const Added& a : added_) {
      const TrackKind kind = tracks[a.slice.track].kind;
      if (kind != TrackKind::kGpuAllStreams && kind != TrackKind::kGpuMemcpy) continue;
      if (on_streams.count(key_of(a)) != 0) {
        builder_.MutableSlice(a.index).flags |= kSliceDuplicate;
        ++marked;
      }
    }
    builder_.import_stats().Add("gpu_aggregate_lane_duplicates_marked", marked);
  }

  // Dataflow: each input of an executor op comes from the latest producer of that name.
  // Launch: a GPU record named after an executor op of the same device was launched by it
  // (or, in our traces, carries the op's correlation id).
  void AddFlows() {
    const auto& step = metadata_->step_stats();
    auto& tracks = builder_.tracks();
    std::unordered_map<std::string_view, uint32_t> producer;       // node name -> added index
    std::unordered_map<uint64_t, uint32_t> op_by_correlation;
    // Hashed: a million-op step looks a name up once per op and once per kernel.
    struct DeviceNameHash {
      size_t operator()(const std::pair<uint32_t, std::string_view>& key) const {
        return std::hash<std::string_view>()(key.second) * 31 + key.first;
      }
    };
    std::unordered_map<std::pair<uint32_t, std::string_view>, uint32_t, DeviceNameHash> op_by_device_name;
    std::vector<uint32_t> order(added_.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<uint32_t>(i);
    std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
      return added_[a].slice.start_ns < added_[b].slice.start_ns;
    });
    for (uint32_t i : order) {
      const Added& a = added_[i];
      const auto& node = step.dev_stats(a.device).node_stats(a.node);
      const Track& track = tracks[a.slice.track];
      if (track.kind != TrackKind::kOpLane) continue;
      // Inputs: our own traces list them; TF's labels carry them.
      auto link = [&](std::string_view input) {
        std::string_view from = ProducerOf(input);
        auto it = producer.find(from);
        if (it == producer.end()) it = producer.find(StripPartitionSuffix(from));
        if (it != producer.end()) {
          builder_.AddFlow(Flow{added_[it->second].index, a.index, FlowKind::kDataflow});
        }
      };
      if (node.input_size() > 0) {
        for (const auto& input : node.input()) link(input);
      } else {
        for (std::string_view input : ParseTfOpLabel(node.timeline_label()).inputs) link(input);
      }
      producer[node.node_name()] = i;
      if (node.correlation_id() != 0) op_by_correlation[node.correlation_id()] = i;
      op_by_device_name[{static_cast<uint32_t>(track.parent),
                         builder_.strings().Get(a.slice.name)}] = i;
    }
    for (uint32_t i : order) {
      const Added& a = added_[i];
      const Track& track = tracks[a.slice.track];
      if (track.kind != TrackKind::kGpuStream) continue;
      const auto& node = step.dev_stats(a.device).node_stats(a.node);
      int64_t from = -1;
      if (node.correlation_id() != 0) {
        auto it = op_by_correlation.find(node.correlation_id());
        if (it != op_by_correlation.end()) from = it->second;
      } else {
        auto it = op_by_device_name.find(
            {static_cast<uint32_t>(track.parent), builder_.strings().Get(a.slice.name)});
        if (it != op_by_device_name.end()) from = it->second;
      }
      if (from >= 0) {
        builder_.AddFlow(Flow{added_[from].index, a.index, FlowKind::kLaunch});
      }
    }
  }

  // The allocator's true curve: the recorded allocation deltas in time order, anchored so the
  // level matches allocator_bytes_in_use where the producer recorded it (median offset, which
  // tolerates microsecond ties between a record and the node end).
  void AddAllocatorCounters() {
    struct Series {
      std::vector<std::pair<int64_t, int64_t>> deltas;   // (time ns, bytes)
      std::vector<std::pair<int64_t, int64_t>> in_use;   // (node end ns, bytes)
      int32_t device_track = -1;
    };
    std::map<std::string, Series> by_allocator;
    auto& tracks = builder_.tracks();
    const auto& step = metadata_->step_stats();
    for (const Added& a : added_) {
      const auto& node = step.dev_stats(a.device).node_stats(a.node);
      for (const auto& memory : node.memory()) {
        Series& series = by_allocator[memory.allocator_name()];
        if (series.device_track < 0) series.device_track = tracks[a.slice.track].parent;
        for (const auto& record : memory.allocation_records()) {
          series.deltas.emplace_back(MicrosToNanos(record.alloc_micros()), record.alloc_bytes());
        }
        if (memory.allocator_bytes_in_use() > 0) {
          series.in_use.emplace_back(a.slice.start_ns + a.slice.dur_ns,
                                     memory.allocator_bytes_in_use());
        }
      }
    }
    for (auto& [allocator, series] : by_allocator) {
      if (series.deltas.empty()) continue;
      // Frees first at equal times, so a same-instant free+alloc never shows a false peak.
      std::stable_sort(series.deltas.begin(), series.deltas.end(), [](auto& x, auto& y) {
        return x.first != y.first ? x.first < y.first : x.second < y.second;
      });
      std::vector<int64_t> cumulative(series.deltas.size());
      int64_t level = 0;
      int64_t lowest = 0;
      for (size_t i = 0; i < series.deltas.size(); ++i) {
        level = SaturatingAdd(level, series.deltas[i].second);
        cumulative[i] = level;
        lowest = std::min(lowest, level);
      }
      int64_t baseline = SaturatingSub(0, lowest);  // never below zero
      if (!series.in_use.empty()) {
        std::vector<int64_t> offsets;
        for (const auto& [when, bytes] : series.in_use) {
          auto it = std::upper_bound(series.deltas.begin(), series.deltas.end(),
                                     std::make_pair(when, INT64_MAX));
          const size_t count = static_cast<size_t>(it - series.deltas.begin());
          offsets.push_back(SaturatingSub(bytes, count == 0 ? 0 : cumulative[count - 1]));
        }
        std::nth_element(offsets.begin(), offsets.begin() + offsets.size() / 2, offsets.end());
        baseline = std::max(baseline, offsets[offsets.size() / 2]);
      }
      CounterSeries counter;
      counter.name = builder_.Intern(allocator);
      counter.track = series.device_track;
      counter.unit = "bytes";
      counter.origin = series.in_use.empty() ? "allocation_records"
                                             : "allocation_records+allocator_bytes_in_use";
      counter.ts_ns.reserve(series.deltas.size() + 1);
      counter.ts_ns.push_back(series.deltas.front().first);
      counter.values.push_back(baseline);
      for (size_t i = 0; i < series.deltas.size(); ++i) {
        // One sample per instant: later deltas at the same time overwrite the value.
        if (counter.ts_ns.back() == series.deltas[i].first && i > 0) {
          counter.values.back() = SaturatingAdd(baseline, cumulative[i]);
        } else {
          counter.ts_ns.push_back(series.deltas[i].first);
          counter.values.push_back(SaturatingAdd(baseline, cumulative[i]));
        }
      }
      builder_.AddCounter(std::move(counter));
    }
  }

  struct Added {
    uint32_t index;  // builder slice index
    int device;
    int node;
    Slice slice;     // a copy of what was added (absolute times)
  };

  std::shared_ptr<tf::RunMetadata> metadata_;
  TraceBuilder builder_;
  std::vector<TfDeviceName> device_names_;
  std::string default_task_;
  std::map<std::string, uint32_t> host_tracks_;
  std::map<std::pair<std::string, std::string>, uint32_t> device_tracks_;
  std::vector<Added> added_;
};

}  // namespace

namespace {
// Times are kept within ±2^62 ns (±146 years around the epoch) so that any difference or sum of
// two of them fits in int64; a corrupt file's larger values are clamped (and a slice's duration
// counted as repaired where it is built).
constexpr int64_t kTimeLimitNs = int64_t{1} << 62;
int64_t ClampTime(int64_t ns) { return std::clamp(ns, -kTimeLimitNs, kTimeLimitNs); }
}  // namespace

int64_t MicrosToNanos(int64_t micros) {
  constexpr int64_t kLimitMicros = kTimeLimitNs / 1000;
  return std::clamp(micros, -kLimitMicros, kLimitMicros) * 1000;
}

int64_t NodeStartNs(const tf::NodeExecStats& node) {
  return node.all_start_nanos() != 0 ? ClampTime(node.all_start_nanos())
                                     : MicrosToNanos(node.all_start_micros());
}

int64_t NodeDurationNs(const tf::NodeExecStats& node) {
  if (node.all_start_nanos() != 0 || node.all_end_rel_nanos() != 0) {
    return ClampTime(node.all_end_rel_nanos());
  }
  return MicrosToNanos(node.all_end_rel_micros());
}

Trace ImportRunMetadata(std::shared_ptr<tf::RunMetadata> metadata, SourceFormat format,
                        const std::string& path, const ImportStats& parse_stats) {
  return Importer(std::move(metadata), format, path).Run(parse_stats);
}

}  // namespace stepscope::trace
