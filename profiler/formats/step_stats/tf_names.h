// TensorFlow's naming conventions in step stats, parsed in one place: device names (executor
// devices vs the GPU tracer's stream/all/memcpy lanes), timeline labels (memory prefix, op type,
// inputs) and GPU record names (kernels and MEMCPY records). See docs/formats.md §1.4, §2.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace stepscope::trace {

enum class TfLaneKind { kExecutor, kStream, kAllStreams, kMemcpy };

struct TfDeviceName {
  std::string task;        // "/job:localhost/replica:0/task:0"; empty for tracer lanes
  std::string device;      // "GPU:0", "CPU:0" (canonical upper-case type)
  std::string lane;        // "stream:14", "stream:all", "memcpy"; empty for executor devices
  TfLaneKind kind = TfLaneKind::kExecutor;
  int64_t stream_id = -1;  // for kStream
  bool parsed = false;     // false when the name did not follow any known form
};
TfDeviceName ParseTfDeviceName(std::string_view device);

// `name = Op(in0, in1, ...)` with an optional `[allocator total peak] ` memory prefix.
// Mirrors timeline.py: regex `(.*) = (.*)\((.*)\)` matched greedily from the start; no match
// gives op "unknown" and no inputs.
struct TfOpLabel {
  bool matched = false;
  std::string_view node;    // group 1 (includes a memory prefix when present, as in TF)
  std::string_view op;      // group 2
  std::vector<std::string_view> inputs;  // group 3 split on ", "
};
TfOpLabel ParseTfOpLabel(std::string_view label);

// GPU lane records: the node name is `<name>:<Op>[:...]`; TF 2.x labels
// `<kernel> ...@@<annotation>#...` name the op instead. Returns {name, op}; op is "unknown"
// when there is no colon.
struct TfKernelName {
  std::string_view name;
  std::string_view op;
};
TfKernelName ParseTfKernelName(std::string_view node_name, std::string_view label);

// `MEMCPY<kind> <bytes> bytes (<src> to <dst>)`.
struct TfMemcpyLabel {
  bool matched = false;
  std::string_view kind;  // "HtoD"
  int64_t bytes = 0;
  std::string_view src_memory;
  std::string_view dst_memory;
};
TfMemcpyLabel ParseTfMemcpyLabel(std::string_view label);

// Strips a trailing partition suffix `/_<digits>` (TF inserts these for Send/Recv pairs).
std::string_view StripPartitionSuffix(std::string_view input);

}  // namespace stepscope::trace
