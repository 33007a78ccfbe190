// The one clock of the runtime: steady (monotonic) nanoseconds. Allocation events, op scopes and
// step timings all read it, so their times line up on one axis without conversion.
#pragma once

#include <cstdint>

#include "base/steady_clock.h"

namespace stepscope::runtime {

inline int64_t NowNanos() { return SteadyNowNanos(); }

}  // namespace stepscope::runtime
