// Imports the events the Chrome JSON reader read (chrome_json_events.h) into the model, in file
// order: dispatch by phase, tracks per process and thread, slices, counters, metadata
// (chrome_json_importer_state.h).
#include "profiler/formats/chrome_json/chrome_json_importer.h"

#include <simdjson.h>
#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <iterator>
#include <limits>
#include <map>
#include <memory>
#include <span>
#include <unordered_map>

#include "base/free_storage.h"
#include "base/saturating.h"
#include "profiler/formats/chrome_json/chrome_json_importer_state.h"
#include "profiler/formats/chrome_json/chrome_json_reader.h"
#include "profiler/formats/common/utf8.h"

namespace stepscope::trace {

namespace od = simdjson::ondemand;

namespace {

using chrome_json_detail::NumberOf;
using chrome_json_detail::SaturatedInt64;
using chrome_json_detail::Trim;

// A thread id as a lane shows it: as written, except -1 (Kineto's "no stream": a device-wide
// sync), "none", and other negative ids, which are 32-bit pthread ids or hashes written as signed
// numbers: their bits in hex (-247463936 is 0xf1400000).
std::string TidText(std::string_view tid) {
  int64_t id = 0;
  const auto [end, error] = std::from_chars(tid.data(), tid.data() + tid.size(), id);
  if (error != std::errc() || end != tid.data() + tid.size() || id >= 0) return std::string(tid);
  if (id == -1) return "none";
  char hex[24];
  const uint64_t bits = id >= INT32_MIN ? uint64_t{static_cast<uint32_t>(id)} : static_cast<uint64_t>(id);
  std::snprintf(hex, sizeof(hex), "0x%llx", static_cast<unsigned long long>(bits));
  return hex;
}

// Args of a kernel that KernelArgs holds, and of a copy or memset that TransferArgs holds (with
// the copy details our own export writes, derived from them and the copy's name).
bool IsKernelLaunchKey(std::string_view key) {
  return key == "grid" || key == "block" || key == "registers per thread" || key == "shared memory" ||
         key == "device" || key == "stream" || key == "correlation" || key == "blocks per SM" ||
         key == "warps per SM" || key == "est. achieved occupancy %";
}

bool IsTransferKey(std::string_view key) {
  return key == "bytes" || key == "memory bandwidth (GB/s)" || key == "device" || key == "stream" ||
         key == "correlation" || key == "kind" || key == "memory" || key == "bandwidth (GB/s)";
}

// A JSON number's text as an int64 when it is a plain integer of up to 18 digits (ids, sizes:
// kept exactly); nullopt for fractions, exponents and longer numbers (kept as their text).
std::optional<int64_t> IntegerOf(std::string_view text) {
  size_t i = !text.empty() && text[0] == '-' ? 1 : 0;
  if (text.size() == i || text.size() - i > 18) return std::nullopt;
  int64_t value = 0;
  for (; i < text.size(); ++i) {
    if (text[i] < '0' || text[i] > '9') return std::nullopt;
    value = value * 10 + (text[i] - '0');
  }
  return text[0] == '-' ? -value : value;
}

}  // namespace

simdjson::error_code ChromeEventImporter::Impl::Event(od::value value) {
  one_.Clear();
  if (auto error = one_.Read(value)) return error;
  Import(one_);
  return simdjson::SUCCESS;
}

void ChromeEventImporter::Impl::Import(const ChromeEventBatch& batch) {
  const ChromeEventBatch::Impl& list = *batch.impl_;
  for (const ChromeEventFields& event : list.events) {
    ++events_;
    if (event.not_an_object) {
      stats().Add("event_not_an_object_skipped");
      continue;
    }
    stats().Add("string_unreadable_emptied", event.strings_unreadable);
    stats().Add("kernel_launch_dims_unreadable", event.launch_dims_unreadable);
    event_ = &event;
    numbers_ = {list.numbers.data() + event.numbers_begin, list.numbers.data() + event.numbers_end};
    raw_args_ = {list.raw_args.data() + event.args_begin, list.raw_args.data() + event.args_end};
    Dispatch();
  }
}

void ChromeEventImporter::Impl::DistributedInfo(od::value value) {
  od::object object;
  if (value.get_object().get(object)) return;
  for (auto field_result : object) {
    od::field field;
    if (std::move(field_result).get(field)) return;
    std::string_view key;
    if (field.unescaped_key().get(key)) return;
    int64_t number = 0;
    if (key == "rank" && !field.value().get_int64().get(number)) {
      builder_.step_info().rank = static_cast<int32_t>(number);
    } else if (key == "world_size" && !field.value().get_int64().get(number)) {
      builder_.step_info().world_size = static_cast<int32_t>(number);
    }
  }
}

void ChromeEventImporter::Impl::OtherData(od::value value) {
  od::object object;
  if (value.get_object().get(object)) return;
  for (auto field_result : object) {
    od::field field;
    if (std::move(field_result).get(field)) return;
    std::string_view key, text;
    if (field.unescaped_key().get(key)) return;
    StepInfo& info = builder_.step_info();
    int64_t number = 0;
    if (key == "producer" && !field.value().get_string().get(text)) info.producer = std::string(text);
    if (key == "stepscope_counter_origins") {
      CounterOrigins(field.value());
      continue;
    }
    if (key == "stepscope_host" && !field.value().get_string().get(text)) info.host = std::string(text);
    if (!key.starts_with("stepscope_") || key == "stepscope_host" || field.value().get_int64().get(number)) continue;
    if (key == "stepscope_step") info.step = number;
    if (key == "stepscope_rank") info.rank = static_cast<int32_t>(number);
    if (key == "stepscope_world_size") info.world_size = static_cast<int32_t>(number);
    if (key == "stepscope_clock_sync_ns") info.clock_sync_ns = number;
    if (key == "stepscope_dropped_records" && number > 0) info.dropped_records = static_cast<uint64_t>(number);
    // Our export writes times from the trace's first instant and that instant here; it comes
    // before the events (an otherData after them leaves the times as written).
    if (key == "stepscope_epoch_ns" && events_ == 0) {
      time_offset_ns_ = number;
      own_export_ = true;
    }
  }
}

void ChromeEventImporter::Impl::CounterOrigins(od::value value) {
  od::object object;
  if (value.get_object().get(object)) return;
  for (auto field_result : object) {
    od::field field;
    std::string_view key, text;
    if (std::move(field_result).get(field) || field.unescaped_key().get(key)) return;
    const std::string name(key);
    if (!field.value().get_string().get(text)) counter_origins_[name] = std::string(text);
  }
}

// Kineto writes one object per GPU: {"id", "name", "totalGlobalMem", "computeMajor",
// "computeMinor", "numSms", ...}; stepscope's export adds "stepscopeMeasuredFlopsPerSecond" and
// "stepscopeMeasuredBy" for a peak measured on the device; a field of another type, or an entry that is no object, is
// skipped and counted (device_properties_unreadable), the rest kept.
void ChromeEventImporter::Impl::DeviceProperties(od::value value) {
  od::array array;
  if (value.get_array().get(array)) {
    stats().Add("device_properties_unreadable");
    return;
  }
  for (auto entry_result : array) {
    od::object object;
    if (entry_result.get_object().get(object)) {
      stats().Add("device_properties_unreadable");
      continue;
    }
    trace::DeviceProperties device;
    bool readable = true;
    for (auto field_result : object) {
      od::field field;
      std::string_view key;
      if (std::move(field_result).get(field) || field.unescaped_key().get(key)) {
        readable = false;
        break;
      }
      int64_t number = 0;
      std::string_view text;
      const bool numeric_key = key == "id" || key == "numSms" || key == "totalGlobalMem" || key == "computeMajor" ||
                               key == "computeMinor" || key == "clockRate";
      if (key == "name" || key == "stepscopeMeasuredBy") {
        if (field.value().get_string().get(text)) readable = false;
        else (key == "name" ? device.name : device.measured_by) = std::string(text);
      } else if (key == "stepscopeMeasuredFlopsPerSecond") {
        // stepscope's export: a peak measured on the device (our trainer's CPU sgemm).
        double flops_per_s = 0;
        if (field.value().get_double().get(flops_per_s) || !(flops_per_s > 0)) readable = false;
        else device.measured_flops_per_s = flops_per_s;
      } else if (numeric_key) {
        if (field.value().get_int64().get(number)) {
          readable = false;
          continue;
        }
        if (key == "id") device.id = static_cast<int32_t>(number);
        if (key == "numSms") device.sm_count = static_cast<int32_t>(number);
        if (key == "totalGlobalMem") device.memory_bytes = number;
        if (key == "computeMajor") device.compute_major = static_cast<int32_t>(number);
        if (key == "computeMinor") device.compute_minor = static_cast<int32_t>(number);
        if (key == "clockRate") device.clock_khz = number;  // cudaDeviceProp::clockRate is in kHz
      }
    }
    if (!readable) stats().Add("device_properties_unreadable");
    builder_.step_info().devices.push_back(std::move(device));
  }
}

Trace ChromeEventImporter::Impl::Finish() {
  CloseOpenBegins();
  ApplyMetadata();
  HandPendingSlicesToBuilder();
  const size_t correlation_links = LinkByCorrelation();
  // In trace order from here on (only tracks whose slices came out of time order, as B/E
  // pairs close inner first, move): flows bind by looking slices up by time on their track.
  builder_.SortSlices();
  BindFlows();
  CheckLaunchFlows(correlation_links);
  for (auto& [key, series] : counters_) builder_.AddCounter(std::move(series));
  return std::move(builder_).Build();
}

void ChromeEventImporter::Impl::Dispatch() {
  const std::string_view ph = event_->ph;
  const char phase = ph.size() == 1 ? ph[0] : '\0';  // every phase the import reads is one letter
  if (phase == 'M') return Metadata();
  std::optional<int64_t> ts = event_->ts_ns;
  if (ts) ts = SaturatingAdd(*ts, time_offset_ns_);
  if (!ts) {
    stats().Add(event_->has_ts ? "event_bad_time_skipped" : "event_without_ts_skipped");
    return;
  }
  if (phase == 'X') {
    int64_t dur = 0;
    if (!event_->has_dur) {
      stats().Add("x_event_without_dur");
    } else if (event_->dur_ns) {
      dur = *event_->dur_ns;
    } else {
      stats().Add("event_bad_time_skipped");
      return;
    }
    const TrackSliceBuffer::Ref slice =
        AddSlice(event_->pid, event_->tid, *ts, dur, event_->name, event_->kind, event_->device_category,
                 event_->args_has_name && event_->args_has_op ? event_->args_name : std::string_view(),
                 event_->args_has_name && event_->args_has_op ? event_->args_op : std::string_view(),
                 event_->args_has_name && event_->args_has_op);
    if (event_->launch_args == ChromeEventFields::kKernelArgs) {
      KernelArgs args = event_->kernel_args;
      args.slice = slice.position;
      builder_.AddKernelArgs(args);
      kernel_arg_tracks_.push_back(slice.track);
    } else if (event_->launch_args == ChromeEventFields::kTransferArgs) {
      TransferArgs args = event_->transfer_args;
      args.slice = slice.position;
      builder_.AddTransferArgs(args);
      transfer_arg_tracks_.push_back(slice.track);
    }
    if (!raw_args_.empty()) {
      FreeArgs([&](SliceArg arg) {
        arg.slice = slice.position;
        builder_.AddSliceArg(arg);
        slice_arg_tracks_.push_back(slice.track);
      });
    }
    if (event_->correlation > 0) {
      const bool sync = event_->kind == SliceKind::kSync;
      (sync ? syncs_ : runtime_calls_).push_back({event_->correlation, slice.position});
      (sync ? sync_tracks_ : runtime_call_tracks_).push_back(slice.track);
    }
  } else if (phase == 'B') {
    OpenSlice open;
    open.pid = event_->pid;
    open.tid = event_->tid;
    open.ts = *ts;
    open.name = event_->name;
    open.kind = event_->kind;
    open.device_category = event_->device_category;
    if (event_->args_has_name && event_->args_has_op) {
      open.args_name = event_->args_name;
      open.args_op = event_->args_op;
      open.tf_args = true;
    }
    FreeArgs([&](const SliceArg& arg) { open.args.push_back(arg); });
    open_[ThreadKey(event_->pid, event_->tid)].push_back(std::move(open));
  } else if (phase == 'E') {
    auto& stack = open_[ThreadKey(event_->pid, event_->tid)];
    if (stack.empty()) {
      stats().Add("end_without_begin_skipped");
      return;
    }
    const OpenSlice& b = stack.back();
    const TrackSliceBuffer::Ref slice =
        AddSlice(b.pid, b.tid, b.ts, *ts - b.ts, b.name, b.kind, b.device_category, b.args_name, b.args_op, b.tf_args);
    for (SliceArg arg : b.args) {  // the B event's (an E event's args are not read)
      arg.slice = slice.position;
      builder_.AddSliceArg(arg);
      slice_arg_tracks_.push_back(slice.track);
    }
    stack.pop_back();
  } else if (phase == 'C') {
    Counter(*ts);
  } else if (phase == 'i' || phase == 'I') {
    if (event_->name == "[memory]") {
      Memory(*ts);
    } else {
      stats().Add("instant_event_ignored");
    }
  } else if (phase == 's' || phase == 't' || phase == 'f') {
    if (!event_->has_id) {
      stats().Add("flow_without_id_skipped");
      return;
    }
    FlowEnd end;
    end.thread = ThreadSlot(event_->pid, event_->tid);
    if (end.thread >= (1u << kThreadBits)) {
      stats().Add("flow_past_thread_limit_skipped");
      return;
    }
    if (!has_flow_base_) {
      flow_base_ns_ = *ts;
      has_flow_base_ = true;
    }
    if (const int64_t offset = SaturatingSub(*ts, flow_base_ns_);
        offset > FlowPair::kMaxOffsetNs || offset < -FlowPair::kMaxOffsetNs) {
      stats().Add("flow_past_time_limit_skipped");
      return;
    }
    end.ts = *ts;
    end.bind_enclosing = phase != 'f' || event_->bp == "e";
    end.set = true;
    end.final = phase == 'f';
    FlowKey key{builder_.Intern(event_->cat), 0, 0};
    if (event_->id_is_number) {
      key.number = event_->id_number;
    } else {
      key.text = builder_.Intern(event_->id);
    }
    auto it = open_flows_.try_emplace(key).first;
    FlowPair& pair = it->second;
    pair.Set(phase == 's' ? FlowPair::kStart : FlowPair::kEnd, end, flow_base_ns_);
    // A flow whose start and final step (`f`) have both come is done: it leaves the map, so
    // the map holds only open flows (a few, as Kineto writes each launch's pair close
    // together) and an id used again later starts a new flow.
    if (pair.start_set && pair.end_final) {
      pair.launch = IsLaunchCategory(key.category) ? 1 : 0;
      done_flows_.push_back(pair);
      open_flows_.erase(it);
    }
  } else {
    stats().Add("event_phase_" + std::string(ph.empty() ? "missing" : ph) + "_ignored");
  }
}

void ChromeEventImporter::Impl::Metadata() {
  const std::string_view name = event_->name;
  if (name == "process_name" && event_->args_has_name) {
    process_names_[std::string(event_->pid)] = std::string(event_->args_name);
  } else if (name == "process_labels" && !event_->args_labels.empty()) {
    process_labels_[std::string(event_->pid)] = std::string(event_->args_labels);
  } else if (name == "process_sort_index" && event_->sort_index) {
    process_sort_[std::string(event_->pid)] = static_cast<int32_t>(*event_->sort_index);
  } else if (name == "thread_name" && event_->args_has_name) {
    thread_names_[ThreadKey(event_->pid, event_->tid)] = std::string(event_->args_name);
  } else if (name == "thread_sort_index" && event_->sort_index) {
    thread_sort_[ThreadKey(event_->pid, event_->tid)] = static_cast<int32_t>(*event_->sort_index);
  } else if (name == "stepscope_lane_kind" && event_->args_has_name) {
    if (auto kind = TrackKindOfName(event_->args_name)) lane_kinds_[ThreadKey(event_->pid, event_->tid)] = *kind;
  } else if (name == "stepscope_lane_full_name" && event_->args_has_name) {
    lane_full_names_[ThreadKey(event_->pid, event_->tid)] = std::string(event_->args_name);
  } else if (name.starts_with("stepscope_") && event_->args_has_name) {
    ModelProcess& process = model_processes_[std::string(event_->pid)];
    const std::string value(event_->args_name);
    if (name == "stepscope_process_kind") process.kind = TrackKindOfName(value);
    if (name == "stepscope_process_short_name") process.short_name = value;
    if (name == "stepscope_process_full_name") process.full_name = value;
    if (name == "stepscope_host_name") process.host_name = value;
    if (name == "stepscope_host_full_name") process.host_full_name = value;
  }
}

std::string ChromeEventImporter::Impl::ThreadKey(std::string_view pid, std::string_view tid) {
  std::string key;
  key.reserve(pid.size() + tid.size() + 1);
  key.append(pid);
  key.push_back('\0');
  key.append(tid);
  return key;
}

int64_t ChromeEventImporter::Impl::ModelProcessTrack(const std::string& pid) {
  const auto model = model_processes_.find(pid);
  if (model == model_processes_.end() || !model->second.kind) return -1;
  const ModelProcess& process = model->second;
  int32_t parent = -1;
  if (!process.host_full_name.empty() || !process.host_name.empty()) {
    auto [host, inserted] = model_hosts_.try_emplace(process.host_full_name, 0);
    if (inserted) {
      Track track;
      track.name = builder_.Intern(process.host_name);
      track.full_name = builder_.Intern(process.host_full_name);
      track.kind = TrackKind::kHost;
      track.sort_index = static_cast<int32_t>(model_hosts_.size());
      host->second = builder_.AddTrack(track);
    }
    parent = static_cast<int32_t>(host->second);
  }
  // A host that holds lanes itself is the host track of the devices that name it.
  if (*process.kind == TrackKind::kHost && parent < 0) {
    if (auto host = model_hosts_.find(process.full_name); host != model_hosts_.end()) return host->second;
  }
  Track track;
  track.name = builder_.Intern(process.short_name);
  track.full_name = builder_.Intern(process.full_name);
  track.kind = *process.kind;
  track.parent = parent;
  track.sort_index = static_cast<int32_t>(process_tracks_.size());
  const uint32_t index = builder_.AddTrack(track);
  if (track.kind == TrackKind::kHost && parent < 0) model_hosts_.emplace(process.full_name, index);
  return index;
}

uint32_t ChromeEventImporter::Impl::ProcessTrack(const std::string& pid) {
  auto [it, inserted] = process_tracks_.try_emplace(pid, 0);
  if (inserted) {
    if (const int64_t model = ModelProcessTrack(pid); model >= 0) return it->second = static_cast<uint32_t>(model);
    Track track;
    track.name = builder_.Intern("process " + pid);
    track.full_name = builder_.Intern(pid);
    track.kind = TrackKind::kHost;
    track.sort_index = static_cast<int32_t>(process_tracks_.size());
    it->second = builder_.AddTrack(track);
  }
  return it->second;
}

uint32_t ChromeEventImporter::Impl::ThreadSlot(std::string_view pid, std::string_view tid) {
  // Events of one thread come in runs: the last thread's key is compared in place, unbuilt.
  if (last_slot_ != nullptr) {
    const std::string_view last = last_slot_->first;
    if (last.size() == pid.size() + 1 + tid.size() && last.starts_with(pid) && last[pid.size()] == '\0' &&
        last.ends_with(tid)) {
      return last_slot_->second;
    }
  }
  thread_key_.assign(pid);
  thread_key_.push_back('\0');
  thread_key_.append(tid);
  auto [it, inserted] = thread_slots_.try_emplace(thread_key_, static_cast<uint32_t>(slot_tracks_.size()));
  if (inserted) slot_tracks_.push_back(-1);
  last_slot_ = &*it;
  return it->second;
}

uint32_t ChromeEventImporter::Impl::ThreadTrack(std::string_view pid, std::string_view tid, SliceKind kind) {
  const uint32_t slot = ThreadSlot(pid, tid);
  if (slot_tracks_[slot] >= 0) return static_cast<uint32_t>(slot_tracks_[slot]);
  auto it = thread_tracks_.find(thread_key_);
  if (it == thread_tracks_.end()) {
    const uint32_t process = ProcessTrack(std::string(pid));
    Track track;
    const std::string tid_label = TidText(tid);
    track.name = builder_.Intern(tid_label == "none" ? "no thread id" : "thread " + tid_label);
    track.full_name = builder_.Intern(std::string(pid) + "/" + tid_label);
    track.parent = static_cast<int32_t>(process);
    track.kind = kind == SliceKind::kKernel || kind == SliceKind::kMemcpy || kind == SliceKind::kMemset
                     ? TrackKind::kGpuStream
                     : TrackKind::kOpLane;
    track.sort_index = static_cast<int32_t>(thread_tracks_.size());
    char* end = nullptr;
    const std::string tid_text(tid);
    const long long id = std::strtoll(tid_text.c_str(), &end, 10);
    track.thread_id = !tid_text.empty() && end == tid_text.c_str() + tid_text.size() ? id : -1;
    it = thread_tracks_.emplace(thread_key_, builder_.AddTrack(track)).first;
    track_keys_.emplace_back(it->second, thread_key_);
  }
  slot_tracks_[slot] = it->second;
  return it->second;
}

TrackSliceBuffer::Ref ChromeEventImporter::Impl::AddSlice(std::string_view pid, std::string_view tid,
                                                          int64_t start, int64_t dur, std::string_view name,
                                                          SliceKind kind, bool device_category,
                                                          std::string_view args_name,
                                                          std::string_view args_op, bool tf_args) {
  SliceRecord slice;
  slice.start_ns = start;
  slice.dur_ns = dur;
  slice.kind = kind;
  slice.track = ThreadTrack(pid, tid, kind);
  if (lane_holds_.size() <= slice.track) lane_holds_.resize(slice.track + 1, 0);
  lane_holds_[slice.track] |= device_category ? kHoldsDeviceWork : kHoldsHostWork;
  // TensorFlow's timeline keeps the node name in args.name and the op type as the event name.
  if (tf_args) {
    slice.name = builder_.Intern(args_name);
    slice.op_type = builder_.Intern(args_op);
  } else {
    slice.name = builder_.Intern(name);
    slice.op_type = slice.name;
  }
  return pending_.Add(slice);
}

template <typename Add>
void ChromeEventImporter::Impl::FreeArgs(Add add) {
  const bool tf_args = event_->args_has_name && event_->args_has_op;
  // Events of a kind list the same keys in the same order: the key at this place of the last
  // event of the kind is compared before the string table hashes it and the key lists are
  // searched (kinds apart: a trace interleaves ops, calls and kernels).
  std::vector<ArgKey>& keys = arg_keys_[static_cast<size_t>(event_->kind) % arg_keys_.size()];
  if (keys.size() < raw_args_.size()) keys.resize(raw_args_.size());
  for (size_t i = 0; i < raw_args_.size(); ++i) {
    const ChromeRawArg& raw = raw_args_[i];
    ArgKey& known = keys[i];
    if (known.text != raw.key) {
      known.text.assign(raw.key);
      known.id = builder_.Intern(raw.key);
      known.name = raw.key == "name";
      known.op = raw.key == "op";
      known.kernel = IsKernelLaunchKey(raw.key);
      known.transfer = IsTransferKey(raw.key);
    }
    if (known.name && (tf_args || raw.value == event_->name)) continue;
    if (known.op && tf_args) continue;
    if (known.kernel && event_->launch_args == ChromeEventFields::kKernelArgs) continue;
    if (known.transfer && event_->launch_args == ChromeEventFields::kTransferArgs) continue;
    const StringId key = known.id;
    if (!builder_.KeyFits(key)) continue;  // counted
    if (raw.type == ChromeRawArg::kNumber) {
      if (const std::optional<int64_t> number = IntegerOf(raw.value)) {
        add(SliceArg::Number(0, key, *number));
        continue;
      }
    }
    add(SliceArg::Text(0, key, builder_.Intern(raw.value), raw.type != ChromeRawArg::kText));
  }
}

void ChromeEventImporter::Impl::HandPendingSlicesToBuilder() {
  const std::vector<uint32_t> first = pending_.FirstIndices();
  TrackSliceBuffer::Resolve(first, kernel_arg_tracks_, builder_.kernel_args());
  TrackSliceBuffer::Resolve(first, transfer_arg_tracks_, builder_.transfer_args());
  TrackSliceBuffer::Resolve(first, slice_arg_tracks_, builder_.slice_args());
  FreeStorage(slice_arg_tracks_);
  TrackSliceBuffer::Resolve(first, runtime_call_tracks_, runtime_calls_);
  TrackSliceBuffer::Resolve(first, sync_tracks_, syncs_);
  FreeStorage(kernel_arg_tracks_);
  FreeStorage(transfer_arg_tracks_);
  FreeStorage(runtime_call_tracks_);
  FreeStorage(sync_tracks_);
  pending_.MoveToBuilder();
}

void ChromeEventImporter::Impl::Counter(int64_t ts) {
  if (!event_->has_args) return;
  const std::string pid(event_->pid);
  for (const auto& [key, text] : numbers_) {
    const std::optional<double> value = NumberOf(text);
    if (!value) {
      stats().Add("counter_value_unreadable_skipped");
      continue;
    }
    // Our export writes one series per counter, its value under "value".
    const bool own_series = own_export_ && key == "value";
    std::string series_name = std::string(event_->name);
    if (event_->name != key && !own_series) series_name += "." + std::string(key);
    std::string unit;
    // Allocator counters: "<allocator> bytes" (our export) or cat "Memory" (timeline.py).
    if (series_name.size() > 6 && series_name.compare(series_name.size() - 6, 6, " bytes") == 0) {
      series_name.resize(series_name.size() - 6);
      unit = "bytes";
    } else if (event_->cat == "Memory") {
      unit = "bytes";
    }
    auto [it, inserted] = counters_.try_emplace({pid, series_name});
    if (inserted) {
      it->second.name = builder_.Intern(series_name);
      it->second.track = static_cast<int32_t>(ProcessTrack(pid));
      it->second.unit = unit;
      it->second.origin = "chrome_counter_events";
      const auto origin = counter_origins_.find(std::string(event_->name));
      if (own_series && origin != counter_origins_.end()) it->second.origin = origin->second;
    }
    it->second.ts_ns.push_back(ts);
    it->second.values.push_back(SaturatedInt64(*value));
  }
}

void ChromeEventImporter::Impl::Memory(int64_t ts) {
  std::optional<double> total, device_type, device_id;
  for (const auto& [key, text] : numbers_) {
    if (key == "Total Allocated") total = NumberOf(text);
    if (key == "Device Type") device_type = NumberOf(text);
    if (key == "Device Id") device_id = NumberOf(text);
  }
  if (!total) {
    stats().Add("memory_event_without_total_skipped");
    return;
  }
  // Device Type 0 is the CPU; others are accelerators (1: CUDA).
  const std::string allocator =
      device_type.value_or(0) == 0 ? "cpu" : "cuda:" + std::to_string(SaturatedInt64(device_id.value_or(0)));
  auto [it, inserted] = counters_.try_emplace({std::string(), allocator});
  if (inserted) {
    it->second.name = builder_.Intern(allocator);
    it->second.track = static_cast<int32_t>(ProcessTrack(std::string(event_->pid)));
    it->second.unit = "bytes";
    it->second.origin = "kineto_memory_events";
  }
  it->second.ts_ns.push_back(ts);
  it->second.values.push_back(SaturatedInt64(*total));
}

void ChromeEventImporter::Impl::CloseOpenBegins() {
  for (auto& [key, stack] : open_) {
    stats().Add("begin_without_end_skipped", static_cast<int64_t>(stack.size()));
  }
}

void ChromeEventImporter::Impl::ApplyMetadata() {
  auto& tracks = builder_.tracks();
  lane_holds_.resize(tracks.size(), 0);
  std::vector<char> device_process(tracks.size(), 0), host_process(tracks.size(), 0);
  for (uint32_t t = 0; t < tracks.size(); ++t) {
    if (tracks[t].parent < 0) continue;
    const auto parent = static_cast<size_t>(tracks[t].parent);
    if (lane_holds_[t] & kHoldsDeviceWork) device_process[parent] = 1;
    // Host work; annotations alone (a CPU-side span on the device's pid) do not make it a host.
    if ((lane_holds_[t] & kHoldsHostWork) && tracks[t].kind != TrackKind::kGpuStream) host_process[parent] = 1;
  }
  for (const auto& [pid, track] : process_tracks_) {
    if (model_processes_.count(pid) != 0 && model_processes_.at(pid).kind) {  // our export's tracks, as named
      if (auto sort = process_sort_.find(pid); sort != process_sort_.end()) tracks[track].sort_index = sort->second;
      continue;
    }
    const bool device = device_process[track] && !host_process[track];
    const auto label = process_labels_.find(pid);
    const bool kineto_label = label != process_labels_.end() && label->second.find_first_of("/,") == std::string::npos;
    if (device && kineto_label) {
      tracks[track].name = builder_.Intern(label->second);
    } else if (auto name = process_names_.find(pid); name != process_names_.end()) {
      tracks[track].name = builder_.Intern(name->second);
    } else if (device) {
      tracks[track].name = builder_.Intern("GPU " + pid);
    }
    if (device) {
      tracks[track].kind = TrackKind::kDevice;
      tracks[track].full_name = tracks[track].name;
    }
    if (auto sort = process_sort_.find(pid); sort != process_sort_.end()) tracks[track].sort_index = sort->second;
  }
  for (const auto& [track, key] : track_keys_) {
    if (auto name = thread_names_.find(key); name != thread_names_.end()) {
      tracks[track].name = builder_.Intern(Trim(name->second));
    }
    if (auto sort = thread_sort_.find(key); sort != thread_sort_.end()) tracks[track].sort_index = sort->second;
    if (auto full = lane_full_names_.find(key); full != lane_full_names_.end()) {
      tracks[track].full_name = builder_.Intern(full->second);
    }
    const int32_t parent = tracks[track].parent;
    if (auto kind = lane_kinds_.find(key); kind != lane_kinds_.end()) {
      tracks[track].kind = kind->second;  // our own export says what the lane is
    } else if (parent >= 0 && tracks[static_cast<size_t>(parent)].kind == TrackKind::kDevice) {
      tracks[track].kind = TrackKind::kGpuStream;
      // tid -1 on a device: events of no one stream (Kineto's context-wide syncs).
      if (thread_names_.find(key) == thread_names_.end() && key.ends_with(std::string_view("\0-1", 3))) {
        tracks[track].name = builder_.Intern("no stream (device-wide)");
      }
    }
  }
}

ChromeEventImporter::ChromeEventImporter(const std::string& name) : impl_(std::make_unique<Impl>(name)) {}
ChromeEventImporter::~ChromeEventImporter() = default;
ImportStats& ChromeEventImporter::stats() { return impl_->stats(); }
int64_t ChromeEventImporter::events() const { return impl_->events(); }
simdjson::error_code ChromeEventImporter::Event(simdjson::ondemand::value value) { return impl_->Event(value); }
void ChromeEventImporter::Import(const ChromeEventBatch& batch) { impl_->Import(batch); }
void ChromeEventImporter::DistributedInfo(simdjson::ondemand::value value) { impl_->DistributedInfo(value); }
void ChromeEventImporter::OtherData(simdjson::ondemand::value value) { impl_->OtherData(value); }
void ChromeEventImporter::DeviceProperties(simdjson::ondemand::value value) { impl_->DeviceProperties(value); }
Trace ChromeEventImporter::Finish() { return impl_->Finish(); }

}  // namespace stepscope::trace
