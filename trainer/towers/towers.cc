// One model replica per device: the global batch split across towers, forward and backward on
// the towers' threads, gradients reduced, and the same update applied on every device.
#include "trainer/towers/towers.h"

#include <span>

#include "trainer/runtime/op_scope.h"
#include "trainer/runtime/transfers.h"

namespace stepscope::trainer {

using runtime::CopyKind;
using runtime::CopyScope;
using runtime::DType;
using runtime::OpScope;
using runtime::Tensor;

namespace {

// Horovod's default op name for the all-reduce of a tensor: "HorovodAllreduce_" and the tensor
// name with every character outside [A-Za-z0-9_] replaced by '_' (its _normalize_name); the
// tensor is the variable's gradient, output 0.
std::string HorovodAllreduceName(const std::string& variable) {
  std::string name = "HorovodAllreduce_" + variable + "_0";
  for (char& c : name) {
    const bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (!keep) c = '_';
  }
  return name;
}

}  // namespace

StatusOr<VariableUpdate> ParseVariableUpdate(const std::string& text) {
  if (text == "replicated") return VariableUpdate::kReplicated;
  if (text == "parameter_server") return VariableUpdate::kParameterServer;
  if (text == "independent") return VariableUpdate::kIndependent;
  return InvalidInput("--variable_update " + text +
                      ": expected replicated, parameter_server or independent");
}

StatusOr<std::unique_ptr<Towers>> Towers::Create(std::vector<std::unique_ptr<models::Model>> models,
                                                 const TowerOptions& options) {
  if (models.empty()) return InvalidInput("no towers");
  // parameter_server reduces through one place (a CPU accumulator) and averages.
  const std::string spec_text =
      options.update == VariableUpdate::kParameterServer ? "pscpu" : options.allreduce_spec;
  ASSIGN_OR_RETURN(parallel::AllReduceSpec spec, parallel::ParseAllReduceSpec(spec_text));
  const bool gpus = models[0]->device().gpu() != nullptr;
  for (const auto& model : models) {
    if ((model->device().gpu() != nullptr) != gpus) {
      return InvalidInput("towers on " + models[0]->device().name() + " and " +
                          model->device().name() + ": every tower must be on the same kind of device");
    }
  }
  if (gpus && parallel::UsesAlgorithm(spec, parallel::Algorithm::kNccl) &&
      options.update != VariableUpdate::kIndependent) {
    return CreateWithNccl(std::move(models), options, spec);
  }
  parallel::AllReduceOptions reduce;
  reduce.op = options.update == VariableUpdate::kParameterServer ? parallel::ReduceOp::kMean
                                                                 : parallel::ReduceOp::kSum;
  reduce.agg_small_grads_max_bytes = options.agg_small_grads_max_bytes;
  reduce.agg_small_grads_max_group = options.agg_small_grads_max_group;
  reduce.observer = options.observer;
  reduce.mpi = options.mpi;
  const int n = static_cast<int>(models.size());
  const bool several_ranks = options.mpi != nullptr && options.mpi->world_size() > 1;
  if (options.fusion_threshold_bytes < 0) {
    return InvalidInput("--fusion_threshold_bytes " +
                        std::to_string(options.fusion_threshold_bytes) +
                        ": must be 0 (off) or a positive byte count");
  }
  std::unique_ptr<parallel::FusionBuffer> fusion;
  if (options.fusion_threshold_bytes > 0 && options.update != VariableUpdate::kIndependent &&
      n > 1 && !several_ranks) {
    // Its own participant threads: the towers' team is busy with backward while it reduces.
    parallel::FusionOptions fusion_options;
    fusion_options.fusion_threshold_bytes = options.fusion_threshold_bytes;
    fusion_options.cycle_time_ms = options.cycle_time_ms;
    ASSIGN_OR_RETURN(fusion, parallel::FusionBuffer::Create(spec, n, reduce, fusion_options));
  }
  ASSIGN_OR_RETURN(auto reducer, parallel::AllReducer::Create(std::move(spec), n, reduce));
  return std::unique_ptr<Towers>(
      new Towers(std::move(models), options, std::move(reducer), std::move(fusion), nullptr));
}

StatusOr<std::unique_ptr<Towers>> Towers::CreateWithNccl(
    std::vector<std::unique_ptr<models::Model>> models, const TowerOptions& options,
    const parallel::AllReduceSpec& spec) {
  const bool nccl_alone = spec.ranges.size() == 1 && spec.ranges[0].algorithm == parallel::Algorithm::kNccl &&
                          (!spec.ranges[0].across_workers ||
                           *spec.ranges[0].across_workers == parallel::Algorithm::kNccl);
  if (!nccl_alone) {
    return InvalidInput("--allreduce_spec " + options.allreduce_spec +
                        ": GPU towers take nccl alone (NCCL spans processes itself); size ranges "
                        "and hierarchies mixing nccl with host algorithms are for CPU devices");
  }
  if (options.fusion_threshold_bytes > 0) {
    return InvalidInput("--fusion_threshold_bytes with --allreduce_spec nccl: tensor fusion "
                        "reduces through host memory; use ring or pscpu, or turn fusion off");
  }
  std::vector<const runtime::Device*> devices;
  for (const auto& model : models) devices.push_back(&model->device());
  ASSIGN_OR_RETURN(auto gpu_reduce, GpuAllReduce::Create(devices, options.mpi, options.observer));
  return std::unique_ptr<Towers>(
      new Towers(std::move(models), options, nullptr, nullptr, std::move(gpu_reduce)));
}

Towers::Towers(std::vector<std::unique_ptr<models::Model>> models, const TowerOptions& options,
               std::unique_ptr<parallel::AllReducer> reducer,
               std::unique_ptr<parallel::FusionBuffer> fusion,
               std::unique_ptr<GpuAllReduce> gpu_reduce)
    : models_(std::move(models)), options_(options), reducer_(std::move(reducer)),
      fusion_(std::move(fusion)), gpu_reduce_(std::move(gpu_reduce)),
      own_team_(reducer_ == nullptr ? std::make_unique<parallel::ParticipantTeam>(
                                          static_cast<int>(models_.size()))
                                    : nullptr),
      team_(reducer_ != nullptr ? reducer_->team() : *own_team_),
      handed_in_(models_.size()) {
  for (int d = 0; d < size(); ++d) {
    const std::string tower = "tower_" + std::to_string(d);
    split_nodes_.push_back(&graph_.AddNode(tower + "/TrainInput/split", "Slice", {"TrainInput"}));
    gather_nodes_.push_back(&graph_.AddNode(tower + "/gradients/AllGather", "AllGather"));
    split_copy_names_.push_back(split_nodes_.back()->name + ":Slice");
    gather_copy_names_.push_back(gather_nodes_.back()->name + ":AllGather");
  }
  for (const models::Variable& variable : models_[0]->variables()) {
    fusion_names_.push_back(HorovodAllreduceName(variable.name));
  }
  if (fusion_ != nullptr) {
    for (int d = 0; d < size(); ++d) {
      models_[static_cast<size_t>(d)]->set_gradient_ready_callback(
          [this, d](const models::Gradient& gradient) { return HandInGradient(d, gradient); });
    }
  }
}

Towers::~Towers() {
  // The models' callbacks point at this object: no model keeps one past it.
  for (auto& model : models_) model->set_gradient_ready_callback(nullptr);
}

Status Towers::HandInGradient(int tower, const models::Gradient& gradient) {
  if (gradient.sparse()) return Status::Ok();  // gathered after backward, not summed
  const models::Model& model = *models_[static_cast<size_t>(tower)];
  if (gradient.variable < 0 || gradient.variable >= static_cast<int>(fusion_names_.size()) ||
      gradient.values.empty() || gradient.values.dtype() != DType::kFloat32) {
    return Internal(model.device().name() + ": gradient of variable " +
                    std::to_string(gradient.variable) + " is not a dense float gradient of a "
                    "known variable");
  }
  std::vector<StagedGradient>& held = handed_in_[static_cast<size_t>(tower)];
  held.push_back(StagedGradient{&model.device(), gradient.values, {}});
  StagedGradient& staged = held.back();
  std::span<float> values(gradient.values.data<float>(),
                          static_cast<size_t>(gradient.values.num_elements()));
  if (model.device().gpu() != nullptr) {
    // The fusion buffer reduces host memory: a GPU's gradient goes through a host copy.
    staged.host.resize(values.size());
    RETURN_IF_ERROR(runtime::CopyToHost(model.device(), gradient.values, staged.host.data()));
    values = staged.host;
  }
  return fusion_->Ready(tower, fusion_names_[static_cast<size_t>(gradient.variable)], values);
}

void Towers::ResetState() {
  for (auto& model : models_) model->ResetState();
}

// The tower's rows of the global batch, copied onto the tower's device (input staging).
StatusOr<models::Batch> Towers::TowerBatch(const models::Batch& global, int tower) {
  const runtime::Device& device = models_[static_cast<size_t>(tower)]->device();
  OpScope scope(device, *split_nodes_[static_cast<size_t>(tower)]);
  models::Batch batch;
  for (auto [from, to] : {std::pair{&global.inputs, &batch.inputs}, std::pair{&global.labels, &batch.labels}}) {
    runtime::Shape shape = from->shape();
    if (shape.rank < 1 || shape[0] % size() != 0) {
      return InvalidInput("global batch " + from->DebugString() + " does not split into " +
                          std::to_string(size()) + " towers");
    }
    shape.dims[0] /= size();
    ASSIGN_OR_RETURN(*to, device.Allocate(from->dtype(), shape));
    const int64_t bytes = to->bytes();
    {
      // The tower's rows, from the input pipeline's host memory into the device's.
      CopyScope copy(device, split_copy_names_[static_cast<size_t>(tower)],
                     CopyKind::kHostToDevice, bytes);
      RETURN_IF_ERROR(runtime::CopyFromHost(
          device, static_cast<const char*>(from->buffer()->data()) + bytes * tower, *to));
    }
    scope.Output(*to);
  }
  return batch;
}

// Every tower gets all towers' rows (values scaled by `scale`) and their ids, and with several
// ranks every rank's: gathered once in host memory (each tower reads its own rows on its thread),
// then copied onto every device.
Status Towers::GatherSparse(std::vector<models::StepResult>& results, size_t gradient, float scale) {
  const int n = size();
  const Tensor& first = results[0].gradients[gradient].values;
  const int64_t rows = first.shape()[0], cols = first.shape()[1];
  std::vector<float> values(static_cast<size_t>(rows * cols * n));
  std::vector<int32_t> ids(static_cast<size_t>(rows * n));
  std::vector<Status> read(static_cast<size_t>(n));
  team_.Run([&](int s) {
    const models::Gradient& g = results[static_cast<size_t>(s)].gradients[gradient];
    const runtime::Device& device = models_[static_cast<size_t>(s)]->device();
    float* rows_of_s = values.data() + s * rows * cols;
    Status status = runtime::CopyToHost(device, g.values, rows_of_s);
    if (status.ok()) status = runtime::CopyToHost(device, g.indices, ids.data() + s * rows);
    for (int64_t k = 0; k < rows * cols; ++k) rows_of_s[k] *= scale;
    read[static_cast<size_t>(s)] = std::move(status);
  });
  for (const Status& status : read) RETURN_IF_ERROR(status);
  if (options_.mpi != nullptr && options_.mpi->world_size() > 1) {
    const size_t world = static_cast<size_t>(options_.mpi->world_size());
    std::vector<float> all_values(values.size() * world);
    std::vector<int32_t> all_ids(ids.size() * world);
    RETURN_IF_ERROR(options_.mpi->AllGather(std::span<const float>(values), std::span<float>(all_values)));
    RETURN_IF_ERROR(options_.mpi->AllGather(std::span<const int32_t>(ids), std::span<int32_t>(all_ids)));
    values = std::move(all_values);
    ids = std::move(all_ids);
  }
  const int64_t gathered_rows = static_cast<int64_t>(ids.size());
  std::vector<Status> written(static_cast<size_t>(n));
  team_.Run([&](int d) {
    const runtime::Device& device = models_[static_cast<size_t>(d)]->device();
    models::Gradient& out = results[static_cast<size_t>(d)].gradients[gradient];
    written[static_cast<size_t>(d)] = [&]() -> Status {
      OpScope scope(device, *gather_nodes_[static_cast<size_t>(d)]);
      ASSIGN_OR_RETURN(Tensor gathered_values, device.Allocate(DType::kFloat32, {gathered_rows, cols}));
      ASSIGN_OR_RETURN(Tensor gathered_ids, device.Allocate(DType::kInt32, {gathered_rows}));
      {
        // Every tower's rows and ids, onto this device.
        CopyScope copy(device, gather_copy_names_[static_cast<size_t>(d)],
                       CopyKind::kDeviceToDevice, gathered_values.bytes() + gathered_ids.bytes());
        RETURN_IF_ERROR(runtime::CopyFromHost<float>(device, values, gathered_values));
        RETURN_IF_ERROR(runtime::CopyFromHost<int32_t>(device, ids, gathered_ids));
      }
      scope.Output(gathered_values);
      scope.Output(gathered_ids);
      out.values = std::move(gathered_values);
      out.indices = std::move(gathered_ids);
      return Status::Ok();
    }();
  });
  for (const Status& status : written) RETURN_IF_ERROR(status);
  return Status::Ok();
}

bool Towers::on_gpus() const { return models_[0]->device().gpu() != nullptr; }

Status Towers::CopyBackToDevices(const std::vector<StagedGradient>& staged) {
  for (const StagedGradient& gradient : staged) {
    if (gradient.host.empty()) continue;  // reduced in place (host memory)
    RETURN_IF_ERROR(runtime::CopyFromHost<float>(*gradient.device, gradient.host, gradient.values));
  }
  return Status::Ok();
}

int Towers::run_towers() const {
  return size() * (options_.mpi != nullptr ? options_.mpi->world_size() : 1);
}

StatusOr<TowerStepResult> Towers::Step(const models::Batch& global, float learning_rate) {
  return StepOn([&](int d) { return TowerBatch(global, d); }, learning_rate);
}

StatusOr<TowerStepResult> Towers::StepResident(const ResidentData& data, int64_t index,
                                               float learning_rate) {
  if (data.num_devices() != size()) {
    return InvalidInput("resident data on " + std::to_string(data.num_devices()) +
                        " devices for " + std::to_string(size()) + " towers");
  }
  return StepOn([&](int d) { return data.Minibatch(d, index); }, learning_rate);
}

StatusOr<TowerStepResult> Towers::StepOn(
    const std::function<StatusOr<models::Batch>(int)>& batch_for, float learning_rate) {
  const int n = size();
  const bool replicated = options_.update == VariableUpdate::kReplicated;
  // Sums over every tower of the run equal one device's gradient on the whole batch.
  const float loss_scale = replicated ? 1.0f / static_cast<float>(run_towers()) : 1.0f;
  const float sparse_scale = replicated ? 1.0f : 1.0f / static_cast<float>(run_towers());
  std::vector<StatusOr<models::StepResult>> outcomes(static_cast<size_t>(n), Status(StatusCode::kInternal, "not run"));
  for (auto& held : handed_in_) held.clear();
  team_.Run([&](int d) {
    auto batch = batch_for(d);
    if (!batch.ok()) {
      outcomes[static_cast<size_t>(d)] = batch.status();
      return;
    }
    models::Model& model = *models_[static_cast<size_t>(d)];
    outcomes[static_cast<size_t>(d)] =
        fusion_ != nullptr ? model.ComputeGradientsReportingReady(*batch, loss_scale)
                           : model.ComputeGradients(*batch, loss_scale);
  });
  // With fusion, the reductions still running write into the handed-in buffers: wait for them
  // before anything can be returned (or freed), failed towers included.
  Status fused = fusion_ != nullptr ? fusion_->Synchronize() : Status::Ok();
  for (auto& held : handed_in_) {
    if (fused.ok()) fused = CopyBackToDevices(held);
    held.clear();
  }
  std::vector<models::StepResult> results;
  for (auto& outcome : outcomes) {
    RETURN_IF_ERROR(outcome.status());
    results.push_back(std::move(outcome.value()));
  }
  RETURN_IF_ERROR(fused);

  if (fusion_ != nullptr) {
    for (size_t g = 0; g < results[0].gradients.size(); ++g) {
      if (!results[0].gradients[g].sparse()) continue;
      RETURN_IF_ERROR(GatherSparse(results, g, sparse_scale));
    }
  } else if (options_.update != VariableUpdate::kIndependent && run_towers() > 1) {
    std::vector<parallel::GradientReplicas> dense;
    std::vector<StagedGradient> staged;  // GPU towers: host copies of the dense gradients
    for (size_t g = 0; g < results[0].gradients.size(); ++g) {
      const models::Gradient& gradient = results[0].gradients[g];
      if (gradient.sparse()) {
        RETURN_IF_ERROR(GatherSparse(results, g, sparse_scale));
        continue;
      }
      parallel::GradientReplicas replicas;
      replicas.name = models_[0]->variables()[static_cast<size_t>(gradient.variable)].name;
      replicas.num_elements = gradient.values.num_elements();
      for (int d = 0; d < n; ++d) {
        const Tensor& values = results[static_cast<size_t>(d)].gradients[g].values;
        replicas.replicas.push_back(values.data<float>());
        if (on_gpus() && gpu_reduce_ == nullptr) {
          // The CPU algorithms reduce host memory: GPU gradients go through host copies, as
          // TensorFlow's pscpu copies GPU towers' gradients to the CPU.
          const runtime::Device& device = models_[static_cast<size_t>(d)]->device();
          staged.push_back(StagedGradient{&device, values,
                                          std::vector<float>(static_cast<size_t>(values.num_elements()))});
          RETURN_IF_ERROR(runtime::CopyToHost(device, values, staged.back().host.data()));
          replicas.replicas.back() = staged.back().host.data();
        }
      }
      dense.push_back(std::move(replicas));
    }
    if (gpu_reduce_ != nullptr) {
      RETURN_IF_ERROR(gpu_reduce_->AllReduce(dense, parallel::ReduceOp::kSum));
    } else {
      RETURN_IF_ERROR(reducer_->AllReduce(dense));
      RETURN_IF_ERROR(CopyBackToDevices(staged));
    }
  }

  std::vector<Status> applied(static_cast<size_t>(n));
  team_.Run([&](int d) {
    models::Model& model = *models_[static_cast<size_t>(d)];
    applied[static_cast<size_t>(d)] =
        model.ApplyGradients(results[static_cast<size_t>(d)].gradients, learning_rate);
    // A step ends when its updates have run (a GPU's are still queued when ApplyGradients
    // returns): step times and profiled steps cover them.
    if (applied[static_cast<size_t>(d)].ok()) {
      applied[static_cast<size_t>(d)] = runtime::SynchronizeDevice(model.device());
    }
  });
  TowerStepResult step;
  for (int d = 0; d < n; ++d) {
    RETURN_IF_ERROR(applied[static_cast<size_t>(d)]);
    step.losses.push_back(results[static_cast<size_t>(d)].loss);
    step.correct += results[static_cast<size_t>(d)].correct;
    step.examples += results[static_cast<size_t>(d)].examples;
  }
  return step;
}

}  // namespace stepscope::trainer
