// What each training step trains on. Normally the data source's next global batch, of which
// this rank takes its share; with resident data (RLlib's LocalSyncParallelOptimizer,
// --resident_batches R) R global batches are loaded onto the towers' devices once per cycle and
// each step takes a minibatch of them, --sgd_epochs passes in a fresh shuffled order each.
// It walks the data source's epochs: each starts with the source's StartEpoch and fresh model
// state (the LSTM's carried state).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "base/status.h"
#include "trainer/main/batch_source.h"
#include "trainer/main/train_options.h"
#include "trainer/models/model.h"
#include "trainer/towers/resident_data.h"
#include "trainer/towers/towers.h"

namespace stepscope::trainer {

class TrainingSetup;

class StepInputs {
 public:
  // `setup` outlives this.
  StepInputs(const TrainOptions& options, const TrainingSetup& setup);
  StepInputs(const StepInputs&) = delete;
  StepInputs& operator=(const StepInputs&) = delete;

  // Before step `step` (0-based) and its learning rate: the next batch of the data (advancing
  // its epochs), or at the start of a resident cycle the cycle's batches, loaded.
  Status Prepare(int64_t step);
  // The data source's epoch, 0-based, after Prepare: the step's learning rate follows it.
  int epoch() const { return epoch_; }
  // Runs the prepared step on the towers. Reading a fresh batch is part of the step (its time,
  // its trace); the batch stays alive until the next Prepare, so the allocator levels reported
  // after the step include it.
  StatusOr<TowerStepResult> Run(int64_t step, float learning_rate);

 private:
  bool resident() const { return resident_batches_ > 0; }
  // The data source's next batch index, starting a new epoch at index 0.
  int64_t NextIndex();
  // This rank's share of global batch `index`, on the input device.
  StatusOr<models::Batch> Fetch(int64_t index);

  BatchSource& data_;
  const runtime::Device& input_device_;
  const std::vector<runtime::Device*>& tower_devices_;
  Towers& towers_;
  const int rank_, world_;
  const int64_t rows_per_tower_;
  const int64_t batches_per_epoch_;
  const int64_t resident_batches_;  // 0: a fresh batch every step
  const int64_t sgd_epochs_;
  const uint64_t seed_;

  int64_t batches_read_ = 0;
  int epoch_ = -1;
  int64_t index_ = 0;     // of the prepared step's batch
  models::Batch batch_;   // the last step's, when it read one
  std::optional<ResidentData> resident_data_;
  std::vector<int64_t> resident_order_;  // minibatch order of the current pass
  int64_t cycle_pos_ = 0;  // the prepared step's place in its resident cycle
};

}  // namespace stepscope::trainer
