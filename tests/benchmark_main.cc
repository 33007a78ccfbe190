// RunBenchmarks: Google Benchmark's runner, showing results as its own main would
// (--benchmark_format, --benchmark_color, --benchmark_counters_tabular), made to exit 1 and name
// each run that reported an error.
#include "tests/benchmark_main.h"

#include <cstdio>
#include <string>
#include <vector>

namespace stepscope::testing {
namespace {

// Passes everything to the reporter the flags ask for, noting every run that reported an error.
class ErrorNotingReporter final : public benchmark::BenchmarkReporter {
 public:
  ErrorNotingReporter(benchmark::BenchmarkReporter* shown, std::vector<std::string>* failures)
      : shown_(shown), failures_(failures) {}
  bool ReportContext(const Context& context) override { return shown_->ReportContext(context); }
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      if (run.error_occurred) failures_->push_back(run.benchmark_name() + ": " + run.error_message);
    }
    shown_->ReportRuns(runs);
  }
  void Finalize() override { shown_->Finalize(); }

 private:
  benchmark::BenchmarkReporter* shown_;  // the library's, made from the flags; not owned
  std::vector<std::string>* failures_;
};

}  // namespace

int RunBenchmarks(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  std::vector<std::string> failures;
  // Made after Initialize: it reads the display flags that Initialize took out of argv.
  ErrorNotingReporter reporter(benchmark::CreateDefaultDisplayReporter(), &failures);
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  for (const std::string& failure : failures) {
    std::fprintf(stderr, "benchmark failed: %s\n", failure.c_str());
  }
  return failures.empty() ? 0 : 1;
}

}  // namespace stepscope::testing
