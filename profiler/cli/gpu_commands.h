// `gpu`, `idle` and `launches`: GPU time breakdown, idle-gap causes and launch costs
// (analysis/gpu_analyses.h).
#pragma once

#include <memory>
#include <vector>

#include "profiler/cli/command.h"

namespace stepscope::cli {

void AddGpuCommands(std::vector<std::unique_ptr<Command>>& commands);

}  // namespace stepscope::cli
