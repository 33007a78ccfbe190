// MPI for the processes of one run (mpirun -np N): initialization and finalization, rank and
// world size, the cross-process sum and the parameter broadcast from rank 0. Builds without MPI
// get a one-process session, and refuse to start under an MPI launcher with several ranks
// (which would silently train N unrelated replicas).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>

#include "base/status.h"

namespace stepscope::parallel {

class MpiSession {
 public:
  // Initializes MPI (thread level SERIALIZED: calls are serialized by this session) unless the
  // process already did; the destructor finalizes only what this session initialized.
  static StatusOr<std::unique_ptr<MpiSession>> Create();
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  static bool CompiledWithMpi();
  // True when an MPI launcher (mpirun, srun with PMI/PMIx) started this process: only then does
  // the trainer create a session, so a plain run never initializes MPI.
  static bool LaunchedByMpi();
  // How many ranks the launcher placed on this host (1 when not launched by MPI).
  static int LocalRanks();

  int rank() const { return rank_; }
  int world_size() const { return world_size_; }

  // In-place sum over all ranks (MPI_Allreduce). Every rank must call it with the same length.
  Status AllReduceSum(std::span<float> data);
  // Overwrites `data` on every rank with rank `root`'s values (MPI_Bcast).
  Status Broadcast(std::span<float> data, int root = 0);
  // The same for integers (sizes, counts, commands).
  Status Broadcast(std::span<int64_t> data, int root = 0);
  Status Barrier();
  // Rank r's `mine` lands at all[r·mine.size(), (r+1)·mine.size()) on every rank
  // (MPI_Allgather); every rank passes the same size and all.size() == world_size·mine.size().
  Status AllGather(std::span<const float> mine, std::span<float> all);
  Status AllGather(std::span<const int32_t> mine, std::span<int32_t> all);

 private:
  MpiSession(int rank, int world_size, bool finalize) :
      rank_(rank), world_size_(world_size), finalize_(finalize) {}

  std::mutex mutex_;
  int rank_ = 0;
  int world_size_ = 1;
  bool finalize_ = false;
};

}  // namespace stepscope::parallel
