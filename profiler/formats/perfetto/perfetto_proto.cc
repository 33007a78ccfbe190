// Perfetto protobuf traces (TracePacket / TrackEvent): the writer (ProtoExporter) and the reader
// (ProtoImporter), hand-encoded with proto_wire.h; docs/formats.md section 7.
#include "profiler/formats/perfetto/perfetto_proto.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <numeric>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "base/free_storage.h"
#include "base/saturating.h"
#include "profiler/trace/node_store.h"
#include "profiler/formats/common/proto_wire.h"
#include "profiler/trace/slice_details.h"
#include "profiler/trace/track_slice_buffer.h"
#include "profiler/formats/common/utf8.h"
#include "stepscope/tf/run_metadata.pb.h"

namespace stepscope::trace {
namespace {

// Annotation names of the typed memory details (slice_details.h), written and read back.
constexpr std::string_view kOutputsKey = "tensor outputs";
constexpr std::string_view kAllocatorsKey = "allocators";
constexpr std::string_view kTempMemoryKey = "temp memory (bytes)";
constexpr std::string_view kPersistentMemoryKey = "persistent memory (bytes)";

// Field numbers of google/perfetto protos/perfetto/trace/ (docs/formats.md §7).
namespace trace_proto { enum : uint32_t { kPacket = 1 }; }
namespace packet {
enum : uint32_t {
  kClockSnapshot = 6, kTimestamp = 8, kSequenceId = 10, kTrackEvent = 11, kInternedData = 12,
  kSequenceFlags = 13, kIncrementalStateCleared = 41, kTimestampClockId = 58, kDefaults = 59,
  kTrackDescriptor = 60,
};
enum : uint32_t { kSeqIncrementalStateCleared = 1, kSeqNeedsIncrementalState = 2 };
}  // namespace packet
namespace defaults { enum : uint32_t { kTrackEventDefaults = 11, kTimestampClockId = 58 }; }
namespace event_defaults { enum : uint32_t { kTrackUuid = 11 }; }
namespace clock_snapshot { enum : uint32_t { kClocks = 1, kPrimaryTraceClock = 2 }; }
namespace clock {
enum : uint32_t { kClockId = 1, kTimestamp = 2, kIsIncremental = 3, kUnitMultiplierNs = 4 };
enum : uint32_t { kRealtime = 1, kBoottime = 6, kSequenceClock = 64 };
}  // namespace clock
namespace track_descriptor {
enum : uint32_t { kUuid = 1, kName = 2, kProcess = 3, kThread = 4, kParentUuid = 5, kCounter = 8, kStaticName = 10,
                  kChildOrdering = 11, kSiblingOrderRank = 12 };
// stepscope's own field (Perfetto skips it): the lane's TrackKindName, so a reader need not guess
// what a lane is from its name and depth.
enum : uint32_t { kStepscopeTrackKind = 1000 };
enum : uint32_t { kChildOrderingExplicit = 3 };
}  // namespace track_descriptor
namespace process_descriptor { enum : uint32_t { kPid = 1, kProcessName = 6 }; }
namespace thread_descriptor { enum : uint32_t { kPid = 1, kTid = 2, kThreadName = 5 }; }
namespace counter_descriptor {
enum : uint32_t { kUnit = 3, kUnitMultiplier = 4, kIsIncremental = 5 };
enum : uint32_t { kUnitSizeBytes = 3 };
}  // namespace counter_descriptor
namespace track_event {
enum : uint32_t {
  kCategoryIids = 3, kDebugAnnotations = 4, kType = 9, kNameIid = 10, kTrackUuid = 11, kCategories = 22,
  kName = 23, kCounterValue = 30, kFlowIdsOld = 36, kTerminatingFlowIdsOld = 42, kDoubleCounterValue = 44,
  kFlowIds = 47, kTerminatingFlowIds = 48,
};
enum : uint32_t { kSliceBegin = 1, kSliceEnd = 2, kInstant = 3, kCounter = 4 };
}  // namespace track_event
namespace annotation {
enum : uint32_t { kNameIid = 1, kBool = 2, kUint = 3, kInt = 4, kDouble = 5, kString = 6, kPointer = 7,
                  kName = 10, kArrayValues = 12, kStringIid = 17 };
}
// NodeExecStats (stepscope/tf/step_stats.proto, docs/formats.md §1.2) and what the writer
// reads of its outputs.
namespace node_field {
enum : uint32_t {
  kOutput = 7, kTimelineLabel = 8, kKernel = 1001, kCorrelationId = 1004,
  kOutputTensor = 3,                     // NodeOutput.tensor_description
  kTensorDtype = 1, kTensorShape = 2,    // TensorDescription
  kShapeDim = 2, kShapeUnknownRank = 3,  // TensorShapeProto
  kDimSize = 1,                          // TensorShapeProto.Dim
};
}  // namespace node_field
namespace interned {
enum : uint32_t { kEventCategories = 1, kEventNames = 2, kAnnotationNames = 3, kAnnotationStrings = 29 };
enum : uint32_t { kIid = 1, kName = 2 };  // EventName/EventCategory/DebugAnnotationName; InternedString str = 2
}  // namespace interned

// ---------------------------------------------------------------------------------------------
// Writing.

class ProtoExporter {
 public:
  explicit ProtoExporter(const Trace& trace) : trace_(trace) {}

  std::string Run() {
    out_.reserve(trace_.slices().size() * 80 + 4096);
    IndexFlows();
    IndexArgs();
    const auto& tracks = trace_.tracks();
    // One sequence per root track (a host, a rank), with its tracks under it.
    std::vector<int32_t> root_of(tracks.size(), -1);
    for (uint32_t t = 0; t < tracks.size(); ++t) {
      int32_t x = static_cast<int32_t>(t);
      while (tracks[x].parent >= 0) x = tracks[x].parent;
      root_of[t] = x;
    }
    // Tracks shown: those holding a kept slice or a counter, and their ancestors.
    needed_.assign(tracks.size(), false);
    auto need = [&](int32_t t) {
      for (; t >= 0 && !needed_[t]; t = tracks[t].parent) needed_[t] = true;
    };
    for (const Slice& s : trace_.slices()) {
      if (!s.duplicate()) need(static_cast<int32_t>(s.track));
    }
    for (const CounterSeries& counter : trace_.counters()) need(counter.track);
    // Sequence 1: the trace's epoch on REALTIME and BOOTTIME (so even a trace with nothing in
    // it is a file with a packet), every track's descriptor (hosts as processes, then their
    // devices and lanes), and the counter tracks'.
    BeginSequence(kDescriptorSequence, 0);
    for (uint32_t root = 0; root < tracks.size(); ++root) {
      if (tracks[root].parent >= 0 || !needed_[root]) continue;
      for (uint32_t t = 0; t < tracks.size(); ++t) {
        if (root_of[t] == static_cast<int32_t>(root) && needed_[t]) Descriptor(t, root);
      }
    }
    for (size_t c = 0; c < trace_.counters().size(); ++c) CounterDescriptor(c);
    // Then one sequence per host (root track) with events: its own clock snapshot, incremental
    // clock and interned strings, its busiest track as the default; the events of all its tracks
    // (and its counters) in time order, so timestamps are small deltas and every name, node
    // name and input is written once for the host whichever lane or stream uses it.
    uint32_t sequence = kDescriptorSequence;
    uses_.assign(trace_.strings().size(), Uses{});
    for (uint32_t root = 0; root < tracks.size(); ++root) {
      if (tracks[root].parent < 0 && needed_[root]) HostSequence(root, root_of, sequence);
    }
    // A counter on no track has a sequence of its own.
    for (size_t c = 0; c < trace_.counters().size(); ++c) {
      if (trace_.counters()[c].track >= 0 || trace_.counters()[c].ts_ns.empty()) continue;
      cursors_.clear();
      cursors_.push_back(CounterCursor(c));
      Merge(++sequence, CounterUuid(c));
    }
    return out_.Take();
  }

 private:
  uint64_t TrackUuid(uint32_t track) const { return uint64_t{track} + 1; }
  uint64_t CounterUuid(size_t counter) const { return uint64_t{trace_.tracks().size()} + 1 + counter; }

  void IndexFlows() {
    const size_t n = trace_.slices().size();
    out_begin_.assign(n + 1, 0);
    in_begin_.assign(n + 1, 0);
    const auto& slices = trace_.slices();
    auto kept = [&](const Flow& flow) {
      return !slices[flow.from_slice].duplicate() && !slices[flow.to_slice].duplicate();
    };
    for (const Flow& flow : trace_.flows()) {
      if (!kept(flow)) continue;
      ++out_begin_[flow.from_slice + 1];
      ++in_begin_[flow.to_slice + 1];
    }
    for (size_t i = 0; i < n; ++i) {
      out_begin_[i + 1] += out_begin_[i];
      in_begin_[i + 1] += in_begin_[i];
    }
    out_ids_.resize(trace_.flows().size());
    in_ids_.resize(trace_.flows().size());
    std::vector<uint32_t> out_fill(out_begin_.begin(), out_begin_.end() - 1);
    std::vector<uint32_t> in_fill(in_begin_.begin(), in_begin_.end() - 1);
    for (size_t f = 0; f < trace_.flows().size(); ++f) {
      const Flow& flow = trace_.flows()[f];
      if (!kept(flow)) continue;
      out_ids_[out_fill[flow.from_slice]++] = f + 1;
      in_ids_[in_fill[flow.to_slice]++] = f + 1;
    }
  }

  // Per slice: its free-form arguments' range and its transfer args (no searches; kernel
  // arguments are found by counting bits, KernelArgsTable).
  void IndexArgs() {
    const size_t n = trace_.slices().size();
    const auto& args = trace_.all_slice_args();
    args_begin_.assign(n + 1, 0);
    for (const SliceArg& arg : args) ++args_begin_[arg.slice + 1];
    for (size_t i = 0; i < n; ++i) args_begin_[i + 1] += args_begin_[i];
    transfer_index_.assign(trace_.all_transfer_args().empty() ? 0 : n, kNoArgs);
    for (size_t k = 0; k < trace_.all_transfer_args().size(); ++k) transfer_index_[trace_.all_transfer_args()[k].slice] = static_cast<uint32_t>(k);
  }
  static constexpr uint32_t kNoArgs = 0xffffffffu;
  std::optional<KernelArgs> KernelOf(uint32_t slice) const { return trace_.kernel_args(slice); }
  const TransferArgs* TransferOf(uint32_t slice) const {
    if (transfer_index_.empty() || transfer_index_[slice] == kNoArgs) return nullptr;
    return &trace_.all_transfer_args()[transfer_index_[slice]];
  }

  // `incremental`: the packet needs the sequence's incremental state (interned data, the
  // incremental clock its timestamp is a delta on, an incremental counter's previous value), so
  // a reader that lost that state drops it rather than misplace it.
  void SequenceHeader(uint32_t sequence, bool incremental) {
    wire::Varint(out_, packet::kSequenceId, sequence);
    if (incremental) wire::Varint(out_, packet::kSequenceFlags, packet::kSeqNeedsIncrementalState);
  }

