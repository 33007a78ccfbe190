// The table of CUDA calls the GPU tracer records, and switching them on and off in CUPTI one id
// at a time (see traced_api.h for why these and no others).
#include "profiler/collect/cupti/traced_api.h"

#include <cupti_driver_cbid.h>
#include <cupti_runtime_cbid.h>
#include <dlfcn.h>

#include <array>

namespace stepscope::collect::cupti {
namespace {

#define STEPSCOPE_RT(fn, role) \
  TracedApi { ApiDomain::kRuntime, CUPTI_RUNTIME_TRACE_CBID_##fn, #fn, ApiRole::role }
#define STEPSCOPE_DRV(fn, role) \
  TracedApi { ApiDomain::kDriver, CUPTI_DRIVER_TRACE_CBID_##fn, #fn, ApiRole::role }

// Runtime: what our kernels, copies and allocators call, and what other libraries (NCCL, cuDNN)
// call for the same purposes; _ptsz/_ptds are the per-thread-default-stream builds of each.
// Driver: the launches of libraries that bypass the runtime (cuBLAS/cuBLASLt launch with
// cuLaunchKernel or cuLaunchKernelEx; NCCL with cuLaunchKernelEx) and their async copies and
// memsets. Without these their kernels would have no API record, so no link to their op.
constexpr auto kTable = std::to_array<TracedApi>({
    STEPSCOPE_RT(cudaLaunchKernel_v7000, kLaunch),
    STEPSCOPE_RT(cudaLaunchKernel_ptsz_v7000, kLaunch),
    STEPSCOPE_RT(cudaLaunchKernelExC_v11060, kLaunch),
    STEPSCOPE_RT(cudaLaunchKernelExC_ptsz_v11060, kLaunch),
    STEPSCOPE_RT(cudaLaunchCooperativeKernel_v9000, kLaunch),
    STEPSCOPE_RT(cudaLaunchCooperativeKernel_ptsz_v9000, kLaunch),
    STEPSCOPE_RT(cudaGraphLaunch_v10000, kLaunch),
    STEPSCOPE_RT(cudaGraphLaunch_ptsz_v10000, kLaunch),
    STEPSCOPE_RT(cudaMemcpy_v3020, kCopy),
    STEPSCOPE_RT(cudaMemcpy_ptds_v7000, kCopy),
    STEPSCOPE_RT(cudaMemcpyAsync_v3020, kCopy),
    STEPSCOPE_RT(cudaMemcpyAsync_ptsz_v7000, kCopy),
    STEPSCOPE_RT(cudaMemcpy2D_v3020, kCopy),
    STEPSCOPE_RT(cudaMemcpy2D_ptds_v7000, kCopy),
    STEPSCOPE_RT(cudaMemcpy2DAsync_v3020, kCopy),
    STEPSCOPE_RT(cudaMemcpy2DAsync_ptsz_v7000, kCopy),
    STEPSCOPE_RT(cudaMemcpy3D_v3020, kCopy),
    STEPSCOPE_RT(cudaMemcpy3DAsync_v3020, kCopy),
    STEPSCOPE_RT(cudaMemcpyPeer_v4000, kCopy),
    STEPSCOPE_RT(cudaMemcpyPeerAsync_v4000, kCopy),
    STEPSCOPE_RT(cudaMemcpyToSymbol_v3020, kCopy),
    STEPSCOPE_RT(cudaMemcpyToSymbolAsync_v3020, kCopy),
    STEPSCOPE_RT(cudaMemcpyFromSymbol_v3020, kCopy),
    STEPSCOPE_RT(cudaMemcpyFromSymbolAsync_v3020, kCopy),
    STEPSCOPE_RT(cudaMemset_v3020, kMemset),
    STEPSCOPE_RT(cudaMemset_ptds_v7000, kMemset),
    STEPSCOPE_RT(cudaMemsetAsync_v3020, kMemset),
    STEPSCOPE_RT(cudaMemsetAsync_ptsz_v7000, kMemset),
    STEPSCOPE_RT(cudaMemset2D_v3020, kMemset),
    STEPSCOPE_RT(cudaMemset2DAsync_v3020, kMemset),
    STEPSCOPE_RT(cudaDeviceSynchronize_v3020, kSync),
    STEPSCOPE_RT(cudaStreamSynchronize_v3020, kSync),
    STEPSCOPE_RT(cudaStreamSynchronize_ptsz_v7000, kSync),
    STEPSCOPE_RT(cudaEventSynchronize_v3020, kSync),
    STEPSCOPE_RT(cudaStreamWaitEvent_v3020, kSync),
    STEPSCOPE_RT(cudaStreamWaitEvent_ptsz_v7000, kSync),
    STEPSCOPE_RT(cudaMalloc_v3020, kAlloc),
    STEPSCOPE_RT(cudaFree_v3020, kAlloc),
    STEPSCOPE_RT(cudaMallocHost_v3020, kAlloc),
    STEPSCOPE_RT(cudaHostAlloc_v3020, kAlloc),
    STEPSCOPE_RT(cudaFreeHost_v3020, kAlloc),
    STEPSCOPE_RT(cudaMallocPitch_v3020, kAlloc),
    STEPSCOPE_RT(cudaMallocManaged_v6000, kAlloc),
    STEPSCOPE_RT(cudaMallocAsync_v11020, kAlloc),
    STEPSCOPE_RT(cudaMallocAsync_ptsz_v11020, kAlloc),
    STEPSCOPE_RT(cudaFreeAsync_v11020, kAlloc),
    STEPSCOPE_RT(cudaFreeAsync_ptsz_v11020, kAlloc),
    STEPSCOPE_DRV(cuLaunchKernel, kLaunch),
    STEPSCOPE_DRV(cuLaunchKernel_ptsz, kLaunch),
    STEPSCOPE_DRV(cuLaunchKernelEx, kLaunch),
    STEPSCOPE_DRV(cuLaunchKernelEx_ptsz, kLaunch),
    STEPSCOPE_DRV(cuLaunchCooperativeKernel, kLaunch),
    STEPSCOPE_DRV(cuLaunchCooperativeKernel_ptsz, kLaunch),
    STEPSCOPE_DRV(cuGraphLaunch, kLaunch),
    STEPSCOPE_DRV(cuGraphLaunch_ptsz, kLaunch),
    STEPSCOPE_DRV(cuMemcpyAsync, kCopy),
    STEPSCOPE_DRV(cuMemcpyAsync_ptsz, kCopy),
    STEPSCOPE_DRV(cuMemcpyHtoDAsync_v2, kCopy),
    STEPSCOPE_DRV(cuMemcpyHtoDAsync_v2_ptsz, kCopy),
    STEPSCOPE_DRV(cuMemcpyDtoHAsync_v2, kCopy),
    STEPSCOPE_DRV(cuMemcpyDtoHAsync_v2_ptsz, kCopy),
    STEPSCOPE_DRV(cuMemcpyDtoDAsync_v2, kCopy),
    STEPSCOPE_DRV(cuMemcpyDtoDAsync_v2_ptsz, kCopy),
    STEPSCOPE_DRV(cuMemsetD8Async, kMemset),
    STEPSCOPE_DRV(cuMemsetD8Async_ptsz, kMemset),
    STEPSCOPE_DRV(cuMemsetD32Async, kMemset),
    STEPSCOPE_DRV(cuMemsetD32Async_ptsz, kMemset),
});

#undef STEPSCOPE_RT
#undef STEPSCOPE_DRV

using IdSwitchFn = CUptiResult (*)(CUpti_CallbackId, uint8_t);

const char* kind_prefix(CUpti_ActivityKind kind) {
  return kind == CUPTI_ACTIVITY_KIND_DRIVER ? "driver:" : "runtime:";
}

}  // namespace

std::span<const TracedApi> TracedApis() { return kTable; }

void* LookUpInCupti(const char* symbol) {
  // Looked up in the CUPTI library that holds cuptiActivityEnable rather than linked, so a build
  // against an older CUPTI (or an older libcupti at run time) still runs without the function.
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void*>(&cuptiActivityEnable), &info) == 0 ||
      info.dli_fname == nullptr) {
    return nullptr;
  }
  void* cupti = ::dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD);
  if (cupti == nullptr) return nullptr;
  void* found = ::dlsym(cupti, symbol);
  ::dlclose(cupti);  // NOLOAD took one more reference to the loaded library; this returns it
  return found;
}

