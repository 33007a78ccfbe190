#include "tests/benchmark_main.h"

#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace stepscope::testing {
namespace {

// The reporter --benchmark_format asks for (console or json; csv is deprecated), noting every run
// that reported an error.
template <typename Base>
class ErrorNotingReporter final : public Base {
 public:
  explicit ErrorNotingReporter(std::vector<std::string>* failures) : failures_(failures) {}
  void ReportRuns(const std::vector<benchmark::BenchmarkReporter::Run>& runs) override {
    for (const auto& run : runs) {
      if (run.error_occurred) failures_->push_back(run.benchmark_name() + ": " + run.error_message);
    }
    Base::ReportRuns(runs);
  }

 private:
  std::vector<std::string>* failures_;
};

std::unique_ptr<benchmark::BenchmarkReporter> DisplayReporter(int argc, char** argv,
                                                              std::vector<std::string>* failures) {
  std::string format = "console";
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--benchmark_format=", 19) == 0) format = argv[i] + 19;
  }
  if (format == "json") return std::make_unique<ErrorNotingReporter<benchmark::JSONReporter>>(failures);
  return std::make_unique<ErrorNotingReporter<benchmark::ConsoleReporter>>(failures);
}

}  // namespace

int RunBenchmarks(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  std::vector<std::string> failures;
  const auto reporter = DisplayReporter(argc, argv, &failures);
  benchmark::RunSpecifiedBenchmarks(reporter.get());
  benchmark::Shutdown();
  for (const std::string& failure : failures) {
    std::fprintf(stderr, "benchmark failed: %s\n", failure.c_str());
  }
  return failures.empty() ? 0 : 1;
}

}  // namespace stepscope::testing