  static constexpr uint32_t kDescriptorSequence = 1;

  // A sequence's first packet: incremental state cleared, defaults (the sequence clock, the
  // default track) and the clock snapshot that puts the sequence clock (incremental, in `unit`
  // ns, 0 = the trace's epoch) on REALTIME and BOOTTIME.
  void BeginSequence(uint32_t sequence, uint64_t track_uuid, uint64_t unit = 1) {
    sequence_ = sequence;
    last_ts_ = 0;
    unit_ = unit == 0 ? 1 : unit;
    for (InternTable* table : {&names_, &categories_, &keys_, &strings_}) table->next = 1;
    wire::Scope p(out_, trace_proto::kPacket);
    wire::Varint(out_, packet::kSequenceId, sequence);
    wire::Varint(out_, packet::kSequenceFlags, packet::kSeqIncrementalStateCleared);
    {
      wire::Scope d(out_, packet::kDefaults);
      if (track_uuid != 0) {
        wire::Scope e(out_, defaults::kTrackEventDefaults);
        wire::Varint(out_, event_defaults::kTrackUuid, track_uuid);
      }
      wire::Varint(out_, defaults::kTimestampClockId, clock::kSequenceClock);
    }
    wire::Scope snapshot(out_, packet::kClockSnapshot);
    const uint64_t epoch = static_cast<uint64_t>(std::max<int64_t>(trace_.epoch_ns(), 0));
    for (uint32_t id : {uint32_t{clock::kSequenceClock}, uint32_t{clock::kRealtime}, uint32_t{clock::kBoottime}}) {
      wire::Scope c(out_, clock_snapshot::kClocks);
      wire::Varint(out_, clock::kClockId, id);
      wire::Varint(out_, clock::kTimestamp, id == clock::kSequenceClock ? 0 : epoch);
      if (id == clock::kSequenceClock) {
        wire::Varint(out_, clock::kIsIncremental, 1);
        if (unit_ != 1) wire::Varint(out_, clock::kUnitMultiplierNs, unit_);
      }
    }
  }

  // The greatest common divisor of `ts` and every time folded into `unit` before (0: none yet).
  static uint64_t ClockUnit(uint64_t unit, int64_t ts) {
    if (unit == 1) return 1;
    const uint64_t magnitude = ts < 0 ? uint64_t{0} - static_cast<uint64_t>(ts) : static_cast<uint64_t>(ts);
    if (unit != 0 && magnitude % unit == 0) return unit;  // the common case: one division
    return std::gcd(unit, magnitude);
  }
  // The sequence clock's unit from that divisor: it, or the part of it that divides 10^9 when it
  // is 2^30 or more (readers take units below 2^30). µs sources get 1000, so every delta is a
  // varint of about ten bits less.
  static uint64_t SequenceUnit(uint64_t divisor) {
    if (divisor == 0) return 1;
    return divisor < (uint64_t{1} << 30) ? divisor : std::gcd(divisor, uint64_t{1000000000});
  }

  // Before a sequence, for each of its tracks: the divisor of its times (folded into `unit`),
  // and how often each name and string value is used on the sequence. A text used once goes
  // inline: interning it would cost an interned entry and an id on top of the text.
  uint64_t PlanTrack(uint32_t t, uint64_t unit) {
    const auto slices = trace_.track_slices(t);
    const uint32_t first = trace_.track_first_slice(t);
    for (uint32_t k = 0; k < slices.size(); ++k) {
      const Slice& s = slices[k];
      if (s.duplicate()) continue;
      unit = ClockUnit(ClockUnit(unit, s.start_ns), s.end_ns());
      const SliceLabel& label = trace_.labels()[s.label];
      Use(label.op_type != 0 ? label.op_type : label.name).names++;
      const uint32_t index = first + k;
      if (label.name != label.op_type) Use(label.name).values++;
      // The producers named in its input list (found by the dataflow into it), counted for the
      // sequence; a producer on another host is counted where it is not used, which costs an
      // interned entry and no correctness.
      for (uint32_t f = in_begin_[index]; f < in_begin_[index + 1]; ++f) {
        const Flow& flow = trace_.flows()[in_ids_[f] - 1];
        if (flow.kind == FlowKind::kDataflow) Use(trace_.slice_name(trace_.slices()[flow.from_slice])).values++;
      }
      for (uint32_t a = args_begin_[index]; a < args_begin_[index + 1]; ++a) {
        const SliceArg& arg = trace_.all_slice_args()[a];
        if (!arg.is_number) Use(arg.value).values++;
      }
    }
    return unit;
  }

  // Uses of one string on the sequence being planned (reset lazily per sequence).
  struct Uses {
    uint32_t plan = 0;
    uint32_t names = 0, values = 0;
  };
  Uses& Use(StringId id) {
    Uses& u = uses_[id];
    if (u.plan != plan_) u = Uses{plan_, 0, 0};
    return u;
  }
  bool Repeated(StringId id, bool as_name) {
    const Uses& u = Use(id);
    return (as_name ? u.names : u.values) >= 2;
  }

  // The delta of `ts` (ns from the epoch) on the sequence's incremental clock.
  uint64_t Delta(int64_t ts) {
    const int64_t delta = ts - last_ts_;
    last_ts_ = ts;
    return static_cast<uint64_t>(std::max<int64_t>(delta, 0)) / unit_;
  }

  void Descriptor(uint32_t t, uint32_t root) {
    const Track& track = trace_.tracks()[t];
    wire::Scope p(out_, trace_proto::kPacket);
    SequenceHeader(kDescriptorSequence, false);
    wire::Scope d(out_, packet::kTrackDescriptor);
    wire::Varint(out_, track_descriptor::kUuid, TrackUuid(t));
    if (track.parent >= 0) wire::Varint(out_, track_descriptor::kParentUuid, TrackUuid(static_cast<uint32_t>(track.parent)));
    wire::Bytes(out_, track_descriptor::kName, trace_.str(track.name));
    if (track.parent < 0) {
      wire::Scope process(out_, track_descriptor::kProcess);
      wire::Varint(out_, process_descriptor::kPid, sequence_pid(root));
      wire::Bytes(out_, process_descriptor::kProcessName, trace_.str(track.name));
    }
    wire::Varint(out_, track_descriptor::kChildOrdering, track_descriptor::kChildOrderingExplicit);
    wire::Varint(out_, track_descriptor::kSiblingOrderRank, static_cast<uint64_t>(static_cast<int64_t>(track.sort_index)));
    wire::Bytes(out_, track_descriptor::kStepscopeTrackKind, TrackKindName(track.kind));
  }

  uint64_t sequence_pid(uint32_t track) const { return uint64_t{track} + 1; }

  void CounterDescriptor(size_t c) {
    const CounterSeries& counter = trace_.counters()[c];
    wire::Scope p(out_, trace_proto::kPacket);
    SequenceHeader(kDescriptorSequence, false);
    wire::Scope d(out_, packet::kTrackDescriptor);
    wire::Varint(out_, track_descriptor::kUuid, CounterUuid(c));
    if (counter.track >= 0) wire::Varint(out_, track_descriptor::kParentUuid, TrackUuid(static_cast<uint32_t>(counter.track)));
    wire::Bytes(out_, track_descriptor::kName, trace_.str(counter.name));
    wire::Scope descriptor(out_, track_descriptor::kCounter);
    if (counter.unit == "bytes") wire::Varint(out_, counter_descriptor::kUnit, counter_descriptor::kUnitSizeBytes);
    // Values as deltas in a unit dividing them all (256 for BFC allocators): an allocator's
    // steps are the sizes it allocates and frees, which repeat and compress.
    const int64_t unit = CounterValueUnit(c);
    if (unit != 1) wire::Int64(out_, counter_descriptor::kUnitMultiplier, unit);
    wire::Varint(out_, counter_descriptor::kIsIncremental, 1);
  }

  int64_t CounterValueUnit(size_t c) const {
    uint64_t unit = 0;
    for (int64_t v : trace_.counters()[c].values) {
      const uint64_t magnitude = v < 0 ? uint64_t{0} - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
      if (unit != 0 && magnitude % unit == 0) continue;  // the common case: one division
      unit = std::gcd(unit, magnitude);
      if (unit == 1) break;
    }
    return unit == 0 || unit > (uint64_t{1} << 40) ? 1 : static_cast<int64_t>(unit);
  }

  // The events of one sequence come from cursors, one per track (its slices as BEGIN/END in
  // nesting order) or counter (its points in time order), merged by time.
  struct Cursor {
    bool counter = false;
    uint32_t track = 0;             // a slice cursor's track, a counter cursor's counter index
    uint64_t uuid = 0;
    uint32_t next = 0;              // the next slice of the track, or the next point of `order`
    std::vector<int64_t> open;      // ends of the open slices, innermost last
    std::vector<uint32_t> order;    // counter points in time order (a series out of order is sorted)
    int64_t last_value = 0;         // the counter's value on the sequence so far (in its unit)
    int64_t value_unit = 1;
  };

  Cursor TrackCursor(uint32_t t) {
    Cursor c;
    c.track = t;
    c.uuid = TrackUuid(t);
    return c;
  }
  Cursor CounterCursor(size_t index) {
    const CounterSeries& counter = trace_.counters()[index];
    Cursor c;
    c.counter = true;
    c.track = static_cast<uint32_t>(index);
    c.uuid = CounterUuid(index);
    c.value_unit = CounterValueUnit(index);
    c.order.resize(counter.ts_ns.size());
    std::iota(c.order.begin(), c.order.end(), 0u);
    if (!std::is_sorted(counter.ts_ns.begin(), counter.ts_ns.end())) {
      std::stable_sort(c.order.begin(), c.order.end(),
                       [&](uint32_t a, uint32_t b) { return counter.ts_ns[a] < counter.ts_ns[b]; });
    }
    return c;
  }

  // The time of the cursor's next event; false when it has none left. A slice ends before the
  // next one on its track begins at or after its end (TensorFlow's /stream:all and /memcpy
  // repeats are skipped, as in chrome).
  bool Peek(Cursor& c, int64_t& ts) {
    if (c.counter) {
      if (c.next >= c.order.size()) return false;
      ts = trace_.counters()[c.track].ts_ns[c.order[c.next]];
      return true;
    }
    const auto slices = trace_.track_slices(c.track);
    while (c.next < slices.size() && slices[c.next].duplicate()) ++c.next;
    if (c.next < slices.size()) {
      const Slice& s = slices[c.next];
      ts = !c.open.empty() && c.open.back() <= s.start_ns ? c.open.back() : s.start_ns;
      return true;
    }
    if (c.open.empty()) return false;
    ts = c.open.back();
    return true;
  }

