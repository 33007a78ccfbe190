// Steady (monotonic) nanoseconds: the clock every timing in the trainer and the collectors
// reads, so their times line up on one axis without conversion.
#pragma once

#include <chrono>
#include <cstdint>

namespace stepscope {

inline int64_t SteadyNowNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace stepscope
