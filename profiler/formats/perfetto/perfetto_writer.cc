// Writes a Trace as a Perfetto protobuf trace (perfetto_proto.h says what goes where): a
// descriptor sequence for the tracks, then a packet sequence per host with its events in time
// order, text interned per sequence.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <map>
#include <numeric>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "profiler/formats/common/proto_wire.h"
#include "profiler/formats/perfetto/perfetto_fields.h"
#include "profiler/formats/perfetto/perfetto_proto.h"
#include "profiler/trace/node_store.h"
#include "profiler/trace/slice_details.h"
#include "stepscope/tf/run_metadata.pb.h"

namespace stepscope::trace {
namespace {

using namespace perfetto_fields;  // the field numbers read as in the protos

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
    kKeyInputs, kKeyMemory, kKeyCount
  };
  static constexpr std::string_view kKeyNames[kKeyCount] = {
      "name", "grid", "block", "registers per thread", "shared memory", "blocks per SM", "warps per SM",
      "est. achieved occupancy %", "device", "stream", "correlation", "bytes", "memory bandwidth (GB/s)",
      "label", "kind", "output shapes", "inputs", "memory"};

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

}  // namespace

std::string ExportPerfettoProto(const Trace& trace) { return ProtoExporter(trace).Run(); }

}  // namespace stepscope::trace
