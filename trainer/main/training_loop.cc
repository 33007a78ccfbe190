// RunTraining: set-up, then step after step until --steps or --epochs (or a signal), each step
// fetched, trained on the towers, profiled when chosen and reported.
#include "trainer/main/training_loop.h"

#include <atomic>
#include <cmath>
#include <csignal>
#include <string>
#include <vector>

#include "trainer/main/step_inputs.h"
#include "trainer/main/training_reporter.h"
#include "trainer/main/training_setup.h"
#include "trainer/runtime/clock.h"

namespace stepscope::trainer {
namespace {

// SIGINT/SIGTERM end the run after the current step: traces of the steps already profiled are
// complete files (each written to a temporary name and renamed), and nothing is half-written.
std::atomic<bool> stop_requested{false};
extern "C" void RequestStop(int) { stop_requested.store(true); }

class StopSignals {
 public:
  StopSignals() {
    stop_requested.store(false);
    previous_int_ = std::signal(SIGINT, RequestStop);
    previous_term_ = std::signal(SIGTERM, RequestStop);
  }
  ~StopSignals() {
    std::signal(SIGINT, previous_int_);
    std::signal(SIGTERM, previous_term_);
  }

 private:
  void (*previous_int_)(int);
  void (*previous_term_)(int);
};

// Every tower's loss (in rank order) and the summed hits of the whole run; without MPI, this
// process's towers.
struct RunStepOutcome {
  std::vector<double> losses;
  int64_t correct = 0;
};

StatusOr<RunStepOutcome> GatherAcrossRanks(const TowerStepResult& mine, int rank,
                                           parallel::MpiSession* mpi) {
  RunStepOutcome outcome{mine.losses, mine.correct};
  if (mpi == nullptr || mpi->world_size() == 1) return outcome;
  const size_t local = mine.losses.size();
  // One sum over a zero-padded vector: every rank fills its own slots and the hit count.
  std::vector<float> slots(local * static_cast<size_t>(mpi->world_size()) + 1, 0.0f);
  for (size_t t = 0; t < local; ++t) {
    slots[static_cast<size_t>(rank) * local + t] = static_cast<float>(mine.losses[t]);
  }
  slots.back() = static_cast<float>(mine.correct);
  RETURN_IF_ERROR(mpi->AllReduceSum(slots));
  outcome.losses.assign(slots.begin(), slots.end() - 1);
  outcome.correct = std::llround(slots.back());
  return outcome;
}

}  // namespace

StatusOr<TrainingReport> RunTraining(const TrainOptions& options, std::ostream& log,
                                     bool interactive) {
  ASSIGN_OR_RETURN(const std::unique_ptr<TrainingSetup> setup, TrainingSetup::Create(options));
  Workload& workload = setup->workload();
  const int64_t per_epoch = workload.data().batches_per_epoch();
  const int64_t total_steps = options.steps > 0 ? options.steps : per_epoch * options.epochs;
  TrainingReporter reporter(*setup, log, interactive, total_steps, options.warmup_steps);
  reporter.LogStart(options);
  StepInputs inputs(options, *setup);
  StopSignals stop_signals;
  RETURN_IF_ERROR(reporter.Start(options.metrics_path));

  for (int64_t step = 0; step < total_steps; ++step) {
    if (stop_requested.load()) {
      reporter.Stopped(step);
      return Status(StatusCode::kCancelled, "interrupted after step " + std::to_string(step));
    }
    RETURN_IF_ERROR(inputs.Prepare(step));
    StepRecord record;
    record.step = step + 1;
    record.epoch = inputs.epoch();
    record.learning_rate = workload.LearningRate(record.epoch);
    const bool profiled = IsProfiledStep(options.profile, record.step, options.warmup_steps);
    if (profiled) setup->profiler()->BeginStep(record.step, setup->tower_devices());
    const int64_t t0 = runtime::NowNanos();
    ASSIGN_OR_RETURN(const TowerStepResult mine, inputs.Run(step, record.learning_rate));
    ASSIGN_OR_RETURN(RunStepOutcome outcome, GatherAcrossRanks(mine, setup->rank(), setup->mpi()));
    for (double loss : outcome.losses) record.loss += loss / setup->run_towers();
    record.device_losses = std::move(outcome.losses);
    record.correct = outcome.correct;
    record.seconds = static_cast<double>(runtime::NowNanos() - t0) * 1e-9;
    if (profiled) {
      ASSIGN_OR_RETURN(const std::string path, setup->profiler()->EndStep());
      reporter.RecordTrace(record.step, path, setup->profiler()->last_gpu_note());
    }
    if (!std::isfinite(record.loss)) {
      return Internal("step " + std::to_string(record.step) +
                      ": the loss is not finite; lower --learning_rate");
    }
    RETURN_IF_ERROR(reporter.RecordStep(record));
  }
  return reporter.Finish();
}

}  // namespace stepscope::trainer
