// The Perfetto reader's state and steps (perfetto_proto.h says what it reads): internal to the
// perfetto format. perfetto_reader.cc takes packets (whole or a piece of the file at a time) and
// each sequence's defaults, interned data and clocks; perfetto_reader_tracks.cc the track
// descriptors, events, slices, counters and flows.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/status.h"
#include "profiler/formats/common/proto_wire.h"
#include "profiler/formats/perfetto/perfetto_fields.h"
#include "profiler/trace/trace.h"
#include "profiler/trace/track_slice_buffer.h"

// Damage in a nested message: the reader's error, at its offset, for the file.
#define STEPSCOPE_WIRE_CHECK(reader) \
  if ((reader).failed()) return Damage((reader).error_offset(), (reader).error())

namespace stepscope::trace::perfetto_internal {

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
  Status Packets(std::string_view bytes, size_t base);

  StatusOr<Trace> Finish(int64_t preview_bytes_read);

 private:
  // A slice before the hand-over to the builder: its track << 32 | its place in the track.
  static constexpr uint64_t kNoRef = ~uint64_t{0};

  Status Damage(size_t offset, const std::string& what) const;

  std::string Text(std::string_view bytes);


  Status Packet(const wire::Field& packet_field);

  Status Defaults(const wire::Field& field, Sequence& seq);

  Status Interned(const wire::Field& field, Sequence& seq);

  Status Snapshot(const wire::Field& field, Sequence& seq);

  Status Descriptor(const wire::Field& field);

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
  uint32_t TrackFor(uint64_t uuid, int depth = 0);

  // One debug annotation; an array's values come as one text, joined by ", " (as a label's input
  // list reads), nested arrays at most a few levels deep.
  Status Annotation(const wire::Field& field, Sequence& seq, ReadArg& arg, int depth = 0);

  Status Event(const wire::Field& field, Sequence& seq, int64_t ts);

  void Close(uint64_t uuid, int64_t end_ns);

  static bool IsDetailKey(std::string_view key) {
    return key == perfetto_fields::kOutputsKey || key == perfetto_fields::kAllocatorsKey ||
           key == perfetto_fields::kTempMemoryKey || key == perfetto_fields::kPersistentMemoryKey;
  }
  // One of our writer's typed memory details into the trace's tables; false (kept as a free-form
  // argument, and counted) when it does not read as one.
  bool AddDetail(const ReadArg& arg, const TrackSliceBuffer::Ref& ref, int64_t start_ns);
  bool Undecoded();


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

}  // namespace stepscope::trace::perfetto_internal
