// The Trace: one immutable, columnar, in-memory model that every reader produces and every
// consumer (analysis, CLI, viewer, writers) reads.
//
// Invariants, established by TraceBuilder::Build():
//  - Times are int64 nanoseconds relative to epoch_ns() (absolute ns since the Unix epoch of the
//    earliest event); microsecond inputs are scaled, never rounded twice.
//  - Slices are sorted by (track, start, longer first); each track owns one contiguous range, so
//    the visible slices of a track are found by binary search.
//  - On every track slices nest or are disjoint (never partially overlap); depth is the nesting
//    level. On `concurrent` tracks slices are disjoint (depth 0): overlapping work gets lanes.
//  - Flows and node references follow the sorted slice order.
//  - Whatever an import repaired or skipped is counted by name in import_stats().
// Details that do not fit a Slice live in side tables holding only the slices that have them:
// kernel launches, copy sizes, free-form arguments, and per-op memory (tensor outputs, allocator
// records, op memory: DetailTables). Consumers read them through DetailReader (slice_details.h),
// in one typed form whatever the format. A reader may also keep a lossless payload of its source
// (TracePayload, trace_payload.h: a StepStats input keeps every node, compressed), from which
// DetailReader decodes details on demand and which only that format's writers and merging read
// as such (profiler/formats/<format>/), so a pb -> pb conversion loses nothing.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/mapped_array.h"
#include "profiler/trace/detail_tables.h"
#include "profiler/trace/kernel_args_table.h"
#include "profiler/trace/label_table.h"
#include "profiler/trace/node_ref.h"
#include "profiler/trace/string_table.h"

namespace stepscope::trace {

class TracePayload;
using PayloadFactory =
    std::function<std::shared_ptr<const TracePayload>(std::span<const NodeRef> slice_refs, size_t slice_count)>;

enum class TrackKind : uint8_t {
  kHost,           // a process: host and rank (the root of a track tree)
  kDevice,         // a device of that host: CPU:0, GPU:0
  kOpLane,         // executor ops of a device (one lane per thread, more where ops overlap)
  kGpuStream,      // kernels and copies the GPU tracer saw on one stream
  kGpuAllStreams,  // TensorFlow's /stream:all aggregate: every kernel once more
  kGpuMemcpy,      // TensorFlow's /memcpy lane of a GPU: every copy once more
  kHostMemcpy,     // the /memcpy lane of a CPU device: copies the host made (their only record)
  kCollective,     // communication lane
  kOther,
};
std::string_view TrackKindName(TrackKind kind);
std::optional<TrackKind> TrackKindOfName(std::string_view name);  // the inverse; none when unknown
// A lane of a GPU's tracer: its streams and TensorFlow's aggregate lanes (whose repeats are
// flagged duplicate). The work on them is the device's; every other lane's is the host's.
inline bool IsGpuLane(TrackKind kind) {
  return kind == TrackKind::kGpuStream || kind == TrackKind::kGpuAllStreams || kind == TrackKind::kGpuMemcpy;
}

struct Track {
  StringId name = 0;       // short display name: "GPU:0", "stream:14", "ops (thread 3)"
  StringId full_name = 0;  // the producer's name, e.g. "/device:GPU:0/stream:14"
  int32_t parent = -1;     // index of the parent track, -1 for a host
  TrackKind kind = TrackKind::kOther;
  int32_t sort_index = 0;  // order among siblings
  int32_t lane = 0;        // 0 for the first lane of a source, 1.. for overlap lanes
  int64_t thread_id = -1;  // OS/executor thread id when known
  int32_t source_device = -1;  // index into StepStats.dev_stats when from a StepStats input
  // Overlapping slices here are independent concurrent work (executor ops of one device on
  // several threads, kernels of a stream), not calls within calls: TraceBuilder gives each
  // overlap its own lane (no nesting) and does not count that as a repair. Otherwise a slice
  // inside another nests under it, and only partial overlaps move to a lane (counted).
  bool concurrent = false;
};

// kAnnotation: a span that only encloses other work (the profiler's own span, ProfilerStep#N,
// record_function / user annotations on the host or a GPU stream); kSync: a synchronisation
// marker (Kineto's cuda_sync). Neither is work: analyses keep them out of busy time, op totals,
// self-time attribution and stragglers, and show them on their own; Python frames likewise
// (IsAnnotationOrSync holds for them too), though they are not annotations GPU work is credited to.
// kPythonFrame: a Python function's span (the PyTorch profiler's `python_function`, recorded
// with_stack): the call stack around ops, not work of its own.
enum class SliceKind : uint8_t { kOp, kKernel, kMemcpy, kMemset, kCollective, kRuntime, kOther, kAnnotation, kSync,
                                 kPythonFrame };
std::string_view SliceKindName(SliceKind kind);
inline bool IsAnnotationOrSync(SliceKind kind) {
  return kind == SliceKind::kAnnotation || kind == SliceKind::kSync || kind == SliceKind::kPythonFrame;
}
// Work a GPU does: what busy time, idle gaps and utilisation of a device lane count.
inline bool IsDeviceWork(SliceKind kind) {
  return kind == SliceKind::kKernel || kind == SliceKind::kMemcpy || kind == SliceKind::kMemset ||
         kind == SliceKind::kCollective;
}

enum SliceFlags : uint8_t {
  // The same record appears on another lane too (TF's /stream:all and /memcpy aggregates):
  // shown in a faithful export, skipped by analyses and the de-duplicating export.
  kSliceDuplicate = 1 << 0,
};

// A slice as a reader adds it to a TraceBuilder: absolute times, every field at full width.
struct SliceRecord {
  int64_t start_ns = 0;
  int64_t dur_ns = 0;
  uint32_t track = 0;
  StringId name = 0;     // node or event name
  StringId op_type = 0;  // op type ("MatMul", "MEMCPYHtoD"); "unknown" when not derivable
  uint16_t depth = 0;
  SliceKind kind = SliceKind::kOp;
  uint8_t flags = 0;

