// Looks up CUPTI's ids of the devices' CUDA streams, for lanes named by TF device id.
#include "profiler/collect/cupti/cupti_stream_ids.h"

#include <cuda.h>
#include <cupti.h>

#include <string>

#include "profiler/collect/cupti/cupti_activity_source.h"

namespace stepscope::collect::cupti {
namespace {

Status LookUp(const DeviceStream& s, uint32_t* id) {
  // A null context: CUPTI finds the stream's own (the stream is not per-thread).
  STEPSCOPE_CUPTI_RETURN_IF_ERROR(
      cuptiGetStreamIdEx(nullptr, static_cast<CUstream>(s.stream), 0, id));
  return Status::Ok();
}

}  // namespace

StatusOr<std::vector<StreamDevice>> CuptiStreamDevices(std::span<const DeviceStream> streams) {
  std::vector<StreamDevice> out;
  out.reserve(streams.size());
  for (const DeviceStream& s : streams) {
    uint32_t id = 0;
    const Status found = LookUp(s, &id);
    if (!found.ok()) {
      return found.WithContext("CUPTI stream id of a stream of GPU " +
                               std::to_string(s.tf_device));
    }
    out.push_back({s.cuda_device, id, s.tf_device});
  }
  return out;
}

}  // namespace stepscope::collect::cupti
