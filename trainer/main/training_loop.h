// The training loop of `stepscope-train`: sets up devices, data and model from TrainOptions
// (training_setup.h, workload.h), runs the steps, and reports progress, per-step metrics and
// throughput (training_reporter.h).
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "base/status.h"
#include "trainer/main/train_options.h"

namespace stepscope::trainer {

struct TrainingReport {
  int64_t steps = 0;
  double first_loss = 0, final_loss = 0;
  double first_perplexity = 0, final_perplexity = 0;  // LSTM: exp(loss / num_steps) of a batch
  double epoch_perplexity = 0;  // LSTM: exp(sum of losses / steps·num_steps) over the last epoch
  double final_accuracy = 0;    // ResNet: top-1 on the last batch
  double examples_per_sec = 0, examples_per_sec_stderr = 0, examples_per_sec_jitter = 0;
  double mean_step_ms = 0;
  const char* unit = "";        // "words/sec" or "images/sec"
  std::vector<std::string> trace_paths;  // one per profiled step
};

// `log` gets the progress and summary; `interactive` rewrites one progress line (a terminal).
StatusOr<TrainingReport> RunTraining(const TrainOptions& options, std::ostream& log,
                                     bool interactive);

}  // namespace stepscope::trainer