  // Writes the cursor's next event (the one Peek saw).
  void Step(Cursor& c, uint32_t sequence) {
    if (c.counter) {
      const CounterSeries& counter = trace_.counters()[c.track];
      const uint32_t i = c.order[c.next++];
      wire::Scope p(out_, trace_proto::kPacket);
      wire::Varint(out_, packet::kTimestamp, Delta(counter.ts_ns[i]));
      SequenceHeader(sequence, true);
      wire::Scope e(out_, packet::kTrackEvent);
      wire::Varint(out_, track_event::kType, track_event::kCounter);
      if (c.uuid != default_uuid_) wire::Varint(out_, track_event::kTrackUuid, c.uuid);
      // A delta from the counter's previous value on this sequence (0 after the state is cleared).
      const int64_t value = counter.values[i] / c.value_unit;
      wire::Int64(out_, track_event::kCounterValue,
                  static_cast<int64_t>(static_cast<uint64_t>(value) - static_cast<uint64_t>(c.last_value)));
      c.last_value = value;
      return;
    }
    const auto slices = trace_.track_slices(c.track);
    if (c.next < slices.size() && (c.open.empty() || c.open.back() > slices[c.next].start_ns)) {
      const Slice& s = slices[c.next];
      Begin(trace_.track_first_slice(c.track) + c.next, s, sequence, c.uuid);
      c.open.push_back(s.end_ns());
      ++c.next;
      return;
    }
    End(c.open.back(), sequence, c.uuid);
    c.open.pop_back();
  }

  // Writes the sequence of cursors_ (their strings counted by Plan before): its first packet,
  // then their events in time order (ties in cursor order, so each track keeps its own order).
  void Merge(uint32_t sequence, uint64_t default_uuid) {
    uint64_t unit = 0;
    for (const Cursor& c : cursors_) {
      if (c.counter) {
        for (int64_t ts : trace_.counters()[c.track].ts_ns) unit = ClockUnit(unit, ts);
      } else {
        unit = PlanTrack(c.track, unit);
      }
    }
    default_uuid_ = default_uuid;
    BeginSequence(sequence, default_uuid, SequenceUnit(unit));
    using Next = std::pair<int64_t, uint32_t>;  // (time, cursor)
    std::vector<Next> heap;
    for (uint32_t i = 0; i < cursors_.size(); ++i) {
      int64_t ts = 0;
      if (Peek(cursors_[i], ts)) heap.emplace_back(ts, i);
    }
    std::make_heap(heap.begin(), heap.end(), std::greater<>());
    while (!heap.empty()) {
      std::pop_heap(heap.begin(), heap.end(), std::greater<>());
      const uint32_t i = heap.back().second;
      heap.pop_back();
      Step(cursors_[i], sequence);
      int64_t ts = 0;
      if (Peek(cursors_[i], ts)) {
        heap.emplace_back(ts, i);
        std::push_heap(heap.begin(), heap.end(), std::greater<>());
      }
    }
  }

  // A host's sequence: its tracks with kept slices and its counters; nothing when it has none.
  void HostSequence(uint32_t root, const std::vector<int32_t>& root_of, uint32_t& sequence) {
    cursors_.clear();
    ++plan_;
    size_t busiest = 0;
    uint64_t default_uuid = 0;
    for (uint32_t t = 0; t < trace_.tracks().size(); ++t) {
      if (root_of[t] != static_cast<int32_t>(root)) continue;
      size_t kept = 0;
      for (const Slice& s : trace_.track_slices(t)) kept += !s.duplicate();
      if (kept == 0) continue;
      cursors_.push_back(TrackCursor(t));
      if (kept > busiest) {
        busiest = kept;
        default_uuid = TrackUuid(t);
      }
    }
    for (size_t c = 0; c < trace_.counters().size(); ++c) {
      const CounterSeries& counter = trace_.counters()[c];
      if (counter.track < 0 || root_of[counter.track] != static_cast<int32_t>(root) || counter.ts_ns.empty()) continue;
      cursors_.push_back(CounterCursor(c));
      if (default_uuid == 0) default_uuid = CounterUuid(c);
    }
    if (cursors_.empty()) return;
    Merge(++sequence, default_uuid);
  }

  // Interning, per sequence, indexed by what is interned (no hashing of text): trace strings by
  // StringId, categories by slice kind, the annotation names we write by their Key. An entry
  // holds the sequence it was interned in (high 32 bits) and its iid (low 32 bits).
  enum Key : uint8_t {
    kKeyName, kKeyGrid, kKeyBlock, kKeyRegisters, kKeyShared, kKeyBlocksPerSm, kKeyWarpsPerSm, kKeyOccupancy,
    kKeyDevice, kKeyStream, kKeyCorrelation, kKeyBytes, kKeyBandwidth, kKeyLabel, kKeyKind, kKeyShapes,
    kKeyInputs, kKeyMemory, kKeyOutputs, kKeyAllocators, kKeyTempMemory, kKeyPersistentMemory, kKeyCount
  };
  static constexpr std::string_view kKeyNames[kKeyCount] = {
      "name", "grid", "block", "registers per thread", "shared memory", "blocks per SM", "warps per SM",
      "est. achieved occupancy %", "device", "stream", "correlation", "bytes", "memory bandwidth (GB/s)",
      "label", "kind", "output shapes", "inputs", "memory", kOutputsKey, kAllocatorsKey, kTempMemoryKey,
      kPersistentMemoryKey};

  struct InternTable {
    std::vector<uint64_t> slots;
    uint32_t next = 1;
  };

  // The iid of entry `index` of `table` in the current sequence; when new, its interned-data
  // entry (field `field` of InternedData) is appended to `pending`.
  uint64_t Intern(InternTable& table, size_t index, std::string_view text, uint32_t field, std::string& pending) {
    if (table.slots.size() <= index) table.slots.resize(index + 1, 0);
    uint64_t& slot = table.slots[index];
    if ((slot >> 32) == sequence_) return slot & 0xffffffffu;
    const uint32_t iid = table.next++;
    slot = (uint64_t{sequence_} << 32) | iid;
    wire::Scope entry(pending, field);
    wire::Varint(pending, interned::kIid, iid);
    wire::Bytes(pending, interned::kName, text);
    return iid;
  }

  // Annotations are collected per slice before the packet is written (their names and string
  // values may need interning in that packet).
  struct Arg {
    // kInputs: an executor label's input list, written as an array of its names.
    enum Kind : uint8_t { kInt, kDouble, kString, kInline, kInputs } kind = kInt;
    bool literal_key = true;
    uint32_t key = 0;     // a Key, or a StringId of the trace
    StringId value = 0;   // kString: a trace string (interned)
    int64_t i = 0;
    double d = 0;
    std::string_view text;  // kInline: written as is (labels, made-up values)
  };

  void AddInt(Key key, int64_t value) {
    Arg& a = args_.emplace_back();
    a.key = key;
    a.kind = Arg::kInt;
    a.i = value;
  }
  void AddDouble(Key key, double value) {
    Arg& a = args_.emplace_back();
    a.key = key;
    a.kind = Arg::kDouble;
    a.d = value;
  }
  void AddInline(Key key, std::string_view value) {
    Arg& a = args_.emplace_back();
    a.key = key;
    a.kind = Arg::kInline;
    a.text = value;
  }
  // "x,y,z" into one of the scratch buffers (valid until the next slice).
  std::string_view Triple(const uint32_t* v) {
    std::string& out = scratch_[scratch_used_++ % kScratch];
    out.clear();
    for (int k = 0; k < 3; ++k) {
      if (k > 0) out.push_back(',');
      char buffer[16];
      const auto r = std::to_chars(buffer, buffer + sizeof buffer, v[k]);
      out.append(buffer, r.ptr);
    }
    return out;
  }

  // TensorFlow's executor label "[<memory>] <node> = <OpType>(<inputs>)" as the parts the slice
  // does not already carry: `inputs` and `memory` (the node and op type are the slice's node
  // annotation and name). Any other label is written whole.
  void AddLabel(std::string_view label, const Slice& s) {
    std::string_view rest = label, memory;
    if (!rest.empty() && rest[0] == '[') {
      const size_t close = rest.find("] ");
      if (close == std::string_view::npos) return AddInline(kKeyLabel, label);
      memory = rest.substr(1, close - 1);
      rest.remove_prefix(close + 2);
    }
    const std::string_view node = trace_.str(trace_.slice_name(s)), op = trace_.str(trace_.slice_op_type(s));
    const size_t head = node.size() + 3 + op.size() + 1;
    if (rest.size() < head + 1 || rest.back() != ')' || rest.substr(0, node.size()) != node ||
        rest.substr(node.size(), 3) != " = " || rest.substr(node.size() + 3, op.size()) != op ||
        rest[head - 1] != '(') {
      return AddInline(kKeyLabel, label);
    }
    const std::string_view inputs = rest.substr(head, rest.size() - head - 1);
    if (inputs.empty()) {
      AddInline(kKeyInputs, inputs);
    } else {
      Arg& a = args_.emplace_back();
      a.key = kKeyInputs;
      a.kind = Arg::kInputs;
      a.text = inputs;
    }
    if (!memory.empty()) AddInline(kKeyMemory, memory);
  }

  // A step stats node's annotations, from its wire bytes: only the label, outputs, kernel, copy
  // and correlation fields are read (a full parse would build its allocation records and memory
  // stats too, most of a node's bytes).
  void NodeArgs(uint32_t index, const Slice& s, const std::optional<KernelArgs>& k, const TransferArgs* t) {
    const std::string_view bytes = nodes_.Bytes(index);
    if (bytes.empty()) return;
    wire::Reader reader(bytes);
    wire::Field f;
    std::string_view label, kernel;
    bool has_outputs = false;
    uint64_t correlation = 0;
    std::string& shapes = scratch_[scratch_used_++ % kScratch];
    shapes.clear();
    while (reader.Next(f)) {
      switch (f.number) {
        case node_field::kTimelineLabel: if (f.type == wire::kLength) label = f.bytes; break;
        case node_field::kOutput:
          if (f.type != wire::kLength) break;
          if (has_outputs) shapes.push_back(' ');
          has_outputs = true;
          OutputShape(f.bytes, shapes);
          break;
        case node_field::kKernel: if (f.type == wire::kLength) kernel = f.bytes; break;
        case node_field::kCorrelationId: if (f.type == wire::kVarint) correlation = f.value; break;
        default: break;
      }
    }
    if (!label.empty()) AddLabel(label, s);
    if (has_outputs) AddInline(kKeyShapes, shapes);
    if (s.kind == SliceKind::kMemcpy && t == nullptr) {
      // Copies are few: their node is parsed whole for the one place that reads copy details.
      node_.Clear();
      if (node_.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
        if (auto memcpy = GetMemcpyDetails(trace_, index, node_)) {
          std::string& kind = scratch_[scratch_used_++ % kScratch];
          kind = memcpy->kind;
          AddInline(kKeyKind, kind);
          AddInt(kKeyBytes, memcpy->bytes);
        }
      }
    }
    if (!kernel.empty() && !k) {
      tf::KernelLaunch kl;
      if (kl.ParseFromArray(kernel.data(), static_cast<int>(kernel.size()))) {
        const uint32_t grid[3] = {kl.grid_x(), kl.grid_y(), kl.grid_z()};
        const uint32_t block[3] = {kl.block_x(), kl.block_y(), kl.block_z()};
        AddInline(kKeyGrid, Triple(grid));
        AddInline(kKeyBlock, Triple(block));
        AddInt(kKeyRegisters, kl.registers_per_thread());
        AddInt(kKeyShared, kl.static_shared_memory() + kl.dynamic_shared_memory());
        AddInt(kKeyStream, kl.stream_id());
      }
    }
    if (correlation != 0 && !k) AddInt(kKeyCorrelation, static_cast<int64_t>(correlation));
  }

