// `gpu`, `idle`, `launches`, `annotations` and `kernel-patterns`: GPU time breakdown, idle-gap
// causes, launch costs, GPU time per annotation and frequent kernel sequences
// (analysis/gpu_analyses.h).
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "profiler/analysis/gpu_analyses.h"
#include "profiler/cli/command.h"

namespace stepscope::cli {

// How much GPU work an analysis could link to its launch (analysis::LaunchLinks), for the commands
// that follow launches: one line of text ("" when there is no GPU work), and the JSON object
// written as "launch_links".
std::string LaunchLinksText(const analysis::LaunchLinks& links);
nlohmann::ordered_json LaunchLinksJson(const analysis::LaunchLinks& links);

void AddGpuCommands(std::vector<std::unique_ptr<Command>>& commands);

}  // namespace stepscope::cli
