// stepscope-train: the reference trainer's command line (see train_options.h, training_loop.h).
#include <unistd.h>

#include <iostream>
#include <string>
#include <vector>

#include "trainer/main/training_loop.h"

int main(int argc, char** argv) {
  using namespace stepscope;
  const std::vector<std::string> args(argv + 1, argv + argc);
  auto options = trainer::ParseTrainOptions(args);
  if (!options.ok()) {
    std::cerr << "stepscope-train: " << options.status().message() << "\n";
    return ExitCodeFor(options.status());
  }
  if (options->help) {
    std::cout << trainer::TrainUsage();
    return 0;
  }
  auto report = trainer::RunTraining(*options, std::cerr, isatty(STDERR_FILENO) != 0);
  if (!report.ok()) {
    std::cerr << "\nstepscope-train: " << report.status().message() << "\n";
    // 130: stopped by SIGINT/SIGTERM (as a shell reports it); traces written so far are whole.
    return report.status().code() == StatusCode::kCancelled ? 130 : ExitCodeFor(report.status());
  }
  return 0;
}
