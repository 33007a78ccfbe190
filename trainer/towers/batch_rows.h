// Rows of batches moved between devices: a rank's share of the global batch, a device's resident
// share and its minibatches, and several global batches joined into one resident train batch.
#pragma once

#include <cstdint>
#include <span>

#include "base/status.h"
#include "trainer/models/model.h"
#include "trainer/runtime/device.h"

namespace stepscope::trainer {

// Rows [first, first + count) of `batch` (inputs and labels share the first dimension; in host
// memory, or on `device` itself) copied into new tensors on `device`: a rank's share of the global
// batch, a device's resident share and its minibatches.
StatusOr<models::Batch> BatchRows(const models::Batch& batch, int64_t first, int64_t count,
                                  const runtime::Device& device);

// The batches one after another (same shapes past the first dimension) in new tensors on
// `device`, a CPU device: several global batches loaded as one resident train batch.
StatusOr<models::Batch> ConcatBatches(std::span<const models::Batch> batches,
                                      const runtime::Device& device);

}  // namespace stepscope::trainer