  int64_t end_ns() const { return start_ns + dur_ns; }
  bool duplicate() const { return (flags & kSliceDuplicate) != 0; }
};

// A slice of a built Trace: 20 bytes, so that a 10^8-slice trace fits in 2 GB. Times are
// relative to the trace's epoch; the fields are packed to the widths below, and TraceBuilder::Build
// clamps what does not fit and counts it in the import stats (nothing changes silently). The name
// and op type are one label of the trace's LabelTable (Trace::slice_name, Trace::slice_op_type).
// Packed on 4 bytes: x86 reads the 8-byte words unaligned at no cost.
struct __attribute__((packed, aligned(4))) Slice {
  static constexpr int kStartBits = 49;  // ±78 hours from the epoch
  static constexpr int kDepthBits = 9;   // 511 levels of nesting
  static constexpr int kDurBits = 46;    // 9.7 hours
  static constexpr int kTrackBits = 18;  // 262,143 tracks
  static constexpr int64_t kMaxStartNs = (int64_t{1} << (kStartBits - 1)) - 1;
  static constexpr int64_t kMaxDurNs = (int64_t{1} << (kDurBits - 1)) - 1;
  static constexpr uint32_t kMaxDepth = (1u << kDepthBits) - 1;
  static constexpr uint32_t kMaxTrack = (1u << kTrackBits) - 1;

  int64_t start_ns : kStartBits = 0;
  uint64_t depth : kDepthBits = 0;
  SliceKind kind : 4 = SliceKind::kOp;
  uint8_t flags : 2 = 0;
  int64_t dur_ns : kDurBits = 0;
  uint64_t track : kTrackBits = 0;
  LabelId label = 0;  // name and op type