  // The slice's typed memory details (from a StepStats payload or the trace's tables), so that
  // the file read back holds them too: outputs and allocators as JSON text (records' times from
  // the slice's start), an op's memory as integers.
  void DetailArgs(uint32_t index, const Slice& s) {
    if (const std::span<const TensorOutput> outputs = details_.Outputs(index); !outputs.empty()) {
      nlohmann::ordered_json list = nlohmann::ordered_json::array();
      for (const TensorOutput& o : outputs) {
        nlohmann::ordered_json e;
        e["slot"] = o.slot;
        if (!o.dtype.empty()) e["dtype"] = o.dtype;
        e["shape"] = std::vector<int64_t>(o.shape.begin(), o.shape.end());
        if (o.has_allocation) {
          e["allocator"] = o.allocator;
          e["requested_bytes"] = o.requested_bytes;
          e["allocated_bytes"] = o.allocated_bytes;
          e["allocation_id"] = o.allocation_id;
        }
        list.push_back(std::move(e));
      }
      std::string& text = scratch_[scratch_used_++ % kScratch];
      text = list.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
      AddInline(kKeyOutputs, text);
    }
    if (const std::span<const AllocatorUse> uses = details_.Allocators(index); !uses.empty()) {
      nlohmann::ordered_json list = nlohmann::ordered_json::array();
      for (const AllocatorUse& use : uses) {
        nlohmann::ordered_json e;
        e["allocator"] = use.allocator;
        e["total_bytes"] = use.total_bytes;
        e["peak_bytes"] = use.peak_bytes;
        e["live_bytes"] = use.live_bytes;
        e["bytes_in_use"] = use.bytes_in_use;
        nlohmann::ordered_json records = nlohmann::ordered_json::array();
        for (const AllocationRecord& r : use.records) records.push_back({r.ns - s.start_ns, r.bytes});
        e["records"] = std::move(records);
        list.push_back(std::move(e));
      }
      std::string& text = scratch_[scratch_used_++ % kScratch];
      text = list.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
      AddInline(kKeyAllocators, text);
    }
    if (const std::optional<OpMemory> memory = details_.Memory(index)) {
      AddInt(kKeyTempMemory, memory->temp_bytes);
      AddInt(kKeyPersistentMemory, memory->persistent_bytes);
    }
  }

  // One NodeOutput as "float[20,200]" (dtype, then dims; ? for unknown), appended to `out`.
  void OutputShape(std::string_view output, std::string& out) {
    int dtype = 0;
    std::string_view shape;
    wire::Reader reader(output);
    wire::Field f;
    while (reader.Next(f)) {
      if (f.number != node_field::kOutputTensor || f.type != wire::kLength) continue;
      wire::Reader tensor(f.bytes);
      wire::Field g;
      while (tensor.Next(g)) {
        if (g.number == node_field::kTensorDtype && g.type == wire::kVarint) dtype = static_cast<int>(g.value);
        if (g.number == node_field::kTensorShape && g.type == wire::kLength) shape = g.bytes;
      }
    }
    out += DtypeName(dtype);
    out.push_back('[');
    wire::Reader dims(shape);
    bool first = true;
    while (dims.Next(f)) {
      if (f.number == node_field::kShapeUnknownRank && f.value != 0) out.push_back('?');
      if (f.number != node_field::kShapeDim || f.type != wire::kLength) continue;
      if (!first) out.push_back(',');
      first = false;
      int64_t size = 0;
      wire::Reader dim(f.bytes);
      wire::Field g;
      while (dim.Next(g)) {
        if (g.number == node_field::kDimSize && g.type == wire::kVarint) size = static_cast<int64_t>(g.value);
      }
      if (size < 0) {
        out.push_back('?');
      } else {
        char buffer[24];
        const auto r = std::to_chars(buffer, buffer + sizeof buffer, size);
        out.append(buffer, r.ptr);
      }
    }
    out.push_back(']');
  }

  // "float" for DT_FLOAT, "dtype<N>" for a value TensorFlow does not name (cached per value).
  std::string_view DtypeName(int dtype) {
    auto [it, added] = dtype_names_.try_emplace(dtype);
    if (added) {
      std::string name = tf::DataType_IsValid(dtype) ? tf::DataType_Name(static_cast<tf::DataType>(dtype)) : "";
      if (name.substr(0, 3) == "DT_") name = name.substr(3);
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      it->second = name.empty() ? "dtype" + std::to_string(dtype) : name;
    }
    return it->second;
  }

  void CollectArgs(uint32_t index, const Slice& s) {
    args_.clear();
    const std::span<const SliceArg> free_args(trace_.all_slice_args().data() + args_begin_[index],
                                              args_begin_[index + 1] - args_begin_[index]);
    // The node name first; also when it equals the op type but a free-form argument is called
    // "name" too (the reader takes the first "name" as the node).
    bool named_arg = false;
    for (const SliceArg& arg : free_args) named_arg = named_arg || arg.key == name_key_;
    const SliceLabel& label = trace_.labels()[s.label];
    if ((label.name != label.op_type || named_arg) && label.name != 0) {
      Arg& a = args_.emplace_back();
      a.key = kKeyName;
      a.kind = Arg::kString;
      a.value = label.name;
    }
    const std::optional<KernelArgs> k = KernelOf(index);
    if (k) {
      if (k->has_grid()) {
        AddInline(kKeyGrid, Triple(k->grid));
        AddInline(kKeyBlock, Triple(k->block));
      }
      if (k->registers_per_thread >= 0) AddInt(kKeyRegisters, k->registers_per_thread);
      if (k->shared_memory_bytes >= 0) AddInt(kKeyShared, k->shared_memory_bytes);
      if (k->blocks_per_sm >= 0) AddDouble(kKeyBlocksPerSm, k->blocks_per_sm);
      if (k->warps_per_sm >= 0) AddDouble(kKeyWarpsPerSm, k->warps_per_sm);
      if (k->occupancy_percent >= 0) AddDouble(kKeyOccupancy, k->occupancy_percent);
      if (k->device >= 0) AddInt(kKeyDevice, k->device);
      if (k->stream >= 0) AddInt(kKeyStream, k->stream);
      if (k->correlation >= 0) AddInt(kKeyCorrelation, k->correlation);
    }
    const TransferArgs* t = TransferOf(index);
    if (t != nullptr) {
      if (t->bytes >= 0) AddInt(kKeyBytes, t->bytes);
      if (t->bandwidth_gbps >= 0) AddDouble(kKeyBandwidth, t->bandwidth_gbps);
      if (t->device >= 0) AddInt(kKeyDevice, t->device);
      if (t->stream >= 0) AddInt(kKeyStream, t->stream);
      if (t->correlation >= 0) AddInt(kKeyCorrelation, t->correlation);
    }
    if (has_nodes_) NodeArgs(index, s, k, t);
    if (has_details_) DetailArgs(index, s);
    for (const SliceArg& arg : free_args) {
      Arg& a = args_.emplace_back();
      a.literal_key = false;
      a.key = arg.key;
      if (arg.is_number) {
        a.kind = Arg::kInt;
        a.i = arg.number;
      } else {
        a.kind = Arg::kString;
        a.value = arg.value;
      }
    }
  }

  void Begin(uint32_t index, const Slice& s, uint32_t sequence, uint64_t uuid) {
    CollectArgs(index, s);
    // Interned data first (into side buffers: InternedData's fields in number order), then the
    // packet.
    interned_categories_.clear();
    interned_names_.clear();
    interned_keys_.clear();
    interned_values_.clear();
    const SliceLabel& label = trace_.labels()[s.label];
    const StringId name = label.op_type != 0 ? label.op_type : label.name;
    const bool name_interned = Repeated(name, true);
    const uint64_t name_iid =
        name_interned ? Intern(names_, name, trace_.str(name), interned::kEventNames, interned_names_) : 0;
    const uint64_t category_iid = Intern(categories_, static_cast<size_t>(s.kind), SliceKindName(s.kind),
                                         interned::kEventCategories, interned_categories_);
    annotation_iids_.clear();
    for (const Arg& arg : args_) {
      // One table for both kinds of names (one iid space): our keys after the trace's strings.
      const uint64_t key = arg.literal_key ? Intern(keys_, trace_.strings().size() + arg.key, kKeyNames[arg.key],
                                                    interned::kAnnotationNames, interned_keys_)
                                           : Intern(keys_, arg.key, trace_.str(arg.key), interned::kAnnotationNames,
                                                    interned_keys_);
      uint64_t value = 0;
      if (arg.kind == Arg::kString && Repeated(arg.value, false)) {
        value = Intern(strings_, arg.value, trace_.str(arg.value), interned::kAnnotationStrings, interned_values_);
      }
      if (arg.kind == Arg::kInputs) SplitInputs(index, arg.text);  // a slice has one label
      annotation_iids_.push_back({key, value});
    }

    wire::Scope p(out_, trace_proto::kPacket);
    wire::Varint(out_, packet::kTimestamp, Delta(s.start_ns));
    SequenceHeader(sequence, true);
    if (!interned_categories_.empty() || !interned_names_.empty() || !interned_keys_.empty() ||
        !interned_values_.empty()) {
      wire::Scope in(out_, packet::kInternedData);
      out_ += interned_categories_;
      out_ += interned_names_;
      out_ += interned_keys_;
      out_ += interned_values_;
    }
    wire::Scope e(out_, packet::kTrackEvent);
    wire::Varint(out_, track_event::kCategoryIids, category_iid);
    wire::Varint(out_, track_event::kType, track_event::kSliceBegin);
    if (uuid != default_uuid_) wire::Varint(out_, track_event::kTrackUuid, uuid);
    if (name_interned) {
      wire::Varint(out_, track_event::kNameIid, name_iid);
    } else {
      wire::Bytes(out_, track_event::kName, trace_.str(name));
    }
    for (size_t a = 0; a < args_.size(); ++a) {
      const Arg& arg = args_[a];
      wire::Scope d(out_, track_event::kDebugAnnotations);
      wire::Varint(out_, annotation::kNameIid, annotation_iids_[a].first);
      switch (arg.kind) {
        case Arg::kInt: wire::Int64(out_, annotation::kInt, arg.i); break;
        case Arg::kDouble: wire::Double(out_, annotation::kDouble, arg.d); break;
        case Arg::kString:
          if (annotation_iids_[a].second != 0) {
            wire::Varint(out_, annotation::kStringIid, annotation_iids_[a].second);
          } else {
            wire::Bytes(out_, annotation::kString, trace_.str(arg.value));
          }
          break;
        case Arg::kInline: wire::Bytes(out_, annotation::kString, arg.text); break;
        case Arg::kInputs:
          for (const auto& [input, iid] : inputs_) {
            wire::Scope element(out_, annotation::kArrayValues);
            if (iid != 0) {
              wire::Varint(out_, annotation::kStringIid, iid);
            } else {
              wire::Bytes(out_, annotation::kString, input);
            }
          }
          break;
      }
    }
    for (uint32_t f = out_begin_[index]; f < out_begin_[index + 1]; ++f) {
      wire::Fixed64(out_, track_event::kFlowIds, out_ids_[f]);
    }
    for (uint32_t f = in_begin_[index]; f < in_begin_[index + 1]; ++f) {
      wire::Fixed64(out_, track_event::kTerminatingFlowIds, in_ids_[f]);
    }
  }

