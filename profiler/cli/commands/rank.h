// Commands across ranks: `stragglers` (per step, the rank that finished last, by how much and
// why; analysis/stragglers.h).
#pragma once

#include <memory>
#include <vector>

#include "profiler/cli/command.h"

namespace stepscope::cli {

void AddRankCommands(std::vector<std::unique_ptr<Command>>& commands);

}  // namespace stepscope::cli