  int64_t end_ns() const { return start_ns + dur_ns; }
  bool duplicate() const { return (flags & kSliceDuplicate) != 0; }
};
static_assert(sizeof(Slice) == 20 && alignof(Slice) == 4, "keep Slice compact: rare fields go in side tables");


enum class FlowKind : uint8_t { kDataflow, kLaunch };

// 8 bytes: a big trace holds a flow per kernel launch. The target slice takes 31 bits; a flow
// that reaches past them (a trace of more than 2^31 slices) is not kept but counted
// (TraceBuilder::AddFlow).
struct Flow {
  static constexpr uint32_t kMaxSlice = (1u << 31) - 1;
  uint32_t from_slice = 0;
  uint32_t to_slice : 31 = 0;
  FlowKind kind : 1 = FlowKind::kDataflow;
};
static_assert(sizeof(Flow) == 8, "keep Flow compact");

// A value over time, e.g. an allocator's bytes in use.
struct CounterSeries {
  StringId name = 0;      // e.g. "GPU_0_bfc"
  int32_t track = -1;     // the device (or host) track it belongs to
  std::string unit;       // "bytes"
  std::string origin;     // how the curve was obtained, e.g. "allocation_records"
  std::vector<int64_t> ts_ns;
  std::vector<int64_t> values;
};

// A time read as ns since the Unix epoch is a plausible date (2000-01-01 to 2100-01-01): a
// clock counting from a boot or a process start would need decades of uptime to reach it.
constexpr bool IsUnixTimeNs(int64_t ns) {
  return ns >= 946'684'800'000'000'000 && ns < 4'102'444'800'000'000'000;
}

// A step's window in a trace that joins several step traces (a merge of one run's per-step
// files, or of several ranks' files of each step): each input's step number and span, so steps
// keep their numbers once merged. Times relative to the epoch, as slices'.
struct StepWindow {
  int64_t step = 0;
  int32_t rank = -1;  // -1: not recorded
  int64_t begin_ns = 0, end_ns = 0;
  bool operator==(const StepWindow&) const = default;
};

// A device as its trace describes it (Kineto's `deviceProperties`; our trainer's device record):
// what picks its peak FLOP/s and bandwidth from the table of device peaks
// (analysis/device_peaks.h). Fields the source does not give stay -1 / empty / 0.
struct DeviceProperties {
  int32_t id = -1;              // the device index (Kineto: the GPU events' pid)
  std::string name;             // "NVIDIA A100-SXM4-80GB", "AMD Instinct MI300X", a CPU's model name
  int32_t sm_count = -1;        // streaming multiprocessors (compute units on AMD)
  int64_t memory_bytes = -1;    // total device memory
  int32_t compute_major = -1, compute_minor = -1;
  int64_t clock_khz = -1;       // the SM clock, when recorded
  // A peak measured on the device itself (our trainer's sgemm on a CPU), FLOP/s; 0 when none.
  double measured_flops_per_s = 0;
  std::string measured_by;      // how: "sgemm 1024x1024x1024, 8 threads"
  bool operator==(const DeviceProperties&) const = default;
};

// Per-file facts: which step and rank, who produced it.
struct StepInfo {
  int64_t step = -1;
  int32_t rank = -1;
  int32_t world_size = -1;  // -1 when unknown, as step and rank
  std::string host;
  std::string producer;
  uint64_t dropped_records = 0;
  int64_t clock_sync_ns = 0;  // the producer's clock sync point, 0 when not recorded
  std::vector<DeviceProperties> devices;  // the devices the trace describes, as it lists them
};

// A copy's or memset's size as the PyTorch profiler records it (args of gpu_memcpy/gpu_memset).
struct TransferArgs {
  uint32_t slice = 0;
  int32_t device = -1;
  int32_t stream = -1;
  float bandwidth_gbps = -1;      // "memory bandwidth (GB/s)", -1 when absent
  int64_t bytes = -1;             // -1 when absent
  int64_t correlation = -1;
};

// A slice's free-form argument, for what a format carries that has no typed home here (an
// XSpace stat, a Perfetto debug annotation, a PyTorch profiler event's args): a key and a value
// that is an integer (kept as a number: unique ids would bloat the string table), text, or JSON
// kept as written (an array or object, a fraction, true/false/null: `Input Dims` is
// `[[4, 16], [8, 16]]`). Texts are interned: the same shapes and types repeat over millions of
// events. 16 bytes an argument, in a table that holds only the slices that have any.
struct SliceArg {
  uint32_t slice = 0;
  StringId key : 30 = 0;
  bool is_number : 1 = false;
  bool is_json : 1 = false;  // `value` is JSON text, written back unquoted
  union {
    StringId value;          // the text, when !is_number
    int64_t number = 0;
  };
  static constexpr StringId kMaxKey = (1u << 30) - 1;
  static SliceArg Number(uint32_t slice, StringId key, int64_t number) {
    SliceArg arg;
    arg.slice = slice;
    arg.key = key;
    arg.is_number = true;
    arg.number = number;
    return arg;
  }
  static SliceArg Text(uint32_t slice, StringId key, StringId value, bool is_json = false) {
    SliceArg arg;
    arg.slice = slice;
    arg.key = key;
    arg.is_json = is_json;
    arg.value = value;
    return arg;
  }
  // The value as text (JSON text as written).
  std::string Text(const StringTable& strings) const {
    return is_number ? std::to_string(number) : std::string(strings.Get(value));
  }
};
static_assert(sizeof(SliceArg) == 16, "slice arguments stay small: one per stat of every event");

enum class SourceFormat { kRunMetadataBinary, kRunMetadataText, kStepStatsBinary,
                          kStepStatsText, kChromeJson, kSynthetic, kXSpace, kPerfettoProto };
std::string_view SourceFormatName(SourceFormat format);

// Named counts of what an import repaired, skipped or kept as unknown, so that damage is never
// silent. Keys are stable snake_case names (they appear in `summary --json`).
class ImportStats {
 public:
  void Add(std::string_view name, int64_t count = 1) {
    if (count != 0) counts_[std::string(name)] += count;
  }
  int64_t Get(std::string_view name) const {
    auto it = counts_.find(std::string(name));
    return it == counts_.end() ? 0 : it->second;
  }
  const std::map<std::string, int64_t>& counts() const { return counts_; }
  bool empty() const { return counts_.empty(); }

