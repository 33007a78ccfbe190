// The CUDA runtime calls the per-op paths make (device selection, the ordered host copies'
// events), reached through one table so their count can be checked: the table holds the real
// functions; a host test (no GPU on our build machines) puts counting stand-ins in it, a GPU
// test counting wrappers around the real ones.
//
// SetDevice caches the calling thread's current device: cudaSetDevice is called only when the
// thread's device is not the one asked for (per kernel launch it otherwise costs a runtime call,
// and under a profiler an API record). The cache holds the device the thread last set through
// SetDevice, so every cudaSetDevice of ours goes through it; code that sets the device behind
// its back (a library that does not restore it) must call ForgetCurrentDevice after.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace stepscope::kernels {

struct CudaRuntimeCalls {
  cudaError_t (*set_device)(int device);
  cudaError_t (*event_create_with_flags)(cudaEvent_t* event, unsigned int flags);
  cudaError_t (*event_destroy)(cudaEvent_t event);
  cudaError_t (*event_record)(cudaEvent_t event, cudaStream_t stream);
  cudaError_t (*event_synchronize)(cudaEvent_t event);
  cudaError_t (*stream_wait_event)(cudaStream_t stream, cudaEvent_t event, unsigned int flags);
  cudaError_t (*memcpy_async)(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind,
                              cudaStream_t stream);
};

// The CUDA runtime's own functions.
inline const CudaRuntimeCalls& RealCudaRuntimeCalls() {
  static const CudaRuntimeCalls real{
      &cudaSetDevice,   &cudaEventCreateWithFlags, &cudaEventDestroy, &cudaEventRecord,
      &cudaEventSynchronize, &cudaStreamWaitEvent, &cudaMemcpyAsync,
  };
  return real;
}

// The table in use (RealCudaRuntimeCalls() unless a test changed it). Change it only while no
// other thread makes these calls.
inline CudaRuntimeCalls& CudaCalls() {
  static CudaRuntimeCalls calls = RealCudaRuntimeCalls();
  return calls;
}

namespace internal {
// The device this thread last set through SetDevice; -1: nothing known (a new thread, or after
// a failure or ForgetCurrentDevice). Header-only, so every library that sets the device (the
// runtime, the kernels, NCCL's setup) shares the one cache without linking another library.
inline thread_local int t_current_device = -1;
}  // namespace internal

// cudaSetDevice(device) unless it is this thread's current device already (as last set here).
// On failure the cache is cleared, so the next call asks CUDA again.
inline cudaError_t SetDevice(int device) {
  if (device >= 0 && device == internal::t_current_device) return cudaSuccess;
  const cudaError_t error = CudaCalls().set_device(device);
  internal::t_current_device = error == cudaSuccess ? device : -1;
  return error;
}

// Clears this thread's cache: the next SetDevice calls cudaSetDevice.
inline void ForgetCurrentDevice() { internal::t_current_device = -1; }

}  // namespace stepscope::kernels
