// Device specs, TensorFlow device names (job/task of a multi-process run), CPU device parts, and
// what a GPU request gives in a build without CUDA (GPU builds: gpu_device_test.cc).
#include "trainer/runtime/device.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "kernels/blas_threads.h"

namespace stepscope::runtime {
namespace {

std::vector<int> IdsOf(const std::string& text) {
  auto spec = ParseDeviceSpec(text);
  EXPECT_TRUE(spec.ok()) << text << ": " << spec.status().message();
  return spec.ok() ? spec->ids : std::vector<int>{};
}

TEST(DeviceSpec, ParsesCpuCountsAndGpuLists) {
  EXPECT_EQ(ParseDeviceSpec("cpu")->kind, DeviceKind::kCpu);
  EXPECT_EQ(IdsOf("cpu"), std::vector<int>({0}));
  EXPECT_EQ(IdsOf("cpu:3"), std::vector<int>({0, 1, 2}));
  EXPECT_EQ(ParseDeviceSpec("gpu:0")->kind, DeviceKind::kGpu);
  EXPECT_EQ(IdsOf("gpu:0"), std::vector<int>({0}));
  EXPECT_EQ(IdsOf("gpu:0,1"), std::vector<int>({0, 1}));
  // Order is kept: device k of the run is the k-th GPU listed.
  EXPECT_EQ(IdsOf("gpu:3,0,12"), std::vector<int>({3, 0, 12}));
}

TEST(DeviceSpec, RejectsBadSpecsNamingTheBadPart) {
  struct Case {
    std::string text, expected_in_message;
  };
  const Case cases[] = {
      {"gpu", "no GPU ids"},          {"gpu:", "no GPU ids"},
      {"gpu:0,,1", "'' is not a GPU id"}, {"gpu:0,", "'' is not a GPU id"},
      {"gpu:-1", "'-1' is not a GPU id"}, {"gpu:x", "'x' is not a GPU id"},
      {"gpu:1,1", "GPU 1 given twice"},   {"gpu:0 ", "'0 ' is not a GPU id"},
      {"tpu:0", "unknown device kind 'tpu'"}, {"cpu:0", "'0' is not a device count"},
      {"cpu:65", "'65' is not a device count"}, {"", "unknown device kind ''"},
  };
  for (const Case& c : cases) {
    const auto spec = ParseDeviceSpec(c.text);
    ASSERT_FALSE(spec.ok()) << c.text;
    EXPECT_EQ(spec.status().code(), StatusCode::kInvalidInput) << c.text;
    EXPECT_NE(spec.status().message().find(c.expected_in_message), std::string::npos)
        << c.text << ": " << spec.status().message();
    EXPECT_NE(spec.status().message().find("--devices " + c.text), std::string::npos)
        << spec.status().message();
  }
}

std::vector<int> OrdinalsOf(const std::string& spec, int local_rank, int local_size, int visible,
                            bool pinned = false) {
  const std::vector<int> ids = IdsOf(spec);
  auto ordinals = GpuOrdinalsOfRank(ids, local_rank, local_size, visible, pinned);
  EXPECT_TRUE(ordinals.ok()) << spec << ": " << ordinals.status().message();
  return ordinals.ok() ? *ordinals : std::vector<int>{};
}

TEST(GpuOrdinals, OneProcessUsesTheIdsItWasGiven) {
  EXPECT_EQ(OrdinalsOf("gpu:0", 0, 1, 1), std::vector<int>({0}));
  EXPECT_EQ(OrdinalsOf("gpu:3,1", 0, 1, 8), std::vector<int>({3, 1}));
  const auto missing = GpuOrdinalsOfRank(IdsOf("gpu:0,2"), 0, 1, 2, false);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(missing.status().message().find("GPU 2 does not exist: this machine has 2 usable"),
            std::string::npos)
      << missing.status().message();
}

TEST(GpuOrdinals, RanksOfOneHostTakeTheirOwnBlockOfGpus) {
  // mpirun -np 8 ... --devices gpu:0 on an 8-GPU host: one GPU each, rank r on GPU r.
  for (int r = 0; r < 8; ++r) EXPECT_EQ(OrdinalsOf("gpu:0", r, 8, 8), std::vector<int>({r}));
  // Two GPUs per rank: blocks of two, in the order the ids were given.
  EXPECT_EQ(OrdinalsOf("gpu:1,0", 0, 4, 8), std::vector<int>({1, 0}));
  EXPECT_EQ(OrdinalsOf("gpu:1,0", 3, 4, 8), std::vector<int>({7, 6}));
  // A block is as wide as the highest id: gpu:0,2 takes three GPUs, so blocks never overlap.
  EXPECT_EQ(OrdinalsOf("gpu:0,2", 1, 2, 6), std::vector<int>({3, 5}));
  // The launcher pinned each rank to its GPUs (CUDA_VISIBLE_DEVICES): ids within what it sees.
  EXPECT_EQ(OrdinalsOf("gpu:0", 5, 8, 1, true), std::vector<int>({0}));
  // ... unless the host has room for every block anyway (one variable exported to all ranks).
  EXPECT_EQ(OrdinalsOf("gpu:0", 5, 8, 8, true), std::vector<int>({5}));
  // Every rank of the host gets distinct GPUs.
  std::vector<int> taken;
  for (int r = 0; r < 4; ++r) {
    for (int ordinal : OrdinalsOf("gpu:0,1", r, 4, 8)) taken.push_back(ordinal);
  }
  std::sort(taken.begin(), taken.end());
  EXPECT_EQ(std::adjacent_find(taken.begin(), taken.end()), taken.end());
}

TEST(GpuOrdinals, TooFewGpusForTheRanksIsUnavailableNamingTheBlock) {
  const auto crowded = GpuOrdinalsOfRank(IdsOf("gpu:0"), 1, 2, 1, false);
  ASSERT_FALSE(crowded.ok());
  EXPECT_EQ(crowded.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(crowded.status().message().find(
                "2 ranks on this host take 1 GPU(s) each (GPUs 1-1 for local rank 1), but it has "
                "1 usable GPU(s): start at most 1 ranks per host"),
            std::string::npos)
      << crowded.status().message();
  EXPECT_FALSE(GpuOrdinalsOfRank(IdsOf("gpu:0,1"), 0, 2, 1, true).ok());  // pinned, too few
  EXPECT_EQ(GpuOrdinalsOfRank(IdsOf("gpu:0"), 2, 2, 4, false).status().code(),
            StatusCode::kInvalidInput);
}

// TensorFlow's virtual GPUs: V devices per GPU of the list, numbered in order, each with its
// share of the GPU's free memory (capped by the per-device limit).
TEST(VirtualGpus, DevicesPerGpuAreNumberedInOrderAndShareItsMemory) {
  const std::vector<int> ids = {0, 1}, ordinals = {2, 3};  // a rank whose GPUs start at 2
  const std::vector<int64_t> free = {int64_t{80} << 30, int64_t{60} << 30};
  const auto two = PlanVirtualGpus(ids, ordinals, free, 2, int64_t{16} << 30);
  ASSERT_TRUE(two.ok()) << two.status().message();
  const std::vector<VirtualGpu> expected_two = {{0, 2, int64_t{16} << 30},
                                                {1, 2, int64_t{16} << 30},
                                                {2, 3, int64_t{16} << 30},
                                                {3, 3, int64_t{16} << 30}};
  EXPECT_EQ(*two, expected_two);
  // The share, not the limit, when the GPU is the smaller: 60 GiB / 4.
  const auto four = PlanVirtualGpus(std::vector<int>{1}, std::vector<int>{3},
                                    std::vector<int64_t>{int64_t{60} << 30}, 4, int64_t{64} << 30);
  ASSERT_TRUE(four.ok());
  ASSERT_EQ(four->size(), 4u);
  for (int v = 0; v < 4; ++v) {
    EXPECT_EQ((*four)[static_cast<size_t>(v)], (VirtualGpu{v, 3, int64_t{15} << 30}));
  }
  // One per GPU: the ids stay the names (gpu:0,2 is GPU:0 and GPU:2).
  const std::vector<int> sparse = {0, 2};
  const auto one = PlanVirtualGpus(sparse, sparse, free, 1, int64_t{16} << 30);
  ASSERT_TRUE(one.ok());
  EXPECT_EQ((*one)[1].tf_id, 2);
  EXPECT_EQ(PlanVirtualGpus(ids, ordinals, free, 0, 1).status().code(), StatusCode::kInvalidInput);
}

TEST(VirtualGpus, CpuDevicesRefuseTheFlag) {
  DeviceOptions options;
  options.virtual_gpus_per_gpu = 2;
  const auto devices = CreateDevices(*ParseDeviceSpec("cpu:2"), options);
  ASSERT_FALSE(devices.ok());
  EXPECT_EQ(devices.status().code(), StatusCode::kInvalidInput);
  EXPECT_NE(devices.status().message().find("--virtual_gpus_per_gpu 2"), std::string::npos);
}

TEST(DeviceNames, SingleProcessDevicesAreLocalhostTaskZero) {
  auto devices = CreateDevices(*ParseDeviceSpec("cpu:2"), {.total_threads = 2});
  ASSERT_TRUE(devices.ok()) << devices.status().message();
  ASSERT_EQ(devices->size(), 2u);
  EXPECT_EQ((*devices)[0]->name(), "/job:localhost/replica:0/task:0/device:CPU:0");
  EXPECT_EQ((*devices)[1]->name(), "/job:localhost/replica:0/task:0/device:CPU:1");
  for (const auto& device : *devices) {
    EXPECT_EQ(device->kind(), DeviceKind::kCpu);
    EXPECT_EQ(device->allocator().Name(), "cpu");
    EXPECT_EQ(device->host_allocator(), nullptr);
    EXPECT_EQ(device->gpu(), nullptr);
    EXPECT_EQ(device->num_threads(), 1);
  }
}

TEST(DeviceNames, RankOfAMultiProcessRunIsAWorkerTask) {
  EXPECT_EQ(DevicePlacement::ForRank(0, 1), DevicePlacement{});
  EXPECT_EQ(DevicePlacement::ForRank(0, 4), (DevicePlacement{"worker", 0}));
  EXPECT_EQ(DevicePlacement::ForRank(3, 4), (DevicePlacement{"worker", 3}));

  DeviceOptions options;
  options.placement = DevicePlacement::ForRank(3, 4);
  options.total_threads = 2;
  auto devices = CreateDevices(*ParseDeviceSpec("cpu:2"), options);
  ASSERT_TRUE(devices.ok()) << devices.status().message();
  EXPECT_EQ((*devices)[0]->name(), "/job:worker/replica:0/task:3/device:CPU:0");
  EXPECT_EQ((*devices)[1]->name(), "/job:worker/replica:0/task:3/device:CPU:1");
  EXPECT_EQ(FullDeviceName(DeviceKind::kGpu, 1, {"worker", 12}),
            "/job:worker/replica:0/task:12/device:GPU:1");
  EXPECT_EQ(FullDeviceName(DeviceKind::kCpu, 0, {"ps", 0}), "/job:ps/replica:0/task:0/device:CPU:0");
}

TEST(DeviceNames, BadJobOrTaskIsRejectedBeforeAnyDeviceExists) {
  EXPECT_TRUE(ValidatePlacement({"worker_2", 0}).ok());
  for (const DevicePlacement& bad : {DevicePlacement{"", 0}, DevicePlacement{"2worker", 0},
                                     DevicePlacement{"my-job", 0}, DevicePlacement{"a/b", 0},
                                     DevicePlacement{"worker", -1}}) {
    DeviceOptions options;
    options.placement = bad;
    const auto devices = CreateDevices(*ParseDeviceSpec("cpu"), options);
    ASSERT_FALSE(devices.ok()) << bad.job << " " << bad.task;
    EXPECT_EQ(devices.status().code(), StatusCode::kInvalidInput);
    EXPECT_NE(devices.status().message().find(bad.task < 0 ? "task -1" : "'" + bad.job + "'"),
              std::string::npos)
        << devices.status().message();
  }
}

TEST(CpuDevice, ThreadsAreSplitAndTheAllocatorWorks) {
  auto devices = CreateDevices(*ParseDeviceSpec("cpu:3"), {.total_threads = 7});
  ASSERT_TRUE(devices.ok());
  for (const auto& device : *devices) EXPECT_EQ(device->num_threads(), 2);  // 7 / 3
  auto tensor = (*devices)[2]->Allocate(DType::kFloat32, {16, 4});
  ASSERT_TRUE(tensor.ok()) << tensor.status().message();
  EXPECT_EQ((*devices)[2]->allocator().Stats().num_allocs, 1);
  EXPECT_EQ((*devices)[0]->allocator().Stats().num_allocs, 0);  // each device its own arena
  EXPECT_EQ(CreateDevices(DeviceSpec{}).status().code(), StatusCode::kInvalidInput);
}

TEST(CpuDevice, MpiRanksOnOneHostShareItsThreads) {
  EXPECT_EQ(ProcessThreadBudget(2, 1), 2);
  EXPECT_EQ(ProcessThreadBudget(2, 2), 1);
  EXPECT_EQ(ProcessThreadBudget(2, 4), 1);  // oversubscribed: still one each
  EXPECT_EQ(ProcessThreadBudget(8, 2), 4);
  EXPECT_EQ(ProcessThreadBudget(8, 3), 2);
  EXPECT_EQ(ProcessThreadBudget(0, 1), 1);
  EXPECT_EQ(ProcessThreadBudget(8, 0), 8);
}

// Creating devices sets OpenBLAS's threads per GEMM: a lone device's share of the budget, one
// with several devices; 2 local ranks of one device each on 2 cores get one.
TEST(CpuDevice, BlasThreadsFollowTheDevices) {
  if (kernels::BlasThreadsFromEnvironment() != 0) {
    GTEST_SKIP() << "OPENBLAS_NUM_THREADS (or GOTO_/OMP_) is set: the user's count wins";
  }
  struct Case {
    const char* devices;
    int total_threads;
    int blas_threads;
  };
  const Case cases[] = {{"cpu", 3, 3},   {"cpu:2", 2, 1},
                        {"cpu:4", 2, 1}, {"cpu", ProcessThreadBudget(2, 2), 1},
                        {"cpu:2", 8, 1}, {"cpu", ProcessThreadBudget(8, 2), 4}};
  for (const Case& c : cases) {
    auto devices = CreateDevices(*ParseDeviceSpec(c.devices), {.total_threads = c.total_threads});
    ASSERT_TRUE(devices.ok()) << devices.status().message();
    EXPECT_EQ(kernels::BlasThreads(), c.blas_threads) << c.devices << " of " << c.total_threads;
  }
}

TEST(CpuDevice, AnExplicitOpenBlasThreadCountWins) {
  const char* saved = std::getenv("OPENBLAS_NUM_THREADS");
  const std::string saved_value = saved ? saved : "";
  ASSERT_TRUE(CreateDevices(*ParseDeviceSpec("cpu"), {.total_threads = 3}).ok());
  const int before = kernels::BlasThreads();
  setenv("OPENBLAS_NUM_THREADS", std::to_string(before).c_str(), 1);
  ASSERT_TRUE(CreateDevices(*ParseDeviceSpec("cpu:2"), {.total_threads = 2}).ok());
  EXPECT_EQ(kernels::BlasThreads(), before);
  if (saved) {
    setenv("OPENBLAS_NUM_THREADS", saved_value.c_str(), 1);
  } else {
    unsetenv("OPENBLAS_NUM_THREADS");
  }
}

TEST(GpuRequest, CpuOnlyBuildSaysItHasNoCudaSupport) {
  if (GpuSupportCompiledIn()) GTEST_SKIP() << "GPU build: see gpu_device_test.cc";
  const auto devices = CreateDevices(*ParseDeviceSpec("gpu:0"));
  ASSERT_FALSE(devices.ok());
  EXPECT_EQ(devices.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(ExitCodeFor(devices.status()), 1);
  EXPECT_NE(devices.status().message().find("this build has no CUDA support"), std::string::npos)
      << devices.status().message();
}

}  // namespace
}  // namespace stepscope::runtime
