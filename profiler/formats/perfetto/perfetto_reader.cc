// Reads a Perfetto protobuf trace (perfetto_proto.h says what it takes): packets whole or a
// piece of the file at a time, per sequence its interned data, clocks and defaults
// (perfetto_importer.h).
#include "profiler/formats/perfetto/perfetto_proto.h"

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
#include "profiler/formats/perfetto/perfetto_importer.h"

namespace stepscope::trace::perfetto_internal {

using namespace perfetto_fields;  // the field numbers read as in the protos

Status ProtoImporter::Packets(std::string_view bytes, size_t base) {
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

StatusOr<Trace> ProtoImporter::Finish(int64_t preview_bytes_read) {
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

Status ProtoImporter::Damage(size_t offset, const std::string& what) const {
  return InvalidInput(name_ + ": offset " + std::to_string(offset) + ": " + what +
                      " (truncated or corrupt Perfetto protobuf)");
}

std::string ProtoImporter::Text(std::string_view bytes) {
  if (IsValidUtf8(bytes)) return std::string(bytes);
  int64_t replaced = 0;
  std::string out = RepairUtf8(bytes, &replaced);
  builder_.import_stats().Add("invalid_utf8_bytes_replaced", replaced);
  return out;
}

Status ProtoImporter::Packet(const wire::Field& packet_field) {
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

Status ProtoImporter::Defaults(const wire::Field& field, Sequence& seq) {
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

Status ProtoImporter::Interned(const wire::Field& field, Sequence& seq) {
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

Status ProtoImporter::Snapshot(const wire::Field& field, Sequence& seq) {
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

}  // namespace stepscope::trace::perfetto_internal

namespace stepscope::trace {

StatusOr<Trace> ReadPerfettoProto(std::string_view bytes, const std::string& name) {
  if (bytes.empty()) return InvalidInput(name + ": file is empty");
  perfetto_internal::ProtoImporter importer(name);
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
  perfetto_internal::ProtoImporter importer(name);
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