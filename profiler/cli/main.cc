// stepscope: the trace CLI. All behaviour lives in stepscope_cli (RunCli).
#include <iostream>

#include "profiler/cli/cli.h"

int main(int argc, char** argv) {
  std::ios::sync_with_stdio(false);
  return stepscope::cli::RunCli(std::vector<std::string>(argv + 1, argv + argc), std::cout, std::cerr);
}
