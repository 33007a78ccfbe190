// stepscope: the trace CLI. All behaviour lives in stepscope_cli (RunCli).
#include <iostream>

#include "profiler/cli/cli.h"
#include "profiler/cli/distributed.h"

int main(int argc, char** argv) {
  std::ios::sync_with_stdio(false);
  const std::vector<std::string> args(argv + 1, argv + argc);
  // Under mpirun with several processes: the analysis spread over them (distributed.h).
  if (const auto code = stepscope::cli::RunCliUnderMpi(argc, argv, args, std::cout, std::cerr)) return *code;
  return stepscope::cli::RunCli(args, std::cout, std::cerr);
}
