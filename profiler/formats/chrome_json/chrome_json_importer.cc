// Imports the events the Chrome JSON reader read (chrome_json_events.h) into the model, in file
// order: dispatch by phase, tracks per process and thread, slices, counters, flows bound to their
// slices, metadata.
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
#include "profiler/formats/chrome_json/chrome_json_reader.h"
#include "profiler/trace/track_slice_buffer.h"
#include "profiler/formats/common/utf8.h"
#include "profiler/formats/chrome_json/chrome_json_events.h"

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

class ChromeEventImporter::Impl {
 public:
  explicit Impl(const std::string& name) { builder_.SetSource(SourceFormat::kChromeJson, name); }

  ImportStats& stats() { return builder_.import_stats(); }
  int64_t events() const { return events_; }

  // Reads one event object; a simdjson error stops the import (the caller decides what to keep).
  simdjson::error_code Event(od::value value) {
    one_.Clear();
    if (auto error = one_.Read(value)) return error;
    Import(one_);
    return simdjson::SUCCESS;
  }

  // Imports the events of a batch, in their order.
  void Import(const ChromeEventBatch& batch) {
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

  void DistributedInfo(od::value value) {
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

  Trace Finish() {
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

 private:
  void Dispatch() {
    const std::string_view ph = event_->ph;
    const char phase = ph.size() == 1 ? ph[0] : '\0';  // every phase the import reads is one letter
    if (phase == 'M') return Metadata();
    const std::optional<int64_t> ts = event_->ts_ns;
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

  void Metadata() {
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
    }
  }

  static std::string ThreadKey(std::string_view pid, std::string_view tid) {
    std::string key;
    key.reserve(pid.size() + tid.size() + 1);
    key.append(pid);
    key.push_back('\0');
    key.append(tid);
    return key;
  }

  uint32_t ProcessTrack(const std::string& pid) {
    auto [it, inserted] = process_tracks_.try_emplace(pid, 0);
    if (inserted) {
      Track track;
      track.name = builder_.Intern("process " + pid);
      track.full_name = builder_.Intern(pid);
      track.kind = TrackKind::kHost;
      track.sort_index = static_cast<int32_t>(process_tracks_.size());
      it->second = builder_.AddTrack(track);
    }
    return it->second;
  }

  // A (pid, tid) pair as a small integer; its track is made when its first slice arrives.
  uint32_t ThreadSlot(std::string_view pid, std::string_view tid) {
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

  uint32_t ThreadTrack(std::string_view pid, std::string_view tid, SliceKind kind) {
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

  TrackSliceBuffer::Ref AddSlice(std::string_view pid, std::string_view tid, int64_t start, int64_t dur,
                                 std::string_view name, SliceKind kind, bool device_category,
                                 std::string_view args_name, std::string_view args_op, bool tf_args) {
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

  // Hands `add` the event's args that have no typed home as SliceArgs (slice 0), in the event's
  // order: every arg but a kernel's or copy's launch args (KernelArgs, TransferArgs, and the copy
  // details our own export derives from them) and TensorFlow's name and op (the slice's name and
  // op type) or a name that repeats the event's. Integers are kept as numbers, strings as text,
  // anything else (arrays, objects, fractions, true/false/null) as its JSON text.
  template <typename Add>
  void FreeArgs(Add add) {
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

  // Slices wait per track (TrackSliceBuffer) until Finish() hands them to the builder.
  void HandPendingSlicesToBuilder() {
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

  void Counter(int64_t ts) {
    if (!event_->has_args) return;
    const std::string pid(event_->pid);
    for (const auto& [key, text] : numbers_) {
      const std::optional<double> value = NumberOf(text);
      if (!value) {
        stats().Add("counter_value_unreadable_skipped");
        continue;
      }
      std::string series_name = event_->name == key ? std::string(key) : std::string(event_->name) + "." + std::string(key);
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
      }
      it->second.ts_ns.push_back(ts);
      it->second.values.push_back(SaturatedInt64(*value));
    }
  }

  // PyTorch's `[memory]` events: the allocator's Total Allocated after each allocation or free.
  void Memory(int64_t ts) {
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

  void CloseOpenBegins() {
    for (auto& [key, stack] : open_) {
      stats().Add("begin_without_end_skipped", static_cast<int64_t>(stack.size()));
    }
  }

  // Names and sort keys from M events, which may come anywhere in the file. A process whose lanes
  // hold device events (kernels, copies, memsets, GPU annotations, syncs) and no host work is a
  // device (Kineto: pid = device index, tid = stream): its track is a device named by its label
  // ("GPU 0"), and all its lanes are streams, whatever their first event was.
  void ApplyMetadata() {
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

  // GPU work (kernels, copies, memsets) carries the correlation id of the runtime or driver call
  // that enqueued it, as the call does (args.correlation, CUPTI's id): the launch link, joined as
  // HolisticTraceAnalysis joins them, whether or not the file has flow events. One call may
  // enqueue many (cudaGraphLaunch: every kernel of the graph carries its id). A sync marker
  // (cuda_sync) carries its synchronising call's id, and is linked to it the same way, as Kineto's
  // flows link it. The links are added as launch flows before the flow events are bound; returns
  // how many (the first flows).
  size_t LinkByCorrelation() {
    if (runtime_calls_.empty()) return 0;
    std::sort(runtime_calls_.begin(), runtime_calls_.end(),
              [](const RuntimeCall& a, const RuntimeCall& b) { return a.correlation < b.correlation; });
    // An id two calls carry (a file joining several processes' records) links nothing: its work
    // is left to the flow events.
    for (size_t i = 0; i < runtime_calls_.size();) {
      size_t j = i + 1;
      while (j < runtime_calls_.size() && runtime_calls_[j].correlation == runtime_calls_[i].correlation) ++j;
      if (j - i > 1) stats().Add("runtime_correlation_repeated", static_cast<int64_t>(j - i));
      i = j;
    }
    constexpr int64_t kNotFound = -1, kRepeated = -2;
    auto call_of = [&](int64_t correlation) -> int64_t {
      auto it = std::lower_bound(runtime_calls_.begin(), runtime_calls_.end(), correlation,
                                 [](const RuntimeCall& c, int64_t id) { return c.correlation < id; });
      if (it == runtime_calls_.end() || it->correlation != correlation) return kNotFound;
      if (std::next(it) != runtime_calls_.end() && std::next(it)->correlation == correlation) return kRepeated;
      return it->slice;
    };
    const size_t before = builder_.flows().size();
    auto link = [&](int64_t correlation, uint32_t slice) {
      if (correlation <= 0) return;
      const int64_t call = call_of(correlation);
      if (call < 0) return;
      builder_.AddFlow(static_cast<uint32_t>(call), slice, FlowKind::kLaunch);
    };
    const KernelArgsTable& kernels = builder_.kernel_args_table();
    for (size_t row = 0; row < kernels.size(); ++row) {
      const KernelArgs args = kernels[row];
      link(args.correlation, args.slice);
    }
    for (const TransferArgs& args : builder_.transfer_args()) link(args.correlation, args.slice);
    for (const RuntimeCall& sync : syncs_) link(sync.correlation, sync.slice);
    FreeStorage(runtime_calls_);
    FreeStorage(syncs_);
    return builder_.flows().size() - before;
  }

  // The launch flows of the file checked against the correlation links (the first
  // `correlation_links` flows): a flow to work a correlation links is dropped, and counted when
  // it came from another slice (a flow is bound by time: a 0-µs cudaPeekAtLastError starting in
  // the µs of the cudaMemsetAsync whose id the memset carries takes its flow). A flow to work
  // without a correlation link is kept: it is the only link there is.
  void CheckLaunchFlows(size_t correlation_links) {
    if (correlation_links == 0) return;
    std::vector<Flow>& flows = builder_.flows();
    std::vector<std::pair<uint32_t, uint32_t>> linked;  // (work, call), by work
    linked.reserve(correlation_links);
    for (size_t i = 0; i < correlation_links; ++i) linked.emplace_back(uint32_t{flows[i].to_slice}, flows[i].from_slice);
    std::sort(linked.begin(), linked.end());
    size_t kept = correlation_links;
    for (size_t i = correlation_links; i < flows.size(); ++i) {
      const Flow flow = flows[i];
      if (flow.kind == FlowKind::kLaunch) {
        const uint32_t work = flow.to_slice;
        auto it = std::lower_bound(linked.begin(), linked.end(), std::pair<uint32_t, uint32_t>(work, 0));
        if (it != linked.end() && it->first == work) {
          if (it->second != flow.from_slice) stats().Add("launch_flow_other_than_correlation_dropped");
          continue;
        }
      }
      flows[kept++] = flow;
    }
    flows.resize(kept);
  }

  // Flows bind to the innermost slice enclosing their timestamp on their thread (the next slice
  // for an `f` without bp:e). The builder holds the slices sorted by (track, start, longer
  // first). On a track whose slices nest (none overlaps the one open around it partly), the
  // innermost slice around a time is the last one starting at or before it or the first of that
  // one's ancestors still open: a walk up a parent chain, a few steps. On other tracks the search
  // walks back from that slice, no further than the track's longest slice (a step span makes
  // that thousands of slices, so it is the fallback only).
  void BindFlows() {
    if (open_flows_.empty() && done_flows_.empty()) return;
    const size_t track_count = builder_.tracks().size();
    const size_t slice_count = builder_.slice_count();
    constexpr uint32_t kNoParent = 0xffffffffu;
    std::vector<uint32_t> track_begin(track_count + 1, 0);
    std::vector<int64_t> longest(track_count, 0);
    std::vector<char> nests(track_count, 1);
    // Each slice's parent, made only for a trace where the scan below gives up (4 bytes a slice at
    // the import's peak otherwise).
    std::vector<uint32_t> parent;
    std::vector<uint32_t> open;  // the slices open around the current one, innermost last
    // The slices as packed: starts relative to the packing base, as the flow times below are.
    auto slice_at = [this](uint32_t i) -> const Slice& { return builder_.packed_slice(i); };
    const int64_t base_ns = builder_.packing_base_ns();
    auto walk_nesting = [&](auto&& visit) {
      open.clear();
      for (uint32_t i = 0; i < slice_count; ++i) {
        const Slice& slice = slice_at(i);
        if (i == 0 || slice_at(i - 1).track != slice.track) open.clear();
        while (!open.empty() && slice_at(open.back()).end_ns() <= slice.start_ns) open.pop_back();
        visit(i, slice, open.empty() ? kNoParent : open.back());
        open.push_back(i);
      }
    };
    walk_nesting([&](uint32_t, const Slice& slice, uint32_t enclosing) {
      ++track_begin[slice.track + 1];
      longest[slice.track] = std::max<int64_t>(longest[slice.track], slice.dur_ns);
      if (enclosing != kNoParent && slice.end_ns() > slice_at(enclosing).end_ns()) nests[slice.track] = 0;
    });
    for (size_t t = 0; t < track_count; ++t) track_begin[t + 1] += track_begin[t];
    auto start_of = [&](uint32_t i) -> int64_t { return slice_at(i).start_ns; };
    auto find = [&](const FlowEnd& end) -> int64_t {
      if (slot_tracks_[end.thread] < 0) return -1;
      const int64_t ts = SaturatingSub(end.ts, base_ns);
      const auto track = static_cast<size_t>(slot_tracks_[end.thread]);
      const uint32_t first = track_begin[track];
      const uint32_t last = track_begin[track + 1];
      // First slice of the track starting after the timestamp (or, for `f` without bp:e, at or after it).
      uint32_t lo = first, hi = last;
      while (lo < hi) {
        const uint32_t mid = lo + (hi - lo) / 2;
        const bool before = end.bind_enclosing ? start_of(mid) <= ts : start_of(mid) < ts;
        if (before) lo = mid + 1; else hi = mid;
      }
      if (!end.bind_enclosing) return lo == last ? -1 : lo;
      if (lo == first) return -1;
      if (nests[track]) {
        // The innermost slice holding the time is the last one starting before it that ends at or
        // after it (slices nest): mostly the first one looked at (a launch holds its flow's start,
        // a kernel its end). Past a few hundred siblings, the parents are walked instead.
        constexpr uint32_t kScan = 256;
        uint32_t p = lo;
        for (uint32_t scanned = 0; p != first && scanned < kScan; ++scanned) {
          --p;
          if (ts <= slice_at(p).end_ns()) return p;
        }
        if (p == first) return -1;
        if (parent.empty()) {
          parent.resize(slice_count);
          walk_nesting([&](uint32_t i, const Slice&, uint32_t enclosing) { parent[i] = enclosing; });
        }
        for (p = lo - 1; p != kNoParent; p = parent[p]) {
          if (ts <= slice_at(p).end_ns()) return p;
        }
        return -1;
      }
      int64_t best = -1;
      for (uint32_t p = lo; p != first;) {
        --p;
        const Slice& slice = slice_at(p);
        if (slice.start_ns + longest[track] < ts) break;
        if (ts <= slice.end_ns() && (best < 0 || slice.dur_ns < slice_at(static_cast<uint32_t>(best)).dur_ns)) {
          best = p;
        }
      }
      return best;
    };
    auto bind = [&](const FlowPair& pair) {
      if (!pair.start_set || !pair.end_set) {
        stats().Add("flow_unmatched_skipped");
        return;
      }
      const int64_t from = find(pair.start(flow_base_ns_));
      const int64_t to = find(pair.end(flow_base_ns_));
      if (from < 0 || to < 0) {
        stats().Add("flow_not_bound_skipped");
        return;
      }
      builder_.AddFlow(static_cast<uint32_t>(from), static_cast<uint32_t>(to),
                            pair.launch ? FlowKind::kLaunch : FlowKind::kDataflow);
    };
    // In the order the flows completed in the file, then the ones still open at its end. The
    // completed ones are bound from the last, their table shrinking as the flows grow (16 bytes a
    // pending flow, 8 a bound one), and put back in file order after.
    builder_.ReserveFlows(done_flows_.size() + open_flows_.size());
    const size_t first_flow = builder_.flows().size();
    for (size_t bound = 1; !done_flows_.empty(); ++bound) {
      bind(done_flows_.back());
      done_flows_.pop_back();
      if (bound % kFlowsPerShrink == 0) done_flows_.ShrinkToFit();
    }
    std::reverse(builder_.flows().begin() + static_cast<std::ptrdiff_t>(first_flow), builder_.flows().end());
    for (auto& [key, pair] : open_flows_) {
      pair.launch = IsLaunchCategory(key.category) ? 1 : 0;
      bind(pair);
    }
    FreeStorage(done_flows_);
    FreeStorage(open_flows_);
  }

  // Thread slots a flow can name (FlowPair packs them); a flow on a thread past them is skipped
  // (counted as flow_past_thread_limit_skipped).
  static constexpr int kThreadBits = 16;
  struct FlowEnd {
    int64_t ts = 0;
    uint32_t thread = 0;  // thread slot
    bool bind_enclosing = true;
    bool set = false;
    bool final = false;  // an `f` (a `t` is a step that a later `f` replaces)
  };
  // 16 bytes: a big trace has a flow per kernel launch, and all of them wait here until the
  // slices are sorted. Each end is a word: its time from the trace's first flow event (±4.9
  // hours; an end past that is skipped, counted as flow_past_time_limit_skipped), its thread slot
  // and its flags.
  struct FlowPair {
    static constexpr int kTimeBits = 45;
    static constexpr int64_t kMaxOffsetNs = (int64_t{1} << (kTimeBits - 1)) - 1;
    enum Side { kStart, kEnd };
    int64_t start_offset : kTimeBits = 0;
    uint64_t start_thread : kThreadBits = 0;
    uint64_t start_enclosing : 1 = 1, start_set : 1 = 0;
    uint64_t launch : 1 = 0;  // a launch category (IsLaunchCategory): a kernel's or copy's launch
    int64_t end_offset : kTimeBits = 0;
    uint64_t end_thread : kThreadBits = 0;
    uint64_t end_enclosing : 1 = 1, end_set : 1 = 0, end_final : 1 = 0;

    // The ends with their times made absolute again (`base_ns`: the first flow event's time).
    FlowEnd start(int64_t base_ns) const {
      return {base_ns + start_offset, static_cast<uint32_t>(start_thread), start_enclosing != 0, start_set != 0, false};
    }
    FlowEnd end(int64_t base_ns) const {
      return {base_ns + end_offset, static_cast<uint32_t>(end_thread), end_enclosing != 0, end_set != 0, end_final != 0};
    }
    void Set(Side side, const FlowEnd& e, int64_t base_ns) {
      if (side == kStart) {
        start_offset = e.ts - base_ns;
        start_thread = e.thread;
        start_enclosing = e.bind_enclosing;
        start_set = e.set;
      } else {
        end_offset = e.ts - base_ns;
        end_thread = e.thread;
        end_enclosing = e.bind_enclosing;
        end_set = e.set;
        end_final = e.final;
      }
    }
  };
  static_assert(sizeof(FlowPair) == 16);
  // Kineto's launch flows join a runtime call (cudaLaunchKernel) to its kernel or copy: `ac2g`
  // from its Chrome logger, `async_cpu_to_gpu` (or the short `async_gpu`) from its generic link
  // names (plugins, other devices' tracers).
  bool IsLaunchCategory(StringId category) {
    const std::string_view name = builder_.strings().Get(category);
    return name == "ac2g" || name == "async_cpu_to_gpu" || name == "async_gpu";
  }

  struct FlowKey {  // flows match by category and id (numeric ids without a string)
    StringId category;
    StringId text;
    uint64_t number;
    bool operator==(const FlowKey&) const = default;
  };
  struct FlowKeyHash {
    size_t operator()(const FlowKey& k) const {
      return std::hash<uint64_t>()(k.number * 1000003u + (static_cast<uint64_t>(k.category) << 32) + k.text);
    }
  };
  struct OpenSlice {
    std::string pid, tid, name, args_name, args_op;
    std::vector<SliceArg> args;  // FreeArgs of the B event, slice 0
    int64_t ts = 0;
    SliceKind kind = SliceKind::kOther;
    bool device_category = false;
    bool tf_args = false;
  };

  TraceBuilder builder_;
  ChromeEventBatch one_;  // the event Event() reads
  const ChromeEventFields* event_ = nullptr;  // the event being imported
  std::span<const std::pair<std::string_view, std::string_view>> numbers_;  // its numeric args
  std::span<const ChromeRawArg> raw_args_;  // all its args
  struct ArgKey {  // FreeArgs' last key at one place of an event's args, and what it is
    std::string text;
    StringId id = 0;
    bool name = false, op = false, kernel = false, transfer = false;
  };
  std::array<std::vector<ArgKey>, 16> arg_keys_;  // by SliceKind
  int64_t events_ = 0;
  // The key of the last thread ThreadSlot() gave (the one last_slot_ holds), for ThreadTrack().
  std::string thread_key_;
  const std::pair<const std::string, uint32_t>* last_slot_ = nullptr;
  std::unordered_map<std::string, uint32_t> thread_slots_;
  std::vector<int64_t> slot_tracks_;  // track of each thread slot, -1 before its first slice
  std::map<std::string, std::string> process_names_;
  std::map<std::string, int32_t> process_sort_;
  std::map<std::string, std::string> thread_names_;
  std::map<std::string, TrackKind> lane_kinds_;  // stepscope_lane_kind metadata of our own export
  std::map<std::string, int32_t> thread_sort_;
  std::map<std::string, uint32_t> process_tracks_;
  std::unordered_map<std::string, uint32_t> thread_tracks_;
  std::vector<std::pair<uint32_t, std::string>> track_keys_;
  std::map<std::string, std::vector<OpenSlice>> open_;
  std::map<std::pair<std::string, std::string>, CounterSeries> counters_;
  std::unordered_map<FlowKey, FlowPair, FlowKeyHash> open_flows_;
  MappedArray<FlowPair> done_flows_;
  int64_t flow_base_ns_ = 0;  // the first flow event's time: FlowPair keeps times from it
  bool has_flow_base_ = false;
  static constexpr size_t kFlowsPerShrink = size_t{1} << 16;  // 1 MB of pending flows
  // Per track: whether it holds device events, host events or both.
  static constexpr uint8_t kHoldsDeviceWork = 1, kHoldsHostWork = 2;
  std::vector<uint8_t> lane_holds_;
  TrackSliceBuffer pending_{builder_};
  // The track of each kernel's and copy's args (whose `slice` is a place in the track until
  // HandPendingSlicesToBuilder()).
  MappedArray<uint32_t> kernel_arg_tracks_;
  std::vector<uint32_t> transfer_arg_tracks_;
  std::vector<uint32_t> slice_arg_tracks_;  // of each free-form arg, as kernel_arg_tracks_
  // Runtime and driver calls that carry a correlation id: `slice` as kernel args' (a place in
  // track runtime_call_tracks_[i] until HandPendingSlicesToBuilder(), then a builder index).
  struct RuntimeCall {
    int64_t correlation = 0;
    uint32_t slice = 0;
  };
  std::vector<RuntimeCall> runtime_calls_;
  std::vector<uint32_t> runtime_call_tracks_;
  std::vector<RuntimeCall> syncs_;  // sync markers with the id of their call, as runtime_calls_
  std::vector<uint32_t> sync_tracks_;
  std::map<std::string, std::string> process_labels_;  // pid -> "GPU 0" (process_labels)
};

ChromeEventImporter::ChromeEventImporter(const std::string& name) : impl_(std::make_unique<Impl>(name)) {}
ChromeEventImporter::~ChromeEventImporter() = default;
ImportStats& ChromeEventImporter::stats() { return impl_->stats(); }
int64_t ChromeEventImporter::events() const { return impl_->events(); }
simdjson::error_code ChromeEventImporter::Event(simdjson::ondemand::value value) { return impl_->Event(value); }
void ChromeEventImporter::Import(const ChromeEventBatch& batch) { impl_->Import(batch); }
void ChromeEventImporter::DistributedInfo(simdjson::ondemand::value value) { impl_->DistributedInfo(value); }
Trace ChromeEventImporter::Finish() { return impl_->Finish(); }

}  // namespace stepscope::trace
