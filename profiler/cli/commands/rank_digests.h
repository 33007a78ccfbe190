// The multi-rank commands that can run spread over MPI processes (`mpirun -np N stepscope
// align|stragglers|critical-path|steps|gpu|efficiency DIR`, `diff A... --vs B...`;
// profiler/cli/distributed.h): each computed from the
// inputs' digests (analysis/distributed_digest.h) and printed by the same code as in one process,
// so that both print the same bytes.
#pragma once

#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "base/flags.h"
#include "base/status.h"
#include "profiler/analysis/distributed_digest.h"
#include "profiler/cli/command.h"
#include "profiler/cli/commands/report.h"

namespace stepscope::cli {

// `align` from the digests of every input, in input order (the first that could not be read
// fails it).
Status AlignFromDigests(const ParsedArgs& args, std::span<const analysis::InputDigest> inputs, std::ostream& out,
                        std::ostream& err);

// `stragglers` from the digests of every input, in input order: the flags checked first, then
// --rank's selection (as LoadScopedTraces selects), then the report.
Status StragglersFromDigests(const ParsedArgs& args, std::span<const analysis::InputDigest> inputs,
                             std::ostream& out, std::ostream& err);

// `critical-path`'s digest of one input of `inputs`: its clock and rank-path digests (the latter
// only with two inputs or more) and its own report rendered (text or --json as `args` ask;
// `brief`: CommandOutput::brief). An input outside --rank's ranks is digested only as far as its
// rank.
analysis::InputDigest CriticalPathDigest(const trace::Trace& trace, size_t input, size_t inputs, const ParsedArgs& args,
                                         bool brief);

// `critical-path` from the digests of every input, in input order: the flags checked first, then
// --rank's selection (unless `scoped`: the inputs are its already), each input's own paths in
// the steps --step selects, then the path of each step across the ranks.
Status CriticalPathFromDigests(const ParsedArgs& args, std::span<const analysis::InputDigest> inputs, bool scoped,
                               CommandOutput& out);

// critical-path's path of each step across ranks (rank_path.cc), after each input's own: added
// to the JSON document (`doc`, with --json) or the text (`text`); notes on `err`. Nothing for one
// rank. `sources`: each input's file, as the paths number them.
void PrintCrossRankPaths(const analysis::CrossRankPaths& paths, std::span<const std::string> sources,
                         const TableOptions& options, Json* doc, std::string* text, std::ostream& err);

// `steps` from the digests of every input (analysis::StepsOfInput), in input order: --top
// checked first, then the first input that could not be read fails it.
Status StepsFromDigests(const ParsedArgs& args, std::span<const analysis::InputDigest> inputs, CommandOutput& out);

// `gpu`'s digest of one input of `inputs` (GpuDigest): its rows in the windows --step selects,
// its unnumbered steps numbered from `numbered_from` where that is known (one process), else
// none for an input outside --rank's ranks.
analysis::InputDigest GpuDigestOfInput(const trace::Trace& trace, size_t input, const ParsedArgs& args,
                                       std::optional<int64_t> numbered_from);

// `gpu` from the digests of every input, in input order: the flags checked first, then --rank's
// selection (unless `scoped`: the inputs are its already), then the steps numbered over the
// inputs kept and the rows of the windows --step selects added up.
Status GpuFromDigests(const ParsedArgs& args, std::span<const analysis::InputDigest> inputs, bool scoped,
                      CommandOutput& out);

// `efficiency`'s digest of one input: its part of the report (analysis/efficiency.h
// EfficiencyInput), none outside --rank's ranks.
analysis::InputDigest EfficiencyDigest(const trace::Trace& trace, size_t input, size_t inputs, const ParsedArgs& args);

// `efficiency` from the digests of every input, in input order: the flags checked first, then the
// first input that could not be read, then the report as one process prints it.
Status EfficiencyFromDigests(const ParsedArgs& args, std::span<const analysis::InputDigest> inputs, std::ostream& out,
                             std::ostream& err);

// `diff`'s digest of one input: its steps with their totals (or that it waits for its step's
// other ranks).
analysis::InputDigest DiffDigest(const trace::Trace& trace, size_t input, size_t inputs, const ParsedArgs& args);

// `diff` from the digests of every input of both sides (InputDigest::side), in input order: each
// side's steps collected as one process collects them, then the comparison, its gate and exit
// code as one process prints them. A trace that waits for its step's other ranks, and both sides
// when each has one step (the aggregate diff), are read here again, as one process reads them.
Status DiffFromDigests(const ParsedArgs& args, std::span<const analysis::InputDigest> inputs, std::ostream& out,
                       std::ostream& err);

// diff's two sides: the inputs before --vs and after it, or A B (a usage error otherwise).
StatusOr<std::pair<std::vector<std::string>, std::vector<std::string>>> DiffSidesOf(const ParsedArgs& args);

}  // namespace stepscope::cli
