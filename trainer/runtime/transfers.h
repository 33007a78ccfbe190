// Moving data into, out of and within a device's memory, the same calls for every device kind,
// so that the models never touch a tensor's bytes from the host themselves. On a CPU device the
// memory is host memory and these are memcpy; on a GPU device they are CUDA copies ordered with
// the device's compute stream (GpuResources), as TensorFlow's DeviceContext copies are.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "base/status.h"
#include "trainer/runtime/device.h"
#include "trainer/runtime/tensor.h"

namespace stepscope::runtime {

// Host copies to and from a GPU pass through pinned memory of the device's "cuda_host_bfc", in
// pieces of at most this many bytes, as TensorFlow stages host tensors for its GPUs: the copy
// engine reads and writes page-locked memory directly (from pageable memory the driver copies
// through bounce buffers of its own), and the pinned memory one copy holds stays bounded.
inline constexpr int64_t kPinnedStagingPieceBytes = int64_t{8} << 20;

// `dst.bytes()` bytes from host memory into `dst`, a tensor of `device`.
Status CopyFromHost(const Device& device, const void* host, const Tensor& dst);

// Host values into `dst`; kInvalidInput unless the dtype and element count match.
template <typename T>
Status CopyFromHost(const Device& device, std::span<const T> host, const Tensor& dst) {
  if (DTypeOf<T>() != dst.dtype() || static_cast<int64_t>(host.size()) != dst.num_elements()) {
    return InvalidInput("copy to " + dst.DebugString() + " from " + std::to_string(host.size()) +
                        " host values of another type or count");
  }
  return CopyFromHost(device, static_cast<const void*>(host.data()), dst);
}

// `src.bytes()` bytes of `src`, a tensor of `device`, into host memory, once every op already run
// on the device has written them.
Status CopyToHost(const Device& device, const Tensor& src, void* host);

// A tensor's values in a host vector (small results: losses, norms, logits for accuracy).
template <typename T>
StatusOr<std::vector<T>> ToHostVector(const Device& device, const Tensor& src) {
  std::vector<T> values(static_cast<size_t>(src.empty() ? 0 : src.num_elements()));
  if (!values.empty()) {
    if (DTypeOf<T>() != src.dtype()) return InvalidInput("host read of " + src.DebugString());
    RETURN_IF_ERROR(CopyToHost(device, src, values.data()));
  }
  return values;
}

// A strided block within one device's memory: `rows` rows of `row_elements` floats, from `src`
// (rows `src_stride` floats apart, from element `src_offset`) to `dst` (likewise). The tensors
// must hold the whole block: kInvalidInput naming both otherwise.
struct RowBlock {
  int64_t rows = 0, row_elements = 0;
  int64_t src_offset = 0, src_stride = 0;
  int64_t dst_offset = 0, dst_stride = 0;
};
Status CopyRowsWithin(const Device& device, const Tensor& src, const Tensor& dst,
                      const RowBlock& block);

// Sets every byte of `t` to zero (0.0f and 0 alike).
Status ZeroFill(const Device& device, const Tensor& t);

// Waits until every op enqueued on the device so far has finished (a no-op on a CPU device,
// whose ops finish before they return).
Status SynchronizeDevice(const Device& device);

}  // namespace stepscope::runtime
