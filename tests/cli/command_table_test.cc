// The command table (profiler/cli/commands/commands.h): every command declared once, with what
// RunCli needs, listed in the top-level help and answering --help from its own spec.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "profiler/cli/commands/commands.h"
#include "run_stepscope.h"

namespace stepscope::cli {
namespace {

TEST(CommandTableTest, EveryCommandIsDeclaredOnceWithWhatRunCliNeeds) {
  const std::vector<CommandSpec> commands = AllCommands();
  EXPECT_EQ(commands.size(), 25u);  // with collectives, report, align and efficiency
  std::set<std::string> names;
  const std::string top = RunStepscope({"--help"}).out;
  for (const CommandSpec& command : commands) {
    EXPECT_TRUE(names.insert(command.name).second) << command.name << " twice";
    EXPECT_FALSE(command.synopsis.empty()) << command.name;
    EXPECT_FALSE(command.description.empty()) << command.name;
    EXPECT_TRUE(static_cast<bool>(command.run)) << command.name;
    EXPECT_LE(command.min_positional, command.max_positional) << command.name;
    EXPECT_NE(top.find("  " + command.name + " "), std::string::npos) << command.name << " not in the help";
    const CliResult help = RunStepscope({command.name, "--help"});
    EXPECT_EQ(help.code, 0) << command.name;
    EXPECT_EQ(help.out, command.Help()) << command.name;
    // Every flag of the table is documented in the generated help.
    for (const FlagSpec& flag : command.all_flags()) {
      EXPECT_NE(help.out.find("--" + flag.name), std::string::npos) << command.name << " --" << flag.name;
    }
  }
}

// Too few or too many inputs for a command's counts: exit 2 naming the count and the usage.
TEST(CommandTableTest, PositionalCountsComeFromTheSpec) {
  const CliResult convert = RunStepscope({"convert", "only-one"});
  EXPECT_EQ(convert.code, 2);
  EXPECT_NE(convert.err.find("expected 2 argument(s), got 1"), std::string::npos) << convert.err;
  const CliResult formats = RunStepscope({"formats", "extra"});
  EXPECT_EQ(formats.code, 2);
  EXPECT_NE(formats.err.find("expected 0 argument(s), got 1"), std::string::npos) << formats.err;
  const CliResult summary = RunStepscope({"summary"});
  EXPECT_EQ(summary.code, 2);
  EXPECT_NE(summary.err.find("usage: stepscope summary IN [--json] [--top N]"), std::string::npos) << summary.err;
}

}  // namespace
}  // namespace stepscope::cli
