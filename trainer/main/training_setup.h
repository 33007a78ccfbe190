// Everything a training run holds before its first step, made from TrainOptions in the order
// that matters: the MPI session (under mpirun), this rank's devices, the workload (its data
// source first: the LSTM's vocabulary comes from the data), one replica per device with rank 0's
// parameters on every rank, the profiler (its clock synced across ranks) and the towers, which
// report their collectives to it.
#pragma once

#include <memory>
#include <vector>

#include "base/status.h"
#include "trainer/main/step_profiler.h"
#include "trainer/main/train_options.h"
#include "trainer/main/workload.h"
#include "trainer/parallel/mpi_session.h"
#include "trainer/runtime/device.h"
#include "trainer/towers/towers.h"

namespace stepscope::trainer {

class TrainingSetup {
 public:
  static StatusOr<std::unique_ptr<TrainingSetup>> Create(const TrainOptions& options);
  TrainingSetup(const TrainingSetup&) = delete;
  TrainingSetup& operator=(const TrainingSetup&) = delete;

  // This process's place in the run; rank 0 of 1 without mpirun.
  int rank() const { return mpi_ != nullptr ? mpi_->rank() : 0; }
  int world_size() const { return mpi_ != nullptr ? mpi_->world_size() : 1; }
  parallel::MpiSession* mpi() const { return mpi_.get(); }  // null without mpirun
  // Towers of the whole run: the data source serves all of them and this rank takes its share,
  // so N ranks of M devices train exactly as one process of N·M devices would.
  int run_towers() const { return static_cast<int>(tower_devices_.size()) * world_size(); }
  // This rank's towers' devices, one per replica.
  const std::vector<runtime::Device*>& tower_devices() const { return tower_devices_; }
  // Where batches are made, in host memory: the first tower's device, or for GPU towers a CPU
  // device of its own (as TF has a CPU device beside the GPUs).
  const runtime::Device& input_device() const;

  Workload& workload() const { return *workload_; }
  StepProfiler* profiler() const { return profiler_.get(); }  // null without --profile
  Towers& towers() const { return *towers_; }

 private:
  TrainingSetup() = default;
  Status CreateDevices(const std::string& devices, int virtual_gpus_per_gpu);
  // One replica per device from the same seed; with several ranks, rank 0's parameters.
  StatusOr<std::vector<std::unique_ptr<models::Model>>> MakeReplicas();
  Status StartProfiler(const ProfileOptions& options);
  Status CreateTowers(const TrainOptions& options,
                      std::vector<std::unique_ptr<models::Model>> replicas);

  // Declared in the order of their making: they go in reverse, the towers (whose replicas hold
  // tensors on the devices) and the profiler (hooked into them) before the devices.
  std::unique_ptr<parallel::MpiSession> mpi_;
  std::vector<std::unique_ptr<runtime::Device>> devices_;
  std::vector<std::unique_ptr<runtime::Device>> input_devices_;  // GPU runs only
  std::vector<runtime::Device*> tower_devices_;
  std::unique_ptr<Workload> workload_;
  std::unique_ptr<StepProfiler> profiler_;
  std::unique_ptr<Towers> towers_;
};

}  // namespace stepscope::trainer
