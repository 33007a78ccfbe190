#include "profiler/trace/xspace_reader.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <unordered_map>

#include "base/file_io.h"
#include "profiler/trace/proto_wire.h"
#include "profiler/trace/utf8.h"

namespace stepscope::trace {
namespace {

using wire::Field;
using wire::Reader;

// Field numbers of tsl/profiler/protobuf/xplane.proto (docs/formats.md §8).
namespace xspace { enum : uint32_t { kPlanes = 1, kHostnames = 4 }; }
namespace xplane { enum : uint32_t { kId = 1, kName = 2, kLines = 3, kEventMetadata = 4, kStatMetadata = 5, kStats = 6 }; }
namespace xline { enum : uint32_t { kId = 1, kName = 2, kTimestampNs = 3, kEvents = 4, kDisplayId = 10, kDisplayName = 11 }; }
namespace xevent { enum : uint32_t { kMetadataId = 1, kOffsetPs = 2, kDurationPs = 3, kStats = 4, kNumOccurrences = 5 }; }
namespace xstat {
enum : uint32_t { kMetadataId = 1, kDouble = 2, kUint64 = 3, kInt64 = 4, kStr = 5, kBytes = 6, kRef = 7 };
}
namespace xmeta { enum : uint32_t { kId = 1, kName = 2, kDisplayName = 4, kStats = 5 }; }

// Below this, a line timestamp is relative to the profile start rather than the Unix epoch
// (TensorFlow normalises the host plane's lines): about 11 days in ns.
constexpr int64_t kEpochThresholdNs = int64_t{1} << 50;

bool IsIdentifier(std::string_view text) {
  if (text.empty()) return false;
  for (char c : text) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  }
  return true;
}

// TensorFlow's op names in TraceMe and `tf_op`: "<node>:<OpType>".
bool SplitTfOp(std::string_view text, std::string_view& node, std::string_view& type) {
  const size_t colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || text[colon - 1] == ':') return false;
  if (!IsIdentifier(text.substr(colon + 1))) return false;
  node = text.substr(0, colon);
  type = text.substr(colon + 1);
  return node.find(' ') == std::string_view::npos;
}

// XLA instruction names "fusion.12" -> "fusion".
std::string_view HloOpType(std::string_view name) {
  const size_t dot = name.rfind('.');
  if (dot != std::string_view::npos && dot > 0 && dot + 1 < name.size()) {
    bool digits = true;
    for (size_t i = dot + 1; i < name.size(); ++i) digits = digits && std::isdigit(static_cast<unsigned char>(name[i]));
    if (digits) return name.substr(0, dot);
  }
  return name;
}

// "a:1 b:2,3" -> the value of `key`.
std::string_view DetailValue(std::string_view details, std::string_view key) {
  size_t pos = 0;
  while (pos < details.size()) {
    size_t end = details.find(' ', pos);
    if (end == std::string_view::npos) end = details.size();
    const std::string_view item = details.substr(pos, end - pos);
    if (item.size() > key.size() && item.substr(0, key.size()) == key && item[key.size()] == ':') {
      return item.substr(key.size() + 1);
    }
    pos = end + 1;
  }
  return {};
}

int64_t ParseInt(std::string_view text, int64_t fallback = -1) {
  int64_t value = 0;
  const auto result = std::from_chars(text.data(), text.data() + text.size(), value);
  return result.ec == std::errc() ? value : fallback;
}

