// Resident-data mode for data parallelism, after RLlib's LocalSyncParallelOptimizer: a large
// train batch is split and copied to the towers' devices ONCE (load_data), then several SGD epochs
// run over it, each a pass over the minibatch offsets in a fresh shuffled order, every step taking
// minibatch `index` from each device's resident share (optimize(batch_index)). Only the chosen
// rows move per step, device-local.
//
// Truncation (as load_data does): the train batch's rows are cut to a multiple of
// devices × per-device minibatch, so every tower gets the same number of whole minibatches. For
// the LSTM a row is already a whole sequence of num_steps words (max_seq_len), so sequences are
// never split; shuffled minibatches are not consecutive, so the carried LSTM state restarts from
// zero for each minibatch (the towers reset it).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "base/status.h"
#include "trainer/models/model.h"
#include "trainer/runtime/device.h"

namespace stepscope::trainer {

class ResidentData {
 public:
  // Splits `train_batch` (inputs and labels with the same first dimension) across `devices`:
  // device d holds rows [d·R, (d+1)·R) after truncation, R = per-device rows. kInvalidInput when
  // the batch has fewer rows than one minibatch per device.
  static StatusOr<ResidentData> Load(const models::Batch& train_batch,
                                     std::span<runtime::Device* const> devices,
                                     int64_t per_device_minibatch);

  int num_devices() const { return static_cast<int>(shares_.size()); }
  int64_t minibatches_per_device() const { return minibatches_; }
  int64_t per_device_minibatch() const { return minibatch_rows_; }
  // Rows of the train batch that did not fit a whole minibatch on every device.
  int64_t truncated_rows() const { return truncated_rows_; }

  // Minibatch `index` of device `device`: its rows [index·m, (index+1)·m), copied on the device.
  StatusOr<models::Batch> Minibatch(int device, int64_t index) const;

  // The minibatch order of one SGD epoch: a permutation of [0, minibatches_per_device()),
  // determined by (seed, epoch) alone.
  std::vector<int64_t> EpochOrder(uint64_t seed, int64_t epoch) const;

 private:
  struct Share {
    const runtime::Device* device = nullptr;
    models::Batch rows;
  };
  std::vector<Share> shares_;
  int64_t minibatch_rows_ = 0;
  int64_t minibatches_ = 0;
  int64_t truncated_rows_ = 0;
};

}  // namespace stepscope::trainer
