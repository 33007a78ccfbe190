// The multi-rank commands that can run spread over MPI processes (`mpirun -np N stepscope
// align|stragglers DIR`, profiler/cli/distributed.h): each computed from the inputs' digests
// (analysis/distributed_digest.h) and printed by the same code as in one process, so that both
// print the same bytes.
#pragma once

#include <ostream>
#include <span>

#include "base/flags.h"
#include "base/status.h"
#include "profiler/analysis/distributed_digest.h"

namespace stepscope::cli {

// `align` from the digests of every input, in input order (the first that could not be read
// fails it).
Status AlignFromDigests(const ParsedArgs& args, std::span<const analysis::InputDigest> inputs, std::ostream& out,
                        std::ostream& err);

// `stragglers` from the digests of every input, in input order: the flags checked first, then
// --rank's selection (as LoadScopedTraces selects), then the report.
Status StragglersFromDigests(const ParsedArgs& args, std::span<const analysis::InputDigest> inputs,
                             std::ostream& out, std::ostream& err);

}  // namespace stepscope::cli
