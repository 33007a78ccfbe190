// Reading TensorFlow 2 / JAX profiler XSpace files, one or a run directory's, into the model
// (xspace_reader.h).
#include "profiler/formats/xspace/xspace_reader.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <unordered_map>

#include "base/file_io.h"
#include "profiler/formats/common/proto_wire.h"
#include "profiler/formats/common/utf8.h"

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

// What an event's stats (and its metadata's) tell about it.
struct EventFacts {
  std::string_view tf_op, kernel_details, memcpy_details;
  int64_t correlation = -1;
  int64_t step_number = -1;  // step_num / iter_num
  bool step = false, hlo_op = false, hlo_module = false;
  bool xla_flops = false;  // XLA's cost of an HLO op (a `flops` stat)
};

// A stat of an event's metadata, decoded once per plane.
struct CachedArg {
  StringId key = 0;
  StringId value = 0;
  bool is_number = false;
  int64_t number = 0;
};

struct EventMeta {
  std::string_view name;
  std::string_view display_name;
  std::string_view stats;  // the XEventMetadata bytes, for its stats
  size_t stats_base = 0;
  // Resolved on first use (per plane): the name's parts and the metadata's stats.
  bool resolved = false;
  bool tf_op = false;       // "node:OpType"
  bool dollar = false;      // a Python function ("$...")
  bool traceme_args = false;  // "name#k=v,...#": the full name is kept as an argument
  StringId full = 0, hash = 0, node = 0, type = 0, hlo_type = 0;
  std::vector<CachedArg> args;
  EventFacts facts;
};

class XSpaceImporter {
 public:
  XSpaceImporter() {
    traceme_key_ = builder_.Intern("traceme");
    unknown_ = builder_.Intern("unknown");
  }

  // `host_from_file_name`: the host track is named after the file (`<host>.xplane.pb`), as the
  // profiler names a run's files, rather than the XSpace's own hostname (runs on several
  // machines may all report the same container name).
  Status AddSpace(std::string_view bytes, const std::string& name, bool host_from_file_name = false) {
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
    if (host.empty() || host_from_file_name) host = HostFromFileName(name);
    // About 40 bytes of protobuf per event and 30 per stat: room for the slices up front.
    builder_.Reserve(builder_.slice_count() + bytes.size() / 40, bytes.size() / 30);
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
    // The first host event of each id launched the device events of that id.
    std::unordered_map<int64_t, uint32_t> launch;
    launch.reserve(correlated_.size());
    for (const Correlated& c : correlated_) {
      if (c.host) launch.try_emplace(c.id, c.slice);
    }
    for (const Correlated& c : correlated_) {
      if (c.host) continue;
      const auto it = launch.find(c.id);
      if (it != launch.end()) builder_.AddFlow(it->second, c.slice, FlowKind::kLaunch);
    }
    builder_.step_info().producer = "XSpace";
    return std::move(builder_).Build();
  }

 private:
  static constexpr int64_t kDenseIds = int64_t{1} << 20;

  // The name of stat metadata `key`; false when the plane has none.
  bool StatName(int64_t key, StringId& name) const {
    if (key >= 0 && static_cast<size_t>(key) < stat_name_index_.size()) {
      if (stat_name_index_[static_cast<size_t>(key)] == 0) return false;
      name = static_cast<StringId>(stat_name_index_[static_cast<size_t>(key)] - 1);
      return true;
    }
    if (key >= 0 && key < kDenseIds) return false;
    const auto it = stat_names_.find(key);
    if (it == stat_names_.end()) return false;
    name = it->second;
    return true;
  }

  EventMeta* FindEventMeta(int64_t id) {
    if (id >= 0 && static_cast<size_t>(id) < event_meta_index_.size()) return event_meta_index_[static_cast<size_t>(id)];
    if (id >= 0 && id < kDenseIds) return nullptr;
    const auto it = event_meta_.find(id);
    return it == event_meta_.end() ? nullptr : &it->second;
  }

