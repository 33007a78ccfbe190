// A GPU device's host copies ordered against its compute stream, as TensorFlow's GPU device
// orders them: the copy waits for the compute stream's work so far (which produced or last read
// the buffer), runs on its own copy stream, and the host waits for it. The two events this takes
// come from a per-device pool and are reused, so a copy makes five runtime calls (record, wait,
// copy, record, synchronise) instead of creating and destroying its events each time. Later
// compute work needs no event wait on the copy: the host has seen it finish before it returns.
// The calls go through kernels::CudaCalls(), so host tests count them without a GPU.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <mutex>
#include <vector>

#include "base/status.h"

namespace stepscope::runtime::cuda {

// Events of one GPU (timing off), created on first need and reused; thread-safe. Acquire with
// the pool's GPU current on the calling thread (an event belongs to the context it was made in).
class CudaEventPool {
 public:
  CudaEventPool() = default;
  ~CudaEventPool();  // destroys the pooled events (every acquired one must be back)
  CudaEventPool(const CudaEventPool&) = delete;
  CudaEventPool& operator=(const CudaEventPool&) = delete;

  StatusOr<cudaEvent_t> Acquire();
  void Release(cudaEvent_t event);
  // After a failed copy: the event's state is unknown, so it is destroyed, not reused.
  void Discard(cudaEvent_t event);
  size_t created() const;

 private:
  mutable std::mutex mu_;
  std::vector<cudaEvent_t> free_;
  size_t created_ = 0;
};

// Copies `bytes` on `copy_stream` after `compute`'s work so far; returns once the copy is done.
Status OrderedCopy(CudaEventPool& events, cudaStream_t compute, cudaStream_t copy_stream,
                   void* dst, const void* src, int64_t bytes, cudaMemcpyKind kind);

}  // namespace stepscope::runtime::cuda