void ParseTriple(std::string_view text, uint32_t* out) {
  for (int i = 0; i < 3; ++i) {
    const size_t comma = text.find(',');
    const int64_t value = ParseInt(text.substr(0, comma), 0);
    out[i] = value > 0 && value < (int64_t{1} << 32) ? static_cast<uint32_t>(value) : 0;
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
}

struct StatValue {
  enum Kind { kNone, kInt, kUint, kDouble, kString, kBytes } kind = kNone;
  int64_t i = 0;
  uint64_t u = 0;
  double d = 0;
  std::string_view s;
};

struct EventMeta {
  std::string_view name;
  std::string_view display_name;
  std::string_view stats;  // the XEventMetadata bytes, for its stats
  size_t stats_base = 0;
};

class XSpaceImporter {
 public:
  XSpaceImporter() = default;

  Status AddSpace(std::string_view bytes, const std::string& name) {
    name_ = name;
    std::vector<Field> planes;
    std::string host;
    Reader top(bytes);
    Field f;
    while (top.Next(f)) {
      if (f.number == xspace::kPlanes && f.type == wire::kLength) planes.push_back(f);
      if (f.number == xspace::kHostnames && f.type == wire::kLength && host.empty()) host = ValidUtf8(f.bytes);
    }
    if (top.failed()) return Damage(top);
    if (host.empty()) host = HostFromFileName(name);
    // The profile's start, for lines normalised to it.
    profile_start_ns_ = 0;
    for (const Field& plane : planes) RETURN_IF_ERROR(FindProfileStart(plane));

    Track host_track;
    host_track.name = builder_.Intern(host);
    host_track.full_name = host_track.name;
    host_track.kind = TrackKind::kHost;
    host_track.sort_index = hosts_++;
    host_ = builder_.AddTrack(host_track);
    int32_t plane_index = 0;
    for (const Field& plane : planes) RETURN_IF_ERROR(AddPlane(plane, plane_index++));
    if (builder_.step_info().host.empty()) builder_.step_info().host = host;
    return Status::Ok();
  }

  Trace Finish(const std::string& source) && {
    builder_.SetSource(SourceFormat::kXSpace, source);
    builder_.step_info().producer = "XSpace";
    // Launch flows: the host event and the device events of one correlation id.
    for (const auto& [id, ends] : correlation_) {
      if (ends.host == kNoSlice) continue;
      for (uint32_t device : ends.device) builder_.AddFlow(Flow{ends.host, device, FlowKind::kLaunch});
    }
    return std::move(builder_).Build();
  }

 private:
  static constexpr uint32_t kNoSlice = 0xffffffffu;

  struct Correlated {
    uint32_t host = kNoSlice;
    std::vector<uint32_t> device;
  };

  Status Damage(const Reader& reader) const {
    return InvalidInput(name_ + ": offset " + std::to_string(reader.error_offset()) + ": " + reader.error() +
                        " (truncated or corrupt XSpace)");
  }

  std::string HostFromFileName(const std::string& path) {
    std::string base = path.substr(path.find_last_of('/') + 1);
    for (std::string_view suffix : {".gz", ".pb", ".xplane"}) {
      if (EndsWith(base, suffix)) base.resize(base.size() - suffix.size());
    }
    return base.empty() ? "host" : base;
  }

  std::string ValidUtf8(std::string_view text) {
    if (IsValidUtf8(text)) return std::string(text);
    int64_t replaced = 0;
    std::string out = RepairUtf8(text, &replaced);
    builder_.import_stats().Add("invalid_utf8_bytes_replaced", replaced);
    return out;
  }

  Status FindProfileStart(const Field& plane) {
    Reader reader = wire::Nested(plane);
    Field f;
    std::string_view plane_name;
    std::unordered_map<int64_t, std::string_view> stat_names;
    std::vector<Field> stats;
    while (reader.Next(f)) {
      if (f.number == xplane::kName && f.type == wire::kLength) plane_name = f.bytes;
      if (f.number == xplane::kStats && f.type == wire::kLength) stats.push_back(f);
      if (f.number == xplane::kStatMetadata && f.type == wire::kLength) {
        int64_t key = 0;
        std::string_view stat_name;
        RETURN_IF_ERROR(ReadStatMetadata(f, key, stat_name));
        stat_names[key] = stat_name;
      }
    }
    if (reader.failed()) return Damage(reader);
    if (plane_name != "Task Environment") return Status::Ok();
    for (const Field& stat : stats) {
      Reader r = wire::Nested(stat);
      Field s;
      int64_t id = 0;
      uint64_t value = 0;
      while (r.Next(s)) {
        if (s.number == xstat::kMetadataId) id = static_cast<int64_t>(s.value);
        if (s.number == xstat::kUint64 || s.number == xstat::kInt64) value = s.value;
      }
      if (r.failed()) return Damage(r);
      if (stat_names[id] == "profile_start_time" && value < (uint64_t{1} << 62)) {
        profile_start_ns_ = static_cast<int64_t>(value);
      }
    }
    return Status::Ok();
  }

  Status ReadStatMetadata(const Field& entry, int64_t& key, std::string_view& stat_name) {
    Reader reader = wire::Nested(entry);
    Field f;
    while (reader.Next(f)) {
      if (f.number == 1 && f.type == wire::kVarint) key = static_cast<int64_t>(f.value);
      if (f.number == 2 && f.type == wire::kLength) {
        Reader value = wire::Nested(f);
        Field v;
        while (value.Next(v)) {
          if (v.number == 2 && v.type == wire::kLength) stat_name = v.bytes;
        }
        if (value.failed()) return Damage(value);
      }
    }
    if (reader.failed()) return Damage(reader);
    return Status::Ok();
  }

  Status ReadEventMetadata(const Field& entry) {
    Reader reader = wire::Nested(entry);
    Field f;
    int64_t key = 0;
    EventMeta meta;
    while (reader.Next(f)) {
      if (f.number == 1 && f.type == wire::kVarint) key = static_cast<int64_t>(f.value);
      if (f.number == 2 && f.type == wire::kLength) {
        meta.stats = f.bytes;
        meta.stats_base = static_cast<size_t>(f.value);
        Reader value = wire::Nested(f);
        Field v;
        while (value.Next(v)) {
          if (v.number == xmeta::kName && v.type == wire::kLength) meta.name = v.bytes;
          if (v.number == xmeta::kDisplayName && v.type == wire::kLength) meta.display_name = v.bytes;
        }
        if (value.failed()) return Damage(value);
      }
    }
    if (reader.failed()) return Damage(reader);
    event_meta_[key] = meta;
    return Status::Ok();
  }

  // The short device name: "/host:CPU" -> "CPU", "/device:GPU:0" -> "GPU:0".
  static std::string_view DeviceName(std::string_view plane) {
    if (!plane.empty() && plane[0] == '/') plane.remove_prefix(1);
    for (std::string_view prefix : {"host:", "device:"}) {
      if (plane.substr(0, prefix.size()) == prefix) return plane.substr(prefix.size());
    }
    return plane;
  }

  Status AddPlane(const Field& plane, int32_t plane_index) {
    Reader reader = wire::Nested(plane);
    Field f;
    std::string_view plane_name;
    std::vector<Field> lines;
    event_meta_.clear();
    stat_names_.clear();
    while (reader.Next(f)) {
      if (f.type != wire::kLength) continue;
      switch (f.number) {
        case xplane::kName: plane_name = f.bytes; break;
        case xplane::kLines: lines.push_back(f); break;
        case xplane::kEventMetadata: RETURN_IF_ERROR(ReadEventMetadata(f)); break;
        case xplane::kStatMetadata: {
          int64_t key = 0;
          std::string_view stat_name;
          RETURN_IF_ERROR(ReadStatMetadata(f, key, stat_name));
          stat_names_[key] = builder_.Intern(ValidUtf8(stat_name));
          break;
        }
        default: break;
      }
    }
    if (reader.failed()) return Damage(reader);
    if (lines.empty()) return Status::Ok();
    kind_stat_ids_ = KnownStats();
    device_plane_ = plane_name.substr(0, 8) == "/device:";
    // Device planes: "Stream #N" lines hold the kernels; the other lines (XLA Modules, XLA Ops,
    // TensorFlow Ops, Steps, ...) are derived from them and shown as annotations, unless the
    // device has no streams (TPU-like planes), where XLA Ops are the work.
    has_streams_ = false;
    for (const Field& line : lines) {
      std::string_view line_name;
      Reader r = wire::Nested(line);
      Field lf;
      while (r.Next(lf)) {
        if (lf.number == xline::kName && lf.type == wire::kLength) line_name = lf.bytes;
      }
      if (line_name.substr(0, 6) == "Stream") has_streams_ = true;
    }
    Track device;
    const std::string full = ValidUtf8(plane_name);
    device.name = builder_.Intern(DeviceName(full));
    device.full_name = builder_.Intern(full);
    device.parent = static_cast<int32_t>(host_);
    device.kind = TrackKind::kDevice;
    device.sort_index = (device_plane_ ? 1000 : 0) + plane_index;
    device_ = builder_.AddTrack(device);
    int32_t line_index = 0;
    for (const Field& line : lines) RETURN_IF_ERROR(AddLine(line, line_index++));
    return Status::Ok();
  }

  struct KnownStatIds {
    int64_t correlation_id = -1, tf_op = -1, kernel_details = -1, memcpy_details = -1, step_num = -1,
            iter_num = -1, hlo_op = -1, hlo_module = -1, group_id = -1;
  };

  KnownStatIds KnownStats() {
    KnownStatIds ids;
    for (const auto& [id, name] : stat_names_) {
      const std::string_view text = builder_.strings().Get(name);
      if (text == "correlation_id") ids.correlation_id = id;
      else if (text == "tf_op") ids.tf_op = id;
      else if (text == "kernel_details") ids.kernel_details = id;
      else if (text == "memcpy_details") ids.memcpy_details = id;
      else if (text == "step_num") ids.step_num = id;
      else if (text == "iter_num") ids.iter_num = id;
      else if (text == "hlo_op") ids.hlo_op = id;
      else if (text == "hlo_module") ids.hlo_module = id;
      else if (text == "group_id") ids.group_id = id;
    }
    return ids;
  }

  
  Status AddLine(const Field& line, int32_t line_index) {
    Reader reader = wire::Nested(line);
    Field f;
    int64_t id = 0;
    int64_t timestamp_ns = 0;
    std::string_view line_name, display_name;
    std::vector<Field> events;
    while (reader.Next(f)) {
      switch (f.number) {
        case xline::kId: id = static_cast<int64_t>(f.value); break;
        case xline::kName: if (f.type == wire::kLength) line_name = f.bytes; break;
        case xline::kDisplayName: if (f.type == wire::kLength) display_name = f.bytes; break;
        case xline::kTimestampNs: timestamp_ns = static_cast<int64_t>(f.value); break;
        case xline::kEvents: if (f.type == wire::kLength) events.push_back(f); break;
        default: break;
      }
    }
    if (reader.failed()) return Damage(reader);
    if (events.empty()) return Status::Ok();
    if (timestamp_ns < kEpochThresholdNs && profile_start_ns_ > 0) timestamp_ns += profile_start_ns_;

    Track lane;
    const std::string shown = ValidUtf8(display_name.empty() ? line_name : display_name);
    lane.name = builder_.Intern(shown);
    lane.full_name = builder_.Intern(ValidUtf8(line_name));
    lane.parent = static_cast<int32_t>(device_);
    lane.sort_index = line_index;
    LineRole role = LineRole::kThread;
    if (device_plane_) {
      if (line_name.substr(0, 6) == "Stream") {
        role = LineRole::kStream;
      } else if (!has_streams_ && (line_name == "XLA Ops" || line_name == "TensorFlow Ops")) {
        role = LineRole::kDeviceOps;
      } else {
        role = LineRole::kDerived;
      }
    }
    switch (role) {
      case LineRole::kThread:
        lane.kind = TrackKind::kOpLane;
        lane.thread_id = id;
        break;
      case LineRole::kStream:
        lane.kind = TrackKind::kGpuStream;
        lane.concurrent = true;
        break;
      case LineRole::kDeviceOps: lane.kind = TrackKind::kOpLane; break;
      case LineRole::kDerived: lane.kind = TrackKind::kOther; break;
    }
    const uint32_t track = builder_.AddTrack(lane);
    const bool python = line_name == "python";
    for (const Field& event : events) RETURN_IF_ERROR(AddEvent(event, track, timestamp_ns, role, python));
    return Status::Ok();
  }

  enum class LineRole { kThread, kStream, kDeviceOps, kDerived };

  // One stat: its key and value; false for a stat without a value.
  Status ReadStat(const Field& stat, int64_t& key, StatValue& value) {
    Reader reader = wire::Nested(stat);
    Field f;
    value = {};
    while (reader.Next(f)) {
      switch (f.number) {
        case xstat::kMetadataId: key = static_cast<int64_t>(f.value); break;
        case xstat::kDouble: {
          value.kind = StatValue::kDouble;
          std::memcpy(&value.d, &f.value, 8);
          break;
        }
        case xstat::kUint64: value.kind = StatValue::kUint; value.u = f.value; break;
        case xstat::kInt64: value.kind = StatValue::kInt; value.i = static_cast<int64_t>(f.value); break;
        case xstat::kStr: value.kind = StatValue::kString; value.s = f.bytes; break;
        case xstat::kBytes: value.kind = StatValue::kBytes; value.s = f.bytes; break;
        case xstat::kRef: {
          value.kind = StatValue::kString;
          const auto it = stat_names_.find(static_cast<int64_t>(f.value));
          value.s = it == stat_names_.end() ? std::string_view() : builder_.strings().Get(it->second);
          break;
        }
        default: break;
      }
    }
    if (reader.failed()) return Damage(reader);
    return Status::Ok();
  }

  StringId ValueText(const StatValue& value) {
    char buffer[64];
    switch (value.kind) {
      case StatValue::kInt: {
        const auto r = std::to_chars(buffer, buffer + sizeof buffer, value.i);
        return builder_.Intern(std::string_view(buffer, static_cast<size_t>(r.ptr - buffer)));
      }
      case StatValue::kUint: {
        const auto r = std::to_chars(buffer, buffer + sizeof buffer, value.u);
        return builder_.Intern(std::string_view(buffer, static_cast<size_t>(r.ptr - buffer)));
      }
      case StatValue::kDouble: {
        const int n = std::snprintf(buffer, sizeof buffer, "%.17g", value.d);
        return builder_.Intern(std::string_view(buffer, static_cast<size_t>(std::max(n, 0))));
      }
      case StatValue::kString:
        if (Utf8Valid(value.s)) return builder_.Intern(value.s);
        return builder_.Intern(ValidUtf8(value.s));
      case StatValue::kBytes:
      case StatValue::kNone: break;
    }
    return 0;
  }

  static bool Utf8Valid(std::string_view text) { return IsValidUtf8(text); }

  struct EventFacts {
    std::string_view tf_op, kernel_details, memcpy_details;
    int64_t correlation = -1;
    bool step = false, hlo_op = false, hlo_module = false;
  };

  // Applies one stat (of the event or of its metadata) to the slice: the facts it gives and an
  // argument.
  Status ApplyStats(std::string_view bytes, size_t base, uint32_t stats_field, uint32_t slice, EventFacts& facts) {
    Reader reader(bytes, base);
    Field f;
    while (reader.Next(f)) {
      if (f.number != stats_field || f.type != wire::kLength) continue;
      int64_t key = -1;
      StatValue value;
      RETURN_IF_ERROR(ReadStat(f, key, value));
      const KnownStatIds& k = kind_stat_ids_;
      if (key == k.correlation_id) facts.correlation = value.kind == StatValue::kUint ? static_cast<int64_t>(value.u) : value.i;
      if (key == k.tf_op && value.kind == StatValue::kString) facts.tf_op = value.s;
      if (key == k.kernel_details && value.kind == StatValue::kString) facts.kernel_details = value.s;
      if (key == k.memcpy_details && value.kind == StatValue::kString) facts.memcpy_details = value.s;
      if (key == k.step_num || key == k.iter_num) facts.step = true;
      if (key == k.hlo_op) facts.hlo_op = true;
      if (key == k.hlo_module) facts.hlo_module = true;
      if (value.kind == StatValue::kBytes) {
        builder_.import_stats().Add("xspace_bytes_stats_skipped");
        continue;
      }
      if (value.kind == StatValue::kNone) continue;
      const auto name = stat_names_.find(key);
      if (name == stat_names_.end()) {
        builder_.import_stats().Add("xspace_stats_without_metadata_skipped");
        continue;
      }
      builder_.AddSliceArg(slice, name->second, ValueText(value));
    }
    if (reader.failed()) return Damage(reader);
    return Status::Ok();
  }

  Status AddEvent(const Field& event, uint32_t track, int64_t line_ns, LineRole role, bool python) {
    Reader reader = wire::Nested(event);
    Field f;
    int64_t metadata_id = 0, offset_ps = 0, duration_ps = 0;
    bool aggregated = false;
    while (reader.Next(f)) {
      switch (f.number) {
        case xevent::kMetadataId: metadata_id = static_cast<int64_t>(f.value); break;
        case xevent::kOffsetPs: offset_ps = static_cast<int64_t>(f.value); break;
        case xevent::kDurationPs: duration_ps = static_cast<int64_t>(f.value); break;
        case xevent::kNumOccurrences: aggregated = true; break;
        default: break;
      }
    }
    if (reader.failed()) return Damage(reader);
    if (aggregated) {
      builder_.import_stats().Add("xspace_aggregated_events_skipped");
      return Status::Ok();
    }
    constexpr int64_t kLimitPs = int64_t{1} << 61;
    if (offset_ps < 0 || duration_ps < 0 || offset_ps > kLimitPs || duration_ps > kLimitPs ||
        line_ns > (int64_t{1} << 62) || line_ns < -(int64_t{1} << 62)) {
      builder_.import_stats().Add("event_bad_time_skipped");
      return Status::Ok();
    }
    const auto meta_it = event_meta_.find(metadata_id);
    EventMeta meta;
    if (meta_it != event_meta_.end()) {
      meta = meta_it->second;
    } else {
      builder_.import_stats().Add("xspace_events_without_metadata");
    }
    Slice slice;
    slice.start_ns = line_ns + offset_ps / 1000;
    slice.dur_ns = line_ns + (offset_ps + duration_ps) / 1000 - slice.start_ns;
    slice.track = track;
    const uint32_t index = builder_.AddSlice(slice);
    EventFacts facts;
    RETURN_IF_ERROR(ApplyStats(event.bytes, static_cast<size_t>(event.value), xevent::kStats, index, facts));
    if (!meta.stats.empty()) RETURN_IF_ERROR(ApplyStats(meta.stats, meta.stats_base, xmeta::kStats, index, facts));

    // Name, op type and kind.
    std::string_view name = meta.name.empty() ? meta.display_name : meta.name;
    std::string_view node, type;
    SliceKind kind = SliceKind::kOther;
    const std::string_view hash = name.find('#') != std::string_view::npos ? name.substr(0, name.find('#')) : name;
    if (role == LineRole::kStream) {
      kind = SliceKind::kKernel;
      if (!facts.memcpy_details.empty() || hash.find("emcpy") != std::string_view::npos) kind = SliceKind::kMemcpy;
      else if (hash.find("emset") != std::string_view::npos) kind = SliceKind::kMemset;
      node = hash;
      type = hash;
      std::string_view tf_node, tf_type;
      if (!facts.tf_op.empty() && SplitTfOp(facts.tf_op, tf_node, tf_type)) {
        node = tf_node;
        type = tf_type;
      }
    } else if (role == LineRole::kDerived) {
      kind = SliceKind::kAnnotation;
      node = type = hash;
    } else if (facts.step || (python && !hash.empty() && hash[0] == '$')) {
      kind = SliceKind::kAnnotation;
      node = type = hash;
    } else if (facts.correlation >= 0 && !device_plane_) {
      kind = SliceKind::kRuntime;
      node = type = hash;
    } else if (SplitTfOp(hash, node, type)) {
      kind = SliceKind::kOp;
    } else if (facts.hlo_op || role == LineRole::kDeviceOps) {
      kind = SliceKind::kOp;
      node = hash;
      type = HloOpType(hash);
    } else {
      // The framework's own TraceMe spans (EagerExecute, tf.function calls, jit_* executions,
      // Python functions) enclose the ops: shown, not counted as work.
      kind = SliceKind::kAnnotation;
      node = type = hash;
    }
    if (hash.size() != name.size()) builder_.AddSliceArg(index, builder_.Intern("traceme"), builder_.Intern(ValidUtf8(name)));
    Slice& added = builder_.MutableSlice(index);
    added.kind = kind;
    added.name = builder_.Intern(Utf8Valid(node) ? std::string(node) : ValidUtf8(node));
    added.op_type = builder_.Intern(Utf8Valid(type) ? std::string(type) : ValidUtf8(type));
    if (added.op_type == 0) added.op_type = builder_.Intern("unknown");

    if (kind == SliceKind::kKernel && !facts.kernel_details.empty()) {
      KernelArgs args;
      args.slice = index;
      args.correlation = facts.correlation;
      ParseTriple(DetailValue(facts.kernel_details, "grid"), args.grid);
      ParseTriple(DetailValue(facts.kernel_details, "block"), args.block);
      args.registers_per_thread = static_cast<int32_t>(ParseInt(DetailValue(facts.kernel_details, "regs")));
      const int64_t shared = ParseInt(DetailValue(facts.kernel_details, "static_shared"), 0) +
                             ParseInt(DetailValue(facts.kernel_details, "dynamic_shared"), 0);
      args.shared_memory_bytes = static_cast<int32_t>(shared);
      builder_.AddKernelArgs(args);
    }
    if ((kind == SliceKind::kMemcpy || kind == SliceKind::kMemset) && !facts.memcpy_details.empty()) {
      TransferArgs args;
      args.slice = index;
      args.bytes = ParseInt(DetailValue(facts.memcpy_details, "size"));
      args.correlation = facts.correlation;
      builder_.AddTransferArgs(args);
    }
    if (facts.correlation >= 0) {
      Correlated& ends = correlation_[facts.correlation];
      if (device_plane_) {
        if (role == LineRole::kStream) ends.device.push_back(index);
      } else if (ends.host == kNoSlice) {
        ends.host = index;
      }
    }
    return Status::Ok();
  }

  TraceBuilder builder_;
  std::string name_;
  int32_t hosts_ = 0;
  uint32_t host_ = 0;
  uint32_t device_ = 0;
  bool device_plane_ = false;
  bool has_streams_ = false;
  int64_t profile_start_ns_ = 0;
  std::unordered_map<int64_t, EventMeta> event_meta_;
  std::unordered_map<int64_t, StringId> stat_names_;
  KnownStatIds kind_stat_ids_;
  std::unordered_map<int64_t, Correlated> correlation_;
};

}  // namespace

StatusOr<Trace> ReadXSpace(std::string_view bytes, const std::string& name) {
  if (bytes.empty()) return InvalidInput(name + ": file is empty");
  XSpaceImporter importer;
  RETURN_IF_ERROR(importer.AddSpace(bytes, name));
  return std::move(importer).Finish(name);
}

StatusOr<Trace> ReadXSpaceFiles(const std::vector<std::string>& paths) {
  if (paths.empty()) return InvalidInput("no .xplane.pb files to read");
  XSpaceImporter importer;
  for (const std::string& path : paths) {
    ASSIGN_OR_RETURN(std::string bytes, ReadFile(path));
    RETURN_IF_ERROR(importer.AddSpace(bytes, path));
  }
  std::string source = paths.front().substr(0, paths.front().find_last_of('/'));
  return std::move(importer).Finish(source.empty() ? paths.front() : source);
}

}  // namespace stepscope::trace
