#include "profiler/trace/chrome_json_reader.h"

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>

namespace stepscope::trace {
namespace {

using Json = nlohmann::json;

SliceKind KindOfCategory(std::string_view cat) {
  if (cat == "kernel") return SliceKind::kKernel;
  if (cat == "gpu_memcpy" || cat == "Memcpy") return SliceKind::kMemcpy;
  if (cat == "gpu_memset") return SliceKind::kMemset;
  if (cat == "cuda_runtime" || cat == "cuda_driver") return SliceKind::kRuntime;
  if (cat == "cpu_op" || cat == "Op") return SliceKind::kOp;
  return SliceKind::kOther;
}

// ts/dur are µs, possibly fractional; returns ns. Non-numbers are rejected by the caller.
int64_t MicrosToNs(const Json& value) {
  if (value.is_number_integer()) return value.get<int64_t>() * 1000;
  if (value.is_number_unsigned()) return static_cast<int64_t>(value.get<uint64_t>()) * 1000;
  return static_cast<int64_t>(std::llround(value.get<double>() * 1000.0));
}

std::string IdText(const Json& id) {
  if (id.is_string()) return id.get<std::string>();
  return id.dump();
}

class ChromeImporter {
 public:
  explicit ChromeImporter(const std::string& name) { builder_.SetSource(SourceFormat::kChromeJson, name); }

  Trace Run(const Json& events, const Json* top) {
    if (top != nullptr && top->contains("distributedInfo")) {
      const Json& info = (*top)["distributedInfo"];
      if (info.is_object() && info.contains("rank") && info["rank"].is_number_integer()) {
        builder_.step_info().rank = info["rank"].get<int32_t>();
      }
      if (info.is_object() && info.contains("world_size") && info["world_size"].is_number_integer()) {
        builder_.step_info().world_size = info["world_size"].get<int32_t>();
      }
    }
    for (const Json& event : events) Metadata(event);
    for (const Json& event : events) Event(event);
    CloseOpenBegins();
    BindFlows();
    for (auto& [key, series] : counters_) builder_.AddCounter(std::move(series));
    return std::move(builder_).Build();
  }

 private:
  using Key = std::pair<std::string, std::string>;  // (pid, tid) as text: ints or strings

  static std::string Text(const Json& value) {
    if (value.is_string()) return value.get<std::string>();
    if (value.is_null()) return "";
    return value.dump();
  }

  void Metadata(const Json& event) {
    if (!event.is_object() || event.value("ph", "") != "M") return;
    const std::string name = event.value("name", "");
    const Json& args = event.contains("args") ? event["args"] : Json::object();
    const std::string pid = Text(event.value("pid", Json()));
    if (name == "process_name" && args.contains("name")) process_names_[pid] = Text(args["name"]);
    if (name == "process_sort_index" && args.contains("sort_index") && args["sort_index"].is_number()) {
      process_sort_[pid] = args["sort_index"].get<int32_t>();
    }
    const std::string tid = Text(event.value("tid", Json()));
    if (name == "thread_name" && args.contains("name")) thread_names_[{pid, tid}] = Text(args["name"]);
    if (name == "thread_sort_index" && args.contains("sort_index") && args["sort_index"].is_number()) {
      thread_sort_[{pid, tid}] = args["sort_index"].get<int32_t>();
    }
  }

  uint32_t ProcessTrack(const std::string& pid) {
    auto [it, inserted] = process_tracks_.try_emplace(pid, 0);
    if (inserted) {
      Track track;
      auto name = process_names_.find(pid);
      track.name = builder_.Intern(name != process_names_.end() ? name->second : "process " + pid);
      track.full_name = builder_.Intern(pid);
      track.kind = TrackKind::kHost;
      auto sort = process_sort_.find(pid);
      track.sort_index = sort != process_sort_.end() ? sort->second : static_cast<int32_t>(process_tracks_.size());
      it->second = builder_.AddTrack(track);
    }
    return it->second;
  }

