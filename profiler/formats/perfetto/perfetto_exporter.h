// The Perfetto writer's state and steps (perfetto_proto.h says what it writes): internal to the
// perfetto format. perfetto_writer.cc plans the sequences, tracks and counters and merges each
// host's events in time order; perfetto_writer_events.cc writes a slice's begin and end events
// with their interned names and debug annotations.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "profiler/formats/common/proto_wire.h"
#include "profiler/formats/perfetto/perfetto_fields.h"
#include "profiler/trace/kernel_arg_fields.h"
#include "profiler/trace/slice_details.h"
#include "profiler/trace/trace.h"

namespace stepscope::trace::perfetto_internal {

class ProtoExporter {
 public:
  explicit ProtoExporter(const Trace& trace) : trace_(trace) {}

  std::string Run();

 private:
  uint64_t TrackUuid(uint32_t track) const { return uint64_t{track} + 1; }
  uint64_t CounterUuid(size_t counter) const { return uint64_t{trace_.tracks().size()} + 1 + counter; }

  void IndexFlows();

  // Per slice: its free-form arguments' range and its transfer args (no searches; kernel
  // arguments are found by counting bits, KernelArgsTable).
  void IndexArgs();
  static constexpr uint32_t kNoArgs = 0xffffffffu;
  std::optional<KernelArgs> KernelOf(uint32_t slice) const { return trace_.kernel_args(slice); }
  const TransferArgs* TransferOf(uint32_t slice) const;

  // `incremental`: the packet needs the sequence's incremental state (interned data, the
  // incremental clock its timestamp is a delta on, an incremental counter's previous value), so
  // a reader that lost that state drops it rather than misplace it.
  void SequenceHeader(uint32_t sequence, bool incremental);

  static constexpr uint32_t kDescriptorSequence = 1;

  // A sequence's first packet: incremental state cleared, defaults (the sequence clock, the
  // default track) and the clock snapshot that puts the sequence clock (incremental, in `unit`
  // ns, 0 = the trace's epoch) on REALTIME and BOOTTIME.
  void BeginSequence(uint32_t sequence, uint64_t track_uuid, uint64_t unit = 1);

  // The greatest common divisor of `ts` and every time folded into `unit` before (0: none yet).
  static uint64_t ClockUnit(uint64_t unit, int64_t ts);
  // The sequence clock's unit from that divisor: it, or the part of it that divides 10^9 when it
  // is 2^30 or more (readers take units below 2^30). µs sources get 1000, so every delta is a
  // varint of about ten bits less.
  static uint64_t SequenceUnit(uint64_t divisor);

  // Before a sequence, for each of its tracks: the divisor of its times (folded into `unit`),
  // and how often each name and string value is used on the sequence. A text used once goes
  // inline: interning it would cost an interned entry and an id on top of the text.
  uint64_t PlanTrack(uint32_t t, uint64_t unit);

  // Uses of one string on the sequence being planned (reset lazily per sequence).
  struct Uses {
    uint32_t plan = 0;
    uint32_t names = 0, values = 0;
  };
  Uses& Use(StringId id);
  bool Repeated(StringId id, bool as_name);

  // The delta of `ts` (ns from the epoch) on the sequence's incremental clock.
  uint64_t Delta(int64_t ts);

  void Descriptor(uint32_t t, uint32_t root);

  uint64_t sequence_pid(uint32_t track) const { return uint64_t{track} + 1; }

  void CounterDescriptor(size_t c);

  int64_t CounterValueUnit(size_t c) const;

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

  Cursor TrackCursor(uint32_t t);
  Cursor CounterCursor(size_t index);

  // The time of the cursor's next event; false when it has none left. A slice ends before the
  // next one on its track begins at or after its end (TensorFlow's /stream:all and /memcpy
  // repeats are skipped, as in chrome).
  bool Peek(Cursor& c, int64_t& ts);

  // Writes the cursor's next event (the one Peek saw).
  void Step(Cursor& c, uint32_t sequence);

  // Writes the sequence of cursors_ (their strings counted by Plan before): its first packet,
  // then their events in time order (ties in cursor order, so each track keeps its own order).
  void Merge(uint32_t sequence, uint64_t default_uuid);

  // A host's sequence: its tracks with kept slices and its counters; nothing when it has none.
  void HostSequence(uint32_t root, const std::vector<int32_t>& root_of, uint32_t& sequence);

