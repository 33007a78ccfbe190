// NCCL communicators: the host-side argument checks, and creation on a machine without a usable
// GPU failing with CUDA's own reason (kUnavailable) rather than crashing. Where two GPUs exist,
// a real in-process all-reduce is checked against the host sum.
#include "trainer/parallel/nccl/nccl_communicator.h"

#include <gtest/gtest.h>

#include <vector>

namespace stepscope::parallel {
namespace {

int UsableGpus() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess ? count : 0;
}

TEST(NcclCliqueTest, RejectsBadGpuListsBeforeTouchingCuda) {
  EXPECT_EQ(ValidateNcclClique({}, 1, 0).code(), StatusCode::kInvalidInput);
  const std::vector<int> negative = {0, -1};
  EXPECT_NE(ValidateNcclClique(negative, 2, 0).message().find("negative"), std::string::npos);
  const std::vector<int> twice = {1, 0, 1};
  const Status duplicate = ValidateNcclClique(twice, 3, 0);
  EXPECT_EQ(duplicate.code(), StatusCode::kInvalidInput);
  EXPECT_NE(duplicate.message().find("1,0,1 names a GPU twice"), std::string::npos);
  const std::vector<int> two = {0, 1};
  EXPECT_TRUE(ValidateNcclClique(two, 2, 0).ok());
  EXPECT_TRUE(ValidateNcclClique(two, 4, 2).ok());
  const Status overflow = ValidateNcclClique(two, 2, 1);
  EXPECT_EQ(overflow.code(), StatusCode::kInvalidInput);
  EXPECT_NE(overflow.message().find("[1, 3) do not fit a clique of 2"), std::string::npos);
  EXPECT_EQ(ValidateNcclClique(two, 2, -1).code(), StatusCode::kInvalidInput);

  auto bad = NcclCommunicator::CreateInProcess(twice);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidInput);
}

TEST(NcclCommunicatorTest, WithoutGpusCreationNamesTheCudaError) {
  if (UsableGpus() >= 2) GTEST_SKIP() << "GPUs present: covered by the all-reduce test";
  const std::vector<int> gpus = {0, 1};
  auto in_process = NcclCommunicator::CreateInProcess(gpus);
  ASSERT_FALSE(in_process.ok());
  EXPECT_EQ(in_process.status().code(), StatusCode::kUnavailable);
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  const std::string expected = error != cudaSuccess
                                   ? std::string("but CUDA reports: ") + cudaGetErrorString(error)
                                   : std::string("but this machine has ");
  EXPECT_NE(in_process.status().message().find("nccl needs GPU"), std::string::npos)
      << in_process.status().message();
  EXPECT_NE(in_process.status().message().find(expected), std::string::npos)
      << in_process.status().message();

  NcclUniqueIdBytes id{};
  auto ranks = NcclCommunicator::CreateForRanks(id, 4, 2, gpus);
  ASSERT_FALSE(ranks.ok());
  EXPECT_EQ(ranks.status().code(), StatusCode::kUnavailable);
}

TEST(NcclCommunicatorTest, AllReduceSumOnTwoGpus) {
  if (UsableGpus() < 2) GTEST_SKIP() << "needs two GPUs";
  const std::vector<int> gpus = {0, 1};
  auto comm = NcclCommunicator::CreateInProcess(gpus);
  ASSERT_TRUE(comm.ok()) << comm.status().message();
  constexpr size_t kCount = 1001;  // odd: no size NCCL could special-case
  std::vector<float*> buffers(2, nullptr);
  std::vector<cudaStream_t> streams(2, nullptr);
  std::vector<std::vector<float>> host(2, std::vector<float>(kCount));
  for (int g = 0; g < 2; ++g) {
    for (size_t i = 0; i < kCount; ++i) host[g][i] = static_cast<float>((g + 1) * i % 97) * 0.25f;
    ASSERT_EQ(cudaSetDevice(g), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&buffers[g], kCount * sizeof(float)), cudaSuccess);
    ASSERT_EQ(cudaStreamCreate(&streams[g]), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(buffers[g], host[g].data(), kCount * sizeof(float), cudaMemcpyHostToDevice),
              cudaSuccess);
  }
  ASSERT_TRUE((*comm)->AllReduce(buffers, kCount, ReduceOp::kSum, streams).ok());
  for (int g = 0; g < 2; ++g) {
    std::vector<float> out(kCount);
    ASSERT_EQ(cudaSetDevice(g), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(streams[g]), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(out.data(), buffers[g], kCount * sizeof(float), cudaMemcpyDeviceToHost),
              cudaSuccess);
    for (size_t i = 0; i < kCount; ++i) ASSERT_EQ(out[i], host[0][i] + host[1][i]) << i;
  }
  for (int g = 0; g < 2; ++g) {
    cudaSetDevice(g);
    cudaStreamDestroy(streams[g]);
    cudaFree(buffers[g]);
  }
}

// One GPU is the machine most runs get: a clique of one must still reduce (a copy in place for
// a sum) and broadcast, through NCCL itself, on a stream of ours.
TEST(NcclCommunicatorTest, CliqueOfOneGpuReducesAndBroadcasts) {
  if (UsableGpus() < 1) GTEST_SKIP() << "needs a GPU";
  const std::vector<int> gpus = {0};
  auto comm = NcclCommunicator::CreateInProcess(gpus);
  ASSERT_TRUE(comm.ok()) << comm.status().message();
  EXPECT_EQ((*comm)->local_devices(), 1);
  constexpr size_t kCount = (size_t{1} << 20) + 3;  // past one NCCL chunk, odd
  std::vector<float> host(kCount);
  for (size_t i = 0; i < kCount; ++i) host[i] = static_cast<float>(i % 1013) * 0.5f - 7.0f;
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  float* buffer = nullptr;
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaMalloc(&buffer, kCount * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(buffer, host.data(), kCount * sizeof(float), cudaMemcpyHostToDevice),
            cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<float*> buffers = {buffer};
  std::vector<cudaStream_t> streams = {stream};
  ASSERT_TRUE((*comm)->AllReduce(buffers, kCount, ReduceOp::kSum, streams).ok());
  ASSERT_TRUE((*comm)->Broadcast(buffers, kCount, 0, streams).ok());
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  std::vector<float> out(kCount, -1.0f);
  ASSERT_EQ(cudaMemcpy(out.data(), buffer, kCount * sizeof(float), cudaMemcpyDeviceToHost),
            cudaSuccess);
  EXPECT_EQ(out, host);
  EXPECT_EQ(cudaStreamDestroy(stream), cudaSuccess);
  EXPECT_EQ(cudaFree(buffer), cudaSuccess);
}

}  // namespace
}  // namespace stepscope::parallel
