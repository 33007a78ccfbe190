// MpiSession over OpenMPI, or a one-process stand-in when the build has no MPI.
#include "trainer/parallel/mpi_session.h"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <string>

#ifdef STEPSCOPE_WITH_MPI
#include <mpi.h>
#endif

namespace stepscope::parallel {

#ifdef STEPSCOPE_WITH_MPI
namespace {

Status MpiError(int code, const char* call, const char* file, int line) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  MPI_Error_string(code, text, &length);
  return Internal(std::string(call) + " failed at " + file + ":" + std::to_string(line) + ": " +
                  std::string(text, static_cast<size_t>(length)));
}

// Largest count per MPI call: counts are ints.
constexpr int64_t kMaxMpiCount = INT_MAX / 2;

}  // namespace

// Every MPI call goes through this: on failure, a Status with the call text and file:line.
#define STEPSCOPE_MPI_RETURN_IF_ERROR(call)                                         \
  do {                                                                              \
    int mpi_code_ = (call);                                                         \
    if (mpi_code_ != MPI_SUCCESS) return MpiError(mpi_code_, #call, __FILE__, __LINE__); \
  } while (0)

bool MpiSession::CompiledWithMpi() { return true; }

StatusOr<std::unique_ptr<MpiSession>> MpiSession::Create() {
  int finalized = 0;
  STEPSCOPE_MPI_RETURN_IF_ERROR(MPI_Finalized(&finalized));
  if (finalized) return Unavailable("MPI was already finalized in this process");
  int initialized = 0;
  STEPSCOPE_MPI_RETURN_IF_ERROR(MPI_Initialized(&initialized));
  if (!initialized) {
    int provided = 0;
    STEPSCOPE_MPI_RETURN_IF_ERROR(
        MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided));
    if (provided < MPI_THREAD_SERIALIZED) {
      MPI_Finalize();
      return Unavailable("the MPI library does not support MPI_THREAD_SERIALIZED");
    }
  }
  STEPSCOPE_MPI_RETURN_IF_ERROR(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  int rank = 0;
  int size = 1;
  STEPSCOPE_MPI_RETURN_IF_ERROR(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  STEPSCOPE_MPI_RETURN_IF_ERROR(MPI_Comm_size(MPI_COMM_WORLD, &size));
  return std::unique_ptr<MpiSession>(new MpiSession(rank, size, !initialized));
}

MpiSession::~MpiSession() {
  if (finalize_) MPI_Finalize();
}

Status MpiSession::AllReduceSum(std::span<float> data) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (size_t begin = 0; begin < data.size(); begin += kMaxMpiCount) {
    int count = static_cast<int>(std::min<int64_t>(kMaxMpiCount, data.size() - begin));
    STEPSCOPE_MPI_RETURN_IF_ERROR(MPI_Allreduce(MPI_IN_PLACE, data.data() + begin, count,
                                                MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD));
  }
  return Status::Ok();
}

namespace {

Status CheckRoot(int root, int world_size) {
  if (root < 0 || root >= world_size) {
    return InvalidInput("broadcast root " + std::to_string(root) + " is not a rank of " +
                        std::to_string(world_size));
  }
  return Status::Ok();
}

template <typename T>
Status BroadcastChunks(std::span<T> data, MPI_Datatype type, int root) {
  for (size_t begin = 0; begin < data.size(); begin += kMaxMpiCount) {
    int count = static_cast<int>(std::min<int64_t>(kMaxMpiCount, data.size() - begin));
    STEPSCOPE_MPI_RETURN_IF_ERROR(MPI_Bcast(data.data() + begin, count, type, root, MPI_COMM_WORLD));
  }
  return Status::Ok();
}

}  // namespace

Status MpiSession::Broadcast(std::span<float> data, int root) {
  RETURN_IF_ERROR(CheckRoot(root, world_size_));
  std::lock_guard<std::mutex> lock(mutex_);
  return BroadcastChunks(data, MPI_FLOAT, root);
}

Status MpiSession::Broadcast(std::span<int64_t> data, int root) {
  RETURN_IF_ERROR(CheckRoot(root, world_size_));
  std::lock_guard<std::mutex> lock(mutex_);
  return BroadcastChunks(data, MPI_INT64_T, root);
}

Status MpiSession::Barrier() {
  std::lock_guard<std::mutex> lock(mutex_);
  STEPSCOPE_MPI_RETURN_IF_ERROR(MPI_Barrier(MPI_COMM_WORLD));
  return Status::Ok();
}

namespace {

Status CheckGatherSizes(size_t mine, size_t all, int world_size) {
  if (all != mine * static_cast<size_t>(world_size) || mine > static_cast<size_t>(kMaxMpiCount)) {
    return InvalidInput("all-gather of " + std::to_string(mine) + " elements per rank over " +
                        std::to_string(world_size) + " ranks needs room for exactly " +
                        std::to_string(mine * static_cast<size_t>(world_size)) + ", got " +
                        std::to_string(all) + " (at most " + std::to_string(kMaxMpiCount) +
                        " per rank)");
  }
  return Status::Ok();
}

}  // namespace

Status MpiSession::AllGather(std::span<const float> mine, std::span<float> all) {
  RETURN_IF_ERROR(CheckGatherSizes(mine.size(), all.size(), world_size_));
  std::lock_guard<std::mutex> lock(mutex_);
  const int count = static_cast<int>(mine.size());
  STEPSCOPE_MPI_RETURN_IF_ERROR(MPI_Allgather(mine.data(), count, MPI_FLOAT, all.data(), count,
                                              MPI_FLOAT, MPI_COMM_WORLD));
  return Status::Ok();
}

Status MpiSession::AllGather(std::span<const int32_t> mine, std::span<int32_t> all) {
  RETURN_IF_ERROR(CheckGatherSizes(mine.size(), all.size(), world_size_));
  std::lock_guard<std::mutex> lock(mutex_);
  const int count = static_cast<int>(mine.size());
  STEPSCOPE_MPI_RETURN_IF_ERROR(MPI_Allgather(mine.data(), count, MPI_INT32_T, all.data(), count,
                                              MPI_INT32_T, MPI_COMM_WORLD));
  return Status::Ok();
}

#else  // no MPI in this build

bool MpiSession::CompiledWithMpi() { return false; }

StatusOr<std::unique_ptr<MpiSession>> MpiSession::Create() {
  for (const char* variable : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"}) {
    const char* value = std::getenv(variable);
    if (value != nullptr && std::atoi(value) > 1) {
      return Unavailable(std::string("started by an MPI launcher with ") + variable + "=" +
                         value + ", but this build has no MPI (install libopenmpi-dev and "
                         "rebuild)");
    }
  }
  return std::unique_ptr<MpiSession>(new MpiSession(0, 1, false));
}

MpiSession::~MpiSession() = default;

Status MpiSession::AllReduceSum(std::span<float>) { return Status::Ok(); }

Status MpiSession::Broadcast(std::span<float>, int root) {
  if (root != 0) return InvalidInput("broadcast root " + std::to_string(root) + " is not a rank of 1");
  return Status::Ok();
}

Status MpiSession::Broadcast(std::span<int64_t>, int root) {
  if (root != 0) return InvalidInput("broadcast root " + std::to_string(root) + " is not a rank of 1");
  return Status::Ok();
}

Status MpiSession::Barrier() { return Status::Ok(); }

// One rank: the gather is a copy.
Status MpiSession::AllGather(std::span<const float> mine, std::span<float> all) {
  if (all.size() != mine.size()) return InvalidInput("all-gather over one rank needs equal sizes");
  std::copy(mine.begin(), mine.end(), all.begin());
  return Status::Ok();
}

Status MpiSession::AllGather(std::span<const int32_t> mine, std::span<int32_t> all) {
  if (all.size() != mine.size()) return InvalidInput("all-gather over one rank needs equal sizes");
  std::copy(mine.begin(), mine.end(), all.begin());
  return Status::Ok();
}

#endif

bool MpiSession::LaunchedByMpi() {
  for (const char* variable : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"}) {
    if (std::getenv(variable) != nullptr) return true;
  }
  return false;
}

int MpiSession::LocalRanks() {
  for (const char* variable : {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "SLURM_NTASKS_PER_NODE"}) {
    const char* value = std::getenv(variable);
    if (value != nullptr && std::atoi(value) > 0) return std::atoi(value);
  }
  return 1;
}

}  // namespace stepscope::parallel
