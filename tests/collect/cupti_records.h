// Synthetic CUPTI activity records, filled as CUPTI fills them, for tests on machines without a
// GPU: the converter's and the trainer's GPU tracer's. Times are CUPTI-clock nanoseconds.
#pragma once

#include <cupti_activity.h>

#include <cstdint>

namespace stepscope::testing {

// A kernel of grid 4x2x1, blocks of 256 threads; registers and shared memory left to the caller.
inline CUpti_ActivityKernel10 KernelRecord(uint32_t device, uint32_t stream, uint32_t correlation,
                                           uint64_t start, uint64_t end, const char* name) {
  CUpti_ActivityKernel10 k{};
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.deviceId = device;
  k.streamId = stream;
  k.correlationId = correlation;
  k.start = start;
  k.end = end;
  k.name = name;
  k.gridX = 4, k.gridY = 2, k.gridZ = 1;
  k.blockX = 256, k.blockY = 1, k.blockZ = 1;
  return k;
}

inline CUpti_ActivityMemcpy6 MemcpyRecord(uint8_t copy_kind, uint8_t src_kind, uint8_t dst_kind,
                                          uint64_t bytes, uint32_t device, uint32_t stream,
                                          uint32_t correlation, uint64_t start, uint64_t end) {
  CUpti_ActivityMemcpy6 m{};
  m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  m.copyKind = copy_kind;
  m.srcKind = src_kind;
  m.dstKind = dst_kind;
  m.bytes = bytes;
  m.deviceId = device;
  m.streamId = stream;
  m.correlationId = correlation;
  m.start = start;
  m.end = end;
  return m;
}

// The link CUPTI emits between a launch's correlation id and the external id pushed around it.
inline CUpti_ActivityExternalCorrelation ExternalCorrelationRecord(uint32_t correlation,
                                                                   uint64_t external_id) {
  CUpti_ActivityExternalCorrelation e{};
  e.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
  e.externalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;
  e.externalId = external_id;
  e.correlationId = correlation;
  return e;
}

}  // namespace stepscope::testing
