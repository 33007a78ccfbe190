// Splits resident batches across the towers' devices once, and serves each device's minibatch
// in each pass's seeded shuffled order.
#include "trainer/towers/resident_data.h"

#include <numeric>
#include <string>

#include "base/random.h"
#include "trainer/towers/batch_rows.h"

namespace stepscope::trainer {

StatusOr<ResidentData> ResidentData::Load(const models::Batch& train_batch,
                                          std::span<runtime::Device* const> devices,
                                          int64_t per_device_minibatch) {
  if (devices.empty()) return InvalidInput("resident data needs at least one device");
  if (per_device_minibatch < 1) {
    return InvalidInput("per-device minibatch must be at least 1 row, got " +
                        std::to_string(per_device_minibatch));
  }
  const runtime::Tensor& inputs = train_batch.inputs;
  const runtime::Tensor& labels = train_batch.labels;
  if (inputs.empty() || labels.empty() || inputs.shape().rank < 1 || labels.shape().rank < 1 ||
      inputs.shape()[0] != labels.shape()[0]) {
    return InvalidInput("train batch inputs " + inputs.DebugString() + " and labels " +
                        labels.DebugString() + " must have the same number of rows");
  }
  const int64_t rows = inputs.shape()[0];
  const int64_t n = static_cast<int64_t>(devices.size());
  ResidentData data;
  data.minibatch_rows_ = per_device_minibatch;
  data.minibatches_ = rows / (n * per_device_minibatch);
  if (data.minibatches_ == 0) {
    return InvalidInput("train batch of " + std::to_string(rows) + " rows is smaller than one " +
                        std::to_string(per_device_minibatch) + "-row minibatch on each of " +
                        std::to_string(n) + " devices");
  }
  const int64_t share_rows = data.minibatches_ * per_device_minibatch;
  data.truncated_rows_ = rows - n * share_rows;
  for (int64_t d = 0; d < n; ++d) {
    const runtime::Device& device = *devices[static_cast<size_t>(d)];
    Share share{&device, {}};
    ASSIGN_OR_RETURN(share.rows, BatchRows(train_batch, d * share_rows, share_rows, device));
    data.shares_.push_back(std::move(share));
  }
  return data;
}

StatusOr<models::Batch> ResidentData::Minibatch(int device, int64_t index) const {
  if (device < 0 || device >= num_devices() || index < 0 || index >= minibatches_) {
    return InvalidInput("no minibatch " + std::to_string(index) + " on device " +
                        std::to_string(device) + " (" + std::to_string(num_devices()) +
                        " devices, " + std::to_string(minibatches_) + " minibatches each)");
  }
  const Share& share = shares_[static_cast<size_t>(device)];
  return BatchRows(share.rows, index * minibatch_rows_, minibatch_rows_, *share.device);
}

std::vector<int64_t> ResidentData::EpochOrder(uint64_t seed, int64_t epoch) const {
  std::vector<int64_t> order(static_cast<size_t>(minibatches_));
  std::iota(order.begin(), order.end(), int64_t{0});
  Rng rng(MixSeed(seed, static_cast<uint64_t>(epoch)));
  for (size_t i = order.size(); i > 1; --i) {  // Fisher-Yates
    std::swap(order[i - 1], order[rng.Below(i)]);
  }
  return order;
}

}  // namespace stepscope::trainer
