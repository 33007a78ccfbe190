// Where a slice came from in its source's records (a StepStats input: device and node index),
// carried by TraceBuilder through its sorting and handed to the trace's payload
// (trace_payload.h), so both speak of it without either needing the other.
#pragma once

#include <cstdint>

namespace stepscope::trace {

struct NodeRef {
  static constexpr uint32_t kNone = 0xffffffffu;
  uint32_t device = kNone;  // the source's record group (StepStats: dev_stats index)
  uint32_t node = kNone;    // the record within it (StepStats: node_stats index)
  bool valid() const { return device != kNone; }
};

}  // namespace stepscope::trace
