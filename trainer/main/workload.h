// A model's part in a training run, behind one interface so that the set-up, the step loop and
// the reporter know no model: its data source and replicas, its learning-rate schedule, how a
// step's quality is measured (perplexity, accuracy), the names its log lines and traces carry,
// and what it adds to the run's summary. Another model is one more Workload and one line in
// MakeWorkload.
#pragma once

#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "base/status.h"
#include "trainer/main/batch_source.h"
#include "trainer/main/train_options.h"
#include "trainer/models/model.h"
#include "trainer/runtime/device.h"

namespace stepscope::trainer {

struct TrainingReport;

// One finished step of the whole run (every rank's towers).
struct StepRecord {
  int64_t step = 0;  // 1-based
  int epoch = 0;     // of the data source, 0-based
  float learning_rate = 0;
  std::vector<double> device_losses;  // every tower's loss, in rank order
  double loss = 0;                    // their mean
  int64_t correct = 0;                // top-1 hits summed over every tower
  double seconds = 0;
};

class Workload {
 public:
  virtual ~Workload() = default;
  Workload(const Workload&) = delete;
  Workload& operator=(const Workload&) = delete;

  // What the log's first line says is trained: "lstm small", "resnet50".
  virtual std::string title() const = 0;
  // The traces' file names and TraceSession.model: "lstm_small", "resnet50".
  virtual std::string trace_name() const = 0;
  // The throughput's unit: "words/sec", "images/sec".
  virtual const char* unit() const = 0;

  // Serves the global batch: the rows of every tower of the run.
  BatchSource& data() const { return *data_; }
  // Rows (sequences or images) of one tower's batch.
  int64_t rows_per_tower() const { return rows_per_tower_; }
  // Examples (words or images) one step of the whole run trains on.
  int64_t examples_per_step() const { return examples_per_step_; }

  // A replica on `device`; all of them start from the same seed.
  virtual StatusOr<std::unique_ptr<models::Model>> MakeReplica(
      const runtime::Device& device) const = 0;
  // The learning rate of `epoch` (0-based) of the data.
  virtual float LearningRate(int epoch) const = 0;
  // What the user should know before trusting the run (the log prints it as a warning after its
  // first line); empty when nothing.
  virtual std::string Warning() const { return {}; }

  // Measures a finished step: its figure goes into the step's metrics `line` and, after the
  // loss, into its `progress` line (a stream already in fixed notation).
  virtual void RecordStep(const StepRecord& step, nlohmann::json& line,
                          std::ostream& progress) = 0;
  // At the end of the run: the log's line on the model's quality, its figures in the metrics
  // `summary` and in `report` (whose losses are already filled in).
  virtual void Summarise(std::ostream& log, nlohmann::json& summary,
                         TrainingReport& report) const = 0;

 protected:
  Workload(std::unique_ptr<BatchSource> data, int64_t rows_per_tower, int64_t examples_per_step)
      : data_(std::move(data)),
        rows_per_tower_(rows_per_tower),
        examples_per_step_(examples_per_step) {}

 private:
  std::unique_ptr<BatchSource> data_;
  int64_t rows_per_tower_;
  int64_t examples_per_step_;
};

// The workload of `options.model`, its data source serving `run_towers` towers.
StatusOr<std::unique_ptr<Workload>> MakeWorkload(const TrainOptions& options, int run_towers);

}  // namespace stepscope::trainer
