// The table of every `stepscope` subcommand (commands.h), in the order of the top-level help.
#include "profiler/cli/commands/commands.h"

namespace stepscope::cli {

std::vector<CommandSpec> AllCommands() {
  return {ConvertCommand(),  FormatsCommand(),      SummaryCommand(), OpsCommand(),      KernelsCommand(),
          MemoryCommand(),   MemcpyCommand(),       StreamsCommand(), CallTreeCommand(), OverlapCommand(),  CriticalPathCommand(),
          StepBreakdownCommand(), EfficiencyCommand(),
          DiffCommand(),     StepsCommand(),        MergeCommand(),   GpuCommand(),      IdleCommand(),
          LaunchesCommand(), AnnotationsCommand(),  KernelPatternsCommand(), StragglersCommand(),
          CollectivesCommand(), ReportCommand(), AlignCommand()};
}

}  // namespace stepscope::cli
