// Comparing runs from the command line: `stepscope steps` (step-to-step variance and outlier
// steps) and the statistical side of `stepscope diff` (several steps per side; the regression
// gate for CI). The analyses are in analysis/steps.h and analysis/run_diff.h.
#pragma once

#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "base/flags.h"
#include "base/status.h"
#include "profiler/cli/command.h"

namespace stepscope::cli {

// `steps`.
std::unique_ptr<Command> MakeStepsCommand();

// diff's flags beyond --json and --top.
std::vector<FlagSpec> DiffCompareFlags();
// The two sides of `diff`: `A B` (one path each) or `A... --vs B...`. Fails (exit 2) on an empty
// side or a wrong count.
StatusOr<std::pair<std::vector<std::string>, std::vector<std::string>>> DiffSides(const ParsedArgs& args);

// Runs diff over the steps of both sides. Returns false in `handled` when both sides have one step
// only: the caller prints the aggregate diff (after this has said on `err` that no confidence can
// be given). Returns CheckFailed (exit 3) when --fail-on-regression trips.
Status RunStepDiff(const ParsedArgs& args, const std::vector<std::string>& a, const std::vector<std::string>& b,
                   std::ostream& out, std::ostream& err, bool& handled);

}  // namespace stepscope::cli
