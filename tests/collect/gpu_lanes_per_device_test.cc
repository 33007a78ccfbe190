// CUPTI lanes named by the TensorFlow device that owns the stream, not by the CUDA ordinal:
// an MPI rank whose GPU ids start at an offset (CUDA device 1 is its GPU:0) and two towers
// (virtual GPUs) sharing one CUDA device, fed as synthetic CUPTI records with their streams
// mapped to the towers.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "profiler/collect/cupti/gpu_activity_converter.h"
#include "tests/collect/cupti_records.h"

namespace stepscope::collect::cupti {
namespace {

constexpr uint64_t kStart = 1'000'000'000;

using testing::Feed;

// Lane name -> the node names on it, in order.
std::map<std::string, std::vector<std::string>> Lanes(const tf::StepStats& stats) {
  std::map<std::string, std::vector<std::string>> lanes;
  for (const auto& dev : stats.dev_stats()) {
    auto& names = lanes[dev.device()];
    for (const auto& node : dev.node_stats()) names.push_back(node.node_name());
  }
  return lanes;
}

// Rank 1 of `mpirun -np 2 ... --devices gpu:0` on a two-GPU host drives CUDA device 1, which its
// host lanes call GPU:0: its kernels belong on /device:GPU:0, and no /device:GPU:1 lane exists.
TEST(GpuLanesPerDevice, RankWithGpuOffsetGetsItsTfDeviceLanes) {
  GpuActivityConverter converter(ClockAlignment{});
  converter.SetStreamDevices({{/*cuda_device=*/1, /*stream_id=*/7, /*tf_device=*/0},
                              {1, 8, 0}, {1, 9, 0}});
  converter.RegisterOp(1, "lstm/MatMul", "MatMul");
  Feed(converter, testing::ExternalCorrelationRecord(100, 1));
  Feed(converter, testing::KernelRecord(1, 7, 100, kStart, kStart + 500, "sgemm"));
  Feed(converter, testing::MemcpyRecord(CUPTI_ACTIVITY_MEMCPY_KIND_HTOD,
                                        CUPTI_ACTIVITY_MEMORY_KIND_PINNED,
                                        CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 64, 1, 8, 101,
                                        kStart + 600, kStart + 700));
  const auto lanes = Lanes(converter.Finish().step_stats);
  const std::map<std::string, std::vector<std::string>> expected = {
      {"/device:GPU:0/memcpy", {"unknown:MEMCPYHtoD"}},
      {"/device:GPU:0/stream:7", {"lstm/MatMul:MatMul"}},
      {"/device:GPU:0/stream:8", {"unknown:MEMCPYHtoD"}},
      {"/device:GPU:0/stream:all", {"lstm/MatMul:MatMul", "unknown:MEMCPYHtoD"}},
  };
  EXPECT_EQ(lanes, expected);
}

// Two virtual GPUs on CUDA device 0: GPU:0 owns streams 13-15, GPU:1 streams 16-18. Each tower's
// kernels and copies are on its own lanes, interleaved in time as they ran; a stream no tower
// owns (a library's own) goes to the lowest TF device on that CUDA device.
TEST(GpuLanesPerDevice, TwoTowersOnOneGpuGetTheirOwnLanes) {
  GpuActivityConverter converter(ClockAlignment{});
  std::vector<StreamDevice> streams;
  for (uint32_t s = 13; s <= 15; ++s) streams.push_back({0, s, 0});
  for (uint32_t s = 16; s <= 18; ++s) streams.push_back({0, s, 1});
  converter.SetStreamDevices(streams);
  converter.RegisterOp(1, "tower_0/MatMul", "MatMul");
  converter.RegisterOp(2, "tower_1/MatMul", "MatMul");
  Feed(converter, testing::ExternalCorrelationRecord(10, 1));
  Feed(converter, testing::ExternalCorrelationRecord(20, 2));
  Feed(converter, testing::KernelRecord(0, 13, 10, kStart, kStart + 400, "sgemm"));
  Feed(converter, testing::KernelRecord(0, 16, 20, kStart + 100, kStart + 500, "sgemm"));
  Feed(converter, testing::MemcpyRecord(CUPTI_ACTIVITY_MEMCPY_KIND_DTOH,
                                        CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
                                        CUPTI_ACTIVITY_MEMORY_KIND_PINNED, 32, 0, 18, 21,
                                        kStart + 600, kStart + 650));
  Feed(converter, testing::KernelRecord(0, 40, 30, kStart + 700, kStart + 800, "library_kernel"));
  const auto lanes = Lanes(converter.Finish().step_stats);
  const std::map<std::string, std::vector<std::string>> expected = {
      {"/device:GPU:0/stream:13", {"tower_0/MatMul:MatMul"}},
      {"/device:GPU:0/stream:40", {"library_kernel"}},
      {"/device:GPU:0/stream:all", {"tower_0/MatMul:MatMul", "library_kernel"}},
      {"/device:GPU:1/memcpy", {"unknown:MEMCPYDtoH"}},
      {"/device:GPU:1/stream:16", {"tower_1/MatMul:MatMul"}},
      {"/device:GPU:1/stream:18", {"unknown:MEMCPYDtoH"}},
      {"/device:GPU:1/stream:all", {"tower_1/MatMul:MatMul", "unknown:MEMCPYDtoH"}},
  };
  EXPECT_EQ(lanes, expected);
}

// The mapping outlives a step (it is set once per profiled step by the owner, not per record)
// and a later call replaces it; with none, lanes keep the CUDA ordinal.
TEST(GpuLanesPerDevice, MappingIsKeptAcrossStepsAndReplaced) {
  GpuActivityConverter converter(ClockAlignment{});
  Feed(converter, testing::KernelRecord(2, 5, 1, kStart, kStart + 10, "k"));
  EXPECT_EQ(Lanes(converter.Finish().step_stats).count("/device:GPU:2/stream:5"), 1u);

  converter.SetStreamDevices({{2, 5, 3}});
  Feed(converter, testing::KernelRecord(2, 5, 1, kStart, kStart + 10, "k"));
  EXPECT_EQ(Lanes(converter.Finish().step_stats).count("/device:GPU:3/stream:5"), 1u);
  Feed(converter, testing::KernelRecord(2, 5, 1, kStart, kStart + 10, "k"));
  EXPECT_EQ(Lanes(converter.Finish().step_stats).count("/device:GPU:3/stream:5"), 1u);

  converter.SetStreamDevices({{2, 5, 1}});
  Feed(converter, testing::KernelRecord(2, 5, 1, kStart, kStart + 10, "k"));
  EXPECT_EQ(Lanes(converter.Finish().step_stats).count("/device:GPU:1/stream:5"), 1u);
}

}  // namespace
}  // namespace stepscope::collect::cupti
