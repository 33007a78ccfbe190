// Host copies ordered against a GPU's compute stream with pooled events (see ordered_copy.h).
#include "trainer/runtime/cuda/ordered_copy.h"

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_runtime_calls.h"

namespace stepscope::runtime::cuda {

CudaEventPool::~CudaEventPool() {
  // Nothing to report to from a destructor; a failure leaks an event at worst.
  for (cudaEvent_t event : free_) (void)kernels::CudaCalls().event_destroy(event);
}

StatusOr<cudaEvent_t> CudaEventPool::Acquire() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!free_.empty()) {
      cudaEvent_t event = free_.back();
      free_.pop_back();
      return event;
    }
  }
  cudaEvent_t event = nullptr;
  STEPSCOPE_CUDA_CHECK_AS(kernels::CudaCalls().event_create_with_flags(&event,
                                                                       cudaEventDisableTiming),
                          "cudaEventCreateWithFlags(&event, cudaEventDisableTiming)");
  std::lock_guard<std::mutex> lock(mu_);
  ++created_;
  return event;
}

void CudaEventPool::Release(cudaEvent_t event) {
  std::lock_guard<std::mutex> lock(mu_);
  free_.push_back(event);
}

void CudaEventPool::Discard(cudaEvent_t event) {
  (void)kernels::CudaCalls().event_destroy(event);
}

size_t CudaEventPool::created() const {
  std::lock_guard<std::mutex> lock(mu_);
  return created_;
}

Status OrderedCopy(CudaEventPool& events, cudaStream_t compute, cudaStream_t copy_stream,
                   void* dst, const void* src, int64_t bytes, cudaMemcpyKind kind) {
  if (bytes <= 0) return Status::Ok();
  ASSIGN_OR_RETURN(cudaEvent_t compute_done, events.Acquire());
  StatusOr<cudaEvent_t> copy_done = events.Acquire();
  if (!copy_done.ok()) {
    events.Release(compute_done);  // never recorded: as good as new
    return copy_done.status();
  }
  const kernels::CudaRuntimeCalls& calls = kernels::CudaCalls();
  const Status status = [&]() -> Status {
    STEPSCOPE_CUDA_CHECK_AS(calls.event_record(compute_done, compute),
                            "cudaEventRecord(compute_done, compute)");
    STEPSCOPE_CUDA_CHECK_AS(calls.stream_wait_event(copy_stream, compute_done, 0),
                            "cudaStreamWaitEvent(copy_stream, compute_done, 0)");
    STEPSCOPE_CUDA_CHECK_AS(
        calls.memcpy_async(dst, src, static_cast<size_t>(bytes), kind, copy_stream),
        "cudaMemcpyAsync(dst, src, bytes, kind, copy_stream)");
    STEPSCOPE_CUDA_CHECK_AS(calls.event_record(*copy_done, copy_stream),
                            "cudaEventRecord(copy_done, copy_stream)");
    STEPSCOPE_CUDA_CHECK_AS(calls.event_synchronize(*copy_done), "cudaEventSynchronize(copy_done)");
    return Status::Ok();
  }();
  for (cudaEvent_t event : {compute_done, *copy_done}) {
    if (status.ok()) {
      events.Release(event);
    } else {
      events.Discard(event);
    }
  }
  return status;
}

}  // namespace stepscope::runtime::cuda
