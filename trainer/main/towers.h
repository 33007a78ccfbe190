// Data parallelism in one process: one replica of the model (a tower) per device, the global
// batch split across towers, each tower's forward and backward on its own thread and allocator,
// gradients reduced with the all-reduce spec, then the same update applied on every device so
// the replicas stay bit-identical (tf_cnn_benchmarks' variable_update modes).
//
// Reduction semantics (stated in --help and the README):
// - replicated: every tower scales its loss by 1/N and the gradients are SUMMED (Detectron's
//   data-parallel model; tf_cnn_benchmarks' replicated mode): the update equals one device's on
//   the whole batch.
// - parameter_server: gradients are AVERAGED (mean over towers, as RLlib's
//   average_gradients), reduced through one place (pscpu), and applied identically.
// - independent: no communication; each tower trains on its own share (a compute baseline).
// Sparse gradients (the LSTM's embedding rows) are gathered from every tower, not summed.
// Clipping by global norm happens after the reduction (inside the model's ApplyGradients).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "trainer/models/model.h"
#include "trainer/parallel/all_reducer.h"
#include "trainer/runtime/graph.h"

namespace stepscope::trainer {

enum class VariableUpdate { kReplicated, kParameterServer, kIndependent };
StatusOr<VariableUpdate> ParseVariableUpdate(const std::string& text);

struct TowerOptions {
  VariableUpdate update = VariableUpdate::kReplicated;
  std::string allreduce_spec = "ring";
  int64_t agg_small_grads_max_bytes = 0;
  int agg_small_grads_max_group = 0;
  parallel::CollectiveObserver* observer = nullptr;  // the profiler's, when profiling
};

struct TowerStepResult {
  std::vector<double> losses;  // per tower
  int64_t correct = 0, examples = 0;
};

class Towers {
 public:
  // `models` are replicas built with the same seed, one per device.
  static StatusOr<std::unique_ptr<Towers>> Create(std::vector<std::unique_ptr<models::Model>> models,
                                                 const TowerOptions& options);

  int size() const { return static_cast<int>(models_.size()); }
  models::Model& tower(int index) { return *models_[static_cast<size_t>(index)]; }

  // One step on `global`, whose first dimension is size() × the per-tower batch.
  StatusOr<TowerStepResult> Step(const models::Batch& global, float learning_rate);
  void ResetState();

 private:
  Towers(std::vector<std::unique_ptr<models::Model>> models, const TowerOptions& options,
         std::unique_ptr<parallel::AllReducer> reducer);
  StatusOr<models::Batch> TowerBatch(const models::Batch& global, int tower);
  Status GatherSparse(std::vector<models::StepResult>& results, size_t gradient, float scale);

  std::vector<std::unique_ptr<models::Model>> models_;
  TowerOptions options_;
  std::unique_ptr<parallel::AllReducer> reducer_;
  parallel::ParticipantTeam& team_;
  runtime::Graph graph_;                   // names of the split and gather ops
  std::vector<const runtime::Node*> split_nodes_, gather_nodes_;  // per tower
};

}  // namespace stepscope::trainer