  uint32_t ThreadTrack(const Key& key, SliceKind kind) {
    auto [it, inserted] = thread_tracks_.try_emplace(key, 0);
    if (inserted) {
      const uint32_t process = ProcessTrack(key.first);
      Track track;
      auto name = thread_names_.find(key);
      track.name = builder_.Intern(name != thread_names_.end() ? name->second : "thread " + key.second);
      track.full_name = builder_.Intern(key.first + "/" + key.second);
      track.parent = static_cast<int32_t>(process);
      track.kind = kind == SliceKind::kKernel || kind == SliceKind::kMemcpy || kind == SliceKind::kMemset
                       ? TrackKind::kGpuStream
                       : TrackKind::kOpLane;
      auto sort = thread_sort_.find(key);
      track.sort_index = sort != thread_sort_.end() ? sort->second : static_cast<int32_t>(thread_tracks_.size());
      try {
        track.thread_id = std::stoll(key.second);
      } catch (...) {
        track.thread_id = -1;
      }
      it->second = builder_.AddTrack(track);
    }
    return it->second;
  }

  void AddSlice(const Json& event, int64_t start, int64_t dur) {
    const std::string cat = event.value("cat", "");
    const SliceKind kind = KindOfCategory(cat);
    Slice slice;
    slice.start_ns = start;
    slice.dur_ns = dur;
    slice.kind = kind;
    slice.track = ThreadTrack({Text(event.value("pid", Json())), Text(event.value("tid", Json()))}, kind);
    const std::string name = event.contains("name") ? Text(event["name"]) : "";
    slice.name = builder_.Intern(name);
    // TensorFlow's timeline keeps the node name in args.name and the op type as the event name.
    if (event.contains("args") && event["args"].is_object() && event["args"].contains("name") &&
        event["args"].contains("op")) {
      slice.name = builder_.Intern(Text(event["args"]["name"]));
      slice.op_type = builder_.Intern(Text(event["args"]["op"]));
    } else {
      slice.op_type = slice.name;
    }
    slices_.push_back(builder_.AddSlice(slice));
    positions_.push_back({slice.track, start, dur});
  }

  void Event(const Json& event) {
    if (!event.is_object()) {
      builder_.import_stats().Add("event_not_an_object_skipped");
      return;
    }
    const std::string ph = event.value("ph", "");
    if (ph == "M") return;
    const bool timed = event.contains("ts") && event["ts"].is_number();
    if (!timed) {
      builder_.import_stats().Add("event_without_ts_skipped");
      return;
    }
    const int64_t ts = MicrosToNs(event["ts"]);
    if (ph == "X") {
      int64_t dur = 0;
      if (event.contains("dur") && event["dur"].is_number()) {
        dur = MicrosToNs(event["dur"]);
      } else {
        builder_.import_stats().Add("x_event_without_dur");
      }
      AddSlice(event, ts, dur);
    } else if (ph == "B") {
      open_[{Text(event.value("pid", Json())), Text(event.value("tid", Json()))}].push_back({event, ts});
    } else if (ph == "E") {
      auto& stack = open_[{Text(event.value("pid", Json())), Text(event.value("tid", Json()))}];
      if (stack.empty()) {
        builder_.import_stats().Add("end_without_begin_skipped");
        return;
      }
      AddSlice(stack.back().first, stack.back().second, ts - stack.back().second);
      stack.pop_back();
    } else if (ph == "C") {
      if (!event.contains("args") || !event["args"].is_object()) return;
      const std::string pid = Text(event.value("pid", Json()));
      for (const auto& [key, value] : event["args"].items()) {
        if (!value.is_number()) continue;
        const std::string series_name = event.value("name", "") == key ? key : event.value("name", "") + "." + key;
        auto [it, inserted] = counters_.try_emplace({pid, series_name});
        if (inserted) {
          it->second.name = builder_.Intern(series_name);
          it->second.track = static_cast<int32_t>(ProcessTrack(pid));
        }
        it->second.ts_ns.push_back(ts);
        it->second.values.push_back(value.is_number_float() ? static_cast<int64_t>(value.get<double>())
                                                            : value.get<int64_t>());
      }
    } else if (ph == "s" || ph == "t" || ph == "f") {
      if (!event.contains("id")) {
        builder_.import_stats().Add("flow_without_id_skipped");
        return;
      }
      FlowEnd end;
      end.key = {Text(event.value("pid", Json())), Text(event.value("tid", Json()))};
      end.ts = ts;
      end.bind_enclosing = ph != "f" || event.value("bp", "") == "e";
      std::string id = event.value("cat", "") + "/" + IdText(event["id"]);
      (ph == "s" ? flow_starts_ : flow_ends_)[id] = end;
      flow_is_launch_[id] = event.value("cat", "") == "ac2g";
    } else {
      builder_.import_stats().Add("event_phase_" + ph + "_ignored");
    }
  }

