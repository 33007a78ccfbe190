// Telling RunMetadata/StepStats, XSpace and Perfetto protobuf apart by walking their first bytes
// against each schema (format_sniff.h).
#include "profiler/formats/common/format_sniff.h"

#include <algorithm>
#include <cstdint>

#include "profiler/formats/common/varint.h"

namespace stepscope::trace {
namespace {

// The messages the sniffer knows, and what each allows.
enum class Msg : uint8_t {
  kNone,  // a field whose content is not checked
  kText,  // a string field: printable text
  kAnyMessage,  // a message we do not know: well-formed wire format
  // step stats (proto/stepscope/tf)
  kRunMetadata, kStepStats, kDeviceStepStats, kNodeExecStats,
  // XSpace (tsl/profiler/protobuf/xplane.proto)
  kXSpace, kXPlane, kXLine, kXEvent, kXStat, kXEventMetadataEntry, kXStatMetadataEntry,
  kXEventMetadata, kXStatMetadata,
  // Perfetto (protos/perfetto/trace)
  kTrace, kTracePacket, kTrackEvent, kTrackDescriptor, kClockSnapshot, kClock, kInternedData,
  kInterned,
};

constexpr uint8_t kV = 0, kI64 = 1, kLen = 2, kI32 = 5;
constexpr uint8_t kAny = 0xff;  // open schemas: a field we do not know, any wire type

struct Rule {
  uint8_t wire = kAny;
  Msg nested = Msg::kNone;
  bool allowed = false;
};

Rule R(uint8_t wire, Msg nested = Msg::kNone) { return {wire, nested, true}; }

// The rule for field `number` of message `msg`; `allowed` false when the field cannot occur.
Rule RuleFor(Msg msg, uint64_t number) {
  switch (msg) {
    case Msg::kRunMetadata:
      if (number == 1) return R(kLen, Msg::kStepStats);
      if ((number >= 2 && number <= 5) || number == 1000) return R(kLen);
      return R(kAny);
    case Msg::kStepStats:
      if (number == 1) return R(kLen, Msg::kDeviceStepStats);
      return {};
    // Open from here down (a field TensorFlow adds one day is kept, not refused); a
    // DeviceStepStats must name its device (field 1), which tells it from other messages.
    case Msg::kDeviceStepStats:
      if (number == 1) return R(kLen, Msg::kText);
      if (number == 2) return R(kLen, Msg::kNodeExecStats);
      if (number == 3) return R(kLen);
      if (number == 1000) return R(kLen, Msg::kText);
      if (number == 1001) return R(kV);
      return R(kAny);
    case Msg::kNodeExecStats:
      if (number == 1 || number == 8) return R(kLen, Msg::kText);
      if ((number >= 2 && number <= 5) || number == 9 || number == 10 || (number >= 13 && number <= 17)) return R(kV);
      if (number == 6 || number == 7 || number == 11 || number == 12) return R(kLen);
      if (number == 1000) return R(kLen, Msg::kText);
      if (number == 1001 || number == 1002 || number == 1003 || number == 1005 ||
          number == 1006) return R(kLen);
      if (number == 1004) return R(kV);
      return R(kAny);
    case Msg::kXSpace:
      if (number == 1) return R(kLen, Msg::kXPlane);
      if (number >= 2 && number <= 4) return R(kLen, Msg::kText);
      return {};
    case Msg::kXPlane:
      if (number == 1) return R(kV);
      if (number == 2) return R(kLen, Msg::kText);
      if (number == 3) return R(kLen, Msg::kXLine);
      if (number == 4) return R(kLen, Msg::kXEventMetadataEntry);
      if (number == 5) return R(kLen, Msg::kXStatMetadataEntry);
      if (number == 6) return R(kLen, Msg::kXStat);
      return {};
    case Msg::kXLine:
      if (number == 1 || number == 3 || number == 9 || number == 10) return R(kV);
      if (number == 2 || number == 11) return R(kLen, Msg::kText);
      if (number == 4) return R(kLen, Msg::kXEvent);
      return {};
    case Msg::kXEvent:
      if (number == 1 || number == 2 || number == 3 || number == 5) return R(kV);
      if (number == 4) return R(kLen, Msg::kXStat);
      return {};
    case Msg::kXStat:
      if (number == 1 || number == 3 || number == 4 || number == 7) return R(kV);
      if (number == 2) return R(kI64);
      if (number == 5 || number == 6) return R(kLen);
      return {};
    case Msg::kXEventMetadataEntry:
      if (number == 1) return R(kV);
      if (number == 2) return R(kLen, Msg::kXEventMetadata);
      return {};
    case Msg::kXStatMetadataEntry:
      if (number == 1) return R(kV);
      if (number == 2) return R(kLen, Msg::kXStatMetadata);
      return {};
    case Msg::kXEventMetadata:
      if (number == 1) return R(kV);
      if (number == 2 || number == 4) return R(kLen, Msg::kText);
      if (number == 3) return R(kLen);
      if (number == 5) return R(kLen, Msg::kXStat);
      if (number == 6) return R(kAny);  // child_id: packed or not
      return {};
    case Msg::kXStatMetadata:
      if (number == 1) return R(kV);
      if (number == 2 || number == 3) return R(kLen, Msg::kText);
      return {};
    case Msg::kTrace:
      if (number == 1) return R(kLen, Msg::kTracePacket);
      return {};
    case Msg::kTracePacket:
      // Open: a Trace holds packets of many data sources. The fields every producer uses are
      // checked; the data fields 1, 2, 4, 5 and 7 of the oneof are messages.
      if (number == 8 || number == 10 || number == 13 || number == 58 || number == 3 || number == 41 ||
          number == 42 || number == 79 || number == 87) {
        return R(kV);
      }
      if (number == 11) return R(kLen, Msg::kTrackEvent);
      if (number == 60) return R(kLen, Msg::kTrackDescriptor);
      if (number == 6) return R(kLen, Msg::kClockSnapshot);
      if (number == 12) return R(kLen, Msg::kInternedData);
      if (number == 1 || number == 2 || number == 4 || number == 5 || number == 7 || number == 9 ||
          number == 59) {
        return R(kLen, Msg::kAnyMessage);
      }
      return R(kAny);
    case Msg::kTrackEvent:
      if (number == 3 || number == 9 || number == 10 || number == 11 || number == 30) return R(kV);
      if (number == 22 || number == 23) return R(kLen, Msg::kText);
      if (number == 4) return R(kLen);
      if (number == 47 || number == 48) return R(kI64);
      return R(kAny);
    case Msg::kTrackDescriptor:
      if (number == 1 || number == 5 || number == 9 || number == 11 || number == 12) return R(kV);
      if (number == 2 || number == 10) return R(kLen, Msg::kText);
      if (number == 3 || number == 4 || number == 6 || number == 7 || number == 8) return R(kLen);
      return R(kAny);
    case Msg::kClockSnapshot:
      if (number == 1) return R(kLen, Msg::kClock);
      if (number == 2) return R(kV);
      return {};
    case Msg::kClock:
      if (number >= 1 && number <= 4) return R(kV);
      return {};
    case Msg::kInternedData:
      return R(kLen, Msg::kInterned);
    case Msg::kInterned:
      if (number == 1) return R(kV);
      return R(kAny);
    case Msg::kNone:
    case Msg::kText:
    case Msg::kAnyMessage:
      return R(kAny);
  }
  return {};
}

// Printable text (UTF-8 bytes allowed): a device or plane name, a node name.
bool IsText(std::string_view bytes) {
  for (char c : bytes) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 && u != '\t' && u != '\n' && u != '\r') return false;
    if (u == 0x7f) return false;
  }
  return true;
}