 private:
  std::map<std::string, int64_t> counts_;
};

class Trace {
 public:
  Trace();
  ~Trace();
  Trace(Trace&&) noexcept;
  Trace& operator=(Trace&&) noexcept;
  Trace(const Trace&) = delete;
  Trace& operator=(const Trace&) = delete;

  const StringTable& strings() const { return strings_; }
  std::string_view str(StringId id) const { return strings_.Get(id); }
  const LabelTable& labels() const { return labels_; }
  StringId slice_name(const Slice& s) const { return labels_[s.label].name; }
  StringId slice_op_type(const Slice& s) const { return labels_[s.label].op_type; }
  // The record of a slice, its times absolute again.
  SliceRecord Record(const Slice& s) const;

  const std::vector<Track>& tracks() const { return tracks_; }
  std::span<const Slice> slices() const { return {slices_.data(), slices_.size()}; }
  // The slices of one track, sorted by start (longer first at equal start).
  std::span<const Slice> track_slices(uint32_t track) const;
  uint32_t track_first_slice(uint32_t track) const { return track_begin_[track]; }
  const std::vector<Flow>& flows() const { return flows_; }
  const std::vector<CounterSeries>& counters() const { return counters_; }

  int64_t epoch_ns() const { return epoch_ns_; }
  // Whether the clock reads Unix time (IsUnixTimeNs of the first instant). Traces record whatever
  // clock their producer read: TensorFlow and our trainer the wall clock, Kineto the wall clock or,
  // relative to a baseTimeNanoseconds or a monotonic clock, small numbers that are no date.
  bool clock_is_unix_time() const { return IsUnixTimeNs(epoch_ns_ + span_begin_ns_); }
  // [first start, last end] over all slices, relative to the epoch; {0, 0} when empty.
  int64_t span_begin_ns() const { return span_begin_ns_; }
  int64_t span_end_ns() const { return span_end_ns_; }

  const StepInfo& step_info() const { return step_info_; }
  // The inputs' step windows of a merged trace, by start; empty for any other trace.
  const std::vector<StepWindow>& step_windows() const { return step_windows_; }
  const ImportStats& import_stats() const { return import_stats_; }
  SourceFormat source_format() const { return source_format_; }
  const std::string& source_path() const { return source_path_; }

  // Per-op memory details of slices whose source keeps them in the model (DetailReader reads
  // these and the payload's).
  const DetailTables& detail_tables() const { return details_; }

  // The source's lossless payload (trace_payload.h); null when the reader kept none.
  const TracePayload* payload() const { return payload_.get(); }
  // Where a slice came from in its source's records (invalid when it has none). With a payload
  // this asks the payload; passes over many slices use the payload format's own reader.
  NodeRef node_ref(uint32_t slice) const;

  // Kineto arguments; null when the slice has none.
  std::optional<KernelArgs> kernel_args(uint32_t slice) const { return kernel_args_.Find(slice); }
  const TransferArgs* transfer_args(uint32_t slice) const;
  const KernelArgsTable& all_kernel_args() const { return kernel_args_; }
  const std::vector<TransferArgs>& all_transfer_args() const { return transfer_args_; }
  // Free-form arguments of one slice, in the order the source gave them; empty when none.
  std::span<const SliceArg> slice_args(uint32_t slice) const;
  const std::vector<SliceArg>& all_slice_args() const { return slice_args_; }