ApiIdSwitch CuptiApiIdSwitch() {
  ApiIdSwitch sw;
  sw.runtime = reinterpret_cast<IdSwitchFn>(LookUpInCupti("cuptiActivityEnableRuntimeApi"));
  sw.driver = reinterpret_cast<IdSwitchFn>(LookUpInCupti("cuptiActivityEnableDriverApi"));
  return sw;
}

HwTraceSwitch CuptiHwTraceSwitch() {
  return reinterpret_cast<HwTraceSwitch>(LookUpInCupti("cuptiActivityEnableHWTrace"));
}

ApiEnableResult SwitchTracedApis(const ApiIdSwitch& sw, uint8_t enable) {
  ApiEnableResult result;
  if (sw.runtime == nullptr || sw.driver == nullptr) {
    result.why_not = "this CUPTI has no cuptiActivityEnableRuntimeApi/cuptiActivityEnableDriverApi";
    return result;
  }
  for (size_t i = 0; i < kTable.size(); ++i) {
    const TracedApi& api = kTable[i];
    const IdSwitchFn fn = api.domain == ApiDomain::kRuntime ? sw.runtime : sw.driver;
    const CUptiResult status = fn(api.cbid, enable);
    if (status != CUPTI_SUCCESS && enable != 0) {
      result.why_not = std::string(api.domain == ApiDomain::kRuntime
                                       ? "cuptiActivityEnableRuntimeApi("
                                       : "cuptiActivityEnableDriverApi(") +
                       std::string(api.name) + ") failed with CUPTI error " +
                       std::to_string(static_cast<int>(status));
      for (size_t j = 0; j < i; ++j) {  // nothing half-enabled
        const IdSwitchFn undo = kTable[j].domain == ApiDomain::kRuntime ? sw.runtime : sw.driver;
        (void)undo(kTable[j].cbid, 0);
      }
      result.enabled = 0;
      return result;
    }
    if (status == CUPTI_SUCCESS) ++result.enabled;
  }
  result.per_id = true;
  return result;
}

