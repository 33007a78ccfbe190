// Reads a Perfetto protobuf trace (perfetto_proto.h says what it takes): packets whole or a
// piece of the file at a time, per sequence its interned data, clocks and defaults, then track
// descriptors, slices, counters and flows into the model.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <numeric>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/free_storage.h"
#include "profiler/formats/common/proto_wire.h"
#include "profiler/formats/common/utf8.h"
#include "profiler/formats/perfetto/perfetto_fields.h"
#include "profiler/formats/perfetto/perfetto_proto.h"
#include "profiler/trace/track_slice_buffer.h"

namespace stepscope::trace {
namespace {

using namespace perfetto_fields;  // the field numbers read as in the protos

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
    std::vector<const ReadArg*> rest;
    for (const ReadArg& arg : open.args) {
      const std::string& k = arg.key;
      if (k == "name" && arg.kind == ReadArg::kString && &arg == &open.args.front()) node = arg.s;
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
  int64_t last_ts_ = 0;
};

}  // namespace

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