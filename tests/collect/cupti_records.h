// Synthetic CUPTI activity records, filled as CUPTI fills them, for tests on machines without a
// GPU: the converter's and the trainer's GPU tracer's. Built in the layouts the converter reads
// (activity_records.h). Times are CUPTI-clock nanoseconds.
#pragma once

#include <cstdint>

#include "profiler/collect/cupti/activity_records.h"
#include "profiler/collect/cupti/gpu_activity_converter.h"

namespace stepscope::testing {

using collect::cupti::ApiActivity;
using collect::cupti::ExternalCorrelationActivity;
using collect::cupti::KernelActivity;
using collect::cupti::MemcpyActivity;

// A kernel of grid 4x2x1, blocks of 256 threads; registers and shared memory left to the caller.
inline KernelActivity KernelRecord(uint32_t device, uint32_t stream, uint32_t correlation,
                                   uint64_t start, uint64_t end, const char* name) {
  KernelActivity k{};
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

inline MemcpyActivity MemcpyRecord(uint8_t copy_kind, uint8_t src_kind, uint8_t dst_kind,
                                   uint64_t bytes, uint32_t device, uint32_t stream,
                                   uint32_t correlation, uint64_t start, uint64_t end) {
  MemcpyActivity m{};
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
inline ExternalCorrelationActivity ExternalCorrelationRecord(uint32_t correlation,
                                                             uint64_t external_id) {
  ExternalCorrelationActivity e{};
  e.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
  e.externalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;
  e.externalId = external_id;
  e.correlationId = correlation;
  return e;
}

// A runtime (cudaLaunchKernel, ...) or driver (cuLaunchKernelEx, ...) call, as the RUNTIME or
// DRIVER kind records it.
inline ApiActivity ApiRecord(CUpti_ActivityKind kind, uint32_t correlation, uint64_t start,
                             uint64_t end) {
  ApiActivity api{};
  api.kind = kind;
  api.correlationId = correlation;
  api.start = start;
  api.end = end;
  return api;
}

// The CUPTI clock at a synthetic step's start and the host's steady clock at the same instant.
inline constexpr int64_t kCuptiStart = 1'795'000'000'000'000'000;
inline constexpr int64_t kHostStart = 40'000'000'000;

// Hands `record` to the converter as CUPTI's buffer walk would.
template <typename Record>
void Feed(collect::cupti::GpuActivityConverter& converter, const Record& record) {
  converter.OnRecord(reinterpret_cast<const CUpti_Activity&>(record));
}

}  // namespace stepscope::testing
