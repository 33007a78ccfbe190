// What the communication layer tells the profiler: one event per collective or fusion-buffer
// copy, with the Horovod timeline's phase names, so the trace shows the real operations.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace stepscope::parallel {

enum class CollectivePhase {
  kAllReduce,              // the reduction itself ("ALLREDUCE")
  kPack,                   // small gradients concatenated before the reduction ("PACK")
  kUnpack,                 // and split back after it ("UNPACK")
  kMemcpyInFusionBuffer,   // "MEMCPY_IN_FUSION_BUFFER"
  kMemcpyOutFusionBuffer,  // "MEMCPY_OUT_FUSION_BUFFER"
};

inline std::string_view CollectivePhaseName(CollectivePhase phase) {
  switch (phase) {
    case CollectivePhase::kAllReduce: return "ALLREDUCE";
    case CollectivePhase::kPack: return "PACK";
    case CollectivePhase::kUnpack: return "UNPACK";
    case CollectivePhase::kMemcpyInFusionBuffer: return "MEMCPY_IN_FUSION_BUFFER";
    case CollectivePhase::kMemcpyOutFusionBuffer: return "MEMCPY_OUT_FUSION_BUFFER";
  }
  return "UNKNOWN";
}

struct CollectiveEvent {
  std::string name;  // op name, e.g. "AllReduce/conv1/kernel" or "HorovodAllreduce_fused_3"
  CollectivePhase phase = CollectivePhase::kAllReduce;
  std::string algorithm;             // spec text of the range used, e.g. "ring#2", "pscpu/mpi"
  int64_t bytes = 0;                 // per participant
  int peers = 0;                     // participants in this process times processes
  int64_t start_ns = 0;              // steady clock, as trainer/runtime/clock.h
  int64_t end_ns = 0;
  std::vector<std::string> tensors;  // the gradients this event covers
  // Fusion-buffer copies only: each participant copies its own gradients on its own thread;
  // entry p is participant p's [start, end) (start_ns/end_ns span them all). Empty otherwise.
  std::vector<std::pair<int64_t, int64_t>> participant_times;
};

// Receives events on the thread that ran the operation: the caller of AllReducer::AllReduce, or
// a FusionBuffer's communication thread. An observer shared by several of them must be
// thread-safe.
class CollectiveObserver {
 public:
  virtual ~CollectiveObserver() = default;
  virtual void OnCollective(const CollectiveEvent& event) = 0;
};

}  // namespace stepscope::parallel