std::string_view ApiRoleName(ApiRole role) {
  switch (role) {
    case ApiRole::kLaunch: return "launch";
    case ApiRole::kCopy: return "copy";
    case ApiRole::kMemset: return "memset";
    case ApiRole::kSync: return "sync";
    case ApiRole::kAlloc: return "alloc";
  }
  return "unknown";
}

std::string_view ApiDomainName(ApiDomain domain) {
  return domain == ApiDomain::kRuntime ? "runtime" : "driver";
}

std::string ApiCallName(CUpti_ActivityKind kind, uint32_t cbid) {
  const char* name = nullptr;
  const CUpti_CallbackDomain domain = kind == CUPTI_ACTIVITY_KIND_DRIVER
                                          ? CUPTI_CB_DOMAIN_DRIVER_API
                                          : CUPTI_CB_DOMAIN_RUNTIME_API;
  if (cuptiGetCallbackName(domain, cbid, &name) == CUPTI_SUCCESS && name != nullptr &&
      *name != '\0') {
    return name;
  }
  return "cbid" + std::to_string(cbid);
}

std::string FormatApiHistogram(const std::vector<ApiIdCount>& counts) {
  if (counts.empty()) return "-";
  std::string text;
  for (const ApiIdCount& c : counts) {
    if (!text.empty()) text += ",";
    text += kind_prefix(c.kind);
    text += ApiCallName(c.kind, c.cbid) + "=" + std::to_string(c.count);
  }
  return text;
}

}  // namespace stepscope::collect::cupti
