// Which CUDA runtime and driver calls the GPU tracer records (docs/cupti.md, "API records").
//
// A trace needs an API record only where it says something about the GPU work: the launch time
// of a kernel, copy or memset (scheduled_*), and the link to the op, since CUPTI writes an
// EXTERNAL_CORRELATION record only next to an API record. Synchronisations and allocations are
// kept for the host's waits and memory. Every other call (cudaSetDevice, cudaGetLastError,
// cuBLAS' cuCtxGetCurrent/cuKernelGetAttribute, ...) would only cost host time per call, so
// CUPTI is asked for these ids alone (cuptiActivityEnableRuntimeApi/DriverApi) rather than the
// whole RUNTIME and DRIVER kinds. The table is data: kTracedApis in traced_api.cc.
//
// Where this CUPTI cannot enable single ids (too old, or the call fails), EnableTracedApis says
// so and the source falls back to the whole kinds (every call recorded, as before), with a log
// line.
#pragma once

#include <cupti_activity.h>
#include <cupti_callbacks.h>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "profiler/collect/cupti/gpu_activity_converter.h"

namespace stepscope::collect::cupti {

enum class ApiDomain : uint8_t { kRuntime, kDriver };

// What an API record of the call gives the trace.
enum class ApiRole : uint8_t { kLaunch, kCopy, kMemset, kSync, kAlloc };

struct TracedApi {
  ApiDomain domain;
  CUpti_CallbackId cbid;
  std::string_view name;  // the CUDA function, as CUPTI's cbid header spells it
  ApiRole role;
};

// The table, runtime ids first; each (domain, cbid) once.
std::span<const TracedApi> TracedApis();

// How a call of the table is enabled or disabled: CUPTI's per-id functions, or a test's.
// Returns CUPTI's result.
struct ApiIdSwitch {
  CUptiResult (*runtime)(CUpti_CallbackId cbid, uint8_t enable) = nullptr;
  CUptiResult (*driver)(CUpti_CallbackId cbid, uint8_t enable) = nullptr;
};

// CUPTI's own per-id functions, looked up in the loaded CUPTI library (they exist from CUDA
// 12.x's CUPTI on); both null when this CUPTI lacks them.
ApiIdSwitch CuptiApiIdSwitch();

// CUPTI's cuptiActivityEnableHWTrace, null when this CUPTI lacks it.
using HwTraceSwitch = CUptiResult (*)(uint8_t enable);
HwTraceSwitch CuptiHwTraceSwitch();

struct ApiEnableResult {
  bool per_id = false;      // true: only the table's ids are recorded
  std::string why_not;      // when !per_id: which call failed, for the log line
  size_t enabled = 0;       // ids enabled (per_id)
};

// Enables (enable = 1) or disables (0) every id of the table through `sw`. When `sw` lacks a
// function or a call fails while enabling, the ids already enabled are disabled again and
// per_id is false: the caller records whole kinds instead.
ApiEnableResult SwitchTracedApis(const ApiIdSwitch& sw, uint8_t enable);

// "launch", "copy", ...; and the domain's name ("runtime", "driver").
std::string_view ApiRoleName(ApiRole role);
std::string_view ApiDomainName(ApiDomain domain);

// CUPTI's name of a runtime (RUNTIME kind) or driver (DRIVER kind) call ("cudaLaunchKernel_v7000",
// "cuLaunchKernelEx"); "cbid<N>" when CUPTI names none.
std::string ApiCallName(CUpti_ActivityKind kind, uint32_t cbid);

// A step's API records per call, for the trainer's log: "runtime:cudaLaunchKernel_v7000=700,
// driver:cuLaunchKernelEx=120", most first; "-" when there were none. No spaces, so the note it
// goes in splits on them.
std::string FormatApiHistogram(const std::vector<ApiIdCount>& counts);

}  // namespace stepscope::collect::cupti
