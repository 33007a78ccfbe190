// Picks and loads each step's batch: this rank's share of the next global batch, or a minibatch
// of the resident batches in each pass's shuffled order.
#include "trainer/main/step_inputs.h"

#include <utility>

#include "trainer/main/training_setup.h"
#include "trainer/towers/batch_rows.h"

namespace stepscope::trainer {

StepInputs::StepInputs(const TrainOptions& options, const TrainingSetup& setup)
    : data_(setup.workload().data()),
      input_device_(setup.input_device()),
      tower_devices_(setup.tower_devices()),
      towers_(setup.towers()),
      rank_(setup.rank()),
      world_(setup.world_size()),
      rows_per_tower_(setup.workload().rows_per_tower()),
      batches_per_epoch_(data_.batches_per_epoch()),
      resident_batches_(options.resident_batches),
      sgd_epochs_(options.sgd_epochs),
      seed_(options.seed) {}

int64_t StepInputs::NextIndex() {
  const int64_t index = batches_read_++ % batches_per_epoch_;
  if (index == 0) {
    ++epoch_;
    data_.StartEpoch(epoch_);
    towers_.ResetState();
  }
  return index;
}

StatusOr<models::Batch> StepInputs::Fetch(int64_t index) {
  ASSIGN_OR_RETURN(models::Batch batch, data_.Get(input_device_, index));
  if (world_ == 1) return batch;
  const int64_t rows = batch.inputs.shape()[0] / world_;
  return BatchRows(batch, rank_ * rows, rows, input_device_);
}

Status StepInputs::Prepare(int64_t step) {
  batch_ = {};
  if (!resident()) {
    index_ = NextIndex();
    return Status::Ok();
  }
  cycle_pos_ = step % (resident_batches_ * sgd_epochs_);
  if (cycle_pos_ != 0) return Status::Ok();
  // RLlib's load_data: once per cycle, before its steps.
  std::vector<models::Batch> loaded;
  for (int64_t r = 0; r < resident_batches_; ++r) {
    ASSIGN_OR_RETURN(models::Batch batch, Fetch(NextIndex()));
    loaded.push_back(std::move(batch));
  }
  ASSIGN_OR_RETURN(const models::Batch train_batch, ConcatBatches(loaded, input_device_));
  ASSIGN_OR_RETURN(resident_data_, ResidentData::Load(train_batch, tower_devices_, rows_per_tower_));
  return Status::Ok();
}

StatusOr<TowerStepResult> StepInputs::Run(int64_t step, float learning_rate) {
  if (!resident()) {
    ASSIGN_OR_RETURN(batch_, Fetch(index_));
    return towers_.Step(batch_, learning_rate);
  }
  // RLlib's optimize(batch_index): a new shuffled order for every pass over the data.
  if (cycle_pos_ % resident_batches_ == 0) {
    resident_order_ = resident_data_->EpochOrder(seed_, step / resident_batches_);
  }
  towers_.ResetState();  // minibatches are not consecutive text
  return towers_.StepResident(
      *resident_data_, resident_order_[static_cast<size_t>(cycle_pos_ % resident_batches_)],
      learning_rate);
}

}  // namespace stepscope::trainer
