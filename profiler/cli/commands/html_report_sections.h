// The sections of `stepscope report` (html_report.cc), each built from the JSON documents of the
// commands it names, so that every figure in the page is one of those documents' values (kept
// beside it as data-ptr/data-value, profiler/report/html_page.h).
#pragma once

#include <string>
#include <vector>

#include "profiler/cli/commands/report.h"
#include "profiler/report/html_page.h"

namespace stepscope::cli {

// One command's run for the report: its arguments (after `stepscope`), exit code, document (null
// when it failed) and what it said on stderr.
struct CommandRun {
  std::vector<std::string> args;
  int code = 0;
  Json doc;
  std::string err;
};

// Each returns the section's body; `top` rows per table. The documents are those of the commands
// `summary` (one per input), `steps`, `step-breakdown`, `gpu`, `idle`, `ops`, `kernels`, `memory`,
// `critical-path`, `efficiency`, `collectives`, `stragglers` and `diff` as they print them with --json.
std::string RunBody(const std::vector<CommandRun>& summaries);
std::string StepsBody(const CommandRun& steps, const CommandRun& breakdown, size_t top);
std::string GpuBody(const CommandRun& gpu, const CommandRun& idle, size_t top);
std::string OpsBody(const CommandRun& ops, const CommandRun& kernels, size_t top);
std::string MemoryBody(const CommandRun& memory, size_t top);
std::string CriticalPathBody(const CommandRun& path, size_t top);
std::string StragglersBody(const CommandRun& stragglers, size_t top);
// `efficiency`: the peak and its source, MFU over the run and per step, the top ops by time with
// their FLOP/s and bound, the ops without a cost. `collectives`: bus bandwidth per collective.
std::string EfficiencyBody(const CommandRun& efficiency, size_t top);
std::string CollectivesBody(const CommandRun& collectives, size_t top);
std::string DiffBody(const CommandRun& diff, size_t top);
// What the imports repaired or skipped (from the summaries) and what the commands noted.
std::string ImportBody(const std::vector<CommandRun>& summaries, const std::vector<const CommandRun*>& all);

}  // namespace stepscope::cli
