// The detach protocol of api_exit_detach.h: armed, finalized by the first armed call's exit.
#include "profiler/collect/cupti/api_exit_detach.h"

#include <utility>

namespace stepscope::collect::cupti {

Status ApiExitDetach::Detach() {
  if (state_.load(std::memory_order_acquire) != kIdle) {
    return Internal("CUPTI detach started while another is in progress");
  }
  // Armed before the callback is: an exit that comes as soon as it is enabled is not missed.
  state_.store(kArmed, std::memory_order_release);
  const Status armed = calls_.arm();
  if (armed.ok()) calls_.trigger();
  int expected = kArmed;
  if (state_.compare_exchange_strong(expected, kIdle, std::memory_order_acq_rel)) {
    // No exit claimed the detach, and none can now: it stays attached, the callback disarmed.
    calls_.disarm();
    if (!armed.ok()) {
      outcome_ = DetachOutcome::kNotArmed;
      return armed;
    }
    outcome_ = DetachOutcome::kNoCallback;
    return Unavailable("CUPTI's callback did not run at the exit of the detach's own CUDA call");
  }
  // An exit claimed it (ours, or another thread's that may still be finalizing): wait here,
  // outside every callback.
  std::unique_lock<std::mutex> lock(mu_);
  finalized_cv_.wait(lock, [this] { return state_.load(std::memory_order_acquire) == kFinalized; });
  const Status finalized = finalize_status_;
  const bool on_this_thread = finalized_on_ == std::this_thread::get_id();
  state_.store(kIdle, std::memory_order_release);
  lock.unlock();
  if (!finalized.ok()) {
    calls_.disarm();
    outcome_ = DetachOutcome::kFinalizeFailed;
    return finalized;
  }
  outcome_ = on_this_thread ? DetachOutcome::kOnThisThread : DetachOutcome::kOnAnotherThread;
  return Status::Ok();
}

void ApiExitDetach::OnApiExit() {
  int expected = kArmed;
  if (!state_.compare_exchange_strong(expected, kFinalizing, std::memory_order_acq_rel)) return;
  Status finalized = calls_.finalize();
  {
    std::lock_guard<std::mutex> lock(mu_);
    finalize_status_ = std::move(finalized);
    finalized_on_ = std::this_thread::get_id();
    state_.store(kFinalized, std::memory_order_release);
  }
  finalized_cv_.notify_all();
}

}  // namespace stepscope::collect::cupti
