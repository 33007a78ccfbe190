// The `stepscope` command line: subcommands as small classes with a declarative flag table and
// generated help. main() calls RunCli; tests call it in-process with string streams.
// Exit codes: 0 ok, 1 runtime failure, 2 usage or bad input, 3 a requested check failed.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace stepscope::cli {

int RunCli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace stepscope::cli