  // Splits "a, b:1, ^c" into inputs_, each name with its iid when it is a producer's node name
  // used more than once on this sequence (found among the slice's incoming dataflow: no text
  // lookup), else 0 and written inline. Inputs interned by their text would make the file
  // smaller but its gzip larger (an iid compresses worse than a repeated name does;
  // docs/formats.md §7).
  void SplitInputs(uint32_t index, std::string_view text) {
    inputs_.clear();
    for (;;) {
      const size_t comma = text.find(", ");
      const std::string_view input = text.substr(0, comma);
      uint64_t iid = 0;
      for (uint32_t f = in_begin_[index]; f < in_begin_[index + 1] && iid == 0; ++f) {
        const Flow& flow = trace_.flows()[in_ids_[f] - 1];
        const StringId producer = trace_.slice_name(trace_.slices()[flow.from_slice]);
        if (flow.kind == FlowKind::kDataflow && trace_.str(producer) == input && Repeated(producer, false)) {
          iid = Intern(strings_, producer, input, interned::kAnnotationStrings, interned_values_);
        }
      }
      inputs_.emplace_back(input, iid);
      if (comma == std::string_view::npos) break;
      text.remove_prefix(comma + 2);
    }
  }

  void End(int64_t ts, uint32_t sequence, uint64_t uuid) {
    wire::Scope p(out_, trace_proto::kPacket);
    wire::Varint(out_, packet::kTimestamp, Delta(ts));
    SequenceHeader(sequence, true);
    wire::Scope e(out_, packet::kTrackEvent);
    wire::Varint(out_, track_event::kType, track_event::kSliceEnd);
    if (uuid != default_uuid_) wire::Varint(out_, track_event::kTrackUuid, uuid);
  }

  const Trace& trace_;
  // Blocks of the node store whose nodes hold none of these are not even inflated.
  NodeReader nodes_{trace_, kNodeLabel | kNodeOutputs | kNodeKernel | kNodeMemcpy | kNodeCorrelation};
  tf::NodeExecStats node_;
  std::map<int, std::string> dtype_names_;
  wire::Buffer out_;
  std::string interned_names_, interned_categories_, interned_keys_, interned_values_;
  InternTable names_, categories_, keys_, strings_;
  uint32_t sequence_ = 0;
  int64_t last_ts_ = 0;
  uint64_t unit_ = 1;
  std::vector<Uses> uses_;
  uint32_t plan_ = 0;
  const bool has_nodes_ = trace_.has_step_stats();
  DetailReader details_{trace_, kDetailOutputs | kDetailShapes | kDetailAllocators | kDetailOpMemory};
  const bool has_details_ = details_.MayHave(kDetailOutputs | kDetailAllocators | kDetailOpMemory);
  const int64_t name_key_ = trace_.strings().Find("name");
  static constexpr size_t kScratch = 8;
  std::string scratch_[kScratch];
  size_t scratch_used_ = 0;
  std::vector<Arg> args_;
  std::vector<std::pair<uint64_t, uint64_t>> annotation_iids_;
  std::vector<std::pair<std::string_view, uint64_t>> inputs_;  // of the slice being written
  std::vector<Cursor> cursors_;
  uint64_t default_uuid_ = 0;
  std::vector<bool> needed_;
  std::vector<uint32_t> args_begin_, transfer_index_;
  std::vector<uint32_t> out_begin_, in_begin_;
  std::vector<uint64_t> out_ids_, in_ids_;
};

// ---------------------------------------------------------------------------------------------
// Reading.

SliceKind KindOfExportedCategory(std::string_view category) {
  for (SliceKind kind : {SliceKind::kOp, SliceKind::kKernel, SliceKind::kMemcpy, SliceKind::kMemset,
                         SliceKind::kCollective, SliceKind::kRuntime, SliceKind::kOther, SliceKind::kAnnotation,
                         SliceKind::kSync, SliceKind::kPythonFrame}) {
    if (SliceKindName(kind) == category) return kind;
  }
  // Categories other writers use (Kineto's names kept by a converter).
  if (category == "kernel" || category == "Kernel") return SliceKind::kKernel;
  if (category == "gpu_memcpy" || category == "Memcpy") return SliceKind::kMemcpy;
  if (category == "gpu_memset" || category == "Memset") return SliceKind::kMemset;
  return SliceKind::kOther;
}

struct ReadArg {
  std::string key;
  enum Kind { kInt, kDouble, kString } kind = kString;
  int64_t i = 0;
  double d = 0;
  std::string s;
  std::string Text() const {
    if (kind == kInt) return std::to_string(i);
    if (kind == kDouble) {
      char buffer[64];
      const int n = std::snprintf(buffer, sizeof buffer, "%.17g", d);
      return std::string(buffer, static_cast<size_t>(std::max(n, 0)));
    }
    return s;
  }
};

struct OpenSlice {
  int64_t start_ns = 0;
  std::string name;
  std::string category;
  std::vector<ReadArg> args;
  std::vector<uint64_t> flows_out, flows_in;
};

struct Sequence {
  std::unordered_map<uint64_t, std::string> names, categories, annotation_names, strings;
  std::unordered_map<uint32_t, int64_t> clock_offset;  // sequence clock -> trace clock: abs = ts + offset
  std::unordered_map<uint32_t, int64_t> incremental_last;  // incremental clocks: last value
  std::unordered_map<uint32_t, bool> incremental;
  std::unordered_map<uint32_t, int64_t> unit;
  std::unordered_map<uint64_t, double> counter_last;  // incremental counters: value so far
  uint32_t default_clock = 0;
  uint64_t default_track = 0;
  bool has_default_track = false;
};

class ProtoImporter {
 public:
  explicit ProtoImporter(std::string name) : name_(std::move(name)) {}

  // Reads packets in file order: all of a file at once, or its whole packets piece by piece
  // (`base`: the file offset of bytes[0], for messages).
  Status Packets(std::string_view bytes, size_t base) {
    wire::Reader top(bytes, base);
    wire::Field f;
    while (top.Next(f)) {
      if (f.number != trace_proto::kPacket || f.type != wire::kLength) {
        return InvalidInput(name_ + ": offset " + std::to_string(f.offset) +
                            ": not a Perfetto trace packet (field " + std::to_string(f.number) + ")");
      }
      RETURN_IF_ERROR(Packet(f));
    }
    if (top.failed()) return Damage(top.error_offset(), top.error());
    return Status::Ok();
  }

  StatusOr<Trace> Finish(int64_t preview_bytes_read) {
    builder_.import_stats().Add("perfetto_preview_bytes_read", preview_bytes_read);
    // Slices left open at the end close at the last instant seen.
    for (auto& [uuid, stack] : open_) {
      while (!stack.empty()) {
        builder_.import_stats().Add("perfetto_unclosed_slices_closed");
        Close(uuid, last_ts_);
      }
    }
    // The slices reach the builder track after track; what points at them follows.
    const std::vector<uint32_t> first = pending_.FirstIndices();
    auto index_of = [&](uint32_t track, uint32_t position) { return first[track] + position; };
    TrackSliceBuffer::Resolve(first, kernel_arg_tracks_, builder_.kernel_args());
    TrackSliceBuffer::Resolve(first, transfer_arg_tracks_, builder_.transfer_args());
    TrackSliceBuffer::Resolve(first, slice_arg_tracks_, builder_.slice_args());
    FreeStorage(kernel_arg_tracks_);
    FreeStorage(transfer_arg_tracks_);
    FreeStorage(slice_arg_tracks_);
    TrackSliceBuffer::Resolve(first, output_tracks_, builder_.detail_tables().mutable_outputs());
    TrackSliceBuffer::Resolve(first, allocator_tracks_, builder_.detail_tables().mutable_allocators());
    TrackSliceBuffer::Resolve(first, op_memory_tracks_, builder_.detail_tables().mutable_op_memory());
    pending_.MoveToBuilder();
    for (const auto& [id, ends] : flows_) {
      if (ends.first == kNoRef || ends.second == kNoRef) {
        builder_.import_stats().Add("perfetto_flows_without_both_ends");
        continue;
      }
      const uint32_t from = index_of(static_cast<uint32_t>(ends.first >> 32), static_cast<uint32_t>(ends.first));
      const uint32_t to = index_of(static_cast<uint32_t>(ends.second >> 32), static_cast<uint32_t>(ends.second));
      const FlowKind kind = IsDeviceWork(builder_.slice(to).kind) && !IsDeviceWork(builder_.slice(from).kind)
                                ? FlowKind::kLaunch
                                : FlowKind::kDataflow;
      builder_.AddFlow(from, to, kind);
    }
    for (auto& [uuid, counter] : counters_) {
      if (!counter.ts_ns.empty()) builder_.AddCounter(std::move(counter));
    }
    builder_.SetSource(SourceFormat::kPerfettoProto, name_);
    builder_.step_info().producer = "Perfetto protobuf";
    return std::move(builder_).Build();
  }

 private:
  // A slice before the hand-over to the builder: its track << 32 | its place in the track.
  static constexpr uint64_t kNoRef = ~uint64_t{0};

  Status Damage(size_t offset, const std::string& what) const {
    return InvalidInput(name_ + ": offset " + std::to_string(offset) + ": " + what +
                        " (truncated or corrupt Perfetto protobuf)");
  }

  std::string Text(std::string_view bytes) {
    if (IsValidUtf8(bytes)) return std::string(bytes);
    int64_t replaced = 0;
    std::string out = RepairUtf8(bytes, &replaced);
    builder_.import_stats().Add("invalid_utf8_bytes_replaced", replaced);
    return out;
  }

#define STEPSCOPE_WIRE_CHECK(reader) \
  if ((reader).failed()) return Damage((reader).error_offset(), (reader).error())

