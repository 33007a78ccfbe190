// NCCL communicators: the host-side argument checks, and creation on a machine without a usable
// GPU failing with CUDA's own reason (kUnavailable) rather than crashing. Where two GPUs exist,
// a real in-process all-reduce is checked against the host sum.
#include "trainer/parallel/nccl/nccl_communicator.h"

#include <gtest/gtest.h>

#include <iostream>
#include <thread>
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

// Virtual GPUs put two ranks on one GPU: NCCL 2.30 and newer take them when the user turns on
// NCCL_MULTI_RANK_GPU_ENABLE; any other case is refused before NCCL is called, naming the host
// all-reduce specs to use instead.
TEST(NcclCliqueTest, SeveralRanksPerGpuOnlyWithNccl230AndItsSwitch) {
  EXPECT_FALSE(NcclAllowsSeveralRanksPerGpu(22809, "1"));  // 2.28.9
  EXPECT_FALSE(NcclAllowsSeveralRanksPerGpu(23000, nullptr));
  EXPECT_FALSE(NcclAllowsSeveralRanksPerGpu(23000, "0"));
  EXPECT_TRUE(NcclAllowsSeveralRanksPerGpu(23000, "1"));
  EXPECT_TRUE(NcclAllowsSeveralRanksPerGpu(23102, "1"));
  EXPECT_EQ(NcclVersionName(22809), "2.28.9");
  EXPECT_EQ(NcclVersionName(2708), "2.7.8");
  EXPECT_EQ(NcclVersionName(LoadedNcclVersion()),
            std::to_string(NCCL_MAJOR) + "." + std::to_string(NCCL_MINOR) + "." +
                std::to_string(NCCL_PATCH));

  const std::vector<int> one_gpu_twice = {0, 0};
  const Status refused = ValidateNcclClique(one_gpu_twice, 2, 0, /*several_ranks_per_gpu=*/false);
  EXPECT_EQ(refused.code(), StatusCode::kInvalidInput);
  for (const char* part : {"0,0 names a GPU twice", "--allreduce_spec ring or pscpu",
                           "NCCL_MULTI_RANK_GPU_ENABLE=1", "NCCL 2.30"}) {
    EXPECT_NE(refused.message().find(part), std::string::npos) << part << ": " << refused.message();
  }
  EXPECT_TRUE(ValidateNcclClique(one_gpu_twice, 2, 0, /*several_ranks_per_gpu=*/true).ok());
  const GpuUuidWords a = {1, 2, 3, 4};
  const std::vector<GpuUuidWords> shared = {a, a};
  EXPECT_TRUE(CheckOneGpuPerRank(shared, 1, /*several_ranks_per_gpu=*/true).ok());
  EXPECT_NE(CheckOneGpuPerRank(shared, 1, false).message().find("--allreduce_spec ring or mpi"),
            std::string::npos);
}

