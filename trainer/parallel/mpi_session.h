// MPI for the processes of one run (mpirun -np N): initialization and finalization, rank and
// world size, the cross-process sum and the parameter broadcast from rank 0. Builds without MPI
// get a one-process session, and refuse to start under an MPI launcher with several ranks
// (which would silently train N unrelated replicas). When every rank runs on one host, the sum
// goes through an MPI-3 shared-memory window instead of MPI_Allreduce (see AllReduceSum).
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
  // This rank's place among the ranks of its host (MPI_COMM_TYPE_SHARED), as Horovod's
  // local_rank/local_size: which of the host's GPUs a rank takes.
  int local_rank() const { return local_rank_; }
  int local_size() const { return local_size_; }

  // In-place sum over all ranks; every rank must call it with the same length. All ranks on one
  // host: through a shared-memory window, in pieces (each rank sums its slice of every rank's
  // piece in rank order), so every rank ends with the same bits; several hosts: MPI_Allreduce.
  Status AllReduceSum(std::span<float> data);
  // Elements per piece of the shared-memory sum (1 MB of floats per rank and piece).
  static constexpr int64_t kSharedPieceElements = int64_t{1} << 18;
  // True when AllReduceSum goes through the shared-memory window.
  bool uses_shared_memory() const { return shared_ != nullptr; }
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
  // The one-host shared-memory window and its communicator (defined in mpi_session.cc).
  struct SharedWindow;

  // Defined in the .cc, where SharedWindow is complete.
  MpiSession(int rank, int world_size, bool finalize);
  // Collective: creates the window when every rank of the world shares this host.
  Status OpenSharedWindow();
  Status SharedAllReduceSum(std::span<float> data);

  std::mutex mutex_;
  int rank_ = 0;
  int world_size_ = 1;
  int local_rank_ = 0;
  int local_size_ = 1;
  bool finalize_ = false;
  std::unique_ptr<SharedWindow> shared_;  // null: MPI_Allreduce
};

}  // namespace stepscope::parallel
