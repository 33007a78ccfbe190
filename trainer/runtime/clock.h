// The one clock of the runtime: steady (monotonic) nanoseconds. Allocation events, op scopes and
// step timings all read it, so their times line up on one axis without conversion.
#pragma once

#include <chrono>
#include <cstdint>

namespace stepscope::runtime {

inline int64_t NowNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace stepscope::runtime
