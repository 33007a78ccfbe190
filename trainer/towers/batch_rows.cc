// Copies rows of a batch between devices: a rank's or a tower's share of the global batch, and
// several batches joined into one.
#include "trainer/towers/batch_rows.h"

#include <cstring>
#include <string>
#include <utility>

#include "trainer/runtime/transfers.h"

namespace stepscope::trainer {
namespace {

// Rows of `from` (in host memory, or already on `device`) into a new tensor on `device`.
StatusOr<runtime::Tensor> TensorRows(const runtime::Tensor& from, int64_t first, int64_t count,
                                     const runtime::Device& device) {
  runtime::Shape shape = from.shape();
  const int64_t row_elements = from.num_elements() / shape[0];
  shape.dims[0] = count;
  ASSIGN_OR_RETURN(runtime::Tensor to, device.Allocate(from.dtype(), shape));
  if (&from.buffer()->allocator() == &device.allocator()) {
    RETURN_IF_ERROR(runtime::CopyRowsWithin(
        device, from, to,
        {.rows = 1, .row_elements = count * row_elements, .src_offset = first * row_elements}));
  } else {
    RETURN_IF_ERROR(runtime::CopyFromHost(
        device,
        static_cast<const char*>(from.buffer()->data()) +
            first * row_elements * runtime::DTypeSize(from.dtype()),
        to));
  }
  return to;
}

}  // namespace

StatusOr<models::Batch> BatchRows(const models::Batch& batch, int64_t first, int64_t count,
                                  const runtime::Device& device) {
  const int64_t rows = batch.inputs.empty() || batch.inputs.shape().rank < 1
                           ? 0 : batch.inputs.shape()[0];
  if (batch.labels.empty() || batch.labels.shape().rank < 1 || batch.labels.shape()[0] != rows ||
      first < 0 || count < 1 || first + count > rows) {
    return InvalidInput("rows [" + std::to_string(first) + ", " + std::to_string(first + count) +
                        ") of a batch with inputs " + batch.inputs.DebugString() + " and labels " +
                        batch.labels.DebugString());
  }
  models::Batch rows_batch;
  ASSIGN_OR_RETURN(rows_batch.inputs, TensorRows(batch.inputs, first, count, device));
  ASSIGN_OR_RETURN(rows_batch.labels, TensorRows(batch.labels, first, count, device));
  return rows_batch;
}

StatusOr<models::Batch> ConcatBatches(std::span<const models::Batch> batches,
                                      const runtime::Device& device) {
  if (batches.empty()) return InvalidInput("no batches to concatenate");
  if (device.gpu() != nullptr) {
    return Internal("batches are concatenated in host memory, not on " + device.name());
  }
  models::Batch out;
  for (auto [member, into] : {std::pair{&models::Batch::inputs, &out.inputs},
                              std::pair{&models::Batch::labels, &out.labels}}) {
    runtime::Shape shape = (batches[0].*member).shape();
    int64_t rows = 0;
    for (const models::Batch& b : batches) {
      runtime::Shape other = (b.*member).shape();
      other.dims[0] = shape[0];
      if (!(other == shape) || (b.*member).dtype() != (batches[0].*member).dtype()) {
        return InvalidInput("cannot concatenate batches of shapes " +
                            (batches[0].*member).DebugString() + " and " + (b.*member).DebugString());
      }
      rows += (b.*member).shape()[0];
    }
    shape.dims[0] = rows;
    ASSIGN_OR_RETURN(*into, device.Allocate((batches[0].*member).dtype(), shape));
    char* dst = static_cast<char*>(into->buffer()->data());
    for (const models::Batch& b : batches) {
      std::memcpy(dst, (b.*member).buffer()->data(), static_cast<size_t>((b.*member).bytes()));
      dst += (b.*member).bytes();
    }
  }
  return out;
}

}  // namespace stepscope::trainer
