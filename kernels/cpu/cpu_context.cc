// ThreadPool: one shared queue of jobs; a job is pushed once per helper worker and every
// participant (helpers and the caller) claims chunks from the job's atomic counter.
#include "kernels/cpu_context.h"

#include <algorithm>
#include <atomic>

namespace stepscope::kernels {

struct ThreadPool::Job {
  const std::function<void(int64_t, int64_t)>* fn = nullptr;  // caller's; valid until done
  int64_t n = 0;
  int64_t grain = 1;
  int64_t num_chunks = 0;
  std::atomic<int64_t> next_chunk{0};
  std::atomic<int64_t> chunks_left{0};
  std::mutex done_mu;
  std::condition_variable done_cv;
};

ThreadPool::ThreadPool(int num_threads) {
  workers_.reserve(static_cast<size_t>(std::max(num_threads, 0)));
  for (int i = 0; i < num_threads; ++i) workers_.emplace_back([this] { WorkerLoop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void ThreadPool::RunChunks(Job& job) {
  while (true) {
    const int64_t chunk = job.next_chunk.fetch_add(1, std::memory_order_relaxed);
    if (chunk >= job.num_chunks) return;
    const int64_t begin = chunk * job.grain;
    const int64_t end = std::min(job.n, begin + job.grain);
    (*job.fn)(begin, end);
    if (job.chunks_left.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      // Lock so the notification cannot slip between the waiter's check and its wait.
      std::lock_guard<std::mutex> lock(job.done_mu);
      job.done_cv.notify_all();
    }
  }
}

void ThreadPool::WorkerLoop() {
  while (true) {
    std::shared_ptr<Job> job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (stopping_ && queue_.empty()) return;
      job = std::move(queue_.front());
      queue_.pop_front();
    }
    RunChunks(*job);  // a job popped after its last chunk was claimed runs nothing
  }
}

void ThreadPool::ParallelFor(int64_t n, int64_t grain,
                             const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  const int64_t num_chunks = (n + grain - 1) / grain;
  if (num_chunks == 1 || workers_.empty()) {
    for (int64_t begin = 0; begin < n; begin += grain) fn(begin, std::min(n, begin + grain));
    return;
  }
  auto job = std::make_shared<Job>();
  job->fn = &fn;
  job->n = n;
  job->grain = grain;
  job->num_chunks = num_chunks;
  job->chunks_left.store(num_chunks);
  const int64_t helpers = std::min<int64_t>(num_chunks - 1, num_workers());
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (int64_t i = 0; i < helpers; ++i) queue_.push_back(job);
  }
  if (helpers == 1) {
    cv_.notify_one();
  } else {
    cv_.notify_all();
  }
  RunChunks(*job);
  std::unique_lock<std::mutex> lock(job->done_mu);
  job->done_cv.wait(lock, [&] { return job->chunks_left.load(std::memory_order_acquire) == 0; });
}

void CpuContext::ParallelFor(int64_t n, int64_t grain,
                             const std::function<void(int64_t, int64_t)>& fn) const {
  grain = std::max<int64_t>(grain, 1);
  if (pool_ == nullptr) {
    for (int64_t begin = 0; begin < n; begin += grain) fn(begin, std::min(n, begin + grain));
    return;
  }
  pool_->ParallelFor(n, grain, fn);
}

int64_t CpuContext::GrainFor(int64_t n, int64_t min_grain) const {
  const int64_t target_chunks = 4 * static_cast<int64_t>(num_threads());
  return std::max<int64_t>(std::max<int64_t>(min_grain, 1), (n + target_chunks - 1) / target_chunks);
}

}  // namespace stepscope::kernels
