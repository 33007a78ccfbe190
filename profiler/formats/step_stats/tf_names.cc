// TensorFlow's naming conventions in step stats, parsed in one place (tf_names.h).
#include "profiler/formats/step_stats/tf_names.h"

#include <cctype>
#include <charconv>

namespace stepscope::trace {
namespace {

bool ParseInt(std::string_view text, int64_t& out) {
  if (text.empty()) return false;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && ptr == text.data() + text.size();
}

// "gpu:0" / "GPU:0" / "device:GPU:0" -> "GPU:0"
std::string CanonicalDevice(std::string_view text) {
  std::string out(text);
  const size_t colon = out.find(':');
  for (size_t i = 0; i < out.size() && i < colon; ++i) {
    out[i] = static_cast<char>(std::toupper(static_cast<unsigned char>(out[i])));
  }
  return out;
}

}  // namespace

TfDeviceName ParseTfDeviceName(std::string_view device) {
  TfDeviceName result;
  size_t pos = device.find("/device:");
  size_t type_begin = pos == std::string_view::npos ? std::string_view::npos : pos + 8;
  if (pos == std::string_view::npos) {
    // Legacy short forms: "/gpu:0", "/cpu:0", "/job:.../gpu:0".
    for (std::string_view legacy : {"/gpu:", "/cpu:", "/GPU:", "/CPU:"}) {
      pos = device.find(legacy);
      if (pos != std::string_view::npos) {
        type_begin = pos + 1;
        break;
      }
    }
  }
  if (pos == std::string_view::npos) {
    result.device = std::string(device);
    return result;
  }
  result.task = std::string(device.substr(0, pos));
  const std::string_view rest = device.substr(type_begin);
  // rest = "GPU:0" or "GPU:0/stream:14" ...
  const size_t slash = rest.find('/');
  result.device = CanonicalDevice(rest.substr(0, slash));
  result.parsed = result.device.find(':') != std::string::npos;
  if (slash == std::string_view::npos) return result;
  const std::string_view lane = rest.substr(slash + 1);
  result.lane = std::string(lane);
  if (lane == "stream:all") {
    result.kind = TfLaneKind::kAllStreams;
  } else if (lane.substr(0, 7) == "stream:") {
    result.kind = TfLaneKind::kStream;
    if (!ParseInt(lane.substr(7), result.stream_id)) result.stream_id = -1;
  } else if (lane == "memcpy") {
    result.kind = TfLaneKind::kMemcpy;
  } else {
    result.parsed = false;  // an unknown sub-lane: keep it as its own executor-like lane
  }
  return result;
}

TfOpLabel ParseTfOpLabel(std::string_view label) {
  // Greedy `(.*) = (.*)\((.*)\)` anchored at the start (re.match), no DOTALL: '.' stops at a
  // newline, so only the first line can match.
  TfOpLabel result;
  const std::string_view line = label.substr(0, label.find('\n'));
  // Group 3 is greedy and must be followed by ')': the last ')' of the line ends it... but the
  // regex needs no text after ')', except that re.match does not anchor the end. So the final
  // ')' is the last ')' for which a '(' follows " = " before it.
  const size_t last_close = line.rfind(')');
  if (last_close == std::string_view::npos) return result;
  // Group 1 greedy: the last " = " such that a '(' follows it before last_close.
  // Group 2 greedy: the last '(' after that " = " and before last_close.
  for (size_t eq = line.rfind(" = ", last_close); eq != std::string_view::npos;
       eq = eq == 0 ? std::string_view::npos : line.rfind(" = ", eq - 1)) {
    const size_t open = line.rfind('(', last_close);
    if (open == std::string_view::npos || open < eq + 3) continue;
    result.matched = true;
    result.node = line.substr(0, eq);
    result.op = line.substr(eq + 3, open - (eq + 3));
    const std::string_view inputs = line.substr(open + 1, last_close - open - 1);
    if (!inputs.empty()) {
      size_t begin = 0;
      while (true) {
        const size_t sep = inputs.find(", ", begin);
        result.inputs.push_back(inputs.substr(begin, sep - begin));
        if (sep == std::string_view::npos) break;
        begin = sep + 2;
      }
    }
    return result;
  }
  return result;
}

TfKernelName ParseTfKernelName(std::string_view node_name, std::string_view label) {
  const size_t start = label.find("@@");
  const size_t end = label.find('#');
  if (start != std::string_view::npos && end != std::string_view::npos && start + 2 < end) {
    node_name = label.substr(start + 2, end - start - 2);
  }
  const size_t colon = node_name.find(':');
  if (colon == std::string_view::npos) return {node_name, "unknown"};
  const size_t next = node_name.find(':', colon + 1);
  return {node_name.substr(0, colon), node_name.substr(colon + 1, next - colon - 1)};
}

TfMemcpyLabel ParseTfMemcpyLabel(std::string_view label) {
  TfMemcpyLabel result;
  if (label.substr(0, 6) != "MEMCPY") return result;
  const size_t space = label.find(' ');
  if (space == std::string_view::npos) return result;
  result.kind = label.substr(6, space - 6);
  const size_t bytes_end = label.find(" bytes", space + 1);
  if (bytes_end == std::string_view::npos ||
      !ParseInt(label.substr(space + 1, bytes_end - space - 1), result.bytes)) {
    return result;
  }
  const size_t open = label.find('(', bytes_end);
  const size_t to = label.find(" to ", open == std::string_view::npos ? 0 : open);
  const size_t close = label.rfind(')');
  if (open != std::string_view::npos && to != std::string_view::npos &&
      close != std::string_view::npos && close > to) {
    result.src_memory = label.substr(open + 1, to - open - 1);
    result.dst_memory = label.substr(to + 4, close - to - 4);
  }
  result.matched = true;
  return result;
}

std::string_view StripPartitionSuffix(std::string_view input) {
  const size_t pos = input.rfind("/_");
  if (pos == std::string_view::npos || pos + 2 == input.size()) return input;
  for (size_t i = pos + 2; i < input.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(input[i]))) return input;
  }
  return input.substr(0, pos);
}

}  // namespace stepscope::trace
