// NCCL communicators over this process's GPUs (one clique, or ranks of a clique whose id MPI
// broadcast), one NCCL group call per collective, every NCCL error named with its call.
#include "trainer/parallel/nccl/nccl_communicator.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <cstdlib>
#include <string>
#include <string_view>

#include "kernels/cuda/cuda_runtime_calls.h"

namespace stepscope::parallel {
namespace {

Status NcclError(const char* call, ncclResult_t result) {
  std::string message = std::string(call) + " failed: " + ncclGetErrorString(result);
  // Errors from CUDA or the system mean the GPUs are not usable here; the rest are misuse.
  if (result == ncclUnhandledCudaError || result == ncclSystemError ||
      result == ncclRemoteError) {
    return Unavailable("nccl: " + message);
  }
  return Internal("nccl: " + message);
}

#define STEPSCOPE_NCCL_CHECK(call)                                 \
  do {                                                             \
    const ncclResult_t nccl_result_ = (call);                      \
    if (nccl_result_ != ncclSuccess) return NcclError(#call, nccl_result_); \
  } while (false)

std::string OrdinalList(std::span<const int> gpus) {
  std::string list;
  for (int gpu : gpus) list += (list.empty() ? "" : ",") + std::to_string(gpu);
  return list;
}

// NCCL needs the GPUs to exist; asking CUDA first gives the user CUDA's reason (no driver, no
// device) instead of NCCL's generic "unhandled cuda error".
Status RequireGpus(std::span<const int> gpus) {
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess) {
    return Unavailable("nccl needs GPUs " + OrdinalList(gpus) + " but CUDA reports: " +
                       cudaGetErrorString(error));
  }
  for (int gpu : gpus) {
    if (gpu >= count) {
      return Unavailable("nccl needs GPU " + std::to_string(gpu) + " but this machine has " +
                         std::to_string(count) + " GPU(s)");
    }
  }
  return Status::Ok();
}

ncclRedOp_t NcclOp(ReduceOp op) { return op == ReduceOp::kMean ? ncclAvg : ncclSum; }

// Issues call(i) for every local communicator i inside one NCCL group (one thread driving several
// GPUs must, or it can deadlock); a failed call closes the group and names `call_name`.
template <typename Call>
Status GroupCall(size_t num_comms, const char* call_name, const Call& call) {
  STEPSCOPE_NCCL_CHECK(ncclGroupStart());
  for (size_t i = 0; i < num_comms; ++i) {
    const ncclResult_t result = call(i);
    if (result != ncclSuccess) {
      (void)ncclGroupEnd();
      return NcclError(call_name, result);
    }
  }
  STEPSCOPE_NCCL_CHECK(ncclGroupEnd());
  return Status::Ok();
}

}  // namespace

StatusOr<GpuUuidWords> GpuUuid(int gpu_ordinal) {
  cudaDeviceProp prop{};
  const cudaError_t error = cudaGetDeviceProperties(&prop, gpu_ordinal);
  if (error != cudaSuccess) {
    return Unavailable("nccl: reading GPU " + std::to_string(gpu_ordinal) +
                       "'s properties failed: " + cudaGetErrorString(error));
  }
  GpuUuidWords words{};
  static_assert(sizeof(words) == sizeof(prop.uuid.bytes));
  std::memcpy(words.data(), prop.uuid.bytes, sizeof(words));
  return words;
}

namespace {
// nvidia-smi's short form of a GPU's UUID: GPU- and its first 8 hex digits.
std::string ShortUuid(const GpuUuidWords& words) {
  unsigned char bytes[sizeof(GpuUuidWords)];
  std::memcpy(bytes, words.data(), sizeof(bytes));
  static const char kHex[] = "0123456789abcdef";
  std::string text = "GPU-";
  for (int i = 0; i < 4; ++i) {
    text += kHex[bytes[i] >> 4];
    text += kHex[bytes[i] & 15];
  }
  return text;
}
}  // namespace

bool NcclAllowsSeveralRanksPerGpu(int version_code, const char* multi_rank_env) {
  constexpr int kFirstWithSeveralRanksPerGpu = 23000;  // NCCL_VERSION(2, 30, 0)
  return version_code >= kFirstWithSeveralRanksPerGpu && multi_rank_env != nullptr &&
         std::string_view(multi_rank_env) == "1";
}

int LoadedNcclVersion() {
  int version = 0;
  return ncclGetVersion(&version) == ncclSuccess ? version : 0;
}

bool NcclAllowsSeveralRanksPerGpu() {
  return NcclAllowsSeveralRanksPerGpu(LoadedNcclVersion(),
                                      std::getenv("NCCL_MULTI_RANK_GPU_ENABLE"));
}

std::string NcclVersionName(int code) {
  // NCCL_VERSION(X,Y,Z) is X*1000+Y*100+Z before 2.9, X*10000+Y*100+Z since.
  const int major = code >= 10000 ? code / 10000 : code / 1000;
  const int minor = code >= 10000 ? code % 10000 / 100 : code % 1000 / 100;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(code % 100);
}

std::string NcclSharedGpuAdvice() {
  const int version = LoadedNcclVersion();
  return "NCCL " + (version > 0 ? NcclVersionName(version) : std::string("(version unknown)")) +
         " needs a GPU of its own for every rank (NCCL 2.30 and newer allow several with "
         "NCCL_MULTI_RANK_GPU_ENABLE=1); towers on virtual GPUs of one GPU reduce in host "
         "memory with --allreduce_spec ring or pscpu";
}

Status CheckOneGpuPerRank(std::span<const GpuUuidWords> all_ranks_gpus, int gpus_per_rank,
                          bool several_ranks_per_gpu) {
  if (gpus_per_rank < 1 || all_ranks_gpus.size() % static_cast<size_t>(gpus_per_rank) != 0) {
    return InvalidInput("nccl: " + std::to_string(all_ranks_gpus.size()) +
                        " GPUs gathered from ranks of " + std::to_string(gpus_per_rank) + " each");
  }
  std::map<GpuUuidWords, size_t> first_user;  // GPU -> index of its first entry
  for (size_t i = 0; i < all_ranks_gpus.size(); ++i) {
    const auto [it, fresh] = first_user.emplace(all_ranks_gpus[i], i);
    if (fresh || several_ranks_per_gpu) continue;
    const size_t rank_a = it->second / static_cast<size_t>(gpus_per_rank);
    const size_t rank_b = i / static_cast<size_t>(gpus_per_rank);
    return InvalidInput(
        "nccl: " + (rank_a == rank_b ? "rank " + std::to_string(rank_a) + " drives"
                                     : "ranks " + std::to_string(rank_a) + " and " +
                                           std::to_string(rank_b) + " both drive") +
        " GPU " + ShortUuid(all_ranks_gpus[i]) +
        "; NCCL needs a GPU of its own for every rank: start at most as many ranks per host as "
        "it has GPUs (or give each rank its GPUs with CUDA_VISIBLE_DEVICES), or reduce in host "
        "memory (--allreduce_spec ring or mpi); " + NcclSharedGpuAdvice());
  }
  return Status::Ok();
}

Status ValidateNcclClique(std::span<const int> gpu_ordinals, int world_size, int first_rank,
                          bool several_ranks_per_gpu) {
  if (gpu_ordinals.empty()) return InvalidInput("nccl: no GPUs given");
  std::vector<int> sorted(gpu_ordinals.begin(), gpu_ordinals.end());
  std::sort(sorted.begin(), sorted.end());
  if (sorted.front() < 0) {
    return InvalidInput("nccl: GPU ordinal " + std::to_string(sorted.front()) + " is negative");
  }
  if (!several_ranks_per_gpu && std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
    return InvalidInput("nccl: GPU list " + OrdinalList(gpu_ordinals) + " names a GPU twice: " +
                        NcclSharedGpuAdvice());
  }
  const int64_t last_rank = int64_t{first_rank} + static_cast<int64_t>(gpu_ordinals.size());
  if (first_rank < 0 || world_size < 1 || last_rank > world_size) {
    return InvalidInput("nccl: local ranks [" + std::to_string(first_rank) + ", " +
                        std::to_string(last_rank) + ") do not fit a clique of " +
                        std::to_string(world_size) + " ranks");
  }
  return Status::Ok();
}

StatusOr<std::unique_ptr<NcclCommunicator>> NcclCommunicator::CreateInProcess(
    std::span<const int> gpu_ordinals) {
  const int n = static_cast<int>(gpu_ordinals.size());
  RETURN_IF_ERROR(ValidateNcclClique(gpu_ordinals, n, 0));
  RETURN_IF_ERROR(RequireGpus(gpu_ordinals));
  std::vector<ncclComm_t> comms(gpu_ordinals.size(), nullptr);
  STEPSCOPE_NCCL_CHECK(ncclCommInitAll(comms.data(), n, gpu_ordinals.data()));
  return std::unique_ptr<NcclCommunicator>(new NcclCommunicator(
      std::vector<int>(gpu_ordinals.begin(), gpu_ordinals.end()), std::move(comms), n));
}

StatusOr<NcclUniqueIdBytes> NcclCommunicator::NewUniqueId() {
  ncclUniqueId id;
  STEPSCOPE_NCCL_CHECK(ncclGetUniqueId(&id));
  NcclUniqueIdBytes bytes;
  std::memcpy(bytes.data(), id.internal, bytes.size());
  return bytes;
}

StatusOr<std::unique_ptr<NcclCommunicator>> NcclCommunicator::CreateForRanks(
    const NcclUniqueIdBytes& id_bytes, int world_size, int first_rank,
    std::span<const int> gpu_ordinals) {
  RETURN_IF_ERROR(ValidateNcclClique(gpu_ordinals, world_size, first_rank));
  RETURN_IF_ERROR(RequireGpus(gpu_ordinals));
  ncclUniqueId id;
  std::memcpy(id.internal, id_bytes.data(), id_bytes.size());
  std::vector<ncclComm_t> comms(gpu_ordinals.size(), nullptr);
  // Several ranks in one process must be initialized inside one group.
  STEPSCOPE_NCCL_CHECK(ncclGroupStart());
  for (size_t i = 0; i < gpu_ordinals.size(); ++i) {
    if (kernels::SetDevice(gpu_ordinals[i]) != cudaSuccess) {
      (void)ncclGroupEnd();
      return Unavailable("nccl: cudaSetDevice(" + std::to_string(gpu_ordinals[i]) + ") failed");
    }
    const ncclResult_t result =
        ncclCommInitRank(&comms[i], world_size, id, first_rank + static_cast<int>(i));
    if (result != ncclSuccess) {
      (void)ncclGroupEnd();
      return NcclError("ncclCommInitRank", result);
    }
  }
  STEPSCOPE_NCCL_CHECK(ncclGroupEnd());
  return std::unique_ptr<NcclCommunicator>(new NcclCommunicator(
      std::vector<int>(gpu_ordinals.begin(), gpu_ordinals.end()), std::move(comms), world_size));
}

NcclCommunicator::~NcclCommunicator() {
  for (ncclComm_t comm : comms_) {
    if (comm != nullptr) (void)ncclCommDestroy(comm);
  }
}

Status NcclCommunicator::CheckLocal(std::span<float* const> device_buffers,
                                    std::span<const cudaStream_t> streams, const char* what) const {
  if (device_buffers.size() != comms_.size() || streams.size() != comms_.size()) {
    return InvalidInput(std::string("nccl ") + what + ": " + std::to_string(comms_.size()) +
                        " local GPUs but " + std::to_string(device_buffers.size()) +
                        " buffers and " + std::to_string(streams.size()) + " streams");
  }
  return Status::Ok();
}

Status NcclCommunicator::AllReduce(std::span<float* const> device_buffers, size_t count,
                                   ReduceOp op, std::span<const cudaStream_t> streams) {
  RETURN_IF_ERROR(CheckLocal(device_buffers, streams, "all-reduce"));
  return GroupCall(comms_.size(), "ncclAllReduce", [&](size_t i) {
    return ncclAllReduce(device_buffers[i], device_buffers[i], count, ncclFloat32, NcclOp(op),
                         comms_[i], streams[i]);
  });
}

Status NcclCommunicator::Broadcast(std::span<float* const> device_buffers, size_t count, int root,
                                   std::span<const cudaStream_t> streams) {
  RETURN_IF_ERROR(CheckLocal(device_buffers, streams, "broadcast"));
  if (root < 0 || root >= world_size_) {
    return InvalidInput("nccl broadcast: root " + std::to_string(root) + " outside a clique of " +
                        std::to_string(world_size_));
  }
  return GroupCall(comms_.size(), "ncclBroadcast", [&](size_t i) {
    return ncclBroadcast(device_buffers[i], device_buffers[i], count, ncclFloat32, root, comms_[i],
                         streams[i]);
  });
}

}  // namespace stepscope::parallel
