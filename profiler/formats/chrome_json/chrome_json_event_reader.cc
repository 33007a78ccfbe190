// Reading the events of a Chrome JSON file, a batch at a time on any thread: each event's fields
// and args as views into the parsed bytes, its times and kind worked out, the PyTorch profiler's
// kernel launch and transfer args recognised (chrome_json_events.h); and the text and number
// helpers the importer shares.
#include <simdjson.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

#include "profiler/formats/chrome_json/chrome_json_events.h"
#include "profiler/formats/chrome_json/chrome_json_reader.h"
#include "profiler/formats/common/utf8.h"

namespace stepscope::trace {

namespace od = simdjson::ondemand;

std::optional<int64_t> MicrosTextToNs(std::string_view text) {
  while (!text.empty() && IsJsonSpace(text.back())) text.remove_suffix(1);
  if (text.empty()) return std::nullopt;
  size_t i = 0;
  const bool negative = text[0] == '-';
  if (negative) ++i;
  if (i >= text.size() || text[i] < '0' || text[i] > '9') return std::nullopt;
  // Half the int64 range, so that start + duration and differences of times cannot overflow.
  constexpr int64_t kLimit = std::numeric_limits<int64_t>::max() / 2 / 1000;
  int64_t micros = 0;
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
    if (micros > (kLimit - (text[i] - '0')) / 10) return std::nullopt;  // beyond int64 ns
    micros = micros * 10 + (text[i] - '0');
  }
  int64_t fraction_ns = 0;
  if (i < text.size() && text[i] == '.') {
    ++i;
    int digits = 0;
    int round_digit = -1;
    for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i, ++digits) {
      if (digits < 3) fraction_ns = fraction_ns * 10 + (text[i] - '0');
      if (digits == 3) round_digit = text[i] - '0';
    }
    for (int d = digits; d < 3; ++d) fraction_ns *= 10;
    if (round_digit >= 5) ++fraction_ns;
  }
  if (i < text.size()) {
    if (text[i] != 'e' && text[i] != 'E') return std::nullopt;
    // Exponent forms are rare (and never epoch times): go through a double.
    const std::string copy(text);
    char* end = nullptr;
    const double value = std::strtod(copy.c_str(), &end);
    if (end != copy.c_str() + copy.size() || !std::isfinite(value) || std::fabs(value) * 1000.0 > 9.2e18) {
      return std::nullopt;
    }
    return static_cast<int64_t>(std::llround(value * 1000.0));
  }
  const int64_t ns = micros * 1000 + fraction_ns;
  return negative ? -ns : ns;
}

