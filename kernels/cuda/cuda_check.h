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

// kernel<<<grid, block, shared_bytes, stream>>>(args...) with one check: cudaLaunchKernelEx
// returns the launch's own error, so no cudaGetLastError is needed before (an earlier failed
// call, already reported by its own check, e.g. an allocation that a caching allocator retries,
// is not taken for this launch's) or after. A sticky error (a broken context) still fails the
// launch. One runtime call per launch (cudaLaunchKernelExC under CUPTI).
#define STEPSCOPE_CUDA_LAUNCH(kernel, grid_, block_, shared_bytes_, stream_, ...)    \
  do {                                                                               \
    cudaLaunchConfig_t _launch_config{};                                             \
    _launch_config.gridDim = dim3(grid_);                                            \
    _launch_config.blockDim = dim3(block_);                                          \
    _launch_config.dynamicSmemBytes = (shared_bytes_);                               \
    _launch_config.stream = (stream_);                                               \
    STEPSCOPE_CUDA_CHECK_AS(cudaLaunchKernelEx(&_launch_config, kernel, __VA_ARGS__), \
                            "launch of " #kernel);                                   \
  } while (0)