  void CloseOpenBegins() {
    for (auto& [key, stack] : open_) {
      builder_.import_stats().Add("begin_without_end_skipped", static_cast<int64_t>(stack.size()));
    }
  }

  // Flows bind to the slice enclosing their timestamp on their thread (the next slice for an
  // `f` without bp:e).
  void BindFlows() {
    std::map<uint32_t, std::vector<size_t>> by_track;
    for (size_t i = 0; i < positions_.size(); ++i) by_track[positions_[i].track].push_back(i);
    auto find = [&](const FlowEnd& end) -> int64_t {
      auto track_it = thread_tracks_.find(end.key);
      if (track_it == thread_tracks_.end()) return -1;
      auto it = by_track.find(track_it->second);
      if (it == by_track.end()) return -1;
      int64_t best = -1;
      for (size_t i : it->second) {
        const Position& p = positions_[i];
        if (end.bind_enclosing) {
          if (p.start <= end.ts && end.ts <= p.start + p.dur &&
              (best < 0 || p.dur < positions_[best].dur)) {
            best = static_cast<int64_t>(i);
          }
        } else if (p.start >= end.ts && (best < 0 || p.start < positions_[best].start)) {
          best = static_cast<int64_t>(i);
        }
      }
      return best;
    };
    for (const auto& [id, start] : flow_starts_) {
      auto end = flow_ends_.find(id);
      if (end == flow_ends_.end()) {
        builder_.import_stats().Add("flow_unmatched_skipped");
        continue;
      }
      const int64_t from = find(start);
      const int64_t to = find(end->second);
      if (from < 0 || to < 0) {
        builder_.import_stats().Add("flow_not_bound_skipped");
        continue;
      }
      builder_.AddFlow(Flow{slices_[from], slices_[to],
                            flow_is_launch_[id] ? FlowKind::kLaunch : FlowKind::kDataflow});
    }
  }

  struct FlowEnd {
    Key key;
    int64_t ts = 0;
    bool bind_enclosing = true;
  };
  struct Position {
    uint32_t track;
    int64_t start, dur;
  };

  TraceBuilder builder_;
  std::map<std::string, std::string> process_names_;
  std::map<std::string, int32_t> process_sort_;
  std::map<Key, std::string> thread_names_;
  std::map<Key, int32_t> thread_sort_;
  std::map<std::string, uint32_t> process_tracks_;
  std::map<Key, uint32_t> thread_tracks_;
  std::map<Key, std::vector<std::pair<Json, int64_t>>> open_;
  std::map<std::pair<std::string, std::string>, CounterSeries> counters_;
  std::map<std::string, FlowEnd> flow_starts_, flow_ends_;
  std::map<std::string, bool> flow_is_launch_;
  std::vector<uint32_t> slices_;
  std::vector<Position> positions_;
};

}  // namespace

StatusOr<Trace> ReadChromeJson(std::string_view bytes, const std::string& name) {
  Json document = Json::parse(bytes.begin(), bytes.end(), nullptr, /*allow_exceptions=*/false);
  if (document.is_discarded()) {
    // Find where it broke, for the message.
    try {
      const Json again = Json::parse(bytes.begin(), bytes.end());
      (void)again;
    } catch (const Json::parse_error& error) {
      return InvalidInput(name + ": invalid JSON at byte " + std::to_string(error.byte) + ": " +
                          error.what());
    }
    return InvalidInput(name + ": invalid JSON");
  }
  const Json* events = nullptr;
  const Json* top = nullptr;
  if (document.is_array()) {
    events = &document;
  } else if (document.is_object() && document.contains("traceEvents") &&
             document["traceEvents"].is_array()) {
    events = &document["traceEvents"];
    top = &document;
  }
  if (events == nullptr) {
    return InvalidInput(name + ": JSON is not a trace: expected an array of events or an object "
                               "with a \"traceEvents\" array");
  }
  if (!events->empty() && !(*events)[0].is_object()) {
    return InvalidInput(name + ": JSON is not a trace: traceEvents holds " +
                        std::string((*events)[0].type_name()) + "s, not event objects");
  }
  return ChromeImporter(name).Run(*events, top);
}

}  // namespace stepscope::trace