namespace chrome_json_detail {

// A JSON number as int64: NaN is 0, values past the int64 range saturate (a cast would be UB).
int64_t SaturatedInt64(double value) {
  if (std::isnan(value)) return 0;
  if (value >= 9.2e18) return std::numeric_limits<int64_t>::max();
  if (value <= -9.2e18) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(value);
}

// Kineto's category names (its ActivityType names), the spellings of older PyTorch profilers
// (Operator, Runtime, Kernel, Memcpy, Memset), MTIA's (mtia_ccp_events, mtia_runtime) and other
// devices' runtimes, as HolisticTraceAnalysis reads them.
SliceKind KindOfCategory(std::string_view cat) {
  if (cat == "kernel" || cat == "Kernel" || cat == "mtia_ccp_events") return SliceKind::kKernel;
  if (cat == "gpu_memcpy" || cat == "Memcpy") return SliceKind::kMemcpy;
  if (cat == "gpu_memset" || cat == "Memset") return SliceKind::kMemset;
  if (cat == "cuda_runtime" || cat == "cuda_driver" || cat == "Runtime" || cat == "mtia_runtime" ||
      cat == "xpu_runtime" || cat == "privateuse1_runtime" || cat == "privateuse1_driver") {
    return SliceKind::kRuntime;
  }
  if (cat == "cpu_op" || cat == "Op" || cat == "Operator") return SliceKind::kOp;
  if (cat == "user_annotation" || cat == "gpu_user_annotation" || cat == "Trace" || cat == "cuda_profiler_range") {
    return SliceKind::kAnnotation;
  }
  if (cat == "cuda_sync") return SliceKind::kSync;
  if (cat == "python_function") return SliceKind::kPythonFrame;
  // Our own perfetto export writes the slice kind as the category.
  if (cat == "op") return SliceKind::kOp;
  if (cat == "memcpy") return SliceKind::kMemcpy;
  if (cat == "memset") return SliceKind::kMemset;
  if (cat == "collective") return SliceKind::kCollective;
  if (cat == "runtime") return SliceKind::kRuntime;
  if (cat == "annotation") return SliceKind::kAnnotation;
  if (cat == "sync") return SliceKind::kSync;
  if (cat == "python") return SliceKind::kPythonFrame;
  return SliceKind::kOther;
}

// Categories whose events sit on a device's lanes (pid = device, tid = stream).
bool IsDeviceCategory(std::string_view cat) {
  return cat == "kernel" || cat == "Kernel" || cat == "mtia_ccp_events" || cat == "gpu_memcpy" || cat == "Memcpy" ||
         cat == "gpu_memset" || cat == "Memset" || cat == "gpu_user_annotation" || cat == "cuda_sync";
}

// A raw number token without the white space simdjson leaves after it.
std::string_view Trim(std::string_view text) {
  while (!text.empty() && IsJsonSpace(text.back())) text.remove_suffix(1);
  return text;
}

// A JSON number's text as a double; nullopt for what strtod cannot read or infinities (integers
// beyond a double's range, which real Kineto files contain, come out inexact but finite).
// Integers of up to 18 digits (most numbers in a trace: ids, sizes) are read directly, other
// numbers by from_chars; both round as strtod does, which reads what they leave.
std::optional<double> NumberOf(std::string_view text) {
  if (!text.empty() && text.size() <= 19) {
    size_t i = text[0] == '-' ? 1 : 0;
    uint64_t magnitude = 0;  // 19 digits at most: no overflow before the length is checked
    const size_t first_digit = i;
    for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) magnitude = magnitude * 10 + (text[i] - '0');
    if (i == text.size() && i > first_digit && i - first_digit <= 18) {
      return first_digit == 1 ? -static_cast<double>(magnitude) : static_cast<double>(magnitude);
    }
  }
  double parsed = 0;
  if (const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), parsed);
      error == std::errc() && end == text.data() + text.size()) {
    if (!std::isfinite(parsed)) return std::nullopt;
    return parsed;
  }
  char buffer[64];
  if (text.empty() || text.size() >= sizeof buffer) return std::nullopt;
  std::memcpy(buffer, text.data(), text.size());
  buffer[text.size()] = '\0';
  char* end = nullptr;
  const double value = std::strtod(buffer, &end);
  if (end != buffer + text.size() || !std::isfinite(value)) return std::nullopt;
  return value;
}

}  // namespace chrome_json_detail

using namespace chrome_json_detail;  // the helpers shared with the importer

