// The real CUPTI source on a machine with no GPU driver: Start() must fail with a clear
// kUnavailable Status naming CUPTI and the driver, never crash, and leave nothing enabled.
#include "profiler/collect/cupti/cupti_activity_source.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>

namespace stepscope::collect::cupti {
namespace {

bool DriverPresent() {
  void* driver = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (driver != nullptr) ::dlclose(driver);
  return driver != nullptr;
}

TEST(CuptiActivitySourceTest, DefaultKindsFollowFormats) {
  const auto kinds = DefaultActivityKinds();
  for (CUpti_ActivityKind kind :
       {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
        CUPTI_ACTIVITY_KIND_MEMCPY2, CUPTI_ACTIVITY_KIND_MEMSET,
        CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION, CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,
        CUPTI_ACTIVITY_KIND_OVERHEAD, CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_DRIVER}) {
    EXPECT_NE(std::find(kinds.begin(), kinds.end(), kind), kinds.end()) << kind;
  }
  // Enabled first, so no launch can happen before the kind that links it to its op.
  ASSERT_FALSE(kinds.empty());
  EXPECT_EQ(kinds.front(), CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION);
}

// --profile_level: each level adds to the one before; only levels with links push op ids.
TEST(CuptiActivitySourceTest, LevelsDecomposeTheDefaultKinds) {
  using K = std::vector<CUpti_ActivityKind>;
  EXPECT_TRUE(SourceOptionsFor(TraceLevel::kAttached).kinds.empty());
  EXPECT_EQ(SourceOptionsFor(TraceLevel::kActivity).kinds,
            (K{CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
               CUPTI_ACTIVITY_KIND_MEMCPY2, CUPTI_ACTIVITY_KIND_MEMSET}));
  const CuptiSourceOptions launches = SourceOptionsFor(TraceLevel::kLaunches);
  EXPECT_EQ(launches.kinds, DefaultActivityKinds());
  EXPECT_TRUE(launches.api_ids_only);
  const CuptiSourceOptions all = SourceOptionsFor(TraceLevel::kAll);
  EXPECT_EQ(all.kinds, DefaultActivityKinds());
  EXPECT_FALSE(all.api_ids_only);
  EXPECT_FALSE(MakeCuptiActivitySource(SourceOptionsFor(TraceLevel::kActivity))->links_ops());
  EXPECT_TRUE(MakeCuptiActivitySource(SourceOptionsFor(TraceLevel::kLaunches))->links_ops());
}

TEST(CuptiActivitySourceTest, StartWithoutDriverIsUnavailable) {
  if (DriverPresent()) GTEST_SKIP() << "an NVIDIA driver is installed here";
  GpuActivityConverter converter(ClockAlignment{});
  auto source = MakeCuptiActivitySource();
  const Status status = source->Start(&converter);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), StatusCode::kUnavailable);
  EXPECT_NE(status.message().find("CUPTI"), std::string::npos) << status.message();
  EXPECT_NE(status.message().find("driver"), std::string::npos) << status.message();
  EXPECT_NE(status.message().find("libcuda.so.1"), std::string::npos) << status.message();
  // Not started: flushing, pausing and stopping are no-ops; resuming is an error.
  EXPECT_TRUE(source->Flush().ok());
  EXPECT_TRUE(source->Pause().ok());
  EXPECT_FALSE(source->Resume().ok());
  EXPECT_TRUE(source->Stop().ok());
}

TEST(CuptiActivitySourceTest, CuptiErrorsBecomeStatusesWithoutTheDriverProbe) {
  if (DriverPresent()) GTEST_SKIP() << "an NVIDIA driver is installed here";
  // Straight into CUPTI: its own error (no driver) must come back as a Status naming the call.
  CuptiSourceOptions options;
  options.probe_driver = false;
  GpuActivityConverter converter(ClockAlignment{});
  auto source = MakeCuptiActivitySource(options);
  for (int attempt = 0; attempt < 2; ++attempt) {  // a failed start leaves nothing behind
    const Status status = source->Start(&converter);
    ASSERT_FALSE(status.ok());
    EXPECT_EQ(status.code(), StatusCode::kUnavailable) << status.message();
    EXPECT_NE(status.message().find("cuptiActivityEnable"), std::string::npos)
        << status.message();
    EXPECT_NE(status.message().find("driver"), std::string::npos) << status.message();
  }
  const Status push = source->PushExternalCorrelation(7);
  ASSERT_FALSE(push.ok());
  EXPECT_NE(push.message().find("cuptiActivityPushExternalCorrelationId"), std::string::npos)
      << push.message();
  EXPECT_NE(push.message().find("cupti_activity_source.cc:"), std::string::npos)
      << push.message();
  EXPECT_TRUE(source->Stop().ok());
}

TEST(CuptiActivitySourceTest, CallStatusKeepsCallTextAndLocation) {
  const Status status =
      CuptiCallStatus(CUPTI_ERROR_INVALID_PARAMETER, "cuptiActivityFlushAll(0)", "x.cc", 12);
  EXPECT_EQ(status.code(), StatusCode::kInternal);
  EXPECT_NE(status.message().find("cuptiActivityFlushAll(0)"), std::string::npos);
  EXPECT_NE(status.message().find("CUPTI_ERROR_INVALID_PARAMETER"), std::string::npos)
      << status.message();
  EXPECT_NE(status.message().find("x.cc:12"), std::string::npos);
  EXPECT_EQ(CuptiCallStatus(CUPTI_ERROR_INSUFFICIENT_PRIVILEGES, "c", "f", 1).code(),
            StatusCode::kUnavailable);
}

}  // namespace
}  // namespace stepscope::collect::cupti
