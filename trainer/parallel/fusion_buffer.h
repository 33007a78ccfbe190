// Horovod-style tensor fusion: gradients are handed in as backward produces them (from any
// thread, one call per participant); once every participant has a gradient it is queued, and a
// communication thread copies queued gradients into a fusion buffer of fusion_threshold_bytes,
// all-reduces the buffer at once and copies the results back, while backward goes on. A batch
// goes out when the buffer would be full or cycle_time_ms after its first gradient was queued.
// The three steps are reported as MEMCPY_IN_FUSION_BUFFER, ALLREDUCE, MEMCPY_OUT_FUSION_BUFFER
// (a fused batch named "HorovodAllreduce_fused_<k>", a gradient alone by its own name); the copy
// phases also carry each participant's own copy time.
// A gradient larger than the buffer is reduced alone, in place; a threshold of 0 turns fusion
// off (every gradient alone).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "base/status.h"
#include "trainer/parallel/all_reducer.h"

namespace stepscope::parallel {

struct FusionOptions {
  int64_t fusion_threshold_bytes = int64_t{64} << 20;
  double cycle_time_ms = 1.0;
};

class FusionBuffer {
 public:
  // `reduce_options` choose the op, the MPI session and the observer (which also receives the
  // fusion phases); packing options are ignored, fusion supersedes them.
  static StatusOr<std::unique_ptr<FusionBuffer>> Create(AllReduceSpec spec, int num_participants,
                                                        AllReduceOptions reduce_options,
                                                        FusionOptions options);
  // Finishes what is queued, then stops the communication thread.
  ~FusionBuffer();
  FusionBuffer(const FusionBuffer&) = delete;
  FusionBuffer& operator=(const FusionBuffer&) = delete;

  // Participant `participant`'s copy of gradient `name` is ready in `data`; it is reduced in place
  // and must stay valid and untouched until Synchronize returns. kInvalidInput for a participant
  // out of range, a second hand-in of the same gradient, or a length that differs from another
  // participant's.
  Status Ready(int participant, const std::string& name, std::span<float> data);

  // Waits until every gradient handed in since the last Synchronize is reduced and copied out,
  // then starts a new step. Call it after every participant has handed in all its gradients; a
  // gradient missing on some participant is a kInvalidInput error naming it. Also returns the
  // first error of a collective.
  Status Synchronize();

  int64_t batches_reduced() const;  // fused batches since creation (for tests and reports)

 private:
  struct Pending {
    GradientReplicas gradient;
    std::vector<bool> handed_in;
    int count = 0;
  };
  struct Batch {
    std::vector<GradientReplicas> gradients;
    int64_t num_elements = 0;
  };

  FusionBuffer(std::unique_ptr<AllReducer> reducer, FusionOptions options);
  void CommunicationLoop();
  Status ReduceBatch(const Batch& batch);

  std::unique_ptr<AllReducer> reducer_;
  const FusionOptions options_;
  CollectiveObserver* observer_;
  std::vector<std::vector<float>> fusion_buffers_;  // per participant; only the comm thread

  mutable std::mutex mutex_;
  std::condition_variable queue_changed_;  // wakes the communication thread
  std::condition_variable batch_done_;     // wakes Synchronize
  std::map<std::string, Pending> pending_;  // handed in by some participants
  std::deque<GradientReplicas> queue_;      // handed in by all, not yet taken
  int64_t queued_bytes_ = 0;
  int64_t queue_start_ns_ = 0;  // when the oldest queued gradient became complete
  int64_t complete_count_ = 0;  // gradients complete this step
  int64_t reduced_count_ = 0;   // of those, reduced and copied out
  int64_t batches_ = 0;
  bool flush_requested_ = false;
  bool stopping_ = false;
  Status error_;
  std::thread communication_thread_;
};

}  // namespace stepscope::parallel
