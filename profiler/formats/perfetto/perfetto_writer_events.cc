// The Perfetto writer's slice events: a slice's begin and end TrackEvents, its text interned per
// sequence, and its debug annotations (node name, kernel geometry, copy bytes, a label's inputs,
// output shapes, free-form args) (perfetto_exporter.h).
#include "profiler/formats/perfetto/perfetto_exporter.h"

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

#include <nlohmann/json.hpp>

#include "profiler/formats/common/proto_wire.h"
#include "profiler/formats/perfetto/perfetto_fields.h"
#include "profiler/trace/kernel_arg_fields.h"
#include "profiler/trace/slice_details.h"

namespace stepscope::trace::perfetto_internal {

using namespace perfetto_fields;  // the field numbers read as in the protos

uint64_t ProtoExporter::Intern(InternTable& table, size_t index, std::string_view text, uint32_t field, std::string& pending) {
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

void ProtoExporter::AddInt(Key key, int64_t value) {
  Arg& a = args_.emplace_back();
  a.key = key;
  a.kind = Arg::kInt;
  a.i = value;
}

void ProtoExporter::AddDouble(Key key, double value) {
  Arg& a = args_.emplace_back();
  a.key = key;
  a.kind = Arg::kDouble;
  a.d = value;
}

void ProtoExporter::AddInline(Key key, std::string_view value) {
  Arg& a = args_.emplace_back();
  a.key = key;
  a.kind = Arg::kInline;
  a.text = value;
}

std::string_view ProtoExporter::Triple(const uint32_t* v) {
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

void ProtoExporter::AddLabel(std::string_view label, const Slice& s) {
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

void ProtoExporter::NodeArgs(uint32_t index, const Slice& s, const std::optional<KernelArgs>& k, const TransferArgs* t) {
  if (const std::string_view label = details_.Label(index); !label.empty()) AddLabel(label, s);
  if (const std::span<const TensorOutput> outputs = details_.Outputs(index); !outputs.empty()) {
    std::string& shapes = scratch_[scratch_used_++ % kScratch];
    shapes.clear();
    for (const TensorOutput& output : outputs) {
      if (!shapes.empty()) shapes.push_back(' ');
      OutputShape(output, shapes);
    }
    AddInline(kKeyShapes, shapes);
  }
  if (s.kind == SliceKind::kMemcpy && t == nullptr) {
    if (auto memcpy = details_.Copy(index)) {
      std::string& kind = scratch_[scratch_used_++ % kScratch];
      kind = memcpy->kind;
      AddInline(kKeyKind, kind);
      AddInt(kKeyBytes, memcpy->bytes);
    }
  }
  if (k) return;
  if (const std::optional<LaunchRecord> launch = details_.Launch(index)) {
    AddInline(kKeyGrid, Triple(launch->grid));
    AddInline(kKeyBlock, Triple(launch->block));
    AddInt(kKeyRegisters, launch->registers_per_thread);
    AddInt(kKeyShared, launch->static_shared_bytes + launch->dynamic_shared_bytes);
    AddInt(kKeyStream, launch->stream);
  }
  if (const uint64_t correlation = details_.Correlation(index); correlation != 0) {
    AddInt(kKeyCorrelation, static_cast<int64_t>(correlation));
  }
}

// "float[32,?]": the dtype as Perfetto's UI shows it short, then the dimensions (? unknown).
void ProtoExporter::OutputShape(const TensorOutput& output, std::string& out) {
  out += DtypeName(output.dtype);
  out.push_back('[');
  if (output.unknown_rank) out.push_back('?');
  bool first = true;
  for (const int64_t size : output.shape) {
    if (!first) out.push_back(',');
    first = false;
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

// "DT_FLOAT" as "float"; "dtype" when the source named none it knows.
std::string_view ProtoExporter::DtypeName(std::string_view dtype) {
  if (auto it = dtype_names_.find(dtype); it != dtype_names_.end()) return it->second;
  std::string name(dtype);
  if (name.substr(0, 3) == "DT_") name = name.substr(3);
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return dtype_names_.emplace(std::string(dtype), name.empty() ? "dtype" : name).first->second;
}

void ProtoExporter::CollectArgs(uint32_t index, const Slice& s) {
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
    // The field list's order is the Key enum's, from kKeyGrid on.
    struct Fields {
      ProtoExporter& exporter;
      static Key KeyOf(KernelArgField field) { return static_cast<Key>(kKeyGrid + static_cast<int>(field)); }
      void Triple(KernelArgField field, const uint32_t* v) { exporter.AddInline(KeyOf(field), exporter.Triple(v)); }
      void Integer(KernelArgField field, int64_t value) { exporter.AddInt(KeyOf(field), value); }
      void Real(KernelArgField field, float value) { exporter.AddDouble(KeyOf(field), value); }
    };
    VisitKernelArgs(*k, Fields{*this});
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

void ProtoExporter::Begin(uint32_t index, const Slice& s, uint32_t sequence, uint64_t uuid) {
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

void ProtoExporter::SplitInputs(uint32_t index, std::string_view text) {
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

void ProtoExporter::End(int64_t ts, uint32_t sequence, uint64_t uuid) {
  wire::Scope p(out_, trace_proto::kPacket);
  wire::Varint(out_, packet::kTimestamp, Delta(ts));
  SequenceHeader(sequence, true);
  wire::Scope e(out_, packet::kTrackEvent);
  wire::Varint(out_, track_event::kType, track_event::kSliceEnd);
  if (uuid != default_uuid_) wire::Varint(out_, track_event::kTrackUuid, uuid);
}

void ProtoExporter::DetailArgs(uint32_t index, const Slice& s) {
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

}  // namespace stepscope::trace::perfetto_internal
