// A team of threads, one per participant (device) of a collective, reused across calls so a
// small all-reduce does not pay for thread creation. The calling thread acts as participant 0.
#pragma once

#include <barrier>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace stepscope::parallel {

class ParticipantTeam {
 public:
  explicit ParticipantTeam(int size);
  ~ParticipantTeam();
  ParticipantTeam(const ParticipantTeam&) = delete;
  ParticipantTeam& operator=(const ParticipantTeam&) = delete;

  int size() const { return size_; }

  // Runs job(p) for every participant p at once (p = 0 on the calling thread) and returns when
  // all have finished. Calls from several threads are serialized.
  void Run(const std::function<void(int participant)>& job);

  // Step barrier for use inside a job: every participant must call it the same number of times.
  void Barrier() { step_barrier_.arrive_and_wait(); }

 private:
  void WorkerLoop(int participant);

  const int size_;
  std::mutex run_mutex_;  // one Run at a time
  std::mutex mutex_;      // guards generation_, job_, stopping_
  std::condition_variable job_ready_;
  uint64_t generation_ = 0;
  const std::function<void(int)>* job_ = nullptr;
  bool stopping_ = false;
  std::barrier<> step_barrier_;
  std::barrier<> done_barrier_;
  std::vector<std::thread> workers_;
};

}  // namespace stepscope::parallel