  // Path of a track from its host down, joined with " / " (for messages and tables).
  std::string TrackPath(uint32_t track) const;
  // The device track a track belongs to (itself for a device, -1 for a host).
  int32_t DeviceOf(uint32_t track) const;
  int32_t HostOf(uint32_t track) const;

 private:
  friend class TraceBuilder;

  StringTable strings_;
  LabelTable labels_;
  std::vector<Track> tracks_;
  MappedArray<Slice> slices_;
  std::vector<uint32_t> track_begin_;  // size tracks+1: slices of track t are [begin[t], begin[t+1])
  // Parallel to slices_ while building, and kept only when no payload holds them (a payload
  // knows each slice's record): empty when the source gave none.
  std::vector<NodeRef> node_refs_;
  std::vector<Flow> flows_;
  std::vector<CounterSeries> counters_;
  int64_t epoch_ns_ = 0;
  int64_t span_begin_ns_ = 0;
  int64_t span_end_ns_ = 0;
  StepInfo step_info_;
  std::vector<StepWindow> step_windows_;
  ImportStats import_stats_;
  SourceFormat source_format_ = SourceFormat::kSynthetic;
  std::string source_path_;
  std::shared_ptr<const TracePayload> payload_;
  KernelArgsTable kernel_args_;               // sorted by slice
  std::vector<TransferArgs> transfer_args_;   // sorted by slice
  std::vector<SliceArg> slice_args_;          // sorted by slice, source order within a slice
  DetailTables details_;
};


// Builds a Trace. Readers add tracks, slices (with absolute ns times), flows (between added
// slice indices) and counters in any order; Build() sorts, rebases on the epoch, computes
// nesting depth and checks the no-partial-overlap invariant (an offending slice is moved to a
// new overlap lane of its track and counted as `overlap_moved_to_lane`).
class TraceBuilder {
 public:
  TraceBuilder();
  ~TraceBuilder();

  StringTable& strings() { return trace_.strings_; }
  StringId Intern(std::string_view text) { return trace_.strings_.Intern(text); }

  uint32_t AddTrack(const Track& track);
  // Room for this many slices and free-form arguments in all (readers that can estimate).
  void Reserve(size_t slices, size_t slice_args) {
    slices_.reserve(slices);
    trace_.slice_args_.reserve(slice_args);
  }
  size_t slice_count() const { return slices_.size(); }
  // The epoch Build() chooses is at most `absolute_ns`: a trace that shares another's time axis
  // (ranks of a job opened in full from its overview) then counts its relative times from the
  // same instant, so both read the same times.
  void SetEpochAtMost(int64_t absolute_ns) { epoch_at_most_ns_ = absolute_ns; }
  std::vector<Track>& tracks() { return trace_.tracks_; }
  // Adds a slice with absolute times; returns its index (valid for AddFlow until Build).
  uint32_t AddSlice(const SliceRecord& slice, NodeRef ref = {});
  // Or `count` default slices at once, to be filled with SetSlice (each given a valid track): a
  // reader that knows where every slice goes writes the trace's order directly. Returns the first
  // one's index.
  uint32_t AddSlices(size_t count);
  void SetSlice(uint32_t index, const SliceRecord& slice) { slices_[index] = Pack(slice); }
  // A slice added before, with absolute times.
  SliceRecord slice(uint32_t index) const;
  // The same slice as stored: its start relative to packing_base_ns(), no label looked up (for
  // scans over every slice, which slice() would slow by a table lookup each).
  const Slice& packed_slice(uint32_t index) const { return slices_[index]; }
  int64_t packing_base_ns() const { return base_ns_; }

  // The builder keeps its slices packed (20 bytes, times relative to the first slice's start)
  // from the moment they are added, so a big import never holds them wider. Pack clamps what
  // does not fit and counts it (Build adds the counts to the import stats); a reader that holds
  // slices before adding them (TrackSliceBuffer) keeps them so too and copies them in with
  // SetPackedSlices.
  Slice Pack(const SliceRecord& slice);
  void SetPackedSlices(uint32_t index, std::span<const Slice> packed);
  // A flow between slices added before; one whose slice is past Flow::kMaxSlice is counted as
  // flow_past_slice_limit_skipped.
  void AddFlow(uint32_t from_slice, uint32_t to_slice, FlowKind kind);
  // Room for this many more flows: a reader that knows how many it will add spares the regrowth's
  // copy at the import's peak.
  void ReserveFlows(size_t more) { trace_.flows_.reserve(trace_.flows_.size() + more); }
  std::vector<Flow>& flows() { return trace_.flows_; }
  // Counter times are absolute ns.
  void AddCounter(CounterSeries series) { trace_.counters_.push_back(std::move(series)); }

