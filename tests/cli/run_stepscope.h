// Runs the `stepscope` command in-process and keeps its exit code and both streams, for the CLI
// tests.
#pragma once

#include <sstream>
#include <string>
#include <vector>

#include "profiler/cli/cli.h"

namespace stepscope::cli {

struct CliResult {
  int code = 0;
  std::string out, err;
};

inline CliResult RunStepscope(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  const int code = RunCli(args, out, err);
  return {code, out.str(), err.str()};
}

}  // namespace stepscope::cli