  // One end of a launch: a host event or a device event with a correlation id.
  struct Correlated {
    int64_t id = 0;
    bool host = false;
    uint32_t slice = 0;
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
    EventMeta& stored = event_meta_[key] = meta;
    if (key >= 0 && key < kDenseIds) {
      if (event_meta_index_.size() <= static_cast<size_t>(key)) event_meta_index_.resize(static_cast<size_t>(key) + 1, nullptr);
      event_meta_index_[static_cast<size_t>(key)] = &stored;
    }
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
    event_meta_index_.clear();
    no_meta_ = EventMeta();
    stat_names_.clear();
    stat_name_index_.clear();
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
          if (key >= 0 && key < kDenseIds) {
            if (stat_name_index_.size() <= static_cast<size_t>(key)) stat_name_index_.resize(static_cast<size_t>(key) + 1, 0);
            stat_name_index_[static_cast<size_t>(key)] = stat_names_[key] + int64_t{1};
          }
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
            iter_num = -1, hlo_op = -1, hlo_module = -1, group_id = -1, flops = -1, model_flops = -1,
            bytes_accessed = -1;
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
      else if (text == "flops") ids.flops = id;
      else if (text == "model_flops") ids.model_flops = id;
      else if (text == "bytes_accessed") ids.bytes_accessed = id;
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
          StringId ref = 0;
          value.s = StatName(static_cast<int64_t>(f.value), ref) ? builder_.strings().Get(ref) : std::string_view();
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
        if (IsAscii(value.s) || Utf8Valid(value.s)) return builder_.Intern(value.s);
        return builder_.Intern(ValidUtf8(value.s));
      case StatValue::kBytes:
      case StatValue::kNone: break;
    }
    return 0;
  }

  static bool Utf8Valid(std::string_view text) { return IsValidUtf8(text); }

  // Eight bytes at a time: most stats are ASCII.
  static bool IsAscii(std::string_view text) {
    uint64_t high = 0;
    size_t i = 0;
    for (; i + 8 <= text.size(); i += 8) {
      uint64_t word = 0;
      std::memcpy(&word, text.data() + i, 8);
      high |= word;
    }
    for (; i < text.size(); ++i) high |= static_cast<uint8_t>(text[i]);
    return (high & 0x8080808080808080ull) == 0;
  }

  // Reads the stats of an event (or of its metadata): the facts they give, and each as an
  // argument into `args`.
  Status ReadStats(std::string_view bytes, size_t base, uint32_t stats_field, EventFacts& facts,
                   std::vector<CachedArg>& args) {
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
      if (key == k.step_num || key == k.iter_num) {
        facts.step = true;
        if (value.kind == StatValue::kInt) facts.step_number = value.i;
        if (value.kind == StatValue::kUint && value.u <= uint64_t{INT64_MAX}) facts.step_number = static_cast<int64_t>(value.u);
      }
      if (key == k.hlo_op) facts.hlo_op = true;
      if (key == k.hlo_module) facts.hlo_module = true;
      if (key == k.flops) facts.xla_flops = true;
      if (value.kind == StatValue::kBytes) {
        builder_.import_stats().Add("xspace_bytes_stats_skipped");
        continue;
      }
      if (value.kind == StatValue::kNone) continue;
      // XLA's cost stats (an HLO op's flops, model_flops, bytes_accessed) are counts, written as
      // integers or, by some versions, as doubles: kept as numbers for the op cost model.
      if ((key == k.flops || key == k.model_flops || key == k.bytes_accessed) && value.kind == StatValue::kDouble &&
          value.d >= 0 && value.d < 9.2e18) {
        value.kind = StatValue::kInt;
        value.i = std::llround(value.d);
      }
      CachedArg arg;
      if (!StatName(key, arg.key)) {
        builder_.import_stats().Add("xspace_stats_without_metadata_skipped");
        continue;
      }
      if (value.kind == StatValue::kInt || (value.kind == StatValue::kUint && value.u <= uint64_t{INT64_MAX})) {
        arg.is_number = true;
        arg.number = value.kind == StatValue::kInt ? value.i : static_cast<int64_t>(value.u);
      } else {
        arg.value = ValueText(value);
      }
      args.push_back(arg);
    }
    if (reader.failed()) return Damage(reader);
    return Status::Ok();
  }

  void AddArgs(uint32_t slice, const std::vector<CachedArg>& args) {
    for (const CachedArg& arg : args) {
      if (arg.is_number) {
        builder_.AddSliceArg(slice, arg.key, arg.number);
      } else {
        builder_.AddSliceArg(slice, arg.key, arg.value);
      }
    }
  }

  // The name's parts and the metadata's stats, once per metadata.
  Status Resolve(EventMeta& meta) {
    meta.resolved = true;
    const std::string_view name = meta.name.empty() ? meta.display_name : meta.name;
    const size_t hash_at = name.find('#');
    const std::string_view hash = hash_at != std::string_view::npos ? name.substr(0, hash_at) : name;
    meta.traceme_args = hash.size() != name.size();
    if (meta.traceme_args) meta.full = builder_.Intern(ValidUtf8(name));
    meta.hash = builder_.Intern(ValidUtf8(hash));
    meta.dollar = !hash.empty() && hash[0] == '$';
    std::string_view node, type;
    meta.tf_op = SplitTfOp(hash, node, type);
    if (meta.tf_op) {
      meta.node = builder_.Intern(ValidUtf8(node));
      meta.type = builder_.Intern(ValidUtf8(type));
    }
    meta.hlo_type = builder_.Intern(ValidUtf8(HloOpType(hash)));
    if (!meta.stats.empty()) RETURN_IF_ERROR(ReadStats(meta.stats, meta.stats_base, xmeta::kStats, meta.facts, meta.args));
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
    EventMeta* meta = FindEventMeta(metadata_id);
    if (meta == nullptr) {
      builder_.import_stats().Add("xspace_events_without_metadata");
      meta = &no_meta_;
    }
    if (!meta->resolved) RETURN_IF_ERROR(Resolve(*meta));
    SliceRecord slice;
    slice.start_ns = line_ns + offset_ps / 1000;
    slice.dur_ns = line_ns + (offset_ps + duration_ps) / 1000 - slice.start_ns;
    slice.track = track;
    const uint32_t index = builder_.AddSlice(slice);
    EventFacts facts = meta->facts;
    args_.clear();
    RETURN_IF_ERROR(ReadStats(event.bytes, static_cast<size_t>(event.value), xevent::kStats, facts, args_));
    AddArgs(index, args_);
    AddArgs(index, meta->args);

    // Name, op type and kind.
    StringId node = meta->hash, type = meta->hash;
    SliceKind kind = SliceKind::kOther;
    const std::string_view hash = builder_.strings().Get(meta->hash);
    if (role == LineRole::kStream) {
      kind = SliceKind::kKernel;
      if (!facts.memcpy_details.empty() || hash.find("emcpy") != std::string_view::npos) kind = SliceKind::kMemcpy;
      else if (hash.find("emset") != std::string_view::npos) kind = SliceKind::kMemset;
      std::string_view tf_node, tf_type;
      if (!facts.tf_op.empty() && SplitTfOp(facts.tf_op, tf_node, tf_type)) {
        node = builder_.Intern(ValidUtf8(tf_node));
        type = builder_.Intern(ValidUtf8(tf_type));
      }
    } else if (role == LineRole::kDerived) {
      kind = SliceKind::kAnnotation;
      // A GPU's XLA op with its cost ("fusion.12"): typed by instruction ("fusion"), as the
      // host's XLA ops are, so the op cost model groups it by type.
      if (facts.xla_flops) type = meta->hlo_type;
    } else if (facts.step || (python && meta->dollar)) {
      kind = SliceKind::kAnnotation;
      // A step annotation (tf.profiler.experimental.Trace(..., step_num=N),
      // jax.profiler.StepTraceAnnotation) is named as the PyTorch profiler names its steps, so
      // per-step analyses find it; its own name stays the op type.
      if (facts.step && facts.step_number >= 0) node = builder_.Intern("ProfilerStep#" + std::to_string(facts.step_number));
    } else if (facts.correlation >= 0 && !device_plane_) {
      kind = SliceKind::kRuntime;
    } else if (meta->tf_op) {
      kind = SliceKind::kOp;
      node = meta->node;
      type = meta->type;
    } else if (facts.hlo_op || role == LineRole::kDeviceOps) {
      kind = SliceKind::kOp;
      type = meta->hlo_type;
    } else {
      // The framework's own TraceMe spans (EagerExecute, tf.function calls, jit_* executions,
      // Python functions) enclose the ops: shown, not counted as work.
      kind = SliceKind::kAnnotation;
    }
    if (meta->traceme_args) builder_.AddSliceArg(index, traceme_key_, meta->full);
    SliceRecord added = builder_.slice(index);
    added.kind = kind;
    added.name = node;
    added.op_type = type != 0 ? type : unknown_;
    builder_.SetSlice(index, added);

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
    if (facts.correlation >= 0 && (!device_plane_ || role == LineRole::kStream)) {
      correlated_.push_back(Correlated{facts.correlation, !device_plane_, index});
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
  std::vector<EventMeta*> event_meta_index_;  // ids below kDenseIds
  std::unordered_map<int64_t, StringId> stat_names_;
  std::vector<int64_t> stat_name_index_;  // ids below kDenseIds: StringId + 1, 0 when unknown
  KnownStatIds kind_stat_ids_;
  std::vector<Correlated> correlated_;
  std::vector<CachedArg> args_;
  EventMeta no_meta_;
  StringId traceme_key_ = 0, unknown_ = 0;
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
    RETURN_IF_ERROR(importer.AddSpace(bytes, path, /*host_from_file_name=*/paths.size() > 1));
  }
  std::string source = paths.front().substr(0, paths.front().find_last_of('/'));
  return std::move(importer).Finish(source.empty() ? paths.front() : source);
}

}  // namespace stepscope::trace
