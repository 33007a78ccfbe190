// Step stats into the model: tracks per host, device and lane, a slice per node, flows and
// allocator counters, from parsed messages or straight from the wire scan (step_stats_import.h).
#include "profiler/formats/step_stats/step_stats_import.h"

#include <algorithm>
#include <limits>
#include <map>
#include <unordered_map>

#include "base/saturating.h"
#include "profiler/formats/step_stats/step_stats_payload.h"
#include "profiler/formats/step_stats/step_stats_wire.h"
#include "profiler/formats/step_stats/tf_names.h"
#include "stepscope/tf/run_metadata.pb.h"

namespace stepscope::trace {
namespace {

// Sort keys so that devices read CPU, then GPU, by index; lanes read executor, streams by id,
// memcpy, then the stream:all aggregate.
int DeviceSortKey(std::string_view device) {
  const size_t colon = device.find(':');
  const std::string_view type = device.substr(0, colon);
  int index = 0;
  if (colon != std::string_view::npos) {
    for (char c : device.substr(colon + 1)) {
      if (c < '0' || c > '9') break;
      index = std::min(index * 10 + (c - '0'), 99999);  // saturates: a type's keys stay below the next type's
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

// A CPU device's /memcpy lane (our CPU towers copy between devices there) holds copies the host
// made, recorded nowhere else: host work, not a GPU tracer's repeat lane.
TrackKind LaneTrackKind(const TfDeviceName& name) {
  switch (name.kind) {
    case TfLaneKind::kExecutor: return TrackKind::kOpLane;
    case TfLaneKind::kStream: return TrackKind::kGpuStream;
    case TfLaneKind::kMemcpy: return name.device.starts_with("CPU") ? TrackKind::kHostMemcpy : TrackKind::kGpuMemcpy;
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

// The nodes of a parsed RunMetadata.
class MessageNodes {
 public:
  explicit MessageNodes(const tf::StepStats& step) : step_(step) {}
  int size(int device) const { return step_.dev_stats(device).node_stats_size(); }
  const tf::NodeExecStats& node(int device, int n) const { return step_.dev_stats(device).node_stats(n); }

 private:
  const tf::StepStats& step_;
};

// The nodes of a wire scan (step_stats_wire.h), read with the same accessor names.
class WireNodes {
 public:
  WireNodes(const WireStepStats& step, std::string_view bytes) : step_(step), bytes_(bytes) {}
  int size(int device) const {
    const auto& first = step_.device_first_node;
    return static_cast<int>(first[device + 1] - first[device]);
  }
  WireNodeView node(int device, int n) const {
    return WireNodeView(step_, bytes_, step_.nodes[step_.device_first_node[device] + static_cast<uint32_t>(n)]);
  }

 private:
  const WireStepStats& step_;
  std::string_view bytes_;
};

int64_t StartNs(const tf::NodeExecStats& node) { return NodeStartNs(node); }
int64_t StartNs(const WireNodeView& node) { return node.node().start_ns; }
int64_t DurationNs(const tf::NodeExecStats& node) { return NodeDurationNs(node); }
int64_t DurationNs(const WireNodeView& node) { return node.node().dur_ns; }

// Adds the tracks, slices, flows and counters of a step to `builder`; devices and the session
// come from `metadata`, nodes from `nodes` (MessageNodes or WireNodes: one import for both).
template <typename Nodes>
class Importer {
 public:
  Importer(const tf::RunMetadata& metadata, const Nodes& nodes, TraceBuilder& builder)
      : metadata_(metadata), nodes_(nodes), builder_(builder) {}

  void Run(const ImportStats& parse_stats) {
    for (const auto& [name, count] : parse_stats.counts()) builder_.import_stats().Add(name, count);
    ReadSession();
    const auto& step = metadata_.step_stats();
    device_names_.reserve(step.dev_stats_size());
    for (const auto& device : step.dev_stats()) device_names_.push_back(ParseTfDeviceName(device.device()));
    DefaultTask();
    size_t nodes = 0;
    for (int d = 0; d < step.dev_stats_size(); ++d) nodes += static_cast<size_t>(nodes_.size(d));
    builder_.Reserve(nodes, 0);
    added_.reserve(nodes);
    for (int d = 0; d < step.dev_stats_size(); ++d) ImportDevice(d);
    MarkAggregateDuplicates();
    AddFlows();
    AddAllocatorCounters();
  }

 private:
  void ReadSession() {
    if (!metadata_.has_stepscope_session()) return;
    const auto& session = metadata_.stepscope_session();
    StepInfo& info = builder_.step_info();
    info.step = session.step();
    info.rank = session.rank();
    info.clock_sync_ns = session.clock_sync_nanos();
    info.world_size = session.world_size() > 0 ? session.world_size() : -1;  // 0: not recorded
    info.host = session.host();
    info.producer = session.producer();
    info.dropped_records = session.dropped_records() + session.dropped_gpu_records();
    for (const tf::DeviceDescription& described : session.devices()) {
      DeviceProperties device;
      device.id = described.id();
      device.name = described.name();
      device.measured_flops_per_s = described.measured_flops_per_s();
      device.measured_by = described.measured_by();
      // 0 is proto3's "not recorded"; DeviceProperties says so with -1.
      if (described.sm_count() > 0) device.sm_count = described.sm_count();
      if (described.memory_bytes() > 0) device.memory_bytes = described.memory_bytes();
      if (described.clock_khz() > 0) device.clock_khz = described.clock_khz();
      if (described.compute_major() > 0) device.compute_major = described.compute_major();
      if (described.compute_minor() > 0 || described.compute_major() > 0) device.compute_minor = described.compute_minor();
      info.devices.push_back(std::move(device));
    }
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
    const auto& device = metadata_.step_stats().dev_stats(d);
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
          // A named thread is its name (our trainer's collectives lane has a made-up id,
          // 0x7fff0000, that no reader should see); the id stays only to tell apart two
          // threads of one name.
          lane_name = "thread " + std::to_string(thread_id);
          auto found = device.thread_names().find(thread_id);
          if (found != device.thread_names().end() && !found->second.empty()) {
            const auto& names = device.thread_names();
            const bool unique = std::count_if(names.begin(), names.end(), [&](const auto& entry) {
                                  return entry.second == found->second;
                                }) == 1;
            lane_name = unique ? found->second : found->second + " (" + lane_name + ")";
          }
        }
        lane.name = builder_.Intern(lane_name);
        lane.full_name = builder_.Intern(device.device());
        lane.parent = static_cast<int32_t>(device_track);
        lane.kind = LaneTrackKind(name);
        lane.sort_index = LaneSortKey(name) * 1000 + static_cast<int32_t>(thread_tracks.size());
        lane.thread_id = gpu_lane ? -1 : thread_id;
        lane.source_device = d;
        // Ops of one executor run concurrently; GPU streams may run kernels concurrently too.
        lane.concurrent = true;
        it->second = builder_.AddTrack(lane);
      }
      return it->second;
    };

    const int nodes = nodes_.size(d);
    for (int n = 0; n < nodes; ++n) {
      const auto& node = nodes_.node(d, n);
      SliceRecord slice;
      slice.start_ns = StartNs(node);
      slice.dur_ns = DurationNs(node);
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
      added_.push_back(Added{index, d, n});
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
    auto& tracks = builder_.tracks();
    const bool aggregates = std::any_of(tracks.begin(), tracks.end(), [](const Track& track) {
      return track.kind == TrackKind::kGpuAllStreams || track.kind == TrackKind::kGpuMemcpy;
    });
    if (!aggregates) return;
    std::unordered_map<Key, int, KeyHash> on_streams;
    auto key_of = [&](const SliceRecord& slice) {
      const uint32_t device = static_cast<uint32_t>(tracks[slice.track].parent);
      return Key{device, slice.name, slice.op_type, slice.start_ns, slice.dur_ns};
    };
    for (const Added& a : added_) {
      if (tracks[SliceOf(a).track].kind == TrackKind::kGpuStream) ++on_streams[key_of(SliceOf(a))];
    }
    int64_t marked = 0;
    for (const Added& a : added_) {
      const TrackKind kind = tracks[SliceOf(a).track].kind;
      if (kind != TrackKind::kGpuAllStreams && kind != TrackKind::kGpuMemcpy) continue;
      if (on_streams.count(key_of(SliceOf(a))) != 0) {
        SliceRecord slice = builder_.slice(a.index);
        slice.flags |= kSliceDuplicate;
        builder_.SetSlice(a.index, slice);
        ++marked;
      }
    }
    builder_.import_stats().Add("gpu_aggregate_lane_duplicates_marked", marked);
  }

  // Dataflow: each input of an executor op comes from the latest producer of that name.
  // Launch: a GPU record named after an executor op of the same device was launched by it
  // (or, in our traces, carries the op's correlation id).
  void AddFlows() {
    auto& tracks = builder_.tracks();
    const StringTable& strings = builder_.strings();
    // (start, added index) of the slices on `kind` lanes.
    auto on_lanes = [&](TrackKind kind) {
      std::vector<std::pair<int64_t, uint32_t>> keyed;
      for (uint32_t i = 0; i < added_.size(); ++i) {
        const SliceRecord& slice = SliceOf(added_[i]);
        if (tracks[slice.track].kind == kind) keyed.emplace_back(slice.start_ns, i);
      }
      return keyed;
    };
    // In time order, ties in the order added.
    auto in_time_order = [](std::vector<std::pair<int64_t, uint32_t>>& keyed) {
      if (!std::is_sorted(keyed.begin(), keyed.end())) std::sort(keyed.begin(), keyed.end());
    };
    // By interned name: an op's slice name is its node name, and a million-op step looks a name
    // up once per op and once per kernel.
    constexpr uint32_t kNone = 0xffffffffu;
    std::vector<uint32_t> producer(strings.size(), kNone);  // node name -> latest added index
    auto producer_of = [&](std::string_view name) {
      const int64_t id = strings.Find(name);
      return id < 0 ? kNone : producer[static_cast<size_t>(id)];
    };
    std::unordered_map<uint64_t, uint32_t> op_by_correlation;
    std::unordered_map<uint64_t, uint32_t> op_by_device_name;  // (device track, name) -> added index
    auto device_name = [&](const Track& track, StringId name) {
      return static_cast<uint64_t>(static_cast<uint32_t>(track.parent)) << 32 | name;
    };
    auto ops = on_lanes(TrackKind::kOpLane);
    auto gpu_records = on_lanes(TrackKind::kGpuStream);
    // Without GPU records and without inputs (a trace converted from another format), no flow
    // can be found: the pass below would only fill the tables.
    const bool inputs = std::any_of(ops.begin(), ops.end(), [&](const auto& op) {
      const auto& node = nodes_.node(added_[op.second].device, added_[op.second].node);
      return node.input_size() > 0 || !node.timeline_label().empty();
    });
    if (gpu_records.empty() && !inputs) return;
    in_time_order(ops);
    in_time_order(gpu_records);
    for (const auto& [start, i] : ops) {
      const Added& a = added_[i];
      const SliceRecord& slice = SliceOf(a);
      const Track& track = tracks[slice.track];
      const auto& node = nodes_.node(a.device, a.node);
      // Inputs: our own traces list them; TF's labels carry them.
      auto link = [&](std::string_view input) {
        const std::string_view from = ProducerOf(input);
        uint32_t found = producer_of(from);
        if (found == kNone) found = producer_of(StripPartitionSuffix(from));
        if (found != kNone) builder_.AddFlow(added_[found].index, a.index, FlowKind::kDataflow);
      };
      if (node.input_size() > 0) {
        for (const auto& input : node.input()) link(input);
      } else {
        for (std::string_view input : ParseTfOpLabel(node.timeline_label()).inputs) link(input);
      }
      producer[slice.name] = i;
      if (node.correlation_id() != 0) op_by_correlation[node.correlation_id()] = i;
      op_by_device_name[device_name(track, slice.name)] = i;
    }
    for (const auto& [start, i] : gpu_records) {
      const Added& a = added_[i];
      const auto& node = nodes_.node(a.device, a.node);
      uint32_t from = kNone;
      if (node.correlation_id() != 0) {
        auto it = op_by_correlation.find(node.correlation_id());
        if (it != op_by_correlation.end()) from = it->second;
      } else {
        auto it = op_by_device_name.find(device_name(tracks[SliceOf(a).track], SliceOf(a).name));
        if (it != op_by_device_name.end()) from = it->second;
      }
      if (from != kNone) builder_.AddFlow(added_[from].index, a.index, FlowKind::kLaunch);
    }
  }

  // The allocator's curve, from every memory figure the producer recorded:
  //  - allocation_records: the deltas, in time order (frees first at equal times), give the
  //    shape of the curve between the samples below;
  //  - allocator_bytes_in_use: the allocator's own total when a node ended, a sample the curve
  //    passes through (the level is re-anchored on it after that instant's deltas); before the
  //    first sample the deltas are anchored on it, never below zero;
  //  - peak_bytes: what a node held at once, a floor on the level during the node (a point is
  //    raised at the node's start when the curve stays below it).
  // An allocator with samples but no records gets the samples' step curve. `origin` names the
  // sources the allocator's curve came from, joined by '+'.
  void AddAllocatorCounters() {
    struct Floor {
      int64_t start, end, bytes;
    };
    struct Series {
      std::vector<std::pair<int64_t, int64_t>> deltas;   // (time ns, bytes)
      std::vector<std::pair<int64_t, int64_t>> in_use;   // (node end ns, bytes)
      std::vector<Floor> floors;                          // peak_bytes of a node
      int32_t device_track = -1;
    };
    std::map<std::string, Series> by_allocator;
    auto& tracks = builder_.tracks();
    for (const Added& a : added_) {
      const auto& node = nodes_.node(a.device, a.node);
      const SliceRecord& slice = SliceOf(a);
      for (const auto& memory : node.memory()) {
        Series& series = by_allocator[std::string(memory.allocator_name())];
        if (series.device_track < 0) series.device_track = tracks[slice.track].parent;
        for (const auto& record : memory.allocation_records()) {
          series.deltas.emplace_back(MicrosToNanos(record.alloc_micros()), record.alloc_bytes());
        }
        const int64_t end = slice.start_ns + std::max<int64_t>(slice.dur_ns, 0);
        if (memory.allocator_bytes_in_use() > 0) {
          series.in_use.emplace_back(end, memory.allocator_bytes_in_use());
        }
        if (memory.peak_bytes() > 0) series.floors.push_back({slice.start_ns, end, memory.peak_bytes()});
      }
    }
    for (auto& [allocator, series] : by_allocator) {
      if (series.deltas.empty() && series.in_use.empty()) continue;
      auto by_time_frees_first = [](const auto& x, const auto& y) {
        return x.first != y.first ? x.first < y.first : x.second < y.second;
      };
      std::stable_sort(series.deltas.begin(), series.deltas.end(), by_time_frees_first);
      // Samples at one instant (nodes ending together): the largest comes last and stands.
      std::stable_sort(series.in_use.begin(), series.in_use.end(), by_time_frees_first);
      // Level before the first delta: anchored on the first sample (the deltas up to it lead
      // there), never below zero on the way.
      int64_t level = 0;
      int64_t lowest = 0;
      for (size_t i = 0; i < series.deltas.size() &&
                         (series.in_use.empty() || series.deltas[i].first <= series.in_use.front().first);
           ++i) {
        level = SaturatingAdd(level, series.deltas[i].second);
        lowest = std::min(lowest, level);
      }
      int64_t start = SaturatingSub(0, lowest);
      if (!series.in_use.empty()) start = std::max(start, SaturatingSub(series.in_use.front().second, level));
      if (series.in_use.empty()) {
        // No sample: the lowest level over all the deltas is zero at the least.
        level = 0;
        lowest = 0;
        for (const auto& [when, bytes] : series.deltas) {
          level = SaturatingAdd(level, bytes);
          lowest = std::min(lowest, level);
        }
        start = SaturatingSub(0, lowest);
      }
      std::vector<int64_t> ts;
      std::vector<int64_t> values;
      auto emit = [&](int64_t when, int64_t bytes) {
        bytes = std::max<int64_t>(bytes, 0);
        if (!ts.empty() && ts.back() == when) {
          values.back() = bytes;  // one point per instant: the last value wins
        } else {
          ts.push_back(when);
          values.push_back(bytes);
        }
      };
      level = start;
      const int64_t first_time = std::min(series.deltas.empty() ? INT64_MAX : series.deltas.front().first,
                                          series.in_use.empty() ? INT64_MAX : series.in_use.front().first);
      emit(first_time, level);
      size_t d = 0;
      for (size_t k = 0; k <= series.in_use.size(); ++k) {
        const int64_t until = k < series.in_use.size() ? series.in_use[k].first : INT64_MAX;
        for (; d < series.deltas.size() && series.deltas[d].first <= until; ++d) {
          level = std::max<int64_t>(SaturatingAdd(level, series.deltas[d].second), 0);
          emit(series.deltas[d].first, level);
        }
        if (k < series.in_use.size()) {
          level = series.in_use[k].second;
          emit(series.in_use[k].first, level);
        }
      }
      // peak_bytes floors: raise the node's start where the curve stays below what it held.
      std::vector<std::pair<int64_t, int64_t>> raises;
      for (const Floor& floor : series.floors) {
        auto first = std::upper_bound(ts.begin(), ts.end(), floor.start);
        int64_t highest = first == ts.begin() ? 0 : values[static_cast<size_t>(first - ts.begin()) - 1];
        for (auto it = first; it != ts.end() && *it <= floor.end; ++it) {
          highest = std::max(highest, values[static_cast<size_t>(it - ts.begin())]);
        }
        if (highest < floor.bytes) raises.emplace_back(floor.start, floor.bytes);
      }
      if (!raises.empty()) {
        std::sort(raises.begin(), raises.end());
        std::vector<int64_t> merged_ts;
        std::vector<int64_t> merged_values;
        size_t p = 0;
        for (const auto& [when, bytes] : raises) {
          for (; p < ts.size() && ts[p] < when; ++p) {
            merged_ts.push_back(ts[p]);
            merged_values.push_back(values[p]);
          }
          if (p < ts.size() && ts[p] == when) {
            values[p] = std::max(values[p], bytes);
          } else if (!merged_ts.empty() && merged_ts.back() == when) {
            merged_values.back() = std::max(merged_values.back(), bytes);
          } else {
            merged_ts.push_back(when);
            merged_values.push_back(std::max(bytes, merged_values.empty() ? 0 : merged_values.back()));
          }
        }
        for (; p < ts.size(); ++p) {
          merged_ts.push_back(ts[p]);
          merged_values.push_back(values[p]);
        }
        ts.swap(merged_ts);
        values.swap(merged_values);
      }
      CounterSeries counter;
      counter.name = builder_.Intern(allocator);
      counter.track = series.device_track;
      counter.unit = "bytes";
      std::string origin;
      auto add_source = [&](bool present, const char* name) {
        if (present) origin += (origin.empty() ? "" : "+") + std::string(name);
      };
      add_source(!series.deltas.empty(), "allocation_records");
      add_source(!series.in_use.empty(), "allocator_bytes_in_use");
      add_source(!series.floors.empty(), "peak_bytes");
      counter.origin = std::move(origin);
      counter.ts_ns = std::move(ts);
      counter.values = std::move(values);
      builder_.AddCounter(std::move(counter));
    }
  }

  struct Added {
    uint32_t index;  // builder slice index (absolute times until Build)
    int device;
    int node;
  };
  SliceRecord SliceOf(const Added& a) const { return builder_.slice(a.index); }

  const tf::RunMetadata& metadata_;
  const Nodes& nodes_;
  TraceBuilder& builder_;
  std::vector<TfDeviceName> device_names_;
  std::string default_task_;
  std::map<std::string, uint32_t> host_tracks_;
  std::map<std::pair<std::string, std::string>, uint32_t> device_tracks_;
  std::vector<Added> added_;
};

}  // namespace

Trace ImportRunMetadata(std::shared_ptr<tf::RunMetadata> metadata, SourceFormat format,
                        const std::string& path, const ImportStats& parse_stats) {
  TraceBuilder builder;
  builder.SetSource(format, path);
  Importer<MessageNodes>(*metadata, MessageNodes(metadata->step_stats()), builder).Run(parse_stats);
  SetStepStatsPayload(builder, std::move(metadata));
  return std::move(builder).Build();
}

std::optional<Trace> ImportBinaryStepStats(std::string_view bytes, const std::string& path) {
  std::optional<WireStepStats> step = ScanBinaryStepStats(bytes);
  if (!step.has_value()) return std::nullopt;
  TraceBuilder builder;
  builder.SetSource(step->format, path);
  Importer<WireNodes>(*step->rest_message, WireNodes(*step, bytes), builder).Run(step->stats);
  // The node store, filled during the scan, finishes compressing while the import goes on.
  SetStepStatsPayload(builder, std::move(step->store), std::move(step->rest), std::move(step->device_first_node));
  step.reset();
  return std::move(builder).Build();
}

}  // namespace stepscope::trace