namespace {

bool StartsWith(std::string_view text, std::string_view prefix) { return text.substr(0, prefix.size()) == prefix; }

// The kind a category gives (`kind`, KindOfCategory), refined by the event's name: device events
// named as copies or fills (ROCm's hipMemcpy*/Copy*To*/FillBuffer, MTIA's dma*) are copies and
// memsets; ProfilerStep#N (a cpu_op in older profilers) and `## name ##` record_function spans
// are annotations.
SliceKind KindOfEvent(SliceKind kind, std::string_view name) {
  if (kind == SliceKind::kKernel) {
    if (StartsWith(name, "Memcpy") || StartsWith(name, "hipMemcpy") || StartsWith(name, "dma") ||
        (StartsWith(name, "Copy") && name.find("To") != std::string_view::npos)) {
      return SliceKind::kMemcpy;
    }
    if (StartsWith(name, "Memset") || StartsWith(name, "hipMemset") || StartsWith(name, "FillBuffer")) {
      return SliceKind::kMemset;
    }
  } else if (kind == SliceKind::kOp || kind == SliceKind::kOther) {
    if (StartsWith(name, "ProfilerStep#") ||
        (name.size() >= 6 && StartsWith(name, "## ") && name.substr(name.size() - 3) == " ##")) {
      return SliceKind::kAnnotation;
    }
  }
  return kind;
}

// pid/tid/id as text: numbers as written, strings unquoted.
// The view points into the parser's string buffer or the parsed bytes (valid while both are).
bool ReadText(od::value value, std::string_view& out) {
  od::json_type type;
  if (value.type().get(type)) return false;
  if (type == od::json_type::string) return !value.get_string().get(out);
  out = Trim(value.raw_json_token());
  if (type == od::json_type::null) out = {};
  return true;
}

// A field's key: a view of the parsed bytes when it has no escape (nearly every key), else
// unescaped into the parser's string buffer. Either lives as long as the batch's parse.
simdjson::error_code KeyOf(od::field& field, std::string_view& key) {
  const char* raw = field.key().raw();
  size_t n = 0;
  while (raw[n] != '"' && raw[n] != '\\') ++n;  // the closing quote is in the indexed bytes
  if (raw[n] == '"') {
    key = {raw, n};
    return simdjson::SUCCESS;
  }
  return field.unescaped_key().get(key);
}

// The event fields the import reads, told apart by length and bytes rather than a chain of
// comparisons (ten keys an event, a hundred million events).
enum class EventKey : uint8_t { kOther, kPh, kName, kCat, kTs, kDur, kPid, kTid, kId, kBp, kArgs };
EventKey EventKeyOf(std::string_view key) {
  const char* k = key.data();
  switch (key.size()) {
    case 2:
      if (std::memcmp(k, "ph", 2) == 0) return EventKey::kPh;
      if (std::memcmp(k, "ts", 2) == 0) return EventKey::kTs;
      if (std::memcmp(k, "id", 2) == 0) return EventKey::kId;
      if (std::memcmp(k, "bp", 2) == 0) return EventKey::kBp;
      break;
    case 3:
      if (std::memcmp(k, "cat", 3) == 0) return EventKey::kCat;
      if (std::memcmp(k, "dur", 3) == 0) return EventKey::kDur;
      if (std::memcmp(k, "pid", 3) == 0) return EventKey::kPid;
      if (std::memcmp(k, "tid", 3) == 0) return EventKey::kTid;
      break;
    case 4:
      if (std::memcmp(k, "name", 4) == 0) return EventKey::kName;
      if (std::memcmp(k, "args", 4) == 0) return EventKey::kArgs;
      break;
  }
  return EventKey::kOther;
}

}  // namespace

const ChromeEventBatch::Impl::CategoryKind& ChromeEventBatch::Impl::CategoryKindOf(std::string_view cat) {
  for (const CategoryKind& known : categories) {
    if (known.cat == cat) return known;
  }
  CategoryKind& added = categories[next_category];
  next_category = next_category + 1 == categories.size() ? 1 : next_category + 1;
  added.cat.assign(cat);
  added.kind = KindOfCategory(cat);
  added.device = IsDeviceCategory(cat);
  return added;
}

simdjson::error_code ChromeEventBatch::Impl::Read(od::value value) {
  ChromeEventFields& event = events.emplace_back();
  event.numbers_begin = event.numbers_end = static_cast<uint32_t>(numbers.size());
  event.args_begin = event.args_end = static_cast<uint32_t>(raw_args.size());
  od::object object;
  if (value.get_object().get(object)) {
    event.not_an_object = true;
    return simdjson::SUCCESS;
  }
  for (auto field_result : object) {
    od::field field;
    if (auto error = std::move(field_result).get(field)) return Drop(error);
    std::string_view key;
    if (auto error = KeyOf(field, key)) return Drop(error);
    od::value v = field.value();
    switch (EventKeyOf(key)) {
      case EventKey::kPh:
        if (v.get_string().get(event.ph)) event.ph = "?";
        break;
      case EventKey::kName:
        // A name with a broken escape is kept, empty, and counted.
        if (v.get_string().get(event.name)) {
          event.name = {};
          ++event.strings_unreadable;
        }
        break;
      case EventKey::kCat:
        if (v.get_string().get(event.cat)) event.cat = {};
        break;
      case EventKey::kTs:
        event.has_ts = true;
        event.ts = v.raw_json_token();
        break;
      case EventKey::kDur:
        event.has_dur = true;
        event.dur = v.raw_json_token();
        break;
      case EventKey::kPid:
        if (!ReadText(v, event.pid)) event.pid = {};
        break;
      case EventKey::kTid:
        if (!ReadText(v, event.tid)) event.tid = {};
        break;
      case EventKey::kId:
        event.has_id = ReadText(v, event.id);
        break;
      case EventKey::kBp:
        if (v.get_string().get(event.bp)) event.bp = {};
        break;
      case EventKey::kArgs:
        if (auto error = Args(v, event)) return Drop(error);
        break;
      case EventKey::kOther:
        break;
    }
  }
  event.numbers_end = static_cast<uint32_t>(numbers.size());
  event.args_end = static_cast<uint32_t>(raw_args.size());
  if (event.has_ts) event.ts_ns = MicrosTextToNs(event.ts);
  if (event.has_dur) event.dur_ns = MicrosTextToNs(event.dur);
  if (event.ph == "X" || event.ph == "B") {
    const CategoryKind& category = CategoryKindOf(event.cat);
    event.kind = KindOfEvent(category.kind, event.name);
    event.device_category = category.device;
    if (event.ph == "X") LaunchArgs(event);
  } else if (event.has_id && !event.id.empty()) {
    const std::string text(event.id);
    char* parse_end = nullptr;
    event.id_number = std::strtoull(text.c_str(), &parse_end, 10);
    event.id_is_number = parse_end == text.c_str() + text.size();
  }
  return simdjson::SUCCESS;
}

