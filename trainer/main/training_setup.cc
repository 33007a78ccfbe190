// Builds what a training run holds before its first step, in dependency order: MPI session,
// devices, workload, replicas with rank 0's parameters, profiler, towers.
#include "trainer/main/training_setup.h"

#include <iostream>
#include <span>
#include <thread>

#include "trainer/runtime/transfers.h"

namespace stepscope::trainer {

StatusOr<std::unique_ptr<TrainingSetup>> TrainingSetup::Create(const TrainOptions& options) {
  std::unique_ptr<TrainingSetup> setup(new TrainingSetup());
  // Under mpirun every rank runs the same set-up with its own devices.
  if (parallel::MpiSession::LaunchedByMpi()) {
    ASSIGN_OR_RETURN(setup->mpi_, parallel::MpiSession::Create());
  }
  RETURN_IF_ERROR(setup->CreateDevices(options.devices, options.virtual_gpus_per_gpu));
  ASSIGN_OR_RETURN(setup->workload_, MakeWorkload(options, setup->run_towers()));
  ASSIGN_OR_RETURN(auto replicas, setup->MakeReplicas());
  if (options.profile.enabled) RETURN_IF_ERROR(setup->StartProfiler(options.profile));
  RETURN_IF_ERROR(setup->CreateTowers(options, std::move(replicas)));
  return setup;
}

const runtime::Device& TrainingSetup::input_device() const {
  return input_devices_.empty() ? *devices_[0] : *input_devices_[0];
}

Status TrainingSetup::CreateDevices(const std::string& devices, int virtual_gpus_per_gpu) {
  ASSIGN_OR_RETURN(const runtime::DeviceSpec spec, runtime::ParseDeviceSpec(devices));
  const int world = world_size();
  runtime::DeviceOptions device_options;
  device_options.virtual_gpus_per_gpu = virtual_gpus_per_gpu;
  device_options.placement = runtime::DevicePlacement::ForRank(rank(), world);
  if (mpi_ != nullptr) {
    device_options.local_rank = mpi_->local_rank();
    device_options.local_size = mpi_->local_size();
  }
  // Ranks sharing a host share its cores.
  device_options.total_threads =
      world > 1 ? runtime::ProcessThreadBudget(
                      static_cast<int>(std::thread::hardware_concurrency()),
                      parallel::MpiSession::LocalRanks())
                : 0;
  ASSIGN_OR_RETURN(devices_, runtime::CreateDevices(spec, device_options));
  for (auto& d : devices_) tower_devices_.push_back(d.get());
  if (virtual_gpus_per_gpu > 1) {
    // The layout a GPU run measures: which towers share which GPU, and each one's memory.
    for (const auto& d : devices_) {
      std::cerr << "stepscope-train: virtual GPU " << d->name() << " on CUDA device "
                << d->gpu()->ordinal() << ", " << d->allocator().Name() << " limit "
                << (d->allocator().Stats().bytes_limit >> 20) << " MiB" << std::endl;
    }
  }
  // The input pipeline fills host memory: GPU runs give it a CPU device of its own.
  if (spec.kind == runtime::DeviceKind::kGpu) {
    runtime::DeviceOptions input_options = device_options;
    input_options.total_threads = 1;
    input_options.virtual_gpus_per_gpu = 1;
    ASSIGN_OR_RETURN(input_devices_,
                     runtime::CreateDevices(runtime::DeviceSpec{runtime::DeviceKind::kCpu, {0}},
                                            input_options));
  }
  return Status::Ok();
}

StatusOr<std::vector<std::unique_ptr<models::Model>>> TrainingSetup::MakeReplicas() {
  std::vector<std::unique_ptr<models::Model>> replicas;
  for (auto& d : devices_) {
    ASSIGN_OR_RETURN(auto model, workload_->MakeReplica(*d));
    replicas.push_back(std::move(model));
  }
  if (world_size() == 1) return replicas;
  // Replicas start from rank 0's parameters (Horovod's broadcast_global_variables).
  for (auto& replica : replicas) {
    for (models::Variable& variable : replica->variables()) {
      if (variable.value.dtype() != runtime::DType::kFloat32) continue;
      // Through host memory: MPI moves host buffers, and a GPU's variables are on the GPU.
      ASSIGN_OR_RETURN(std::vector<float> values,
                       runtime::ToHostVector<float>(replica->device(), variable.value));
      RETURN_IF_ERROR(mpi_->Broadcast(std::span<float>(values), 0));
      RETURN_IF_ERROR(runtime::CopyFromHost<float>(replica->device(), values, variable.value));
    }
  }
  return replicas;
}

Status TrainingSetup::StartProfiler(const ProfileOptions& options) {
  profiler_ = std::make_unique<StepProfiler>(options, workload_->trace_name());
  profiler_->SetRank(rank(), world_size());
  // A CPU has no datasheet peak: its MFU is measured against what its BLAS does here, with the
  // threads the devices just gave it.
  if (devices_[0]->kind() == runtime::DeviceKind::kCpu) profiler_->MeasureCpuPeak(static_cast<int>(devices_.size()));
  if (mpi_ != nullptr) RETURN_IF_ERROR(mpi_->Barrier());  // every rank's clock at one moment
  profiler_->MarkClockSync();
  return Status::Ok();
}

Status TrainingSetup::CreateTowers(const TrainOptions& options,
                                   std::vector<std::unique_ptr<models::Model>> replicas) {
  TowerOptions tower_options;
  ASSIGN_OR_RETURN(tower_options.update, ParseVariableUpdate(options.variable_update));
  tower_options.allreduce_spec = options.allreduce_spec;
  tower_options.agg_small_grads_max_bytes = options.agg_small_grads_max_bytes;
  tower_options.agg_small_grads_max_group = options.agg_small_grads_max_group;
  tower_options.fusion_threshold_bytes = options.fusion_threshold_bytes;
  tower_options.cycle_time_ms = options.cycle_time_ms;
  tower_options.observer = profiler_.get();
  tower_options.mpi = mpi_.get();
  ASSIGN_OR_RETURN(towers_, Towers::Create(std::move(replicas), tower_options));
  return Status::Ok();
}

}  // namespace stepscope::trainer
