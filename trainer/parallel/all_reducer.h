// AllReducer: reduces a step's gradients across the N participants (devices) of this process and,
// through MPI, across processes, following an all-reduce spec. Small gradients may be packed
// first (tf_cnn_benchmarks' agg_small_grads_*); the packed and single gradients are routed to the
// spec's ranges by element count. Every participant ends with exactly the same bytes.
//
//   auto reducer = AllReducer::Create(spec, /*num_participants=*/4, options);
//   reducer->AllReduce(gradients);   // gradients[i].replicas[p]: participant p's copy
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "trainer/parallel/allreduce_spec.h"
#include "trainer/parallel/collective_event.h"
#include "trainer/parallel/collectives.h"
#include "trainer/parallel/participant_team.h"

namespace stepscope::parallel {

class MpiSession;

// One gradient as every participant holds it: replicas[p] points at participant p's
// num_elements floats, reduced in place.
struct GradientReplicas {
  std::string name;
  std::vector<float*> replicas;
  int64_t num_elements = 0;
};

struct AllReduceOptions {
  ReduceOp op = ReduceOp::kSum;
  int64_t agg_small_grads_max_bytes = 0;  // packing is on when both are positive
  int agg_small_grads_max_group = 0;
  int64_t ring_chunk_bytes = int64_t{1} << 20;  // per participant and ring step
  CollectiveObserver* observer = nullptr;       // not owned; may be null
  MpiSession* mpi = nullptr;  // not owned; null = this process is the whole world
};

class AllReducer {
 public:
  // Errors: kInvalidInput for a participant count below 1; kUnavailable for nccl (this library
  // reduces CPU participants; NCCL belongs to GPU builds).
  static StatusOr<std::unique_ptr<AllReducer>> Create(AllReduceSpec spec, int num_participants,
                                                      AllReduceOptions options);

  // Reduces every gradient in place. kInvalidInput when a gradient's replica count is not the
  // participant count or a replica is null; failures of MPI come back as their Status.
  Status AllReduce(std::span<const GradientReplicas> gradients);

  int num_participants() const { return team_.size(); }
  int world_size() const;  // processes
  const AllReduceSpec& spec() const { return spec_; }
  const AllReduceOptions& options() const { return options_; }
  // The participant threads; FusionBuffer runs its copies on them.
  ParticipantTeam& team() { return team_; }

 private:
  struct Unit;
  struct PhaseTimes;
  AllReducer(AllReduceSpec spec, int num_participants, AllReduceOptions options);
  // The collectives of one call, in gradient order (packed runs and single gradients), each
  // routed to its range; sizes the reused pack and host buffers. *pack_elements: the packed total.
  std::vector<Unit> PlanUnits(std::span<const GradientReplicas> gradients, int64_t* pack_elements);
  Status ReduceUnitShare(int participant, const Unit& unit, float* host_accumulator);
  // Tells the observer of each phase: pack, every unit's all-reduce, unpack.
  void ReportCollectives(std::span<const GradientReplicas> gradients,
                         const std::vector<Unit>& units, int64_t pack_elements,
                         const PhaseTimes& times) const;

  AllReduceSpec spec_;
  AllReduceOptions options_;
  ParticipantTeam team_;
  std::vector<std::vector<float>> pack_buffers_;  // per participant, reused across calls
  std::vector<float> host_accumulator_;           // pscpu sums, reused across calls
};

}  // namespace stepscope::parallel
