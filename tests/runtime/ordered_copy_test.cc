// The CUDA runtime calls a GPU device makes per op, counted through kernels::CudaCalls() with
// stand-ins for the runtime (no GPU on the build machines): the current device is set once per
// thread and device, not per kernel; a host copy makes five calls with pooled events (eleven
// before: set device, two event creates, record, wait, copy, record, wait, synchronise, two
// destroys), in the order that keeps it after the compute stream's work; a failed copy's events
// are not reused.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "kernels/cuda/cuda_runtime_calls.h"
#include "trainer/runtime/cuda/ordered_copy.h"

namespace stepscope::runtime::cuda {
namespace {

// What the stand-ins were called with, in order.
struct Log {
  static inline std::vector<std::string> calls;
  static inline int next_event = 0;
  static inline int live_events = 0;
  static inline std::string fail;  // the call that fails next (once)
  static cudaError_t Note(const std::string& call) {
    calls.push_back(call);
    if (!fail.empty() && call.rfind(fail, 0) == 0) {
      fail.clear();
      return cudaErrorLaunchFailure;
    }
    return cudaSuccess;
  }
};

std::string Name(const void* p) { return std::to_string(reinterpret_cast<uintptr_t>(p)); }

const kernels::CudaRuntimeCalls kStandIns{
    [](int device) { return Log::Note("set_device " + std::to_string(device)); },
    [](cudaEvent_t* event, unsigned int) {
      *event = reinterpret_cast<cudaEvent_t>(static_cast<uintptr_t>(1000 + ++Log::next_event));
      ++Log::live_events;
      return Log::Note("create " + Name(*event));
    },
    [](cudaEvent_t event) {
      --Log::live_events;
      return Log::Note("destroy " + Name(event));
    },
    [](cudaEvent_t event, cudaStream_t stream) {
      return Log::Note("record " + Name(event) + " on " + Name(stream));
    },
    [](cudaEvent_t event) { return Log::Note("sync " + Name(event)); },
    [](cudaStream_t stream, cudaEvent_t event, unsigned int) {
      return Log::Note("wait " + Name(stream) + " for " + Name(event));
    },
    [](void*, const void*, size_t bytes, cudaMemcpyKind, cudaStream_t stream) {
      return Log::Note("copy " + std::to_string(bytes) + " on " + Name(stream));
    },
};

class CudaCallsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    saved_ = kernels::CudaCalls();
    kernels::CudaCalls() = kStandIns;
    kernels::ForgetCurrentDevice();
    Log::calls.clear();
    Log::next_event = 0;
    Log::live_events = 0;
    Log::fail.clear();
  }
  void TearDown() override {
    kernels::CudaCalls() = saved_;
    kernels::ForgetCurrentDevice();
  }
  kernels::CudaRuntimeCalls saved_{};
};

const auto kCompute = reinterpret_cast<cudaStream_t>(uintptr_t{7});
const auto kCopyStream = reinterpret_cast<cudaStream_t>(uintptr_t{9});

TEST_F(CudaCallsTest, TheDeviceIsSetOncePerThreadAndDevice) {
  for (int launch = 0; launch < 100; ++launch) ASSERT_EQ(kernels::SetDevice(0), cudaSuccess);
  EXPECT_EQ(Log::calls, (std::vector<std::string>{"set_device 0"}));
  ASSERT_EQ(kernels::SetDevice(1), cudaSuccess);
  ASSERT_EQ(kernels::SetDevice(1), cudaSuccess);
  ASSERT_EQ(kernels::SetDevice(0), cudaSuccess);
  EXPECT_EQ(Log::calls, (std::vector<std::string>{"set_device 0", "set_device 1", "set_device 0"}));

  // Another thread has its own current device.
  std::thread other([] { (void)kernels::SetDevice(0); });
  other.join();
  EXPECT_EQ(Log::calls.size(), 4u);

  // A failed set is not remembered; nor is anything after ForgetCurrentDevice.
  Log::calls.clear();
  Log::fail = "set_device 2";
  EXPECT_NE(kernels::SetDevice(2), cudaSuccess);
  EXPECT_EQ(kernels::SetDevice(0), cudaSuccess);
  kernels::ForgetCurrentDevice();
  EXPECT_EQ(kernels::SetDevice(0), cudaSuccess);
  EXPECT_EQ(Log::calls,
            (std::vector<std::string>{"set_device 2", "set_device 0", "set_device 0"}));
}

TEST_F(CudaCallsTest, AHostCopyMakesFiveCallsWithPooledEvents) {
  std::vector<char> src(64), dst(64);
  {
    CudaEventPool events;
    ASSERT_TRUE(OrderedCopy(events, kCompute, kCopyStream, dst.data(), src.data(), 64,
                            cudaMemcpyHostToDevice)
                    .ok());
    EXPECT_EQ(Log::calls, (std::vector<std::string>{"create 1001", "create 1002",
                                                    "record 1001 on 7", "wait 9 for 1001",
                                                    "copy 64 on 9", "record 1002 on 9",
                                                    "sync 1002"}));
    for (int copy = 0; copy < 10; ++copy) {
      Log::calls.clear();
      ASSERT_TRUE(OrderedCopy(events, kCompute, kCopyStream, dst.data(), src.data(), 32,
                              cudaMemcpyDeviceToHost)
                      .ok());
      ASSERT_EQ(Log::calls.size(), 5u) << copy;
      // The copy waits for compute's work so far; the host waits for the copy.
      EXPECT_EQ(Log::calls[0].rfind("record ", 0), 0u);
      EXPECT_NE(Log::calls[0].find(" on 7"), std::string::npos);
      EXPECT_EQ(Log::calls[2], "copy 32 on 9");
      EXPECT_EQ(Log::calls[4].rfind("sync ", 0), 0u);
    }
    EXPECT_EQ(events.created(), 2u);
    Log::calls.clear();
    EXPECT_TRUE(OrderedCopy(events, kCompute, kCopyStream, dst.data(), src.data(), 0,
                            cudaMemcpyDeviceToHost)
                    .ok());
    EXPECT_TRUE(Log::calls.empty()) << "an empty copy makes no call";
  }
  EXPECT_EQ(Log::live_events, 0) << "the pool destroys its events";
}

TEST_F(CudaCallsTest, AFailedCopyNamesTheCallAndDropsItsEvents) {
  std::vector<char> src(16), dst(16);
  CudaEventPool events;
  Log::fail = "copy";
  const Status failed = OrderedCopy(events, kCompute, kCopyStream, dst.data(), src.data(), 16,
                                    cudaMemcpyHostToDevice);
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.message().find("cudaMemcpyAsync(dst, src, bytes, kind, copy_stream) failed"),
            std::string::npos)
      << failed.message();
  EXPECT_EQ(Log::live_events, 0) << "events of a failed copy are destroyed, not pooled";
  ASSERT_TRUE(OrderedCopy(events, kCompute, kCopyStream, dst.data(), src.data(), 16,
                          cudaMemcpyHostToDevice)
                  .ok());
  EXPECT_EQ(events.created(), 4u);
}

}  // namespace
}  // namespace stepscope::runtime::cuda