  Status Packet(const wire::Field& packet_field) {
    wire::Reader reader = wire::Nested(packet_field);
    wire::Field f;
    uint32_t sequence_id = 0;
    bool has_timestamp = false;
    uint64_t timestamp = 0;
    uint32_t clock_id = 0;
    bool has_clock = false;
    uint32_t flags = 0;
    wire::Field event, descriptor, interned_field, snapshot, packet_defaults;
    bool has_event = false, has_descriptor = false, has_interned = false, has_snapshot = false, has_defaults = false;
    bool other = false;
    while (reader.Next(f)) {
      switch (f.number) {
        case packet::kTimestamp: has_timestamp = true; timestamp = f.value; break;
        case packet::kSequenceId: sequence_id = static_cast<uint32_t>(f.value); break;
        case packet::kTimestampClockId: has_clock = true; clock_id = static_cast<uint32_t>(f.value); break;
        case packet::kSequenceFlags: flags = static_cast<uint32_t>(f.value); break;
        case packet::kIncrementalStateCleared: if (f.value != 0) flags |= packet::kSeqIncrementalStateCleared; break;
        case packet::kTrackEvent: event = f; has_event = f.type == wire::kLength; break;
        case packet::kTrackDescriptor: descriptor = f; has_descriptor = f.type == wire::kLength; break;
        case packet::kInternedData: interned_field = f; has_interned = f.type == wire::kLength; break;
        case packet::kClockSnapshot: snapshot = f; has_snapshot = f.type == wire::kLength; break;
        case packet::kDefaults: packet_defaults = f; has_defaults = f.type == wire::kLength; break;
        case 3: case 42: case 79: case 87: case 98: break;
        default: other = true; break;
      }
    }
    STEPSCOPE_WIRE_CHECK(reader);
    Sequence& seq = sequences_[sequence_id];
    if (flags & packet::kSeqIncrementalStateCleared) {
      seq.names.clear();
      seq.categories.clear();
      seq.annotation_names.clear();
      seq.strings.clear();
      seq.counter_last.clear();
      for (auto& [id, last] : seq.incremental_last) last = 0;
    }
    if (has_defaults) RETURN_IF_ERROR(Defaults(packet_defaults, seq));
    if (has_interned) RETURN_IF_ERROR(Interned(interned_field, seq));
    if (has_snapshot) RETURN_IF_ERROR(Snapshot(snapshot, seq));
    if (has_descriptor) RETURN_IF_ERROR(Descriptor(descriptor));
    if (has_event) {
      if (!has_clock) clock_id = seq.default_clock;
      int64_t ts = static_cast<int64_t>(timestamp);
      if (clock_id >= 64 && clock_id < 128) {
        const auto offset = seq.clock_offset.find(clock_id);
        if (offset == seq.clock_offset.end()) {
          builder_.import_stats().Add("perfetto_events_on_unknown_clock_skipped");
          return Status::Ok();
        }
        // A delta or a unit that takes the time out of int64 is a bad time, counted and skipped.
        bool overflow = false;
        if (seq.incremental[clock_id]) {
          int64_t& last = seq.incremental_last[clock_id];
          int64_t sum = 0;
          overflow = __builtin_add_overflow(last, ts, &sum);
          if (!overflow) last = sum;
          ts = last;
        }
        const int64_t unit = seq.unit.count(clock_id) ? seq.unit[clock_id] : 1;
        overflow = overflow || __builtin_mul_overflow(ts, unit, &ts) || __builtin_add_overflow(ts, offset->second, &ts);
        if (overflow) {
          builder_.import_stats().Add("event_bad_time_skipped");
          return Status::Ok();
        }
      } else if (!has_timestamp) {
        builder_.import_stats().Add("perfetto_events_without_timestamp_skipped");
        return Status::Ok();
      }
      if (ts < -(int64_t{1} << 62) || ts > (int64_t{1} << 62)) {
        builder_.import_stats().Add("event_bad_time_skipped");
        return Status::Ok();
      }
      last_ts_ = std::max(last_ts_, ts);
      RETURN_IF_ERROR(Event(event, seq, ts));
    } else if (other && !has_descriptor && !has_snapshot) {
      builder_.import_stats().Add("perfetto_other_packets_skipped");
    }
    return Status::Ok();
  }

  Status Defaults(const wire::Field& field, Sequence& seq) {
    wire::Reader reader = wire::Nested(field);
    wire::Field f;
    while (reader.Next(f)) {
      if (f.number == defaults::kTimestampClockId) seq.default_clock = static_cast<uint32_t>(f.value);
      if (f.number == defaults::kTrackEventDefaults && f.type == wire::kLength) {
        wire::Reader inner = wire::Nested(f);
        wire::Field g;
        while (inner.Next(g)) {
          if (g.number == event_defaults::kTrackUuid) {
            seq.default_track = g.value;
            seq.has_default_track = true;
          }
        }
        STEPSCOPE_WIRE_CHECK(inner);
      }
    }
    STEPSCOPE_WIRE_CHECK(reader);
    return Status::Ok();
  }

  Status Interned(const wire::Field& field, Sequence& seq) {
    wire::Reader reader = wire::Nested(field);
    wire::Field f;
    while (reader.Next(f)) {
      std::unordered_map<uint64_t, std::string>* table = nullptr;
      switch (f.number) {
        case interned::kEventCategories: table = &seq.categories; break;
        case interned::kEventNames: table = &seq.names; break;
        case interned::kAnnotationNames: table = &seq.annotation_names; break;
        case interned::kAnnotationStrings: table = &seq.strings; break;
        default: continue;
      }
      if (f.type != wire::kLength) continue;
      wire::Reader entry = wire::Nested(f);
      wire::Field g;
      uint64_t iid = 0;
      std::string_view text;
      while (entry.Next(g)) {
        if (g.number == interned::kIid) iid = g.value;
        if (g.number == interned::kName && g.type == wire::kLength) text = g.bytes;
      }
      STEPSCOPE_WIRE_CHECK(entry);
      (*table)[iid] = Text(text);
    }
    STEPSCOPE_WIRE_CHECK(reader);
    return Status::Ok();
  }

  Status Snapshot(const wire::Field& field, Sequence& seq) {
    wire::Reader reader = wire::Nested(field);
    wire::Field f;
    struct Reading {
      uint32_t id = 0;
      int64_t ts = 0;
      bool incremental = false;
      int64_t unit = 1;
    };
    std::vector<Reading> readings;
    while (reader.Next(f)) {
      if (f.number != clock_snapshot::kClocks || f.type != wire::kLength) continue;
      wire::Reader c = wire::Nested(f);
      wire::Field g;
      Reading r;
      while (c.Next(g)) {
        if (g.number == clock::kClockId) r.id = static_cast<uint32_t>(g.value);
        if (g.number == clock::kTimestamp) r.ts = static_cast<int64_t>(g.value);
        if (g.number == clock::kIsIncremental) r.incremental = g.value != 0;
        if (g.number == clock::kUnitMultiplierNs && g.value > 0 && g.value < (1u << 30)) r.unit = static_cast<int64_t>(g.value);
      }
      STEPSCOPE_WIRE_CHECK(c);
      readings.push_back(r);
    }
    STEPSCOPE_WIRE_CHECK(reader);
    // The trace clock: BOOTTIME, else REALTIME, else the first builtin clock of the snapshot.
    const Reading* reference = nullptr;
    for (uint32_t preferred : {uint32_t{clock::kBoottime}, uint32_t{clock::kRealtime}}) {
      for (const Reading& r : readings) {
        if (reference == nullptr && r.id == preferred) reference = &r;
      }
    }
    for (const Reading& r : readings) {
      if (reference == nullptr && r.id < 64) reference = &r;
    }
    if (reference == nullptr) return Status::Ok();
    for (const Reading& r : readings) {
      if (r.id < 64 || r.id >= 128) continue;
      seq.unit[r.id] = r.unit;
      seq.incremental[r.id] = r.incremental;
      seq.incremental_last[r.id] = r.incremental ? r.ts : 0;
      // abs = value * unit + offset, where an incremental clock's value accumulates its deltas
      // from the snapshot's reading.
      int64_t scaled = 0, offset = 0;
      if (__builtin_mul_overflow(r.ts, r.unit, &scaled) || __builtin_sub_overflow(reference->ts, scaled, &offset)) {
        builder_.import_stats().Add("perfetto_clock_readings_out_of_range_skipped");
        continue;  // its events land on an unknown clock, counted there
      }
      seq.clock_offset[r.id] = offset;
    }
    return Status::Ok();
  }

  Status Descriptor(const wire::Field& field) {
    wire::Reader reader = wire::Nested(field);
    wire::Field f;
    uint64_t uuid = 0, parent = 0;
    bool has_parent = false, counter = false, process = false, incremental = false;
    std::string name;
    int64_t rank = 0, value_unit = 1;
    std::optional<TrackKind> kind;
    while (reader.Next(f)) {
      switch (f.number) {
        case track_descriptor::kUuid: uuid = f.value; break;
        case track_descriptor::kParentUuid: parent = f.value; has_parent = true; break;
        case track_descriptor::kName:
        case track_descriptor::kStaticName:
          if (f.type == wire::kLength) name = Text(f.bytes);
          break;
        case track_descriptor::kCounter: {
          counter = true;
          if (f.type != wire::kLength) break;
          wire::Reader inner = wire::Nested(f);
          wire::Field g;
          while (inner.Next(g)) {
            if (g.number == counter_descriptor::kIsIncremental) incremental = g.value != 0;
            // A unit that is no positive int64 (or beyond 2^40) is ignored: values stay as written.
            if (g.number == counter_descriptor::kUnitMultiplier && g.value > 0 && g.value <= (uint64_t{1} << 40)) {
              value_unit = static_cast<int64_t>(g.value);
            }
          }
          STEPSCOPE_WIRE_CHECK(inner);
          break;
        }
        case track_descriptor::kSiblingOrderRank: rank = static_cast<int64_t>(f.value); break;
        case track_descriptor::kStepscopeTrackKind:
          if (f.type == wire::kLength) kind = TrackKindOfName(Text(f.bytes));
          break;
        case track_descriptor::kProcess:
        case track_descriptor::kThread: {
          if (f.type != wire::kLength) break;
          process = process || f.number == track_descriptor::kProcess;
          wire::Reader inner = wire::Nested(f);
          wire::Field g;
          while (inner.Next(g)) {
            if (name.empty() && g.type == wire::kLength &&
                ((f.number == track_descriptor::kProcess && g.number == process_descriptor::kProcessName) ||
                 (f.number == track_descriptor::kThread && g.number == thread_descriptor::kThreadName))) {
              name = Text(g.bytes);
            }
          }
          STEPSCOPE_WIRE_CHECK(inner);
          break;
        }
        default: break;
      }
    }
    STEPSCOPE_WIRE_CHECK(reader);
    Described& d = described_[uuid];
    d.parent = parent;
    d.has_parent = has_parent;
    d.name = name.empty() ? "track " + std::to_string(uuid) : name;
    d.counter = counter;
    d.counter_incremental = incremental;
    d.counter_unit = value_unit;
    d.process = process;
    d.rank = rank;
    d.kind = kind;
    return Status::Ok();
  }

