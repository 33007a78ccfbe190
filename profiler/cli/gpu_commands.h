// `gpu`, `idle`, `launches`, `annotations` and `kernel-patterns`: GPU time breakdown, idle-gap
// causes, launch costs, GPU time per annotation and frequent kernel sequences
// (analysis/gpu_analyses.h).
#pragma once

#include <memory>
#include <vector>

#include "profiler/cli/command.h"

namespace stepscope::cli {

void AddGpuCommands(std::vector<std::unique_ptr<Command>>& commands);

}  // namespace stepscope::cli
