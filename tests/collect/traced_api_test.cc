// The CUDA calls the GPU tracer records: exactly the decided list (launches, copies, memsets,
// synchronisations, allocations), every kernel launch cuBLAS can make through the driver among
// them, nothing half-enabled when CUPTI refuses an id, and the fallback said when it lacks
// per-id enabling.
#include "profiler/collect/cupti/traced_api.h"

#include <cublas_v2.h>
#include <cupti_driver_cbid.h>
#include <cupti_runtime_cbid.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace stepscope::collect::cupti {
namespace {

using Key = std::pair<ApiDomain, uint32_t>;

// What a switch was told, in call order; net state per id.
struct Recorder {
  static inline std::map<Key, int> state;  // 1 on, 0 off
  static inline std::vector<Key> calls;
  static inline size_t fail_at = SIZE_MAX;  // the call that fails while enabling
  static void Reset() {
    state.clear();
    calls.clear();
    fail_at = SIZE_MAX;
  }
  static CUptiResult Record(ApiDomain domain, CUpti_CallbackId cbid, uint8_t enable) {
    if (enable != 0 && calls.size() == fail_at) return CUPTI_ERROR_NOT_SUPPORTED;
    calls.emplace_back(domain, cbid);
    state[{domain, cbid}] = enable;
    return CUPTI_SUCCESS;
  }
  static CUptiResult Runtime(CUpti_CallbackId cbid, uint8_t enable) {
    return Record(ApiDomain::kRuntime, cbid, enable);
  }
  static CUptiResult Driver(CUpti_CallbackId cbid, uint8_t enable) {
    return Record(ApiDomain::kDriver, cbid, enable);
  }
};

std::set<std::pair<ApiDomain, std::string>> Names() {
  std::set<std::pair<ApiDomain, std::string>> names;
  for (const TracedApi& api : TracedApis()) names.emplace(api.domain, std::string(api.name));
  return names;
}

TEST(TracedApiTest, TheTableIsTheDecidedList) {
  // The list of docs/cupti.md, written out independently of the table.
  const std::vector<std::string> runtime = {
      "cudaLaunchKernel_v7000", "cudaLaunchKernel_ptsz_v7000", "cudaLaunchKernelExC_v11060",
      "cudaLaunchKernelExC_ptsz_v11060", "cudaLaunchCooperativeKernel_v9000",
      "cudaLaunchCooperativeKernel_ptsz_v9000", "cudaGraphLaunch_v10000",
      "cudaGraphLaunch_ptsz_v10000", "cudaMemcpy_v3020", "cudaMemcpy_ptds_v7000",
      "cudaMemcpyAsync_v3020", "cudaMemcpyAsync_ptsz_v7000", "cudaMemcpy2D_v3020",
      "cudaMemcpy2D_ptds_v7000", "cudaMemcpy2DAsync_v3020", "cudaMemcpy2DAsync_ptsz_v7000",
      "cudaMemcpy3D_v3020", "cudaMemcpy3DAsync_v3020", "cudaMemcpyPeer_v4000",
      "cudaMemcpyPeerAsync_v4000", "cudaMemcpyToSymbol_v3020", "cudaMemcpyToSymbolAsync_v3020",
      "cudaMemcpyFromSymbol_v3020", "cudaMemcpyFromSymbolAsync_v3020", "cudaMemset_v3020",
      "cudaMemset_ptds_v7000", "cudaMemsetAsync_v3020", "cudaMemsetAsync_ptsz_v7000",
      "cudaMemset2D_v3020", "cudaMemset2DAsync_v3020", "cudaDeviceSynchronize_v3020",
      "cudaStreamSynchronize_v3020", "cudaStreamSynchronize_ptsz_v7000",
      "cudaEventSynchronize_v3020", "cudaStreamWaitEvent_v3020",
      "cudaStreamWaitEvent_ptsz_v7000", "cudaMalloc_v3020", "cudaFree_v3020",
      "cudaMallocHost_v3020", "cudaHostAlloc_v3020", "cudaFreeHost_v3020",
      "cudaMallocPitch_v3020", "cudaMallocManaged_v6000", "cudaMallocAsync_v11020",
      "cudaMallocAsync_ptsz_v11020", "cudaFreeAsync_v11020", "cudaFreeAsync_ptsz_v11020"};
  const std::vector<std::string> driver = {
      "cuLaunchKernel", "cuLaunchKernel_ptsz", "cuLaunchKernelEx", "cuLaunchKernelEx_ptsz",
      "cuLaunchCooperativeKernel", "cuLaunchCooperativeKernel_ptsz", "cuGraphLaunch",
      "cuGraphLaunch_ptsz", "cuMemcpyAsync", "cuMemcpyAsync_ptsz", "cuMemcpyHtoDAsync_v2",
      "cuMemcpyHtoDAsync_v2_ptsz", "cuMemcpyDtoHAsync_v2", "cuMemcpyDtoHAsync_v2_ptsz",
      "cuMemcpyDtoDAsync_v2", "cuMemcpyDtoDAsync_v2_ptsz", "cuMemsetD8Async",
      "cuMemsetD8Async_ptsz", "cuMemsetD32Async", "cuMemsetD32Async_ptsz"};
  std::set<std::pair<ApiDomain, std::string>> expected;
  for (const auto& name : runtime) expected.emplace(ApiDomain::kRuntime, name);
  for (const auto& name : driver) expected.emplace(ApiDomain::kDriver, name);
  EXPECT_EQ(Names(), expected);
  EXPECT_EQ(TracedApis().size(), expected.size()) << "a call listed twice";

  std::set<Key> ids;
  for (const TracedApi& api : TracedApis()) ids.emplace(api.domain, api.cbid);
  EXPECT_EQ(ids.size(), TracedApis().size()) << "two names with one callback id";
}

TEST(TracedApiTest, BookkeepingCallsAreNotRecorded) {
  const auto names = Names();
  for (const char* name : {"cudaSetDevice_v3020", "cudaGetLastError_v3020",
                           "cudaGetDevice_v3020", "cudaEventRecord_v3020",
                           "cudaEventCreateWithFlags_v3020", "cudaStreamIsCapturing_v10000"}) {
    EXPECT_EQ(names.count({ApiDomain::kRuntime, name}), 0u) << name;
  }
  for (const char* name : {"cuCtxGetCurrent", "cuKernelGetAttribute", "cuFuncGetAttribute",
                           "cuCtxSetCurrent", "cuLaunchHostFunc"}) {
    EXPECT_EQ(names.count({ApiDomain::kDriver, name}), 0u) << name;
  }
}

// cuBLAS reaches the driver through its own entry-point table, whose names are strings in the
// library: every kernel launch it can make must be recorded, or its GEMMs lose their link.
TEST(TracedApiTest, EveryDriverLaunchOfTheLinkedCublasIsRecorded) {
  Dl_info info{};
  ASSERT_NE(::dladdr(reinterpret_cast<void*>(&cublasCreate_v2), &info), 0);
  ASSERT_NE(info.dli_fname, nullptr);
  std::ifstream in(info.dli_fname, std::ios::binary);
  ASSERT_TRUE(in) << info.dli_fname;
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::set<std::string> launches;  // NUL-terminated strings naming a driver launch
  for (const char* prefix : {"cuLaunch", "cuGraphLaunch"}) {
    for (size_t at = bytes.find(prefix); at != std::string::npos;
         at = bytes.find(prefix, at + 1)) {
      if (at > 0 && bytes[at - 1] != '\0') continue;
      const size_t end = bytes.find('\0', at);
      if (end == std::string::npos || end - at > 64) continue;
      const std::string name = bytes.substr(at, end - at);
      const auto identifier = [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
      };
      if (!std::all_of(name.begin(), name.end(), identifier)) continue;
      // Host functions run on the CPU: no kernel to link.
      if (name.rfind("cuLaunchHostFunc", 0) == 0) continue;
      launches.insert(name);
    }
  }
  ASSERT_TRUE(launches.count("cuLaunchKernel") == 1 || launches.count("cuLaunchKernelEx") == 1)
      << "no driver launch named in " << info.dli_fname;
  const auto names = Names();
  for (const std::string& name : launches) {
    EXPECT_EQ(names.count({ApiDomain::kDriver, name}), 1u)
        << name << " (named by " << info.dli_fname << ") is not recorded";
  }
}

TEST(TracedApiTest, EnablesAndDisablesExactlyTheTable) {
  Recorder::Reset();
  const ApiIdSwitch sw{&Recorder::Runtime, &Recorder::Driver};
  const ApiEnableResult on = SwitchTracedApis(sw, 1);
  ASSERT_TRUE(on.per_id) << on.why_not;
  EXPECT_EQ(on.enabled, TracedApis().size());
  std::set<Key> expected;
  for (const TracedApi& api : TracedApis()) expected.emplace(api.domain, api.cbid);
  std::set<Key> enabled;
  for (const auto& [key, value] : Recorder::state) {
    if (value == 1) enabled.insert(key);
  }
  EXPECT_EQ(enabled, expected);
  EXPECT_EQ(Recorder::calls.size(), expected.size());

  (void)SwitchTracedApis(sw, 0);
  for (const auto& [key, value] : Recorder::state) EXPECT_EQ(value, 0) << key.second;
}

TEST(TracedApiTest, ARefusedIdLeavesNothingEnabled) {
  Recorder::Reset();
  Recorder::fail_at = 50;  // a driver id, after every runtime one
  const ApiEnableResult on = SwitchTracedApis({&Recorder::Runtime, &Recorder::Driver}, 1);
  EXPECT_FALSE(on.per_id);
  EXPECT_EQ(on.enabled, 0u);
  EXPECT_NE(on.why_not.find("cuptiActivityEnableDriverApi("), std::string::npos) << on.why_not;
  for (const auto& [key, value] : Recorder::state) EXPECT_EQ(value, 0) << key.second;
}

TEST(TracedApiTest, WithoutPerIdEnablingTheFallbackIsNamed) {
  Recorder::Reset();
  const ApiEnableResult on = SwitchTracedApis({&Recorder::Runtime, nullptr}, 1);
  EXPECT_FALSE(on.per_id);
  EXPECT_NE(on.why_not.find("cuptiActivityEnableDriverApi"), std::string::npos) << on.why_not;
  EXPECT_TRUE(Recorder::calls.empty());
}

TEST(TracedApiTest, TheLinkedCuptiHasPerIdEnabling) {
  // The toolkit this builds with (CUDA 13) has both; the fallback is for older ones.
  const ApiIdSwitch sw = CuptiApiIdSwitch();
  EXPECT_NE(sw.runtime, nullptr);
  EXPECT_NE(sw.driver, nullptr);
}

TEST(TracedApiTest, TheHistogramNamesEachCallOnOneLine) {
  EXPECT_EQ(FormatApiHistogram({}), "-");
  const std::string text = FormatApiHistogram(
      {{CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 700},
       {CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, 120}});
  EXPECT_EQ(text, "runtime:cudaLaunchKernel_v7000=700,driver:cuLaunchKernelEx=120");
  EXPECT_EQ(ApiCallName(CUPTI_ACTIVITY_KIND_DRIVER, 0xFFFFFF), "cbid16777215");
}

// The converter counts API records per call, most first; they sum to api_records.
TEST(TracedApiTest, TheConverterCountsApiRecordsPerCall) {
  GpuActivityConverter converter(ClockAlignment{});
  auto api = [&](CUpti_ActivityKind kind, uint32_t cbid, uint32_t correlation) {
    ApiActivity record{};
    record.kind = kind;
    record.cbid = cbid;
    record.correlationId = correlation;
    record.start = 100 + correlation;
    record.end = 200 + correlation;
    converter.OnRecord(reinterpret_cast<const CUpti_Activity&>(record));
  };
  for (uint32_t i = 0; i < 5; ++i) {
    api(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, i);
  }
  api(CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, 10);
  api(CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, 11);
  api(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020, 12);
  api(CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync, 13);
  const ConversionStats stats = converter.Finish().stats;
  EXPECT_EQ(stats.api_records, 9u);
  // Most first; ties by kind (DRIVER's value is below RUNTIME's), then id.
  const std::vector<ApiIdCount> expected = {
      {CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 5},
      {CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, 2},
      {CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync, 1},
      {CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020, 1}};
  EXPECT_EQ(stats.api_ids, expected);
  // The next step starts from zero.
  EXPECT_TRUE(converter.Finish().stats.api_ids.empty());
}

}  // namespace
}  // namespace stepscope::collect::cupti
