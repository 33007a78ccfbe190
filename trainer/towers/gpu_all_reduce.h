// The `nccl` all-reduce of GPU towers (GPU builds with NCCL): the dense gradients are reduced
// where they are, in device memory, one NCCL group call per gradient over every local GPU, each on
// its GPU's compute stream (ordered after the backward kernels that wrote it, before the update
// kernels). One process: all its GPUs form one NCCL clique (ncclCommInitAll). Several MPI ranks:
// rank 0 makes the clique's unique id and broadcasts it over MPI, and each rank's GPUs are NCCL
// ranks [rank · GPUs, (rank + 1) · GPUs) of one clique (Horovod's way), so the sum covers every
// tower of the run. Each call is reported to the profiler as an ALLREDUCE with algorithm `nccl`;
// its kernels are the GPU's own (CUPTI shows them on the compute stream).
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "base/status.h"
#include "trainer/parallel/all_reducer.h"
#include "trainer/parallel/collective_event.h"
#include "trainer/parallel/mpi_session.h"
#include "trainer/runtime/device.h"

namespace stepscope::trainer {

class GpuAllReduce {
 public:
  // kUnavailable in a build without CUDA and NCCL; kInvalidInput unless every device is a GPU.
  // `mpi` (may be null) spans the clique over its ranks; `observer` (may be null) gets events.
  static StatusOr<std::unique_ptr<GpuAllReduce>> Create(
      std::span<const runtime::Device* const> devices, parallel::MpiSession* mpi,
      parallel::CollectiveObserver* observer);
  ~GpuAllReduce();
  GpuAllReduce(const GpuAllReduce&) = delete;
  GpuAllReduce& operator=(const GpuAllReduce&) = delete;

  // gradients[i].replicas[d]: tower d's device buffer. Enqueued on the GPUs' compute streams;
  // returns once every call is enqueued.
  Status AllReduce(std::span<const parallel::GradientReplicas> gradients, parallel::ReduceOp op);

  // True when this build can run it (CUDA and NCCL found).
  static bool CompiledIn();

 private:
  struct Clique;
  GpuAllReduce(std::unique_ptr<Clique> clique, parallel::CollectiveObserver* observer);
  std::unique_ptr<Clique> clique_;
  parallel::CollectiveObserver* observer_;
};

}  // namespace stepscope::trainer
