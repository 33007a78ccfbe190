// NCCL for the GPUs of data parallelism (GPU builds): one communicator per local GPU, either all
// GPUs of this process as one clique (ncclCommInitAll, tf_cnn_benchmarks' `nccl` spec in one
// process) or this process's GPUs as ranks of a multi-process clique whose unique id rank 0 made
// and broadcast over MPI (Horovod's way). Collectives are issued as one NCCL group over every
// local GPU, each on its device's stream, so a single thread drives all of them without deadlock.
//
// Every NCCL and CUDA call is checked; failures become Status naming the call and the library's
// own message. Without a GPU or driver, creation fails with kUnavailable before any NCCL call.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "trainer/parallel/collectives.h"

namespace stepscope::parallel {

// ncclUniqueId as plain bytes, for an MPI broadcast from rank 0.
using NcclUniqueIdBytes = std::array<char, NCCL_UNIQUE_ID_BYTES>;

class NcclCommunicator {
 public:
  // All of `gpu_ordinals` (distinct, at least one) as one clique in this process.
  static StatusOr<std::unique_ptr<NcclCommunicator>> CreateInProcess(std::span<const int> gpu_ordinals);
  // A fresh clique id; rank 0 makes it and broadcasts it to the others.
  static StatusOr<NcclUniqueIdBytes> NewUniqueId();
  // This process's GPUs as NCCL ranks [first_rank, first_rank + gpu_ordinals.size()) of a clique
  // of `world_size` ranks named by `id`.
  static StatusOr<std::unique_ptr<NcclCommunicator>> CreateForRanks(const NcclUniqueIdBytes& id,
                                                                    int world_size, int first_rank,
                                                                    std::span<const int> gpu_ordinals);
  ~NcclCommunicator();
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  int local_devices() const { return static_cast<int>(comms_.size()); }
  int world_size() const { return world_size_; }

  // In place over `count` floats of each local GPU's buffer (device memory), enqueued on that
  // GPU's stream; kMean divides by the clique size (ncclAvg). Returns once enqueued.
  Status AllReduce(std::span<float* const> device_buffers, size_t count, ReduceOp op,
                   std::span<const cudaStream_t> streams);
  // Overwrites every GPU's buffer with clique rank `root`'s.
  Status Broadcast(std::span<float* const> device_buffers, size_t count, int root,
                   std::span<const cudaStream_t> streams);

 private:
  NcclCommunicator(std::vector<int> gpus, std::vector<ncclComm_t> comms, int world_size)
      : gpus_(std::move(gpus)), comms_(std::move(comms)), world_size_(world_size) {}
  Status CheckLocal(std::span<float* const> device_buffers,
                    std::span<const cudaStream_t> streams, const char* what) const;

  std::vector<int> gpus_;
  std::vector<ncclComm_t> comms_;
  int world_size_ = 0;
};

// Several ranks on one GPU (towers on virtual GPUs, MPI ranks sharing a GPU): NCCL refuses them
// before 2.30; 2.30 and newer allow them when NCCL_MULTI_RANK_GPU_ENABLE=1 (experimental, so
// the user's choice, never set here). `version_code` as NCCL_VERSION_CODE (22809 = 2.28.9).
bool NcclAllowsSeveralRanksPerGpu(int version_code, const char* multi_rank_env);
// The same for the NCCL library loaded (ncclGetVersion) and this process's environment.
bool NcclAllowsSeveralRanksPerGpu();
// "2.28.9" of 22809 (and of the older 4-digit codes, 2708 = 2.7.8).
std::string NcclVersionName(int version_code);
int LoadedNcclVersion();  // ncclGetVersion; 0 when it fails
// Why the loaded NCCL refuses a shared GPU and what to use instead (the host all-reduce specs).
std::string NcclSharedGpuAdvice();

// A GPU's identity across processes: its 16-byte UUID (nvidia-smi's GPU-xxxxxxxx-...) as four
// words, the unit an MPI all-gather carries.
using GpuUuidWords = std::array<int32_t, 4>;
StatusOr<GpuUuidWords> GpuUuid(int gpu_ordinal);

// NCCL refuses a clique in which two ranks drive one GPU, with only "invalid usage" to say so;
// before creating one, the ranks gather their GPUs' UUIDs (`gpus_per_rank` each, rank-major) and
// this names the ranks that share a GPU (kInvalidInput), or is OK when every GPU is distinct.
// OK too when `several_ranks_per_gpu` (NcclAllowsSeveralRanksPerGpu).
Status CheckOneGpuPerRank(std::span<const GpuUuidWords> all_ranks_gpus, int gpus_per_rank,
                          bool several_ranks_per_gpu = NcclAllowsSeveralRanksPerGpu());

// Argument checks shared by both constructors (host-only, tested without a GPU): GPU ordinals
// non-empty, non-negative and distinct unless `several_ranks_per_gpu` (then the message names
// the host all-reduce specs and NCCL's switch); for ranks, 0 <= first_rank and the local ranks
// within world_size.
Status ValidateNcclClique(std::span<const int> gpu_ordinals, int world_size, int first_rank,
                          bool several_ranks_per_gpu = NcclAllowsSeveralRanksPerGpu());

}  // namespace stepscope::parallel
