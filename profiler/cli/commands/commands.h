// Every `stepscope` subcommand, one CommandSpec (command.h) each, defined in the file of its
// family; AllCommands() is the table RunCli dispatches on and the top-level help lists.
//
// Adding a command: a function `CommandSpec <Name>Command()` in its family's file (or a new
// file here, listed in profiler/cli/CMakeLists.txt), declared below and listed in AllCommands().
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "profiler/analysis/clock_align.h"
#include "profiler/cli/command.h"

namespace stepscope::cli {

// convert.cc: traces into traces, and the formats.
CommandSpec ConvertCommand();
CommandSpec FormatsCommand();
// summary.cc
CommandSpec SummaryCommand();
// ops_memory.cc: where one trace's time and memory go.
CommandSpec OpsCommand();
CommandSpec KernelsCommand();
CommandSpec MemoryCommand();
CommandSpec MemcpyCommand();
CommandSpec StreamsCommand();
// call_tree.cc: nested host slices by their path of names.
CommandSpec CallTreeCommand();
// steps.cc: each input (step, rank) on its own.
CommandSpec OverlapCommand();
CommandSpec CriticalPathCommand();
// step_breakdown.cc: each step split into input, compute, communication and idle.
CommandSpec StepBreakdownCommand();
// compare.cc: runs against runs.
CommandSpec DiffCommand();
CommandSpec StepsCommand();
// rank.cc: across ranks.
CommandSpec MergeCommand();
CommandSpec StragglersCommand();
// collectives.cc: bandwidth per collective.
CommandSpec CollectivesCommand();
// align.cc: the ranks' clocks, and the --align flag of the commands across ranks.
CommandSpec AlignCommand();
StatusOr<analysis::AlignMethod> AlignFlag(const ParsedArgs& args);
FlagSpec AlignFlagSpec();
void PrintAlignmentNotes(const std::string& command, const analysis::AlignmentReport& report, std::ostream& err);
std::string AlignmentLine(const analysis::AlignmentReport& report);
// gpu.cc: GPU time, idle gaps, launches, annotations, kernel sequences.
CommandSpec GpuCommand();
CommandSpec IdleCommand();
CommandSpec LaunchesCommand();
CommandSpec AnnotationsCommand();
CommandSpec KernelPatternsCommand();
// html_report.cc: one offline HTML file of the sections above.
CommandSpec ReportCommand();

// efficiency.cc: MFU, roofline and device peaks.
CommandSpec EfficiencyCommand();

// Every command, in the order the top-level help lists them.
std::vector<CommandSpec> AllCommands();

}  // namespace stepscope::cli
