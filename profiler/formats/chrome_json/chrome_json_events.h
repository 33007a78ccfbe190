// What the Chrome JSON reader keeps of each event it reads (chrome_json_event_reader.cc) for the
// importer (chrome_json_importer.cc): the fields and raw args of a batch of events, and the text
// and number helpers both use. Internal to the chrome_json format.
#pragma once

#include <simdjson.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "profiler/formats/chrome_json/chrome_json_importer.h"

namespace stepscope::trace {
namespace chrome_json_detail {

// A JSON number as int64: NaN is 0, values past the int64 range saturate (a cast would be UB).
int64_t SaturatedInt64(double value);

// Kineto's category names (its ActivityType names), the spellings of older PyTorch profilers
// (Operator, Runtime, Kernel, Memcpy, Memset), MTIA's (mtia_ccp_events, mtia_runtime) and other
// devices' runtimes, as HolisticTraceAnalysis reads them.
SliceKind KindOfCategory(std::string_view cat);

// Categories whose events sit on a device's lanes (pid = device, tid = stream).
bool IsDeviceCategory(std::string_view cat);

// A raw number token without the white space simdjson leaves after it.
std::string_view Trim(std::string_view text);

// A JSON number's text as a double; nullopt for what strtod cannot read or infinities (integers
// beyond a double's range, which real Kineto files contain, come out inexact but finite).
// Integers of up to 18 digits (most numbers in a trace: ids, sizes) are read directly, other
// numbers by from_chars; both round as strtod does, which reads what they leave.
std::optional<double> NumberOf(std::string_view text);

}  // namespace chrome_json_detail

// The fields of one event an import needs, as views into the parser's string buffer and the
// parsed bytes; read on any thread (Read touches no importer state), imported in file order.
struct ChromeEventFields {
  std::string_view ph, name, cat, bp;
  std::string_view pid, tid, id;
  std::string_view ts, dur;  // raw number text; empty when absent or not a number
  bool has_ts = false, has_dur = false, has_id = false, has_args = false;
  bool args_has_name = false, args_has_op = false;
  bool not_an_object = false;
  std::string_view args_name, args_op, args_labels;
  std::optional<int64_t> sort_index;
  uint32_t numbers_begin = 0, numbers_end = 0;  // numeric args in ChromeEventBatch::Impl::numbers
  uint32_t args_begin = 0, args_end = 0;        // every arg in ChromeEventBatch::Impl::args
  uint32_t grid[3] = {0, 0, 0}, block[3] = {0, 0, 0};  // kernel args "grid"/"block", 0 when absent
  int32_t strings_unreadable = 0, launch_dims_unreadable = 0;  // repairs, counted when imported
  // Worked out where the event is read (any thread), so that importing does little more than add.
  std::optional<int64_t> ts_ns, dur_ns;  // ts and dur read, nullopt when absent or unreadable
  SliceKind kind = SliceKind::kOther;    // of an X or B event: KindOfEvent(cat, name)
  bool device_category = false;          // IsDeviceCategory(cat)
  bool id_is_number = false;             // a flow's id is a decimal number: id_number
  uint64_t id_number = 0;
  enum : uint8_t { kNoArgs, kKernelArgs, kTransferArgs } launch_args = kNoArgs;  // of an X event
  KernelArgs kernel_args;
  TransferArgs transfer_args;
  // args.correlation of a runtime or driver call (or op) and of a sync marker, -1 when none; a
  // kernel's or copy's is in its kernel_args / transfer_args.
  int64_t correlation = -1;
};

// One of an event's args as read: its key and value as views into the parsed bytes or the
// parser's string buffer, turned into a SliceArg only when the event is imported as a slice.
struct ChromeRawArg {
  enum Type : uint8_t { kText, kNumber, kJson };  // kText unescaped; kNumber, kJson as written
  std::string_view key, value;
  Type type = kText;
};

struct ChromeEventBatch::Impl {
  std::vector<ChromeEventFields> events;
  std::vector<std::pair<std::string_view, std::string_view>> numbers;  // numeric args: key, raw token
  std::vector<ChromeRawArg> raw_args;  // every arg of every event, in the events' and the args' order

  // A category's kind and whether it is a device's, kept for the last few categories seen: a
  // trace has a handful, and telling one apart takes up to twenty comparisons.
  struct CategoryKind {
    std::string cat;
    SliceKind kind = chrome_json_detail::KindOfCategory({});
    bool device = chrome_json_detail::IsDeviceCategory({});
  };
  std::array<CategoryKind, 8> categories;  // the empty category, then those seen, round robin
  size_t next_category = 1;
  const CategoryKind& CategoryKindOf(std::string_view cat);

  simdjson::error_code Read(simdjson::ondemand::value value);

  // The PyTorch profiler's launch and transfer args, for slices that have them.
  // Worked out when the event is read; the slice index is set when it is imported.
  void LaunchArgs(ChromeEventFields& event) const;

  // An event that failed is not kept.
  simdjson::error_code Drop(simdjson::error_code error);

  simdjson::error_code Args(simdjson::ondemand::value value, ChromeEventFields& event);

  // "grid": [x, y, z]; anything else (fewer numbers, non-numbers, beyond uint32) leaves zeros.
  static void ReadTriple(simdjson::ondemand::value value, uint32_t* out, ChromeEventFields& event);
};

}  // namespace stepscope::trace
