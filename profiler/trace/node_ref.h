// Where a slice came from in a StepStats input: the model's slices and the payload's store
// (node_store.h) both speak of it, so it has a header of its own that needs neither.
#pragma once

#include <cstdint>

namespace stepscope::trace {

struct NodeRef {
  static constexpr uint32_t kNone = 0xffffffffu;
  uint32_t device = kNone;  // index into step_stats.dev_stats
  uint32_t node = kNone;    // index into dev_stats[device].node_stats
  bool valid() const { return device != kNone; }
};

}  // namespace stepscope::trace
