// The Perfetto reader's tracks and events: track descriptors (processes, threads, counters,
// children), slice begin/end, instants, counters, flows and debug annotations into the model
// (perfetto_importer.h).
#include "profiler/formats/perfetto/perfetto_importer.h"

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

#include <nlohmann/json.hpp>

#include "base/free_storage.h"
#include "base/saturating.h"
#include "profiler/formats/common/proto_wire.h"
#include "profiler/formats/common/utf8.h"
#include "profiler/formats/perfetto/perfetto_fields.h"

namespace stepscope::trace::perfetto_internal {

using namespace perfetto_fields;  // the field numbers read as in the protos

namespace {

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

}  // namespace

Status ProtoImporter::Descriptor(const wire::Field& field) {
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

uint32_t ProtoImporter::TrackFor(uint64_t uuid, int depth) {
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

Status ProtoImporter::Annotation(const wire::Field& field, Sequence& seq, ReadArg& arg, int depth) {
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

Status ProtoImporter::Event(const wire::Field& field, Sequence& seq, int64_t ts) {
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

void ProtoImporter::Close(uint64_t uuid, int64_t end_ns) {
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

bool ProtoImporter::AddDetail(const ReadArg& arg, const TrackSliceBuffer::Ref& ref, int64_t start_ns) {
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

bool ProtoImporter::Undecoded() {
  builder_.import_stats().Add("perfetto_detail_annotation_kept_as_arg");
  return false;
}

}  // namespace stepscope::trace::perfetto_internal
