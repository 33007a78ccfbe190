// The one checking macro for CUDA runtime and cuBLAS calls: a failure becomes a Status that
// keeps the call's text and file:line, e.g.
//   "cudaMalloc(&ptr, bytes) failed at kernels/cuda/conv2d.cu:88: out of memory
//    (cudaErrorMemoryAllocation)".
// "No device/driver" errors map to kUnavailable (a GPU request on a machine without one),
// everything else to kInternal. Kernel launches go through STEPSCOPE_CUDA_LAUNCH, which checks
// the launch with the kernel's name as the text.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "base/status.h"

namespace stepscope::kernels::internal {

inline bool IsCudaSuccess(cudaError_t e) { return e == cudaSuccess; }
inline bool IsCudaSuccess(cublasStatus_t e) { return e == CUBLAS_STATUS_SUCCESS; }

Status CudaCallStatus(cudaError_t error, const char* call, const char* file, int line);
Status CudaCallStatus(cublasStatus_t error, const char* call, const char* file, int line);

}  // namespace stepscope::kernels::internal

#define STEPSCOPE_CUDA_CHECK_AS(expr, text)                                                   \
  do {                                                                                        \
    const auto _cuda_result = (expr);                                                         \
    if (!::stepscope::kernels::internal::IsCudaSuccess(_cuda_result)) {                       \
      return ::stepscope::kernels::internal::CudaCallStatus(_cuda_result, text, __FILE__,     \
                                                            __LINE__);                        \
    }                                                                                         \
  } while (0)

// Returns the failing call as a Status from the enclosing Status-returning function.
#define STEPSCOPE_CUDA_CHECK(expr) STEPSCOPE_CUDA_CHECK_AS(expr, #expr)

// kernel<<<grid, block, shared_bytes, stream>>>(args...), then the launch check.
// A successful launch does not reset the thread's last error, so an earlier failed call
// (already reported by its own check, e.g. an allocation that a caching allocator retries)
// would come back as this launch's failure: the pending error is cleared first. A sticky error
// (a broken context) cannot be cleared and still fails the launch.
#define STEPSCOPE_CUDA_LAUNCH(kernel, grid, block, shared_bytes, stream, ...)        \
  do {                                                                               \
    (void)cudaGetLastError();                                                        \
    kernel<<<(grid), (block), (shared_bytes), (stream)>>>(__VA_ARGS__);              \
    STEPSCOPE_CUDA_CHECK_AS(cudaGetLastError(), "launch of " #kernel);               \
  } while (0)
