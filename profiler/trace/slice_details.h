// Details of one slice that live in the source record rather than in the compact Slice:
// memcpy kind and bytes, kernel launch parameters, collective payload. One place derives them
// (from stepscope's extension fields, else from TensorFlow's labels) for every consumer.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "profiler/trace/trace.h"

namespace stepscope::trace {

struct MemcpyDetails {
  std::string kind;        // "HtoD", "DtoH", ...
  int64_t bytes = 0;
  std::string src_memory;  // "Pageable", "Pinned", "Device", ...
  std::string dst_memory;
};
std::optional<MemcpyDetails> GetMemcpyDetails(const Trace& trace, uint32_t slice);

}  // namespace stepscope::trace
