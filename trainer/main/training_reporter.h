// What a training run tells its user: the log (a first line on the run, progress lines, the
// throughput and the model's quality at the end), the --metrics JSON lines (one per step, then a
// summary line), and the TrainingReport (training_loop.h) that RunTraining returns. Throughput
// is reported as tf_cnn_benchmarks does: examples/sec mean ± standard error and jitter over the
// steps after warm-up. Under mpirun rank 0 speaks for the run; every rank names its own traces.
#pragma once

#include <cstdint>
#include <cstdio>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "base/status.h"
#include "trainer/main/train_options.h"
#include "trainer/main/training_loop.h"
#include "trainer/main/workload.h"
#include "trainer/runtime/device.h"

namespace stepscope::trainer {

class TrainingSetup;

// Appends whole lines: each line reaches the file with one write, so a reader never sees half
// of one, and lines already written stay if the run stops.
class MetricsWriter {
 public:
  MetricsWriter() = default;
  ~MetricsWriter();
  MetricsWriter(const MetricsWriter&) = delete;
  MetricsWriter& operator=(const MetricsWriter&) = delete;

  // An empty path writes nothing.
  Status Open(const std::string& path);
  Status Write(const nlohmann::json& line);

 private:
  std::string path_;
  std::FILE* file_ = nullptr;
};

class TrainingReporter {
 public:
  // `log` gets the progress and the summary on rank 0 and this rank's trace names;
  // `interactive` rewrites one progress line (a terminal). `setup` outlives the reporter.
  TrainingReporter(const TrainingSetup& setup, std::ostream& log, bool interactive,
                   int64_t total_steps, int warmup_steps);
  TrainingReporter(const TrainingReporter&) = delete;
  TrainingReporter& operator=(const TrainingReporter&) = delete;

  // The first lines: the model, the devices, the data and the steps to run.
  void LogStart(const TrainOptions& options);
  // Opens rank 0's metrics file (an empty path: none) and starts the clock of the ETA.
  Status Start(const std::string& metrics_path);

  // A profiled step's trace, written by this rank.
  // `note`: what the step's GPU trace held, logged beside the path (empty: none).
  void RecordTrace(int64_t step, const std::string& path, const std::string& note = {});
  // A finished step: its metrics line, its progress line, the report's losses.
  Status RecordStep(const StepRecord& step);
  // The run ended by a signal after `steps_done` steps.
  void Stopped(int64_t steps_done);
  // The throughput over the steps after warm-up and the model's summary, in the log, the
  // metrics file and the report.
  StatusOr<TrainingReport> Finish();

 private:
  const TrainingSetup& setup_;
  Workload& workload_;
  std::ostringstream quiet_;  // other ranks' progress goes nowhere
  std::ostream& rank_log_;    // this rank's own lines
  std::ostream& log_;         // the run's: rank 0's log, elsewhere quiet_
  bool interactive_;
  int64_t total_steps_;
  int warmup_steps_;
  MetricsWriter metrics_;
  int64_t run_start_ns_ = 0;
  std::vector<double> timed_steps_;  // seconds of each step after warm-up
  // Each tower device's operation counts when the last step was recorded (Start for the first).
  std::vector<runtime::DeviceOpCounts> op_counts_;
  runtime::DeviceOpCounts last_step_ops_;  // the first tower device's, in the last step
  TrainingReport report_;
};

}  // namespace stepscope::trainer
