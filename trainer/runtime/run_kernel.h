// Choosing an op's kernel by device: every kernel of kernels/ has a CPU overload (taking the
// device's CpuContext) and, in GPU builds, a CUDA overload (taking the CudaContext of the GPU
// device's compute stream). An op writes its kernel call once, generic in the context:
//   RETURN_IF_ERROR(RunKernel(device, [&](const auto& ctx) {
//     return kernels::Relu(ctx, x.in<float>(), y.view<float>());
//   }));
// On a GPU the call enqueues and returns; the device's GPU is made current on the calling thread
// first, which costs a cudaSetDevice only when the thread last set another GPU
// (kernels/cuda/cuda_runtime_calls.h), and the launch itself is one checked runtime call.
#pragma once

#include "base/status.h"
#include "kernels/cpu_context.h"
#include "trainer/runtime/device.h"

namespace stepscope::runtime {

// Each call counts one kernel call on the device (DeviceOpCounts).
template <typename Kernel>
Status RunKernel(const Device& device, Kernel&& kernel) {
  device.CountOp(DeviceOp::kKernelCall);
#ifdef STEPSCOPE_WITH_CUDA
  if (const GpuResources* gpu = device.gpu(); gpu != nullptr && gpu->kernel_context() != nullptr) {
    RETURN_IF_ERROR(gpu->MakeCurrent());
    return kernel(*gpu->kernel_context());
  }
#endif
  return kernel(device.cpu());
}

}  // namespace stepscope::runtime
