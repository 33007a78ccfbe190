// The nccl all-reduce of GPU towers: dense gradients reduced in device memory on each GPU's
// compute stream, one NCCL group call per gradient (GPU builds with NCCL).
#include "trainer/towers/gpu_all_reduce.h"

#include <string>

#include "trainer/runtime/clock.h"
#ifdef STEPSCOPE_WITH_NCCL
#include <cstring>

#include "kernels/cuda/cuda_context.h"
#include "trainer/parallel/nccl/nccl_communicator.h"
#endif

namespace stepscope::trainer {

struct GpuAllReduce::Clique {
#ifdef STEPSCOPE_WITH_NCCL
  std::unique_ptr<parallel::NcclCommunicator> communicator;
  std::vector<cudaStream_t> streams;  // each GPU's compute stream
  int peers = 0;                      // towers of the whole run
#endif
};

bool GpuAllReduce::CompiledIn() {
#ifdef STEPSCOPE_WITH_NCCL
  return true;
#else
  return false;
#endif
}

GpuAllReduce::GpuAllReduce(std::unique_ptr<Clique> clique, parallel::CollectiveObserver* observer)
    : clique_(std::move(clique)), observer_(observer) {}

GpuAllReduce::~GpuAllReduce() = default;

StatusOr<std::unique_ptr<GpuAllReduce>> GpuAllReduce::Create(
    std::span<const runtime::Device* const> devices, parallel::MpiSession* mpi,
    parallel::CollectiveObserver* observer) {
  if (devices.empty()) return InvalidInput("nccl all-reduce: no devices");
  std::vector<int> ordinals;
  for (const runtime::Device* device : devices) {
    if (device->gpu() == nullptr) {
      return InvalidInput("--allreduce_spec nccl reduces GPU towers; " + device->name() +
                          " is not a GPU (use ring, pscpu or mpi)");
    }
    ordinals.push_back(device->gpu()->ordinal());
  }
#ifdef STEPSCOPE_WITH_NCCL
  // Towers on virtual GPUs of one GPU: named here, before any CUDA or NCCL call.
  if (!parallel::NcclAllowsSeveralRanksPerGpu()) {
    for (size_t a = 0; a < devices.size(); ++a) {
      for (size_t b = a + 1; b < devices.size(); ++b) {
        if (ordinals[a] != ordinals[b]) continue;
        return InvalidInput("--allreduce_spec nccl: " + devices[a]->name() + " and " +
                            devices[b]->name() + " are virtual GPUs of CUDA device " +
                            std::to_string(ordinals[a]) + "; " + parallel::NcclSharedGpuAdvice());
      }
    }
  }
  auto clique = std::make_unique<Clique>();
  for (const runtime::Device* device : devices) {
    const kernels::CudaContext* context = device->gpu()->kernel_context();
    if (context == nullptr) {
      return Unavailable("nccl all-reduce: " + device->name() + " has no CUDA stream");
    }
    clique->streams.push_back(context->stream());
  }
  const int local = static_cast<int>(devices.size());
  if (mpi == nullptr || mpi->world_size() == 1) {
    ASSIGN_OR_RETURN(clique->communicator, parallel::NcclCommunicator::CreateInProcess(ordinals));
    clique->peers = local;
  } else {
    // The unique id travels as 64-bit words over MPI.
    static_assert(sizeof(parallel::NcclUniqueIdBytes) % sizeof(int64_t) == 0);
    std::vector<int64_t> words(sizeof(parallel::NcclUniqueIdBytes) / sizeof(int64_t));
    parallel::NcclUniqueIdBytes id{};
    if (mpi->rank() == 0) {
      ASSIGN_OR_RETURN(id, parallel::NcclCommunicator::NewUniqueId());
      std::memcpy(words.data(), id.data(), id.size());
    }
    RETURN_IF_ERROR(mpi->Broadcast(std::span<int64_t>(words), 0));
    std::memcpy(id.data(), words.data(), id.size());
    // Ranks sharing a GPU: a clear error here, where NCCL would only say "invalid usage".
    std::vector<parallel::GpuUuidWords> mine, all(static_cast<size_t>(local * mpi->world_size()));
    for (int ordinal : ordinals) {
      ASSIGN_OR_RETURN(const parallel::GpuUuidWords uuid, parallel::GpuUuid(ordinal));
      mine.push_back(uuid);
    }
    static_assert(sizeof(parallel::GpuUuidWords) == 4 * sizeof(int32_t));
    RETURN_IF_ERROR(mpi->AllGather(
        std::span<const int32_t>(mine.front().data(), mine.size() * 4),
        std::span<int32_t>(all.front().data(), all.size() * 4)));
    RETURN_IF_ERROR(parallel::CheckOneGpuPerRank(all, local));
    clique->peers = local * mpi->world_size();
    ASSIGN_OR_RETURN(clique->communicator,
                     parallel::NcclCommunicator::CreateForRanks(id, clique->peers,
                                                                mpi->rank() * local, ordinals));
  }
  return std::unique_ptr<GpuAllReduce>(new GpuAllReduce(std::move(clique), observer));
#else
  (void)mpi;
  (void)observer;
  return Unavailable("--allreduce_spec nccl needs a build with CUDA and NCCL; this one has " +
                     std::string(runtime::GpuSupportCompiledIn() ? "CUDA but no NCCL" : "neither"));
#endif
}

Status GpuAllReduce::AllReduce(std::span<const parallel::GradientReplicas> gradients,
                               parallel::ReduceOp op) {
#ifdef STEPSCOPE_WITH_NCCL
  for (const parallel::GradientReplicas& gradient : gradients) {
    if (gradient.replicas.size() != clique_->streams.size()) {
      return InvalidInput("nccl all-reduce of " + gradient.name + ": " +
                          std::to_string(gradient.replicas.size()) + " replicas for " +
                          std::to_string(clique_->streams.size()) + " GPUs");
    }
    const int64_t start = runtime::NowNanos();
    RETURN_IF_ERROR(clique_->communicator->AllReduce(gradient.replicas,
                                                     static_cast<size_t>(gradient.num_elements),
                                                     op, clique_->streams));
    if (observer_ != nullptr) {
      // The host side: the enqueueing of the group call (the GPU's time is in its CUPTI lanes).
      observer_->OnCollective({"AllReduce/" + gradient.name, parallel::CollectivePhase::kAllReduce,
                               "nccl", gradient.num_elements * static_cast<int64_t>(sizeof(float)),
                               clique_->peers, start, runtime::NowNanos(), {gradient.name}, {}});
    }
  }
  return Status::Ok();
#else
  (void)gradients;
  (void)op;
  return Internal("nccl all-reduce in a build without NCCL");
#endif
}

}  // namespace stepscope::trainer