// True when `bytes` fit `msg`'s schema; a field cut by the end of the window (`cut`) fits.
bool Fits(std::string_view bytes, Msg msg, int depth, bool cut) {
  if (msg == Msg::kNone) return true;
  if (msg == Msg::kText) return IsText(bytes);
  size_t pos = 0;
  // A DeviceStepStats starts with its device (field 1: TensorFlow writes fields in order).
  const bool needs_device = msg == Msg::kDeviceStepStats;
  bool named = !needs_device;
  bool first_field = true;
  while (pos < bytes.size()) {
    uint64_t tag = 0;
    if (!ReadVarint(bytes, pos, tag)) return cut;
    const uint64_t number = tag >> 3;
    const auto wire = static_cast<uint8_t>(tag & 7);
    if (number == 0) return false;
    const Rule rule = RuleFor(msg, number);
    if (!rule.allowed) return false;
    if (rule.wire != kAny && rule.wire != wire) return false;
    if (number == 1) named = true;
    if (needs_device && first_field && number != 1) return false;
    first_field = false;
    switch (wire) {
      case kV: {
        uint64_t value = 0;
        if (!ReadVarint(bytes, pos, value)) return cut;
        break;
      }
      case kI64:
        if (bytes.size() - pos < 8) return cut;
        pos += 8;
        break;
      case kI32:
        if (bytes.size() - pos < 4) return cut;
        pos += 4;
        break;
      case kLen: {
        uint64_t length = 0;
        if (!ReadVarint(bytes, pos, length)) return cut;
        const bool inner_cut = length > bytes.size() - pos;
        if (inner_cut && !cut) return false;
        const std::string_view inner = bytes.substr(pos, inner_cut ? bytes.size() - pos : length);
        if (depth < 4 && !Fits(inner, rule.nested, depth + 1, inner_cut)) return false;
        if (inner_cut) return true;
        pos += length;
        break;
      }
      default:
        return false;
    }
  }
  return named || (cut && first_field);
}

// The format is judged by the first top-level message (field 1, length-delimited, in every
// format here): damage further on is for the format's reader to report with its offset.
bool FitsTop(std::string_view bytes, Msg msg, bool assume_cut) {
  if (bytes.empty() || static_cast<unsigned char>(bytes[0]) != 0x0a) return false;
  size_t pos = 1;
  uint64_t length = 0;
  if (!ReadVarint(bytes, pos, length)) return assume_cut;
  const Rule rule = RuleFor(msg, 1);
  const bool past_end = length > bytes.size() - pos;
  if (past_end && !assume_cut) return false;
  const bool cut = past_end || length > kSniffWindow;
  const std::string_view first = bytes.substr(pos, std::min<uint64_t>({length, bytes.size() - pos, kSniffWindow}));
  return Fits(first, rule.nested, 1, cut);
}

}  // namespace

bool FitsStepStats(std::string_view bytes, bool cut) {
  return FitsTop(bytes, Msg::kRunMetadata, cut) || FitsTop(bytes, Msg::kStepStats, cut);
}
bool FitsXSpace(std::string_view bytes, bool cut) { return FitsTop(bytes, Msg::kXSpace, cut); }
bool FitsPerfettoTrace(std::string_view bytes, bool cut) { return FitsTop(bytes, Msg::kTrace, cut); }

ProtoFormat SniffProtobuf(std::string_view bytes) {
  if (FitsStepStats(bytes)) return ProtoFormat::kStepStats;
  if (FitsXSpace(bytes)) return ProtoFormat::kXSpace;
  if (FitsPerfettoTrace(bytes)) return ProtoFormat::kPerfettoTrace;
  return ProtoFormat::kNone;
}

}  // namespace stepscope::trace