void ChromeEventBatch::Impl::LaunchArgs(ChromeEventFields& event) const {
  if (!event.has_args) return;
  const SliceKind kind = event.kind;
  const std::span<const std::pair<std::string_view, std::string_view>> numbers_(numbers.data() + event.numbers_begin, numbers.data() + event.numbers_end);
  auto integer = [&](std::string_view text, int64_t limit) -> int64_t {
    const std::optional<double> value = NumberOf(text);
    if (!value || *value < 0 || *value > static_cast<double>(limit) || *value != std::floor(*value)) return -1;
    return static_cast<int64_t>(*value);
  };
  auto real = [&](std::string_view text) -> float {
    const std::optional<double> value = NumberOf(text);
    return value && *value >= 0 && *value < 1e30 ? static_cast<float>(*value) : -1.0f;
  };
  constexpr int64_t kInt32 = INT32_MAX;
  constexpr int64_t kInt62 = int64_t{1} << 62;
  // Where it ran, kernels and transfers alike: device, stream, correlation id.
  auto launch = [&](auto& args, std::string_view key, std::string_view text) {
    if (key == "device") {
      args.device = static_cast<int32_t>(integer(text, kInt32));
    } else if (key == "stream") {
      args.stream = static_cast<int32_t>(integer(text, kInt32));
    } else if (key == "correlation") {
      args.correlation = integer(text, kInt62);
    } else {
      return false;
    }
    return true;
  };
  if (kind == SliceKind::kRuntime || kind == SliceKind::kOp || kind == SliceKind::kSync) {
    // The id CUPTI gives a runtime or driver call and the GPU work it enqueues alike, and a
    // synchronising call and the sync it waited in (our own export writes it on the executor
    // op that launched the work, as our step stats keep it).
    for (const auto& [key, text] : numbers_) {
      if (key == "correlation") event.correlation = integer(text, kInt62);
    }
  } else if (kind == SliceKind::kKernel) {
    KernelArgs args;
    bool any = event.grid[0] != 0;
    std::copy(event.grid, event.grid + 3, args.grid);
    std::copy(event.block, event.block + 3, args.block);
    for (const auto& [key, text] : numbers_) {
      if (key == "registers per thread") {
        args.registers_per_thread = static_cast<int32_t>(integer(text, kInt32));
      } else if (key == "shared memory") {
        args.shared_memory_bytes = static_cast<int32_t>(integer(text, kInt32));
      } else if (launch(args, key, text)) {  // read into args
      } else if (key == "blocks per SM") {
        args.blocks_per_sm = real(text);
      } else if (key == "warps per SM") {
        args.warps_per_sm = real(text);
      } else if (key == "est. achieved occupancy %") {
        args.occupancy_percent = real(text);
      } else {
        continue;
      }
      any = true;
    }
    if (any) {
      event.kernel_args = args;
      event.launch_args = ChromeEventFields::kKernelArgs;
    }
  } else if (kind == SliceKind::kMemcpy || kind == SliceKind::kMemset) {
    TransferArgs args;
    bool any = false;
    for (const auto& [key, text] : numbers_) {
      if (key == "bytes") {
        args.bytes = integer(text, kInt62);
      } else if (key == "memory bandwidth (GB/s)") {
        args.bandwidth_gbps = real(text);
      } else if (launch(args, key, text)) {  // read into args
      } else {
        continue;
      }
      any = true;
    }
    if (any) {
      event.transfer_args = args;
      event.launch_args = ChromeEventFields::kTransferArgs;
    }
  }
}