  // Interning, per sequence, indexed by what is interned (no hashing of text): trace strings by
  // StringId, categories by slice kind, the annotation names we write by their Key. An entry
  // holds the sequence it was interned in (high 32 bits) and its iid (low 32 bits).
  enum Key : uint8_t {
    kKeyName, kKeyGrid, kKeyBlock, kKeyRegisters, kKeyShared, kKeyBlocksPerSm, kKeyWarpsPerSm, kKeyOccupancy,
    kKeyDevice, kKeyStream, kKeyCorrelation, kKeyBytes, kKeyBandwidth, kKeyLabel, kKeyKind, kKeyShapes,
    kKeyInputs, kKeyMemory, kKeyOutputs, kKeyAllocators, kKeyTempMemory, kKeyPersistentMemory, kKeyCount
  };
  static constexpr std::string_view kKeyNames[kKeyCount] = {
      "name", KernelArgKey(KernelArgField::kGrid), KernelArgKey(KernelArgField::kBlock),
      KernelArgKey(KernelArgField::kRegisters), KernelArgKey(KernelArgField::kSharedMemory),
      KernelArgKey(KernelArgField::kBlocksPerSm), KernelArgKey(KernelArgField::kWarpsPerSm),
      KernelArgKey(KernelArgField::kOccupancy), KernelArgKey(KernelArgField::kDevice),
      KernelArgKey(KernelArgField::kStream), KernelArgKey(KernelArgField::kCorrelation), "bytes", "memory bandwidth (GB/s)",
      "label", "kind", "output shapes", "inputs", "memory", perfetto_fields::kOutputsKey,
      perfetto_fields::kAllocatorsKey, perfetto_fields::kTempMemoryKey, perfetto_fields::kPersistentMemoryKey};

  struct InternTable {
    std::vector<uint64_t> slots;
    uint32_t next = 1;
  };

  // The iid of entry `index` of `table` in the current sequence; when new, its interned-data
  // entry (field `field` of InternedData) is appended to `pending`.
  uint64_t Intern(InternTable& table, size_t index, std::string_view text, uint32_t field, std::string& pending);

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

  void AddInt(Key key, int64_t value);
  void AddDouble(Key key, double value);
  void AddInline(Key key, std::string_view value);
  // "x,y,z" into one of the scratch buffers (valid until the next slice).
  std::string_view Triple(const uint32_t* v);

  // TensorFlow's executor label "[<memory>] <node> = <OpType>(<inputs>)" as the parts the slice
  // does not already carry: `inputs` and `memory` (the node and op type are the slice's node
  // annotation and name). Any other label is written whole.
  void AddLabel(std::string_view label, const Slice& s);

  // What a StepStats op carries beyond the slice (from DetailReader, which decodes only the
  // fields the writer asks for): its label, output shapes, copy, launch record and correlation.
  void NodeArgs(uint32_t index, const Slice& s, const std::optional<KernelArgs>& k, const TransferArgs* t);

  // The slice's typed memory details (from a StepStats payload or the trace's tables), so that
  // the file read back holds them too: outputs and allocators as JSON text (records' times from
  // the slice's start), an op's memory as integers.
  void DetailArgs(uint32_t index, const Slice& s);

  // One output as "float[20,200]" (dtype, then dims; ? for unknown), appended to `out`.
  void OutputShape(const TensorOutput& output, std::string& out);

  // "float" for DT_FLOAT, "dtype" when the source named none (cached per name).
  std::string_view DtypeName(std::string_view dtype);

  void CollectArgs(uint32_t index, const Slice& s);

  void Begin(uint32_t index, const Slice& s, uint32_t sequence, uint64_t uuid);

  // Splits "a, b:1, ^c" into inputs_, each name with its iid when it is a producer's node name
  // used more than once on this sequence (found among the slice's incoming dataflow: no text
  // lookup), else 0 and written inline. Inputs interned by their text would make the file
  // smaller but its gzip larger (an iid compresses worse than a repeated name does;
  // docs/formats.md §7).
  void SplitInputs(uint32_t index, std::string_view text);

  void End(int64_t ts, uint32_t sequence, uint64_t uuid);

  const Trace& trace_;
  std::map<std::string, std::string, std::less<>> dtype_names_;
  wire::Buffer out_;
  std::string interned_names_, interned_categories_, interned_keys_, interned_values_;
  InternTable names_, categories_, keys_, strings_;
  uint32_t sequence_ = 0;
  int64_t last_ts_ = 0;
  uint64_t unit_ = 1;
  std::vector<Uses> uses_;
  uint32_t plan_ = 0;
  const bool has_nodes_ = trace_.payload() != nullptr;
  // Blocks of a StepStats payload whose ops hold none of these are not even inflated.
  DetailReader details_{trace_, kDetailOutputs | kDetailShapes | kDetailAllocators | kDetailOpMemory | kDetailLabel |
                                    kDetailKernel | kDetailCopy | kDetailCorrelation};
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

}  // namespace stepscope::trace::perfetto_internal
