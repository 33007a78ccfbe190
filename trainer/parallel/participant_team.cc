// ParticipantTeam: a generation counter hands each job to the workers; a barrier ends it.
#include "trainer/parallel/participant_team.h"

#include "base/check.h"

namespace stepscope::parallel {

ParticipantTeam::ParticipantTeam(int size)
    : size_(size), step_barrier_(size), done_barrier_(size) {
  STEPSCOPE_CHECK(size >= 1);
  workers_.reserve(size - 1);
  for (int p = 1; p < size; ++p) workers_.emplace_back([this, p] { WorkerLoop(p); });
}

ParticipantTeam::~ParticipantTeam() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  job_ready_.notify_all();
  for (auto& worker : workers_) worker.join();
}

void ParticipantTeam::Run(const std::function<void(int)>& job) {
  std::lock_guard<std::mutex> run_lock(run_mutex_);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job_ = &job;
    ++generation_;
  }
  job_ready_.notify_all();
  job(0);
  done_barrier_.arrive_and_wait();
}

void ParticipantTeam::WorkerLoop(int participant) {
  uint64_t seen = 0;
  while (true) {
    const std::function<void(int)>* job = nullptr;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      job_ready_.wait(lock, [&] { return stopping_ || generation_ != seen; });
      if (stopping_) return;
      seen = generation_;
      job = job_;
    }
    (*job)(participant);
    done_barrier_.arrive_and_wait();
  }
}

}  // namespace stepscope::parallel