simdjson::error_code ChromeEventBatch::Impl::Drop(simdjson::error_code error) {
  numbers.resize(events.back().numbers_begin);
  raw_args.resize(events.back().args_begin);
  events.pop_back();
  return error;
}

simdjson::error_code ChromeEventBatch::Impl::Args(od::value value, ChromeEventFields& event) {
  od::object object;
  if (value.get_object().get(object)) return simdjson::SUCCESS;  // args that are not an object
  event.has_args = true;
  for (auto field_result : object) {
    od::field field;
    if (auto error = std::move(field_result).get(field)) return error;
    std::string_view key;
    if (auto error = KeyOf(field, key)) return error;
    od::value v = field.value();
    od::json_type type;
    if (auto error = v.type().get(type)) return error;
    if (key == "name") {
      event.args_has_name = true;
      if (type == od::json_type::string) {
        if (v.get_string().get(event.args_name)) event.args_name = {};
      } else if (!ReadText(v, event.args_name)) {
        event.args_name = {};
      }
      if (type == od::json_type::string || type == od::json_type::number) {
        raw_args.push_back({key, event.args_name, type == od::json_type::string ? ChromeRawArg::kText : ChromeRawArg::kNumber});
      }
    } else if (key == "labels" && type == od::json_type::string) {
      if (v.get_string().get(event.args_labels)) event.args_labels = {};
    } else if (key == "op" && type == od::json_type::string) {
      event.args_has_op = !v.get_string().get(event.args_op);
      if (event.args_has_op) raw_args.push_back({key, event.args_op, ChromeRawArg::kText});
    } else if (type == od::json_type::array && (key == "grid" || key == "block")) {
      ReadTriple(v, key == "grid" ? event.grid : event.block, event);  // a kernel's: KernelArgs
    } else if (type == od::json_type::number) {
      // Kept as text: most events never need their numbers (they are parsed for counters,
      // memory events and sort indices only).
      numbers.emplace_back(key, Trim(v.raw_json_token()));
      raw_args.push_back({key, numbers.back().second, ChromeRawArg::kNumber});
      if (key == "sort_index") {
        if (auto number = NumberOf(numbers.back().second)) event.sort_index = SaturatedInt64(*number);
      }
    } else if (type == od::json_type::string) {
      std::string_view text;
      if (v.get_string().get(text)) {
        ++event.strings_unreadable;  // kept, empty, as a name with a broken escape
        text = {};
      }
      raw_args.push_back({key, text, ChromeRawArg::kText});
    } else {
      // Arrays, objects, true, false, null: the JSON as written (Kineto's `Input Dims`).
      std::string_view raw;
      if (type == od::json_type::array) {
        od::array array;
        if (auto error = v.get_array().get(array)) return error;
        if (auto error = array.raw_json().get(raw)) return error;
      } else if (type == od::json_type::object) {
        od::object inner;
        if (auto error = v.get_object().get(inner)) return error;
        if (auto error = inner.raw_json().get(raw)) return error;
      } else {
        raw = v.raw_json_token();
      }
      raw_args.push_back({key, Trim(raw), ChromeRawArg::kJson});
    }
  }
  return simdjson::SUCCESS;
}

void ChromeEventBatch::Impl::ReadTriple(od::value value, uint32_t* out, ChromeEventFields& event) {
  od::array array;
  if (value.get_array().get(array)) return;
  uint32_t parsed[3] = {0, 0, 0};
  size_t count = 0;
  for (auto element : array) {
    uint64_t number = 0;
    if (element.get_uint64().get(number) || count >= 3 || number > UINT32_MAX) {
      ++event.launch_dims_unreadable;
      return;
    }
    parsed[count++] = static_cast<uint32_t>(number);
  }
  if (count != 3) {
    ++event.launch_dims_unreadable;
    return;
  }
  std::copy(parsed, parsed + 3, out);
}

ChromeEventBatch::ChromeEventBatch() : impl_(std::make_unique<Impl>()) {}
ChromeEventBatch::~ChromeEventBatch() = default;
void ChromeEventBatch::Clear() {
  impl_->events.clear();
  impl_->numbers.clear();
  impl_->raw_args.clear();
}
simdjson::error_code ChromeEventBatch::Read(simdjson::ondemand::value value) { return impl_->Read(value); }
size_t ChromeEventBatch::size() const { return impl_->events.size(); }

}  // namespace stepscope::trace
