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
//
// Tensor fusion (Horovod's, --fusion_threshold_bytes > 0): each tower hands its dense gradients
// to a FusionBuffer as backward finishes them (the model's gradient-ready callback); a
// communication thread copies ready gradients into the fusion buffer, all-reduces it and copies
// back while backward goes on; the update waits for all of it. Each value is still reduced once
// by one thread and copied, so replicas stay bit-identical; only the summation grouping differs
// from reducing after backward (within float rounding). Threshold 0 reduces everything after
// backward with the all-reduce spec and small-gradient packing (which fusion supersedes).
//
// Copies the towers make are reported to the profiler as MEMCPY records: the staging of each
// tower's share of the input (HtoD) and the sparse gathers between devices (DtoD).
//
// GPU towers: the `nccl` spec all-reduces the gradients in device memory; every other algorithm
// (and tensor fusion) reduces host memory, so GPU gradients are copied to the host and back
// around the reduction, as TensorFlow's pscpu does for GPU towers.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "trainer/towers/gpu_all_reduce.h"
#include "trainer/towers/resident_data.h"
#include "trainer/models/model.h"
#include "trainer/parallel/all_reducer.h"
#include "trainer/parallel/fusion_buffer.h"
#include "trainer/parallel/mpi_session.h"
#include "trainer/runtime/graph.h"

namespace stepscope::trainer {

enum class VariableUpdate { kReplicated, kParameterServer, kIndependent };
StatusOr<VariableUpdate> ParseVariableUpdate(const std::string& text);

struct TowerOptions {
  VariableUpdate update = VariableUpdate::kReplicated;
  std::string allreduce_spec = "ring";
  int64_t agg_small_grads_max_bytes = 0;
  int agg_small_grads_max_group = 0;
  // HOROVOD_FUSION_THRESHOLD: bytes of the fusion buffer; 0 turns fusion off. Fusion works
  // within one process: across MPI ranks the groups fused would have to be negotiated.
  int64_t fusion_threshold_bytes = 0;
  // HOROVOD_CYCLE_TIME: how long a ready gradient may wait for more to fuse with.
  double cycle_time_ms = 5.0;
  parallel::CollectiveObserver* observer = nullptr;  // the profiler's, when profiling
  // Several processes (mpirun): gradients are reduced across every rank's towers, the loss
  // scaled by 1/(towers × ranks), sparse rows gathered from every rank. Not owned.
  parallel::MpiSession* mpi = nullptr;
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
  ~Towers();
  Towers(const Towers&) = delete;
  Towers& operator=(const Towers&) = delete;

  int size() const { return static_cast<int>(models_.size()); }
  // Whether gradients are reduced during backward (fusion on, several towers communicating).
  bool fusing() const { return fusion_ != nullptr; }
  models::Model& tower(int index) { return *models_[static_cast<size_t>(index)]; }

  // One step on `global`, whose first dimension is size() × the per-tower batch.
  StatusOr<TowerStepResult> Step(const models::Batch& global, float learning_rate);
  // One step on minibatch `index` of resident data (one share per tower, already on the
  // towers' devices): RLlib's optimize(batch_index).
  StatusOr<TowerStepResult> StepResident(const ResidentData& data, int64_t index,
                                         float learning_rate);
  void ResetState();

 private:
  Towers(std::vector<std::unique_ptr<models::Model>> models, const TowerOptions& options,
         std::unique_ptr<parallel::AllReducer> reducer,
         std::unique_ptr<parallel::FusionBuffer> fusion,
         std::unique_ptr<GpuAllReduce> gpu_reduce);
  // GPU towers with the `nccl` spec: NCCL reduces device memory (no AllReducer, no fusion).
  static StatusOr<std::unique_ptr<Towers>> CreateWithNccl(
      std::vector<std::unique_ptr<models::Model>> models, const TowerOptions& options,
      const parallel::AllReduceSpec& spec);
  // The step itself, with tower d's batch from batch_for(d) (on tower d's thread).
  StatusOr<TowerStepResult> StepOn(const std::function<StatusOr<models::Batch>(int)>& batch_for,
                                   float learning_rate);
  StatusOr<models::Batch> TowerBatch(const models::Batch& global, int tower);
  Status GatherSparse(std::vector<models::StepResult>& results, size_t gradient, float scale);
  // A device's gradient and, for a GPU, the host copy a reduction works on.
  struct StagedGradient {
    const runtime::Device* device = nullptr;
    runtime::Tensor values;
    std::vector<float> host;  // empty: reduced in place
  };
  // Whether the towers' devices are GPUs (all towers share one kind).
  bool on_gpus() const;
  // Host copies of reduced GPU gradients back into their device tensors.
  static Status CopyBackToDevices(const std::vector<StagedGradient>& staged);
  // Towers in the whole run: this process's times the ranks.
  int run_towers() const;
  // Tower `tower`'s gradient is final: into the fusion buffer (dense ones).
  Status HandInGradient(int tower, const models::Gradient& gradient);

  std::vector<std::unique_ptr<models::Model>> models_;
  TowerOptions options_;
  std::unique_ptr<parallel::AllReducer> reducer_;  // after backward; its team runs the towers
  std::unique_ptr<parallel::FusionBuffer> fusion_;  // during backward; null when off
  std::unique_ptr<GpuAllReduce> gpu_reduce_;        // GPU towers with nccl; then no reducer_
  std::unique_ptr<parallel::ParticipantTeam> own_team_;  // the towers' threads without reducer_
  parallel::ParticipantTeam& team_;
  runtime::Graph graph_;                   // names of the split and gather ops
  std::vector<const runtime::Node*> split_nodes_, gather_nodes_;  // per tower
  std::vector<std::string> split_copy_names_, gather_copy_names_;  // "<node>:<OpType>" per tower
  std::vector<std::string> fusion_names_;  // per variable: Horovod's op name for its all-reduce
  // Per tower, the gradients handed to the fusion buffer this step: held so their buffers
  // (a GPU's host copy) outlive the in-place reduction even when a tower's step fails half-way.
  std::vector<std::vector<StagedGradient>> handed_in_;
};

}  // namespace stepscope::trainer