  ImportStats& import_stats() { return trace_.import_stats_; }
  StepInfo& step_info() { return trace_.step_info_; }
  // A step window with absolute ns times (rebased on the epoch by Build).
  void AddStepWindow(StepWindow window) { trace_.step_windows_.push_back(window); }
  void SetSource(SourceFormat format, std::string path) {
    trace_.source_format_ = format;
    trace_.source_path_ = std::move(path);
  }
  // The source's lossless payload, made by `factory` once Build() has ordered the slices (it is
  // handed each slice's NodeRef given to AddSlice, in the final order).
  void SetPayload(PayloadFactory factory) { payload_factory_ = std::move(factory); }
  // Kineto arguments of a slice added before (`slice` is the AddSlice index).
  void AddKernelArgs(const KernelArgs& args) { trace_.kernel_args_.Add(args); }
  void AddTransferArgs(const TransferArgs& args) { trace_.transfer_args_.push_back(args); }
  MappedArray<KernelArgsTable::Row>& kernel_args() { return trace_.kernel_args_.rows(); }
  const KernelArgsTable& kernel_args_table() const { return trace_.kernel_args_; }
  std::vector<TransferArgs>& transfer_args() { return trace_.transfer_args_; }
  std::vector<SliceArg>& slice_args() { return trace_.slice_args_; }
  // A free-form argument of a slice added before (keys past SliceArg::kMaxKey are not kept but
  // counted: slice_arg_key_past_limit_skipped).
  void AddSliceArg(uint32_t slice, StringId key, StringId value, bool is_json = false) {
    if (KeyFits(key)) trace_.slice_args_.push_back(SliceArg::Text(slice, key, value, is_json));
  }
  void AddSliceArg(uint32_t slice, StringId key, int64_t number) {
    if (KeyFits(key)) trace_.slice_args_.push_back(SliceArg::Number(slice, key, number));
  }
  // Per-op memory details of slices added before.
  DetailTables& detail_tables() { return trace_.details_; }
  // A reader that resolves its own indices later (TrackSliceBuffer) adds whole arguments.
  void AddSliceArg(const SliceArg& arg) { trace_.slice_args_.push_back(arg); }
  bool KeyFits(StringId key) {
    if (key <= SliceArg::kMaxKey) return true;
    trace_.import_stats_.Add("slice_arg_key_past_limit_skipped");
    return false;
  }

  // Puts the slices in the trace's (track, start, longer first) order now, remapping refs, flows
  // and arguments added so far; indices returned before no longer hold. For readers that look
  // slices up by time before Build() (flow binding): Build() then finds them in order.
  void SortSlices();

  Trace Build() &&;

 private:
  // Moves the slice at order[i] to position offset + i, with its ref, and renumbers flows and
  // arguments (`order` maps [offset, offset + order.size()) onto itself).
  void Reorder(std::span<const uint32_t> order, size_t offset);
  // Sorts the slices [begin, end) of one track that are in order but for a few strays (at most a
  // quarter), moving only the slices whose place changes; false, with nothing changed, when
  // there are more strays.
  bool SortNearlyOrderedTrack(size_t begin, size_t end);
  // Applies `renumber` to every slice index held by flows and arguments.
  void RenumberSlices(const std::function<void(uint32_t&)>& renumber);

  // Moves the slices into the trace with their starts on the epoch (`shift_ns`: from the packing
  // base to the epoch), clamping and counting what does not fit; counts the slices of each track
  // into track_begin_ (sized tracks + 1, zeroed) and sets the span.
  void RebaseSlices(int64_t shift_ns);
  // Keeps the track count within what a Slice can name (Slice::kMaxTrack).
  void LimitTracks();

  Trace trace_;
  // Packed, starts relative to base_ns_ until Build rebases them on the epoch.
  MappedArray<Slice> slices_;
  int64_t base_ns_ = 0;
  int64_t epoch_at_most_ns_ = std::numeric_limits<int64_t>::max();
  bool has_base_ = false;
  // What Pack clamped.
  int64_t starts_clamped_ = 0, durations_clamped_ = 0, negative_durations_ = 0, depths_clamped_ = 0;
  bool has_refs_ = false;
  PayloadFactory payload_factory_;
};

}  // namespace stepscope::trace
