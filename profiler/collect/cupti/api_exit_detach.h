// Detaching CUPTI from the process (cuptiFinalize) while other threads may be inside CUDA.
//
// cuptiFinalize tears down CUPTI's hooks. Called from the step's thread, it can meet an NCCL
// proxy or fusion thread in the middle of a CUDA call that CUPTI is hooked into; CUPTI's own
// advice (its cupti_finalize sample; Kineto moved its teardown the same way, pytorch/kineto#686)
// is to call it at the exit of a CUDA driver or runtime call, from CUPTI's callback. So a detach
// arms a callback on one cheap driver call, makes that call itself, and the first thread to leave
// an armed call, on any thread, finalizes; the detaching thread waits for it outside every
// callback (waiting inside one could hold up the finalize it waits for).
//
// The protocol is kept apart from CUPTI (no CUPTI type here) so that it is tested on every build,
// under ThreadSanitizer too: the CUPTI source (cupti_activity_source.cc) supplies the four calls.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

#include "base/status.h"

namespace stepscope::collect::cupti {

struct DetachCalls {
  // Subscribes to CUPTI's callbacks and enables the one on the trigger call.
  std::function<Status()> arm;
  // Makes the trigger call on this thread; CUPTI calls OnApiExit at its exit.
  std::function<void()> trigger;
  // cuptiFinalize, from inside a callback (which also ends the subscription).
  std::function<Status()> finalize;
  // Ends the subscription when no finalize ran, or it failed.
  std::function<void()> disarm;
};

// Where the last detach stands, for tests and the log.
enum class DetachOutcome {
  kNone,                // no detach tried yet
  kOnThisThread,        // finalized at the exit of the detaching thread's own trigger call
  kOnAnotherThread,     // another thread left an armed call first and finalized
  kNotArmed,            // the callback could not be armed: CUPTI stays attached
  kNoCallback,          // no armed call's exit was seen: CUPTI stays attached
  kFinalizeFailed,      // cuptiFinalize failed in the callback: CUPTI stays attached
};

class ApiExitDetach {
 public:
  explicit ApiExitDetach(DetachCalls calls) : calls_(std::move(calls)) {}
  ApiExitDetach(const ApiExitDetach&) = delete;
  ApiExitDetach& operator=(const ApiExitDetach&) = delete;

  // On the controlling thread, once every activity buffer is flushed and every kind disabled.
  // Ok once CUPTI is detached; otherwise why it stays attached (every callback disarmed again).
  // One detach at a time.
  Status Detach();

  // From CUPTI's callback at the exit of an armed call, on whichever thread made it; returns at
  // once unless this call is the one that finalizes. Never blocks on the detaching thread.
  void OnApiExit();

  DetachOutcome last_outcome() const { return outcome_; }

 private:
  enum State : int { kIdle, kArmed, kFinalizing, kFinalized };

  DetachCalls calls_;
  std::atomic<int> state_{kIdle};
  std::mutex mu_;  // guards the fields below while a callback may write them
  std::condition_variable finalized_cv_;
  Status finalize_status_;
  std::thread::id finalized_on_;
  DetachOutcome outcome_ = DetachOutcome::kNone;  // the detaching thread's only
};

}  // namespace stepscope::collect::cupti
