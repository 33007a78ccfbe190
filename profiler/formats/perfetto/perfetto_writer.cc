// Writes a Trace as a Perfetto protobuf trace (perfetto_proto.h says what goes where): a
// descriptor sequence for the tracks, then a packet sequence per host with its events in time
// order (perfetto_exporter.h).
#include "profiler/formats/perfetto/perfetto_proto.h"

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
#include "profiler/formats/perfetto/perfetto_exporter.h"
#include "profiler/formats/perfetto/perfetto_fields.h"

namespace stepscope::trace::perfetto_internal {

using namespace perfetto_fields;  // the field numbers read as in the protos

std::string ProtoExporter::Run() {
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

void ProtoExporter::IndexFlows() {
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

void ProtoExporter::IndexArgs() {
  const size_t n = trace_.slices().size();
  const auto& args = trace_.all_slice_args();
  args_begin_.assign(n + 1, 0);
  for (const SliceArg& arg : args) ++args_begin_[arg.slice + 1];
  for (size_t i = 0; i < n; ++i) args_begin_[i + 1] += args_begin_[i];
  transfer_index_.assign(trace_.all_transfer_args().empty() ? 0 : n, kNoArgs);
  for (size_t k = 0; k < trace_.all_transfer_args().size(); ++k) transfer_index_[trace_.all_transfer_args()[k].slice] = static_cast<uint32_t>(k);
}

const TransferArgs* ProtoExporter::TransferOf(uint32_t slice) const {
  if (transfer_index_.empty() || transfer_index_[slice] == kNoArgs) return nullptr;
  return &trace_.all_transfer_args()[transfer_index_[slice]];
}

void ProtoExporter::SequenceHeader(uint32_t sequence, bool incremental) {
  wire::Varint(out_, packet::kSequenceId, sequence);
  if (incremental) wire::Varint(out_, packet::kSequenceFlags, packet::kSeqNeedsIncrementalState);
}

void ProtoExporter::BeginSequence(uint32_t sequence, uint64_t track_uuid, uint64_t unit) {
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

uint64_t ProtoExporter::ClockUnit(uint64_t unit, int64_t ts) {
  if (unit == 1) return 1;
  const uint64_t magnitude = ts < 0 ? uint64_t{0} - static_cast<uint64_t>(ts) : static_cast<uint64_t>(ts);
  if (unit != 0 && magnitude % unit == 0) return unit;  // the common case: one division
  return std::gcd(unit, magnitude);
}

uint64_t ProtoExporter::SequenceUnit(uint64_t divisor) {
  if (divisor == 0) return 1;
  return divisor < (uint64_t{1} << 30) ? divisor : std::gcd(divisor, uint64_t{1000000000});
}

uint64_t ProtoExporter::PlanTrack(uint32_t t, uint64_t unit) {
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

ProtoExporter::Uses& ProtoExporter::Use(StringId id) {
  Uses& u = uses_[id];
  if (u.plan != plan_) u = Uses{plan_, 0, 0};
  return u;
}

bool ProtoExporter::Repeated(StringId id, bool as_name) {
  const Uses& u = Use(id);
  return (as_name ? u.names : u.values) >= 2;
}

uint64_t ProtoExporter::Delta(int64_t ts) {
  const int64_t delta = ts - last_ts_;
  last_ts_ = ts;
  return static_cast<uint64_t>(std::max<int64_t>(delta, 0)) / unit_;
}

void ProtoExporter::Descriptor(uint32_t t, uint32_t root) {
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

void ProtoExporter::CounterDescriptor(size_t c) {
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

int64_t ProtoExporter::CounterValueUnit(size_t c) const {
  uint64_t unit = 0;
  for (int64_t v : trace_.counters()[c].values) {
    const uint64_t magnitude = v < 0 ? uint64_t{0} - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
    if (unit != 0 && magnitude % unit == 0) continue;  // the common case: one division
    unit = std::gcd(unit, magnitude);
    if (unit == 1) break;
  }
  return unit == 0 || unit > (uint64_t{1} << 40) ? 1 : static_cast<int64_t>(unit);
}

ProtoExporter::Cursor ProtoExporter::TrackCursor(uint32_t t) {
  Cursor c;
  c.track = t;
  c.uuid = TrackUuid(t);
  return c;
}

ProtoExporter::Cursor ProtoExporter::CounterCursor(size_t index) {
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

bool ProtoExporter::Peek(Cursor& c, int64_t& ts) {
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

void ProtoExporter::Step(Cursor& c, uint32_t sequence) {
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

void ProtoExporter::Merge(uint32_t sequence, uint64_t default_uuid) {
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

void ProtoExporter::HostSequence(uint32_t root, const std::vector<int32_t>& root_of, uint32_t& sequence) {
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

}  // namespace stepscope::trace::perfetto_internal

namespace stepscope::trace {

std::string ExportPerfettoProto(const Trace& trace) { return perfetto_internal::ProtoExporter(trace).Run(); }

}  // namespace stepscope::trace
