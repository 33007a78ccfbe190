// Node times of TensorFlow's step stats in nanoseconds, as the import and the wire scan read them.
#pragma once

#include <cstdint>

namespace stepscope::tf {
class NodeExecStats;
}

namespace stepscope::trace {

// Microseconds as nanoseconds, clamped to ±2^62 ns (so sums and differences of times fit).
int64_t MicrosToNanos(int64_t micros);
// Nanoseconds clamped to ±2^62.
int64_t ClampTimeNs(int64_t ns);

// Node times in ns: the *_nanos fields when the producer wrote them, else micros * 1000.
int64_t NodeStartNs(const tf::NodeExecStats& node);
int64_t NodeDurationNs(const tf::NodeExecStats& node);

}  // namespace stepscope::trace