  struct Described {
    uint64_t parent = 0;
    bool has_parent = false;
    bool counter = false;
    bool counter_incremental = false;  // values are deltas on their sequence
    int64_t counter_unit = 1;          // values are in this many units
    bool process = false;
    int64_t rank = 0;
    std::string name;
    std::optional<TrackKind> kind;  // as our writer names it; other producers' lanes are guessed
  };

  // The Trace track of a Perfetto track (created with its ancestors on first use).
  uint32_t TrackFor(uint64_t uuid, int depth = 0) {
    if (auto it = tracks_.find(uuid); it != tracks_.end()) return it->second;
    Track track;
    const auto d = described_.find(uuid);
    int32_t parent = -1;
    std::string name = uuid == 0 ? "global" : "track " + std::to_string(uuid);
    if (d != described_.end()) {
      name = d->second.name;
      if (d->second.has_parent && depth < 32 && d->second.parent != uuid) {
        parent = static_cast<int32_t>(TrackFor(d->second.parent, depth + 1));
      }
      track.sort_index = static_cast<int32_t>(std::clamp<int64_t>(d->second.rank, INT32_MIN, INT32_MAX));
    }
    int level = 0;
    for (int32_t x = parent; x >= 0; x = builder_.tracks()[x].parent) ++level;
    track.parent = parent;
    track.name = builder_.Intern(name);
    track.full_name = track.name;
    if (d != described_.end() && d->second.kind) {
      track.kind = *d->second.kind;
    } else if (level == 0) {
      track.kind = TrackKind::kHost;
    } else if (level == 1) {
      track.kind = TrackKind::kDevice;
    } else if (name.find("stream:all") != std::string::npos) {
      track.kind = TrackKind::kGpuAllStreams;
    } else if (name.find("memcpy") != std::string::npos) {
      // A CPU device's /memcpy lane holds the host's copies; a GPU's repeats its streams'.
      const std::string_view device =
          parent >= 0 ? builder_.strings().Get(builder_.tracks()[static_cast<size_t>(parent)].name) : "";
      track.kind = device.find("CPU") != std::string_view::npos ? TrackKind::kHostMemcpy : TrackKind::kGpuMemcpy;
    } else if (name.find("stream") != std::string::npos || name.find("Stream") != std::string::npos) {
      track.kind = TrackKind::kGpuStream;
    } else if (name.find("comm") != std::string::npos || name.find("collective") != std::string::npos) {
      track.kind = TrackKind::kCollective;
    } else {
      track.kind = TrackKind::kOpLane;
    }
    const uint32_t index = builder_.AddTrack(track);
    tracks_[uuid] = index;
    return index;
  }

  // One debug annotation; an array's values come as one text, joined by ", " (as a label's input
  // list reads), nested arrays at most a few levels deep.
  Status Annotation(const wire::Field& field, Sequence& seq, ReadArg& arg, int depth = 0) {
    wire::Reader reader = wire::Nested(field);
    wire::Field f;
    bool array = false;
    while (reader.Next(f)) {
      if (f.number == annotation::kArrayValues && f.type == wire::kLength && depth < 4) {
        ReadArg element;
        RETURN_IF_ERROR(Annotation(f, seq, element, depth + 1));
        if (array) {
          arg.s += ", ";
          arg.s += element.Text();
        } else {
          arg.s = element.Text();
        }
        arg.kind = ReadArg::kString;
        array = true;
        continue;
      }
      switch (f.number) {
        case annotation::kNameIid: arg.key = seq.annotation_names[f.value]; break;
        case annotation::kName: if (f.type == wire::kLength) arg.key = Text(f.bytes); break;
        case annotation::kBool: arg.kind = ReadArg::kInt; arg.i = f.value != 0; break;
        case annotation::kUint: case annotation::kInt: case annotation::kPointer:
          arg.kind = ReadArg::kInt;
          arg.i = static_cast<int64_t>(f.value);
          break;
        case annotation::kDouble: {
          arg.kind = ReadArg::kDouble;
          std::memcpy(&arg.d, &f.value, 8);
          break;
        }
        case annotation::kString: if (f.type == wire::kLength) { arg.kind = ReadArg::kString; arg.s = Text(f.bytes); } break;
        case annotation::kStringIid: arg.kind = ReadArg::kString; arg.s = seq.strings[f.value]; break;
        default: break;
      }
    }
    STEPSCOPE_WIRE_CHECK(reader);
    return Status::Ok();
  }

  Status Event(const wire::Field& field, Sequence& seq, int64_t ts) {
    wire::Reader reader = wire::Nested(field);
    wire::Field f;
    uint32_t type = 0;
    uint64_t uuid = seq.has_default_track ? seq.default_track : 0;
    std::string name, category;
    bool has_counter = false;
    double counter_value = 0;
    OpenSlice slice;
    slice.start_ns = ts;
    while (reader.Next(f)) {
      switch (f.number) {
        case track_event::kType: type = static_cast<uint32_t>(f.value); break;
        case track_event::kTrackUuid: uuid = f.value; break;
        case track_event::kNameIid: name = seq.names[f.value]; break;
        case track_event::kName: if (f.type == wire::kLength) name = Text(f.bytes); break;
        case track_event::kCategoryIids:
          if (category.empty() && f.type == wire::kVarint) category = seq.categories[f.value];
          break;
        case track_event::kCategories: if (category.empty() && f.type == wire::kLength) category = Text(f.bytes); break;
        case track_event::kCounterValue: has_counter = true; counter_value = static_cast<double>(static_cast<int64_t>(f.value)); break;
        case track_event::kDoubleCounterValue: has_counter = true; std::memcpy(&counter_value, &f.value, 8); break;
        case track_event::kDebugAnnotations:
          if (f.type == wire::kLength) {
            ReadArg arg;
            RETURN_IF_ERROR(Annotation(f, seq, arg));
            slice.args.push_back(std::move(arg));
          }
          break;
        case track_event::kFlowIds: case track_event::kFlowIdsOld: slice.flows_out.push_back(f.value); break;
        case track_event::kTerminatingFlowIds: case track_event::kTerminatingFlowIdsOld: slice.flows_in.push_back(f.value); break;
        default: break;
      }
    }
    STEPSCOPE_WIRE_CHECK(reader);
    switch (type) {
      case track_event::kSliceBegin:
        slice.name = std::move(name);
        slice.category = std::move(category);
        open_[uuid].push_back(std::move(slice));
        break;
      case track_event::kSliceEnd:
        if (open_[uuid].empty()) {
          builder_.import_stats().Add("perfetto_unmatched_end_skipped");
        } else {
          Close(uuid, ts);
        }
        break;
      case track_event::kInstant:
        slice.name = std::move(name);
        slice.category = std::move(category);
        open_[uuid].push_back(std::move(slice));
        Close(uuid, ts);
        break;
      case track_event::kCounter: {
        if (!has_counter) break;
        auto [it, added] = counters_.try_emplace(uuid);
        if (added) {
          const auto d = described_.find(uuid);
          it->second.name = builder_.Intern(d != described_.end() ? d->second.name : "counter " + std::to_string(uuid));
          it->second.unit = "bytes";
          it->second.origin = "perfetto counter track";
          if (d != described_.end() && d->second.has_parent) it->second.track = static_cast<int32_t>(TrackFor(d->second.parent));
        }
        const auto d = described_.find(uuid);
        if (d != described_.end() && d->second.counter_incremental) counter_value = seq.counter_last[uuid] += counter_value;
        if (d != described_.end()) counter_value *= static_cast<double>(d->second.counter_unit);
        // Beyond int64 a value is clamped (a corrupt delta must not overflow the conversion).
        counter_value = std::isnan(counter_value) ? 0.0 : std::clamp(counter_value, -9.2e18, 9.2e18);
        it->second.ts_ns.push_back(ts);
        it->second.values.push_back(static_cast<int64_t>(std::llround(counter_value)));
        break;
      }
      default:
        builder_.import_stats().Add("perfetto_events_of_unknown_type_skipped");
        break;
    }
    return Status::Ok();
  }