TEST(NcclCliqueTest, RanksSharingAGpuAreNamedBeforeNcclRefusesThem) {
  const GpuUuidWords a = {0x4cc0b56c, 1, 2, 3}, b = {7, 1, 2, 3}, c = {7, 1, 2, 4};
  const std::vector<GpuUuidWords> distinct = {a, b, c, {9, 9, 9, 9}};
  EXPECT_TRUE(CheckOneGpuPerRank(distinct, 1).ok());
  EXPECT_TRUE(CheckOneGpuPerRank(distinct, 2).ok());
  // Two ranks of one GPU each on the same GPU: what `mpirun -np 2` on a one-GPU host gives.
  const std::vector<GpuUuidWords> shared = {a, a};
  const Status status = CheckOneGpuPerRank(shared, 1, false);
  EXPECT_EQ(status.code(), StatusCode::kInvalidInput);
  EXPECT_NE(status.message().find("ranks 0 and 1 both drive GPU GPU-6cb5c04c"), std::string::npos)
      << status.message();
  EXPECT_NE(status.message().find("a GPU of its own for every rank"), std::string::npos);
  // Ranks of two GPUs each: rank 1's second GPU is rank 0's first.
  const std::vector<GpuUuidWords> overlapping = {a, b, c, a};
  EXPECT_NE(CheckOneGpuPerRank(overlapping, 2, false).message().find("ranks 0 and 1 both drive"),
            std::string::npos);
  const std::vector<GpuUuidWords> twice_in_one_rank = {b, b, a, c};
  EXPECT_NE(CheckOneGpuPerRank(twice_in_one_rank, 2, false).message().find("rank 0 drives GPU GPU-07000000"),
            std::string::npos);
  EXPECT_EQ(CheckOneGpuPerRank(distinct, 3).code(), StatusCode::kInvalidInput);  // 4 % 3
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

// Two ranks of one clique on the one GPU a machine has: what a 2-rank MPI run on one GPU meets.
// Threads stand in for the processes (NCCL's rendezvous is the same through the unique id).
// NCCL either refuses the shared device on both ranks with its own reason, or reduces correctly;
// never a hang or a crash, never one rank up and the other not.
TEST(NcclCommunicatorTest, TwoRanksSharingOneGpuReduceOrAreRefusedClearly) {
  if (UsableGpus() < 1) GTEST_SKIP() << "needs a GPU";
  auto id = NcclCommunicator::NewUniqueId();
  ASSERT_TRUE(id.ok()) << id.status().message();
  const std::vector<int> gpu = {0};
  StatusOr<std::unique_ptr<NcclCommunicator>> comms[2] = {Internal("not run"), Internal("not run")};
  std::thread ranks[2];
  for (int r = 0; r < 2; ++r) {
    ranks[r] = std::thread([&, r] { comms[r] = NcclCommunicator::CreateForRanks(*id, 2, r, gpu); });
  }
  for (std::thread& t : ranks) t.join();
  ASSERT_EQ(comms[0].ok(), comms[1].ok())
      << comms[0].status().message() << " / " << comms[1].status().message();
  if (!comms[0].ok()) {
    // NCCL's own word for it (as seen on an H100): "invalid usage", from the group
    // that initializes the rank; the trainer names the shared GPU first (CheckOneGpuPerRank).
    for (const auto& comm : comms) {
      EXPECT_NE(comm.status().message().find("nccl: "), std::string::npos);
      EXPECT_NE(comm.status().message().find("invalid usage"), std::string::npos)
          << comm.status().message();
    }
    // The UUIDs the trainer gathers say why, for both ranks alike.
    auto uuid = GpuUuid(0);
    ASSERT_TRUE(uuid.ok()) << uuid.status().message();
    const std::vector<GpuUuidWords> gathered = {*uuid, *uuid};
    EXPECT_NE(CheckOneGpuPerRank(gathered, 1, false).message().find("ranks 0 and 1 both drive GPU GPU-"),
              std::string::npos);
    std::cout << "NCCL refuses two ranks on one GPU: " << comms[0].status().message() << "\n";
    return;
  }
  constexpr size_t kCount = 4099;
  float* buffers[2] = {nullptr, nullptr};
  cudaStream_t streams[2] = {nullptr, nullptr};
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  for (int r = 0; r < 2; ++r) {
    std::vector<float> host(kCount, static_cast<float>(r + 1));
    ASSERT_EQ(cudaMalloc(&buffers[r], kCount * sizeof(float)), cudaSuccess);
    ASSERT_EQ(cudaStreamCreateWithFlags(&streams[r], cudaStreamNonBlocking), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(buffers[r], host.data(), kCount * sizeof(float), cudaMemcpyHostToDevice),
              cudaSuccess);
  }
  // Each rank's collective must be in flight before the other's can finish: one thread each.
  Status reduced[2];
  for (int r = 0; r < 2; ++r) {
    ranks[r] = std::thread([&, r] {
      float* buffer[] = {buffers[r]};
      cudaStream_t stream[] = {streams[r]};
      reduced[r] = (*comms[r])->AllReduce(buffer, kCount, ReduceOp::kSum, stream);
      if (reduced[r].ok() && cudaStreamSynchronize(streams[r]) != cudaSuccess) {
        reduced[r] = Internal("stream synchronize failed");
      }
    });
  }
  for (std::thread& t : ranks) t.join();
  for (int r = 0; r < 2; ++r) {
    ASSERT_TRUE(reduced[r].ok()) << reduced[r].message();
    std::vector<float> out(kCount, -1.0f);
    ASSERT_EQ(cudaMemcpy(out.data(), buffers[r], kCount * sizeof(float), cudaMemcpyDeviceToHost),
              cudaSuccess);
    EXPECT_EQ(out, std::vector<float>(kCount, 3.0f)) << "rank " << r;
    EXPECT_EQ(cudaStreamDestroy(streams[r]), cudaSuccess);
    EXPECT_EQ(cudaFree(buffers[r]), cudaSuccess);
  }
  std::cout << "NCCL reduces across two ranks on one GPU\n";
}

}  // namespace
}  // namespace stepscope::parallel
