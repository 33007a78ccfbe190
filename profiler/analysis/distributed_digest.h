// What each process of a job spread over MPI (`mpirun -np N stepscope align|stragglers DIR`)
// sends to process 0: per input it read, the digests the multi-rank analyses combine from
// (clock_align.h ClockDigest, stragglers.h StragglerDigest), or why it could not read it. A
// digest is a few hundred bytes per step and collective, whatever the size of the trace, so
// process 0 holds the whole job's digests while each process holds one trace at a time.
//
// The bytes: "stepscope.digests/1\n", then per input: its index among all the inputs (varint),
// its read status (code, message), and its digests; integers as zigzag varints, strings as a
// length and the bytes. Parsing checks every length against what is left.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "profiler/analysis/clock_align.h"
#include "profiler/analysis/stragglers.h"

namespace stepscope::analysis {

struct InputDigest {
  size_t input = 0;       // its place among all the inputs
  Status read;            // reading it failed: why (the digests are empty)
  ClockDigest clock;
  StragglerDigest stragglers;
};

// The digests of one input of an analysis: what `align` and `stragglers` need of it.
InputDigest DigestInput(const trace::Trace& trace, size_t input);

std::string SerializeDigests(std::span<const InputDigest> digests);
// Fails (InvalidInput naming `from`) on bytes that SerializeDigests did not write.
StatusOr<std::vector<InputDigest>> ParseDigests(std::string_view bytes, const std::string& from);

}  // namespace stepscope::analysis
