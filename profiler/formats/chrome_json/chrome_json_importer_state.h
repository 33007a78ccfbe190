// The Chrome JSON importer's state and steps (ChromeEventImporter::Impl): internal to the
// chrome_json format. chrome_json_importer.cc dispatches events by phase onto tracks, slices,
// counters and metadata; chrome_json_flows.cc binds flows and launches to their slices.
#pragma once

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

#include "profiler/formats/chrome_json/chrome_json_events.h"
#include "profiler/formats/chrome_json/chrome_json_importer.h"
#include "profiler/trace/track_slice_buffer.h"

namespace stepscope::trace {

class ChromeEventImporter::Impl {
 public:
  explicit Impl(const std::string& name) { builder_.SetSource(SourceFormat::kChromeJson, name); }

  ImportStats& stats() { return builder_.import_stats(); }
  int64_t events() const { return events_; }

  // Reads one event object; a simdjson error stops the import (the caller decides what to keep).
  simdjson::error_code Event(simdjson::ondemand::value value);

  // Imports the events of a batch, in their order.
  void Import(const ChromeEventBatch& batch);

  void DistributedInfo(simdjson::ondemand::value value);
  // stepscope's export: "producer" (who recorded the trace it was converted from).
  void OtherData(simdjson::ondemand::value value);
  void CounterOrigins(simdjson::ondemand::value value);  // otherData.stepscope_counter_origins
  void DeviceProperties(simdjson::ondemand::value value);

  Trace Finish();

 private:
  void Dispatch();

  void Metadata();

  static std::string ThreadKey(std::string_view pid, std::string_view tid);

  uint32_t ProcessTrack(const std::string& pid);
  // The model's tracks of a pid our own export described (ModelProcess); -1 for any other pid.
  int64_t ModelProcessTrack(const std::string& pid);

  // A (pid, tid) pair as a small integer; its track is made when its first slice arrives.
  uint32_t ThreadSlot(std::string_view pid, std::string_view tid);

  uint32_t ThreadTrack(std::string_view pid, std::string_view tid, SliceKind kind);

  TrackSliceBuffer::Ref AddSlice(std::string_view pid, std::string_view tid, int64_t start, int64_t dur,
                                 std::string_view name, SliceKind kind, bool device_category,
                                 std::string_view args_name, std::string_view args_op, bool tf_args);

  // Hands `add` the event's args that have no typed home as SliceArgs (slice 0), in the event's
  // order: every arg but a kernel's or copy's launch args (KernelArgs, TransferArgs, and the copy
  // details our own export derives from them) and TensorFlow's name and op (the slice's name and
  // op type) or a name that repeats the event's. Integers are kept as numbers, strings as text,
  // anything else (arrays, objects, fractions, true/false/null) as its JSON text.
  template <typename Add>
  void FreeArgs(Add add);

  // Slices wait per track (TrackSliceBuffer) until Finish() hands them to the builder.
  void HandPendingSlicesToBuilder();

  void Counter(int64_t ts);

  // PyTorch's `[memory]` events: the allocator's Total Allocated after each allocation or free.
  void Memory(int64_t ts);

  void CloseOpenBegins();

  // Names and sort keys from M events, which may come anywhere in the file. A process whose lanes
  // hold device events (kernels, copies, memsets, GPU annotations, syncs) and no host work is a
  // device (Kineto: pid = device index, tid = stream): its track is a device named by its label
  // ("GPU 0"), and all its lanes are streams, whatever their first event was.
  void ApplyMetadata();

  // GPU work (kernels, copies, memsets) carries the correlation id of the runtime or driver call
  // that enqueued it, as the call does (args.correlation, CUPTI's id): the launch link, joined as
  // HolisticTraceAnalysis joins them, whether or not the file has flow events. One call may
  // enqueue many (cudaGraphLaunch: every kernel of the graph carries its id). A sync marker
  // (cuda_sync) carries its synchronising call's id, and is linked to it the same way, as Kineto's
  // flows link it. The links are added as launch flows before the flow events are bound; returns
  // how many (the first flows).
  size_t LinkByCorrelation();

  // The launch flows of the file checked against the correlation links (the first
  // `correlation_links` flows): a flow to work a correlation links is dropped, and counted when
  // it came from another slice (a flow is bound by time: a 0-µs cudaPeekAtLastError starting in
  // the µs of the cudaMemsetAsync whose id the memset carries takes its flow). A flow to work
  // without a correlation link is kept: it is the only link there is.
  void CheckLaunchFlows(size_t correlation_links);

  // Flows bind to the innermost slice enclosing their timestamp on their thread (the next slice
  // for an `f` without bp:e). The builder holds the slices sorted by (track, start, longer
  // first). On a track whose slices nest (none overlaps the one open around it partly), the
  // innermost slice around a time is the last one starting at or before it or the first of that
  // one's ancestors still open: a walk up a parent chain, a few steps. On other tracks the search
  // walks back from that slice, no further than the track's longest slice (a step span makes
  // that thousands of slices, so it is the fallback only).
  void BindFlows();

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
  bool IsLaunchCategory(StringId category);

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
  // stepscope's own export (docs/formats.md, "stepscope's keys"): the model's track of each pid
  // and the host above it, the full name of each lane, the epoch of its relative times.
  struct ModelProcess {
    std::optional<TrackKind> kind;
    std::string short_name, full_name, host_name, host_full_name;
  };
  std::map<std::string, ModelProcess> model_processes_;
  std::map<std::string, uint32_t> model_hosts_;  // host full name -> its track
  std::map<std::string, std::string> lane_full_names_;
  int64_t time_offset_ns_ = 0;  // added to every event's time (stepscope_epoch_ns)
  bool own_export_ = false;     // otherData of our export came before the events
  std::map<std::string, std::string> counter_origins_;  // counter event name -> its curve's origin
};

}  // namespace stepscope::trace
