// CUPTI's ids of the CUDA streams a process's devices own, so that the GPU lanes can be named by
// the TensorFlow device behind each stream (GpuActivityConverter::SetStreamDevices): the
// records name a stream only by CUPTI's id, unique within its context.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "base/status.h"
#include "profiler/collect/cupti/gpu_activity_converter.h"

namespace stepscope::collect::cupti {

// One CUDA stream of a TF device: `stream` is a cudaStream_t (a CUstream), opaque here.
struct DeviceStream {
  void* stream = nullptr;
  uint32_t cuda_device = 0;  // the CUDA ordinal the stream was created on
  int tf_device = 0;         // k of /device:GPU:k
};

// CUPTI's stream id of each (cuptiGetStreamIdEx). Only while CUPTI is attached (inside a traced
// step): a detached CUPTI would be attached by the call. A failed lookup is a Status naming the
// TF device and CUPTI's error.
StatusOr<std::vector<StreamDevice>> CuptiStreamDevices(std::span<const DeviceStream> streams);

}  // namespace stepscope::collect::cupti
