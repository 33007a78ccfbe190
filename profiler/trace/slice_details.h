// Details of one slice that live in the source record rather than in the compact Slice:
// memcpy kind and bytes, kernel launch parameters, collective payload. One place derives them
// (from stepscope's extension fields, else from TensorFlow's labels, else from the PyTorch
// profiler's event args and names) for every consumer.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "profiler/trace/trace.h"

namespace stepscope::tf {
class NodeExecStats;
}

namespace stepscope::trace {

class NodeReader;

struct MemcpyDetails {
  std::string kind;        // "HtoD", "DtoH", ...
  int64_t bytes = 0;
  std::string src_memory;  // "Pageable", "Pinned", "Device", ...
  std::string dst_memory;
  double bandwidth_gbps = -1;  // as the profiler reported it; -1 when it did not
};
// For one slice (parses its node on demand).
std::optional<MemcpyDetails> GetMemcpyDetails(const Trace& trace, uint32_t slice);
// For passes over many slices: nodes come from `nodes`.
std::optional<MemcpyDetails> GetMemcpyDetails(const Trace& trace, uint32_t slice, NodeReader& nodes);
// From the slice's node already at hand (a pass that parses nodes itself).
std::optional<MemcpyDetails> GetMemcpyDetails(const Trace& trace, uint32_t slice, const tf::NodeExecStats& node);

// Kind and memory kinds from a copy's name: PyTorch writes "Memcpy HtoD (Pageable -> Device)",
// TensorFlow "MEMCPYHtoD". Empty kind when the name is neither.
struct CopyName {
  std::string kind, src_memory, dst_memory;
};
CopyName ParseCopyName(std::string_view name);

}  // namespace stepscope::trace