  void Close(uint64_t uuid, int64_t end_ns) {
    std::vector<OpenSlice>& stack = open_[uuid];
    OpenSlice open = std::move(stack.back());
    stack.pop_back();
    SliceRecord s;
    s.start_ns = open.start_ns;
    // Within the trace's time limit, as every reader keeps it: a duration of at most 2^62 ns that
    // ends by 2^62 (so sums and differences of times fit).
    const int64_t longest = (int64_t{1} << 62) - std::max<int64_t>(open.start_ns, 0);
    s.dur_ns = std::clamp<int64_t>(end_ns - open.start_ns, 0, longest);
    if (end_ns - open.start_ns > longest) builder_.import_stats().Add("slice_duration_clamped");
    s.track = TrackFor(uuid);
    s.kind = KindOfExportedCategory(open.category);
    std::string node;
    KernelArgs kernel;
    TransferArgs transfer;
    bool has_kernel = false, has_transfer = false;
    std::vector<const ReadArg*> rest, details;
    for (const ReadArg& arg : open.args) {
      const std::string& k = arg.key;
      if (k == "name" && arg.kind == ReadArg::kString && &arg == &open.args.front()) node = arg.s;
      else if (IsDetailKey(k)) details.push_back(&arg);
      else if (s.kind == SliceKind::kKernel && (k == "grid" || k == "block")) {
        uint32_t* target = k == "grid" ? kernel.grid : kernel.block;
        std::string_view text = arg.s;
        for (int i = 0; i < 3; ++i) {
          const size_t comma = text.find(',');
          uint32_t v = 0;
          std::from_chars(text.data(), text.data() + (comma == std::string_view::npos ? text.size() : comma), v);
          target[i] = v;
          if (comma == std::string_view::npos) break;
          text.remove_prefix(comma + 1);
        }
        has_kernel = true;
      } else if (s.kind == SliceKind::kKernel && arg.kind != ReadArg::kString &&
                 (k == "registers per thread" || k == "shared memory" || k == "blocks per SM" || k == "warps per SM" ||
                  k == "est. achieved occupancy %" || k == "device" || k == "stream" || k == "correlation")) {
        const double v = arg.kind == ReadArg::kInt ? static_cast<double>(arg.i) : arg.d;
        if (k == "registers per thread") kernel.registers_per_thread = static_cast<int32_t>(v);
        if (k == "shared memory") kernel.shared_memory_bytes = static_cast<int32_t>(v);
        if (k == "blocks per SM") kernel.blocks_per_sm = static_cast<float>(v);
        if (k == "warps per SM") kernel.warps_per_sm = static_cast<float>(v);
        if (k == "est. achieved occupancy %") kernel.occupancy_percent = static_cast<float>(v);
        if (k == "device") kernel.device = static_cast<int32_t>(v);
        if (k == "stream") kernel.stream = static_cast<int32_t>(v);
        if (k == "correlation") kernel.correlation = arg.i;
        has_kernel = true;
      } else if ((s.kind == SliceKind::kMemcpy || s.kind == SliceKind::kMemset) && arg.kind != ReadArg::kString &&
                 (k == "bytes" || k == "memory bandwidth (GB/s)" || k == "device" || k == "stream" || k == "correlation")) {
        const double v = arg.kind == ReadArg::kInt ? static_cast<double>(arg.i) : arg.d;
        if (k == "bytes") transfer.bytes = arg.i;
        if (k == "memory bandwidth (GB/s)") transfer.bandwidth_gbps = static_cast<float>(v);
        if (k == "device") transfer.device = static_cast<int32_t>(v);
        if (k == "stream") transfer.stream = static_cast<int32_t>(v);
        if (k == "correlation") transfer.correlation = arg.i;
        has_transfer = true;
      } else {
        rest.push_back(&arg);
      }
    }
    s.op_type = builder_.Intern(open.name);
    s.name = node.empty() ? s.op_type : builder_.Intern(node);
    // Slices close inner first and the tracks of a sequence interleave: they wait per track.
    const TrackSliceBuffer::Ref ref = pending_.Add(s);
    if (has_kernel) {
      kernel.slice = ref.position;
      builder_.AddKernelArgs(kernel);
      kernel_arg_tracks_.push_back(ref.track);
    }
    if (has_transfer) {
      transfer.slice = ref.position;
      builder_.AddTransferArgs(transfer);
      transfer_arg_tracks_.push_back(ref.track);
    }
    for (const ReadArg* arg : details) {
      if (!AddDetail(*arg, ref, s.start_ns)) rest.push_back(arg);
    }
    for (const ReadArg* arg : rest) {
      if (arg->kind == ReadArg::kInt) {
        builder_.AddSliceArg(ref.position, builder_.Intern(arg->key), arg->i);
      } else {
        builder_.AddSliceArg(ref.position, builder_.Intern(arg->key), builder_.Intern(arg->Text()));
      }
      slice_arg_tracks_.push_back(ref.track);
    }
    const uint64_t packed = (static_cast<uint64_t>(ref.track) << 32) | ref.position;
    for (uint64_t id : open.flows_out) {
      auto& ends = flows_.try_emplace(id, kNoRef, kNoRef).first->second;
      if (ends.first == kNoRef) ends.first = packed;
    }
    for (uint64_t id : open.flows_in) {
      auto& ends = flows_.try_emplace(id, kNoRef, kNoRef).first->second;
      ends.second = packed;
    }
  }

#undef STEPSCOPE_WIRE_CHECK

  static bool IsDetailKey(std::string_view key) {
    return key == kOutputsKey || key == kAllocatorsKey || key == kTempMemoryKey || key == kPersistentMemoryKey;
  }

  // One of our writer's typed memory details into the trace's tables; false (kept as a free-form
  // argument, and counted) when it does not read as one.
  bool AddDetail(const ReadArg& arg, const TrackSliceBuffer::Ref& ref, int64_t start_ns) {
    DetailTables& tables = builder_.detail_tables();
    if (arg.key == kTempMemoryKey || arg.key == kPersistentMemoryKey) {
      if (arg.kind != ReadArg::kInt) return Undecoded();
      // The two come together: the second fills the row the first began.
      if (op_memory_tracks_.empty() || pending_memory_ != ref.position || op_memory_tracks_.back() != ref.track) {
        tables.AddOpMemory({ref.position, 0, 0});
        op_memory_tracks_.push_back(ref.track);
        pending_memory_ = ref.position;
      }
      OpMemoryRow& row = tables.mutable_op_memory().back();
      (arg.key == kTempMemoryKey ? row.temp_bytes : row.persistent_bytes) = arg.i;
      return true;
    }
    if (arg.kind != ReadArg::kString) return Undecoded();
    const nlohmann::json list = nlohmann::json::parse(arg.s, nullptr, false);
    if (!list.is_array()) return Undecoded();
    auto integer = [](const nlohmann::json& e, const char* key) {
      const auto it = e.find(key);
      return it != e.end() && it->is_number_integer() ? it->get<int64_t>() : int64_t{0};
    };
    auto text = [](const nlohmann::json& e, const char* key) {
      const auto it = e.find(key);
      return it != e.end() && it->is_string() ? it->get<std::string>() : std::string();
    };
    for (const nlohmann::json& e : list) {
      if (!e.is_object()) return Undecoded();
    }
    if (arg.key == kOutputsKey) {
      for (const nlohmann::json& e : list) {
        OutputRow row;
        row.slice = ref.position;
        row.slot = static_cast<int32_t>(integer(e, "slot"));
        row.dtype = builder_.Intern(text(e, "dtype"));
        row.has_allocation = e.contains("allocator");
        row.allocator = builder_.Intern(text(e, "allocator"));
        row.requested_bytes = integer(e, "requested_bytes");
        row.allocated_bytes = integer(e, "allocated_bytes");
        row.allocation_id = integer(e, "allocation_id");
        std::vector<int64_t> shape;
        if (const auto it = e.find("shape"); it != e.end() && it->is_array()) {
          for (const nlohmann::json& dim : *it) shape.push_back(dim.is_number_integer() ? dim.get<int64_t>() : -1);
        }
        tables.AddOutput(row, shape);
        output_tracks_.push_back(ref.track);
      }
      return true;
    }
    for (const nlohmann::json& e : list) {
      AllocatorRow row;
      row.slice = ref.position;
      row.allocator = builder_.Intern(text(e, "allocator"));
      row.total_bytes = integer(e, "total_bytes");
      row.peak_bytes = integer(e, "peak_bytes");
      row.live_bytes = integer(e, "live_bytes");
      row.bytes_in_use = integer(e, "bytes_in_use");
      std::vector<AllocationRecord> records;
      if (const auto it = e.find("records"); it != e.end() && it->is_array()) {
        for (const nlohmann::json& r : *it) {
          if (!r.is_array() || r.size() != 2 || !r[0].is_number_integer() || !r[1].is_number_integer()) continue;
          records.push_back({SaturatingAdd(start_ns, r[0].get<int64_t>()), r[1].get<int64_t>()});
        }
      }
      tables.AddAllocator(row, records);
      allocator_tracks_.push_back(ref.track);
    }
    return true;
  }
  bool Undecoded() {
    builder_.import_stats().Add("perfetto_detail_annotation_kept_as_arg");
    return false;
  }

  std::string name_;
  TraceBuilder builder_;
  std::unordered_map<uint32_t, Sequence> sequences_;
  std::unordered_map<uint64_t, Described> described_;
  std::unordered_map<uint64_t, uint32_t> tracks_;
  std::unordered_map<uint64_t, std::vector<OpenSlice>> open_;
  std::map<uint64_t, CounterSeries> counters_;
  std::map<uint64_t, std::pair<uint64_t, uint64_t>> flows_;  // by flow id: its ends (kNoRef: none yet)
  TrackSliceBuffer pending_{builder_};
  // The track of each kernel's, copy's and free-form argument (whose `slice` is a place in the
  // track until Finish()).
  std::vector<uint32_t> kernel_arg_tracks_, transfer_arg_tracks_, slice_arg_tracks_;
  // Likewise for the typed memory details' rows.
  std::vector<uint32_t> output_tracks_, allocator_tracks_, op_memory_tracks_;
  uint32_t pending_memory_ = UINT32_MAX;
  int64_t last_ts_ = 0;
};

}  // namespace

std::string ExportPerfettoProto(const Trace& trace) { return ProtoExporter(trace).Run(); }

StatusOr<Trace> ReadPerfettoProto(std::string_view bytes, const std::string& name) {
  if (bytes.empty()) return InvalidInput(name + ": file is empty");
  ProtoImporter importer(name);
  RETURN_IF_ERROR(importer.Packets(bytes, 0));
  return importer.Finish(0);
}

namespace {

// The end of the last whole packet at the start of `bytes` (0 when none is whole yet).
size_t WholePackets(std::string_view bytes) {
  size_t whole = 0;
  for (size_t pos = 0; pos < bytes.size();) {
    uint64_t tag = 0, length = 0;
    if (!ReadVarint(bytes, pos, tag) || tag != 0x0a || !ReadVarint(bytes, pos, length)) break;
    if (length > bytes.size() - pos) break;
    pos += static_cast<size_t>(length);
    whole = pos;
  }
  return whole;
}

}  // namespace

StatusOr<Trace> ReadPerfettoProto(FileReader& file, std::string bytes, const std::string& name,
                                  const PerfettoStreamOptions& options) {
  ProtoImporter importer(name);
  const size_t limit = options.preview_bytes > 0 ? static_cast<size_t>(options.preview_bytes) : SIZE_MAX;
  size_t chunk = std::min(options.chunk_bytes, limit);
  size_t base = 0;  // file offset of bytes[0]
  bool end = false;  // the file is read to its end
  for (;;) {
    if (!end && bytes.size() < chunk) {
      const size_t had = bytes.size();
      bytes.resize(chunk);
      ASSIGN_OR_RETURN(const size_t got, file.Read({bytes.data() + had, chunk - had}));
      bytes.resize(had + got);
      end = had + got < chunk;
    }
    if (base == 0 && bytes.empty()) return InvalidInput(name + ": file is empty");
    if (!end && base + bytes.size() >= limit) {
      // A preview: the packets whole within the first `limit` bytes, unless the file ends there.
      const size_t whole = WholePackets(std::string_view(bytes).substr(0, limit - base));
      if (whole == 0 && base == 0) return InvalidInput(name + ": no whole Perfetto packet in its first " + std::to_string(limit) + " bytes");
      RETURN_IF_ERROR(importer.Packets(std::string_view(bytes).substr(0, whole), base));
      return importer.Finish(static_cast<int64_t>(base + whole));
    }
    const size_t whole = WholePackets(bytes);
    if (whole == 0) {
      if (bytes.empty()) break;
      // Not a packet, or the file ends inside one: the reader names the damage and its offset.
      if (end || static_cast<unsigned char>(bytes[0]) != 0x0a) {
        RETURN_IF_ERROR(importer.Packets(bytes, base));
        break;
      }
      chunk = std::min(chunk * 2, limit);  // one packet longer than the buffer
      continue;
    }
    RETURN_IF_ERROR(importer.Packets(std::string_view(bytes).substr(0, whole), base));
    bytes.erase(0, whole);
    base += whole;
    if (options.on_progress && !options.on_progress(static_cast<int64_t>(base))) {
      return Status(StatusCode::kCancelled, name + ": reading was cancelled");
    }
  }
  return importer.Finish(0);
}

}  // namespace stepscope::trace
