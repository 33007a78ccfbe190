#include "trainer/main/towers.h"

#include <cstring>

#include "trainer/runtime/op_scope.h"

namespace stepscope::trainer {

using runtime::DType;
using runtime::OpScope;
using runtime::Tensor;

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
  parallel::AllReduceOptions reduce;
  reduce.op = options.update == VariableUpdate::kParameterServer ? parallel::ReduceOp::kMean
                                                                 : parallel::ReduceOp::kSum;
  reduce.agg_small_grads_max_bytes = options.agg_small_grads_max_bytes;
  reduce.agg_small_grads_max_group = options.agg_small_grads_max_group;
  reduce.observer = options.observer;
  ASSIGN_OR_RETURN(auto reducer, parallel::AllReducer::Create(
                                     std::move(spec), static_cast<int>(models.size()), reduce));
  return std::unique_ptr<Towers>(new Towers(std::move(models), options, std::move(reducer)));
}

Towers::Towers(std::vector<std::unique_ptr<models::Model>> models, const TowerOptions& options,
               std::unique_ptr<parallel::AllReducer> reducer)
    : models_(std::move(models)), options_(options), reducer_(std::move(reducer)),
      team_(reducer_->team()) {
  for (int d = 0; d < size(); ++d) {
    const std::string tower = "tower_" + std::to_string(d);
    split_nodes_.push_back(&graph_.AddNode(tower + "/TrainInput/split", "Slice", {"TrainInput"}));
    gather_nodes_.push_back(&graph_.AddNode(tower + "/gradients/AllGather", "AllGather"));
  }
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
    std::memcpy(to->buffer()->data(), static_cast<const char*>(from->buffer()->data()) + bytes * tower,
                static_cast<size_t>(bytes));
    scope.Output(*to);
  }
  return batch;
}

// Every tower gets all towers' rows (values scaled by `scale`) and their ids.
Status Towers::GatherSparse(std::vector<models::StepResult>& results, size_t gradient, float scale) {
  const int n = size();
  std::vector<models::Gradient> gathered(static_cast<size_t>(n));
  const Tensor& first = results[0].gradients[gradient].values;
  const int64_t rows = first.shape()[0], cols = first.shape()[1];
  Status status;
  std::mutex status_mu;
  team_.Run([&](int d) {
    const runtime::Device& device = models_[static_cast<size_t>(d)]->device();
    OpScope scope(device, *gather_nodes_[static_cast<size_t>(d)]);
    auto values = device.Allocate(DType::kFloat32, {rows * n, cols});
    auto ids = device.Allocate(DType::kInt32, {rows * n});
    if (!values.ok() || !ids.ok()) {
      std::lock_guard<std::mutex> lock(status_mu);
      status = values.ok() ? ids.status() : values.status();
      return;
    }
    for (int s = 0; s < n; ++s) {
      const models::Gradient& g = results[static_cast<size_t>(s)].gradients[gradient];
      const float* src = g.values.data<float>();
      float* dst = values->data<float>() + s * rows * cols;
      for (int64_t k = 0; k < rows * cols; ++k) dst[k] = src[k] * scale;
      std::memcpy(ids->data<int32_t>() + s * rows, g.indices.data<int32_t>(),
                  static_cast<size_t>(rows) * sizeof(int32_t));
    }
    scope.Output(*values);
    scope.Output(*ids);
    models::Gradient& out = gathered[static_cast<size_t>(d)];
    out = results[static_cast<size_t>(d)].gradients[gradient];
    out.values = *values;
    out.indices = *ids;
  });
  RETURN_IF_ERROR(status);
  for (int d = 0; d < n; ++d) results[static_cast<size_t>(d)].gradients[gradient] = gathered[static_cast<size_t>(d)];
  return Status::Ok();
}

StatusOr<TowerStepResult> Towers::Step(const models::Batch& global, float learning_rate) {
  const int n = size();
  const bool replicated = options_.update == VariableUpdate::kReplicated;
  const float loss_scale = replicated ? 1.0f / static_cast<float>(n) : 1.0f;
  std::vector<StatusOr<models::StepResult>> outcomes(static_cast<size_t>(n), Status(StatusCode::kInternal, "not run"));
  team_.Run([&](int d) {
    auto batch = TowerBatch(global, d);
    if (!batch.ok()) {
      outcomes[static_cast<size_t>(d)] = batch.status();
      return;
    }
    outcomes[static_cast<size_t>(d)] = models_[static_cast<size_t>(d)]->ComputeGradients(*batch, loss_scale);
  });
  std::vector<models::StepResult> results;
  for (auto& outcome : outcomes) {
    RETURN_IF_ERROR(outcome.status());
    results.push_back(std::move(outcome.value()));
  }

  if (options_.update != VariableUpdate::kIndependent && n > 1) {
    std::vector<parallel::GradientReplicas> dense;
    for (size_t g = 0; g < results[0].gradients.size(); ++g) {
      const models::Gradient& gradient = results[0].gradients[g];
      if (gradient.sparse()) {
        RETURN_IF_ERROR(GatherSparse(results, g, replicated ? 1.0f : 1.0f / static_cast<float>(n)));
        continue;
      }
      parallel::GradientReplicas replicas;
      replicas.name = models_[0]->variables()[static_cast<size_t>(gradient.variable)].name;
      replicas.num_elements = gradient.values.num_elements();
      for (int d = 0; d < n; ++d) {
        replicas.replicas.push_back(results[static_cast<size_t>(d)].gradients[g].values.data<float>());
      }
      dense.push_back(std::move(replicas));
    }
    RETURN_IF_ERROR(reducer_->AllReduce(dense));
  }

  std::vector<Status> applied(static_cast<size_t>(n));
  team_.Run([&](int d) {
    applied[static_cast<size_t>(d)] =
        models_[static_cast<size_t>(d)]->ApplyGradients(results[static_cast<size_t>(d)].gradients, learning_rate);
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
