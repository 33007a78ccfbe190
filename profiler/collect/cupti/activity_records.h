// The CUPTI activity record structs the GPU tracer reads, chosen by the CUPTI version of the
// toolkit it is built with. Every code path that reads or builds a record names these aliases,
// never a numbered CUPTI struct.
//
// CUPTI delivers each kind in the newest layout its own headers define: when a release adds a
// field it deprecates the struct and adds the next number (the kernel record became
// CUpti_ActivityKernel10 in CUDA 13.0 and CUpti_ActivityKernel11 in 13.1), and fields after the
// new one move. Reading a record through an older struct would read other fields, so the choice
// follows CUPTI_API_VERSION (19 = CUDA 12.0 ... 28 = 12.9 Update 1, then xxyyzz from 13.0 on:
// 130000 = 13.0, 130100 = 13.1). The *Fields concepts list every field the converter reads; the
// static_asserts turn a toolkit that renamed one into a compile error naming it.
#pragma once

#include <cupti_activity.h>
#include <cupti_version.h>

namespace stepscope::collect::cupti {

#if CUPTI_API_VERSION >= 130100
using KernelActivity = CUpti_ActivityKernel11;
#elif CUPTI_API_VERSION >= 130000
using KernelActivity = CUpti_ActivityKernel10;
#elif CUPTI_API_VERSION >= 19
using KernelActivity = CUpti_ActivityKernel9;
#else
#error "stepscope's CUPTI tracer needs CUPTI from CUDA 12.0 or newer"
#endif

#if CUPTI_API_VERSION >= 26  // CUDA 12.8 added copyCount
using MemcpyActivity = CUpti_ActivityMemcpy6;
#else
using MemcpyActivity = CUpti_ActivityMemcpy5;
#endif

using PeerMemcpyActivity = CUpti_ActivityMemcpyPtoP4;  // CUDA 11.6 on
using MemsetActivity = CUpti_ActivityMemset4;          // CUDA 11.6 on
using ApiActivity = CUpti_ActivityAPI;                 // RUNTIME and DRIVER records
using ExternalCorrelationActivity = CUpti_ActivityExternalCorrelation;

template <typename K>
concept KernelActivityFields = requires(const K& k) {
  k.kind; k.deviceId; k.streamId; k.correlationId; k.start; k.end; k.name;
  k.gridX; k.gridY; k.gridZ; k.blockX; k.blockY; k.blockZ;
  k.registersPerThread; k.staticSharedMemory; k.dynamicSharedMemory;
};

// Device and peer-to-peer copies alike.
template <typename M>
concept MemcpyActivityFields = requires(const M& m) {
  m.kind; m.deviceId; m.streamId; m.correlationId; m.start; m.end; m.bytes;
  m.copyKind; m.srcKind; m.dstKind;
};

template <typename M>
concept MemsetActivityFields = requires(const M& m) {
  m.kind; m.deviceId; m.streamId; m.correlationId; m.start; m.end; m.bytes; m.memoryKind;
};

static_assert(KernelActivityFields<KernelActivity>);
static_assert(MemcpyActivityFields<MemcpyActivity>);
static_assert(MemcpyActivityFields<PeerMemcpyActivity>);
static_assert(MemsetActivityFields<MemsetActivity>);

}  // namespace stepscope::collect::cupti
